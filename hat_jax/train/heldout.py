"""Held-out loss every `train.eval_every` steps, for SFT and OPD.

Config keys (`experiments/configs/sft_tiny.py`, `opd_tiny.py`):

  data.eval          a JSONL of the same format as `data.train` ("" = off)
  train.eval_every   N: evaluate every N steps and at the last (0 = off)
  train.eval_batches the first this many held-out batches of `batch_size` rows,
                     in file order (0 = all of the file)

The batches are built once, before the first step, and are the same at every
evaluation (no shuffle, no sampling), so two evaluations differ only by the
params. The eval step is jitted without donation and reads `state.params` and
`state.frozen` only: no RNG, no optimiser state, so a run trains exactly as it
would without held-out evaluation (tested).

SFT logs `eval/loss` (the objective `sft.sft_loss` trains, i.e. the CE of the
assistant tokens, with the MTP term when the model has a head), `eval/accuracy`
(argmax = target), `eval/mtp_ce` / `eval/mtp_accuracy` with a head, and
`eval/loss_tokens`; each is a token-weighted mean over the batches (weights:
their loss tokens).

OPD's own objective needs student samples, which would make the held-out number
depend on sampling. So the held-out targets are the *teacher's* greedy
completions of the held-out prompts (`sampling.max_new_tokens` tokens), decoded
once at start; `eval/loss` is the student's teacher-forced CE on them,
`eval/accuracy` how often the student's argmax is the teacher's token, and
`eval/divergence` the configured divergence (`divergence`, `top_k`) between the
two distributions at those positions (0 when the student is the teacher).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import numpy as np

__all__ = ["OPDHeldOut", "SFTHeldOut", "batches_of", "opd_heldout", "sft_heldout"]


def _settings(cfg) -> tuple[str, int, int]:
    """(data.eval, train.eval_every, train.eval_batches), checked."""
    path = str(cfg.get("data", {}).get("eval") or "")
    every = int(cfg.train.get("eval_every", 0) or 0)
    limit = int(cfg.train.get("eval_batches", 0) or 0)
    for key, v in (("train.eval_every", every), ("train.eval_batches", limit)):
        if v < 0:
            raise ValueError(f"{key} must be >= 0, got {v}")
    return path, every, limit


def batches_of(rows: dict[str, np.ndarray], batch_size: int, limit: int = 0):
    """Cuts [R, T] rows into batches of `batch_size`, the last padded with zero
    rows (no loss token; `inputs`/`targets` 0); at most `limit` (0 = all)."""
    n = len(next(iter(rows.values())))
    out = []
    for lo in range(0, n, batch_size):
        b = {k: v[lo : lo + batch_size] for k, v in rows.items()}
        short = batch_size - len(b["loss_mask"])
        if short:
            b = {
                k: np.concatenate([v, np.zeros((short, *v.shape[1:]), v.dtype)])
                for k, v in b.items()
            }
        out.append(b)
    return out[:limit] if limit else out


def _weighted(parts: Sequence[tuple[float, dict[str, float]]]) -> dict[str, float]:
    """Token-weighted means of each metric over the batches, and the count."""
    total = sum(n for n, _ in parts)
    keys = parts[0][1].keys() if parts else ()
    out = {f"eval/{k}": sum(n * m[k] for n, m in parts) / max(total, 1.0) for k in keys}
    out["eval/loss_tokens"] = float(total)
    return out


class SFTHeldOut:
    """`evaluate(state) -> {"eval/loss", ...}` on fixed packed batches."""

    KEYS = ("accuracy", "mtp_ce", "mtp_accuracy")

    def __init__(self, graphdef, cfg, batches: Sequence[dict[str, np.ndarray]]):
        from hat_jax.train.sft import sft_loss

        if not batches:
            raise ValueError("no held-out batches")
        self.batches = [jax.device_put(b) for b in batches]
        self.counts = [float(np.sum(b["loss_mask"])) for b in batches]
        self._loss = jax.jit(functools.partial(sft_loss, graphdef=graphdef, cfg=cfg))

    def __call__(self, state) -> dict[str, float]:
        parts = []
        for b, n in zip(self.batches, self.counts, strict=True):
            loss, m = jax.device_get(self._loss(state.params, state.frozen, b))
            row = {"loss": float(loss)}
            row |= {k: float(m[k]) for k in self.KEYS if k in m}
            parts.append((n, row))
        return _weighted(parts)


def sft_heldout(
    cfg, tokenizer, graphdef, trajectories=None
) -> tuple[SFTHeldOut | None, int]:
    """(the SFT evaluator, `train.eval_every`), or (None, 0) when off.

    The held-out trajectories (``trajectories`` when the caller has read
    `data.eval` already, else read here) are tokenised as the training ones
    (`seq_len`, `data.fmt`, `data.overlong`), packed in file order into rows
    of `seq_len`.

    Raises:
      DataError: the file cannot be read, or keeps no example / trained token.
    """
    from hat_jax.train import data

    path, every, limit = _settings(cfg)
    if not path or not every:
        return None, 0
    if trajectories is None:
        trajectories = data.load_trajectories(path)
    examples, _ = data.tokenize(
        trajectories,
        tokenizer,
        seq_len=int(cfg.seq_len),
        fmt=cfg.data.fmt,
        overlong=cfg.data.overlong,
    )
    rows = data.pack_rows(
        examples, range(len(examples)), int(cfg.seq_len), tokenizer.pad_id
    )
    batches = batches_of(rows, int(cfg.batch_size), limit)
    return SFTHeldOut(graphdef, cfg, batches), every


def _opd_eval(params, frozen, teacher_params, batch, *, graphdef, tgraph, cfg):
    """Per batch: teacher-forced CE, accuracy and divergence (means over tokens)."""
    from hat_jax.losses.sft import cross_entropy
    from hat_jax.train.opd import _forward, opd_loss
    from hat_jax.train.state import cast_floats

    params, frozen = cast_floats((params, frozen), cfg.compute_dtype)  # as training
    logits = _forward(graphdef, (params, frozen), batch["inputs"]).logits
    teacher = _forward(tgraph, (teacher_params,), batch["inputs"]).logits
    mask = batch["loss_mask"]
    _, m = cross_entropy(logits=logits, targets=batch["targets"], mask=mask)
    div, _ = opd_loss(student_logits=logits, teacher_logits=teacher, mask=mask, cfg=cfg)
    return {"loss": m["ce"], "accuracy": m["accuracy"], "divergence": div}


class OPDHeldOut:
    """`evaluate(state)` on the teacher's fixed greedy completions (module doc)."""

    def __init__(self, graphdef, tgraph, teacher_params, cfg, batches):
        if not batches:
            raise ValueError("no held-out batches")
        self.batches = [jax.device_put(b) for b in batches]
        self.counts = [float(np.sum(b["loss_mask"])) for b in batches]
        self.teacher_params = teacher_params
        self._eval = jax.jit(
            functools.partial(_opd_eval, graphdef=graphdef, tgraph=tgraph, cfg=cfg)
        )

    def __call__(self, state) -> dict[str, float]:
        parts = []
        for b, n in zip(self.batches, self.counts, strict=True):
            m = jax.device_get(
                self._eval(state.params, state.frozen, self.teacher_params, b)
            )
            parts.append((n, {k: float(v) for k, v in m.items()}))
        return _weighted(parts)


