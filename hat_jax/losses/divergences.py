"""Per-token divergences between a student and a teacher over the vocabulary.

Used by on-policy distillation: the student samples, the teacher scores the same
tokens, and at each sampled position we take an exact divergence between the two
next-token distributions over the whole vocabulary (not a single-sample estimate).

Every divergence is chosen by name through ``get_divergence``: ``"reverse_kl"``
(default), ``"forward_kl"``, ``"jsd(0.5)"`` or ``"jsd(beta=0.5)"``. Writing P_s for
the student's and P_t for the teacher's next-token distribution:

- ``reverse_kl`` = KL(P_s || P_t) = sum_v P_s(v) (log P_s(v) - log P_t(v)):
  mode-seeking, the expectation is under the student.
- ``forward_kl`` = KL(P_t || P_s) = sum_v P_t(v) (log P_t(v) - log P_s(v)):
  mass-covering, the expectation is under the teacher.
- ``jsd(beta)``, the generalised Jensen-Shannon divergence of GKD (Agarwal et al.
  2024), with the mixture M = beta P_t + (1 - beta) P_s:
  JSD_beta = beta KL(P_t || M) + (1 - beta) KL(P_s || M), for 0 < beta < 1.
  beta = 0.5 is the usual symmetric JSD, bounded by log 2. As beta -> 0,
  JSD_beta ~ beta * forward_kl; as beta -> 1, JSD_beta ~ (1 - beta) * reverse_kl;
  both ends vanish, so beta = 0 and beta = 1 are rejected: name ``forward_kl`` or
  ``reverse_kl`` instead.

Top-k truncation (``top_k=k``): the divergence is taken over a support S of k tokens
per position, with both distributions renormalised on S
(log P_S(v) = logit(v) - logsumexp_{u in S} logit(u)). S is the top-k of the
distribution the divergence takes its expectation under: the student's for
``reverse_kl``, the teacher's for ``forward_kl`` and ``jsd``. The choice of S is not
differentiated; gradients reach only the student logits in S.

Logits must be finite. Dims: B batch, T positions, V vocab, K top-k.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from hat_jax.losses.sft import upcast
from hat_jax.registry import Registry, parse_name

Metrics = dict[str, Array]
# (log P_s, log P_t) over the last axis -> per-token divergence
PerToken = Callable[..., Float[Array, "B T"]]
Divergence = Callable[..., tuple[Float[Array, ""], Metrics]]

_DIVERGENCES = Registry("divergence", fixed=("log_p_student", "log_p_teacher"))
# name -> which distribution's top-k is the truncated support
_SUPPORT: dict[str, str] = {}


def register_divergence(
    name: str, *, support: str = "teacher"
) -> Callable[[PerToken], PerToken]:
    """Registers a per-token divergence ``fn(*, log_p_student, log_p_teacher, ...)``.

    ``support`` ("student" or "teacher") names whose top-k tokens form the support
    under ``top_k`` truncation. Extra keyword-only parameters of ``fn`` are set from
    the name string (``"jsd(0.5)"``).
    """
    if support not in ("student", "teacher"):
        raise ValueError(f"support must be 'student' or 'teacher', not {support!r}")

    def register(fn: PerToken) -> PerToken:
        fn = _DIVERGENCES.register(name)(fn)
        _SUPPORT[name] = support
        return fn

    return register


def divergence_names() -> tuple[str, ...]:
    return _DIVERGENCES.names()


def get_divergence(spec: str = "reverse_kl") -> Divergence:
    """The divergence named by ``spec`` as a loss function.

    Returns ``fn(*, student_logits [B, T, V], teacher_logits [B, T, V], mask [B, T],
    top_k: int | None = None) -> (loss, metrics)``: the per-token divergence averaged
    over masked tokens; metrics ``divergence`` (that mean), ``max_divergence``,
    ``student_entropy`` (of the possibly truncated student) and ``n_tokens``. The
    teacher logits are constants (``stop_gradient``).
    """
    per_token = _DIVERGENCES.bind(spec)
    name = parse_name(spec)[0]
    return functools.partial(_loss, per_token=per_token, support=_SUPPORT[name])


def _loss(
    *,
    student_logits: Float[Array, "B T V"],
    teacher_logits: Float[Array, "B T V"],
    mask: Bool[Array, "B T"] | Float[Array, "B T"],
    top_k: int | None = None,
    per_token: PerToken,
    support: str,
) -> tuple[Float[Array, ""], Metrics]:
    s = upcast(student_logits)
    t = jax.lax.stop_gradient(upcast(teacher_logits))
    if top_k is not None and top_k < s.shape[-1]:
        chooser = s if support == "student" else t
        _, idx = jax.lax.top_k(jax.lax.stop_gradient(chooser), top_k)  # [B, T, K]
        s = jnp.take_along_axis(s, idx, axis=-1)  # [B, T, K]
        t = jnp.take_along_axis(t, idx, axis=-1)  # [B, T, K]
    log_ps = jax.nn.log_softmax(s, axis=-1)
    log_pt = jax.nn.log_softmax(t, axis=-1)
    per = per_token(log_p_student=log_ps, log_p_teacher=log_pt)  # [B, T]
    mask = mask.astype(jnp.float32)
    n = jnp.sum(mask)
    loss = jnp.sum(per * mask) / jnp.maximum(n, 1.0)
    entropy = -jnp.sum(jnp.exp(log_ps) * log_ps, axis=-1)  # [B, T]
    metrics = {
        "divergence": loss,
        "max_divergence": jnp.max(jnp.where(mask > 0, per, 0.0)),
        "student_entropy": jnp.sum(entropy * mask) / jnp.maximum(n, 1.0),
        "n_tokens": n,
    }
    return loss, jax.lax.stop_gradient(metrics)


def _kl(log_p: Float[Array, "B T V"], log_q: Float[Array, "B T V"]) -> Array:
    # KL(p || q) over the last axis
    return jnp.sum(jnp.exp(log_p) * (log_p - log_q), axis=-1)


@register_divergence("reverse_kl", support="student")
def reverse_kl(
    *, log_p_student: Float[Array, "B T V"], log_p_teacher: Float[Array, "B T V"]
) -> Float[Array, "B T"]:
    """KL(P_student || P_teacher) per token."""
    return _kl(log_p_student, log_p_teacher)


@register_divergence("forward_kl", support="teacher")
def forward_kl(
    *, log_p_student: Float[Array, "B T V"], log_p_teacher: Float[Array, "B T V"]
) -> Float[Array, "B T"]:
    """KL(P_teacher || P_student) per token."""
    return _kl(log_p_teacher, log_p_student)


@register_divergence("jsd", support="teacher")
def jsd(
    *,
    log_p_student: Float[Array, "B T V"],
    log_p_teacher: Float[Array, "B T V"],
    beta: float,
) -> Float[Array, "B T"]:
    """beta KL(P_t || M) + (1 - beta) KL(P_s || M), M = beta P_t + (1 - beta) P_s."""
    beta = float(beta)
    if not 0.0 < beta < 1.0:
        raise ValueError(
            f"jsd needs 0 < beta < 1, got {beta}; its limits vanish, "
            "use 'forward_kl' (beta -> 0) or 'reverse_kl' (beta -> 1)"
        )
    log_m = jnp.logaddexp(
        log_p_teacher + jnp.log(beta), log_p_student + jnp.log1p(-beta)
    )  # [B, T, V]
    return beta * _kl(log_p_teacher, log_m) + (1.0 - beta) * _kl(log_p_student, log_m)