def opd_heldout(
    cfg, tokenizer, graphdef, tgraph, teacher_params
) -> tuple[OPDHeldOut | None, int]:
    """(the OPD evaluator, `train.eval_every`), or (None, 0) when off.

    Reads the held-out prompts as `data.train` is read (`opd.read_prompts`,
    `data.max_prompt_tokens`), keeps the first `eval_batches * batch_size`, and
    decodes the teacher greedily on them once (`OPDHeldOut`'s fixed targets).
    """
    from flax import nnx

    from hat_jax.sampling.sampler import Sampler, SamplingParams
    from hat_jax.train.opd import build_batch, encode_prompts, read_prompts

    path, every, limit = _settings(cfg)
    if not path or not every:
        return None, 0
    ids, _ = encode_prompts(
        read_prompts(path),
        tokenizer,
        max_prompt_tokens=int(cfg.data.max_prompt_tokens),
        enable_thinking=cfg.data.get("enable_thinking"),
    )
    b = int(cfg.batch_size)
    if limit:
        ids = ids[: limit * b]
    new = int(cfg.sampling.max_new_tokens)
    teacher = Sampler(nnx.merge(tgraph, teacher_params), tokenizer)
    comps = teacher.generate(ids, SamplingParams(max_new_tokens=new, temperature=0.0))
    del teacher
    rows = build_batch(
        ids,
        comps,
        seq_len=int(cfg.data.max_prompt_tokens) + new,
        pad_id=tokenizer.pad_id,
    )
    del rows["sampler_logprobs"]  # the eval step needs none
    batches = batches_of(rows, b)
    return OPDHeldOut(graphdef, tgraph, teacher_params, cfg, batches), every
