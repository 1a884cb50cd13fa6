"""Stage 3, HSA-RL: GRPO-family policy gradient over agent episodes.

    rewards [N, G, R] ─┬─ tool table ── GDPO (+ -CoT penalty) ─> A_tool  [N, G]
                       └─ reply table ─ GDPO (+ -CoT penalty) ─> A_reply [N, G]
    trained_pos [B, K] gathers targets, segments, old_logp at the trained
    positions; segments + A_tool, A_reply ─> per-token advantages [B, K]
    B episodes ─> A micro-batches of M = B / A (``rl.micro_batch``), each:
        decoder over [M, T] ─> logits at its K trained positions [M, K, V]
        ─> logp [M, K] vs old_logp ─> PPO clip (token) / GSPO (sequence)
        surrogate + kl_coef * KL(pi || ref)
    grads summed over the micro-batches, each weighted by its share of the
    batch's loss units ─> AdamW, ``inner_steps`` times

Environment-agnostic: episodes come from ``hat_jax.train.rl_batch`` (any rollout
source; the runner is ``hat_jax.train.rl_run``, its rollouts in an agent task
``hat_jax.train.rl_rollouts``). Config group
``cfg.rl``: reward_names, advantage (a ``get_advantage`` name, e.g. ``"gdpo"``),
segment_rewards (segment -> {reward: weight}), length_penalty (coef,
tool_target, reply_target), ratio (``"token"`` | ``"sequence"``), clip_eps,
clip_eps_high, aggregation, kl_coef, kl_estimator (``"k1"`` | ``"k3"``),
inner_steps, old_logp (``"sampler"`` | ``"trainer"``), micro_batch (episodes
per micro-batch; None or 0: the whole batch at once).

Advantages need the whole group, so they are computed on the full batch before
it is split. The update with micro-batches equals the full-batch one up to float
rounding: both loss terms are means over the batch, so a micro-batch's mean is
weighted by its share of the batch's units (``AGGREGATION_UNITS``: trained
tokens for ``token-mean`` and for the KL term, sequences with a trained token
for ``seq-mean-token-mean``) and the weighted gradients are summed in a
``lax.scan``, as ``hat_jax.train.sft`` does. The reference and (``old_logp =
"trainer"``) old log-probs are computed the same way, one micro-batch at a time,
so no [B, T, V] array is ever built.

With an MTP head and ``cfg.mtp_weight`` > 0 the head's CE is added, weighted
like the KL term (a mean over trained tokens): at position t it predicts the
trained token at t + 1 from hidden[t] and that episode's token t + 1, i.e. it
learns to draft what the current policy samples (the head's params train only
through this term; ``hat_jax.train.build`` leaves it frozen when the weight is 0).

The CoT length penalty enters as one more reward column per segment (value
``-length_penalty(reasoning tokens of that segment)``, weight 1), so GDPO
normalises it within the group like the other rewards. The GSPO ratio is one
per sequence, over all its trained tokens (both segments).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx
from jaxtyping import Array, Float

from hat_jax.losses.moe import moe_aux_term
from hat_jax.losses.policy import (
    get_advantage,
    kl_penalty,
    length_penalty,
    policy_loss,
    segment_advantages,
    segment_masks,
)
from hat_jax.losses.sft import token_logprobs
from hat_jax.models.mtp import mtp_hidden
from hat_jax.train.state import TrainState, make_optimizer, make_schedule

__all__ = [
    "AGGREGATION_UNITS",
    "SEGMENTS",
    "compute_advantages",
    "frac_reward_zero_std",
    "gather_trained",
    "jit_rl_step",
    "rl_step_fn",
    "num_micro_batches",
    "rl_logprobs",
    "rl_train_step",
    "segment_weights",
]

SEGMENTS = ("tool", "reply")  # segment ids 1 and 2

# aggregation -> per-row count of the units its loss averages over, from the
# [B, K] trained mask; a micro-batch's loss is weighted by its share of them.
AGGREGATION_UNITS = {
    "token-mean": lambda trained: jnp.sum(trained, axis=-1),
    "seq-mean-token-mean": lambda trained: (jnp.sum(trained, axis=-1) > 0).astype(
        jnp.float32
    ),
}
ROW_KEYS = ("inputs", "positions", "attn")  # [B, T]: the decoder's inputs
AUX_KEYS = ("pg_loss", "kl", "clip_fraction", "ratio_mean", "approx_kl")
AUX_KEYS += ("moe_aux_loss",)  # 0 for a model without routed experts
MTP_KEYS = ("mtp_ce", "mtp_accuracy", "mtp_count")  # sums, with cfg.mtp_weight > 0


def segment_weights(rl) -> dict[str, jax.Array]:
    """Per segment, the weight of each reward in ``rl.reward_names`` order."""
    out = {}
    for seg in SEGMENTS:
        table = rl.segment_rewards.get(seg) or {}
        table = table.to_dict() if hasattr(table, "to_dict") else dict(table)
        unknown = set(table) - set(rl.reward_names)
        if unknown:
            raise ValueError(f"segment_rewards.{seg} names unknown rewards {unknown}")
        out[seg] = jnp.asarray([float(table.get(r, 0.0)) for r in rl.reward_names])
    return out


def frac_reward_zero_std(rewards, rl) -> jax.Array:
    """The share of groups whose total reward has standard deviation 0.

    TRL's ``frac_reward_zero_std``: per rollout the rewards are summed with
    their weights (here each reward's weights in ``rl.segment_rewards`` added
    over both segments; the length penalty is not a reward), and a group counts
    when every rollout's total is the same (exactly: max = min, which std = 0
    means). Such a group gets no advantage from the total reward.

    Args:
      rewards: [N, G, R] in ``rl.reward_names`` order.
      rl: the ``cfg.rl`` group.
    """
    w = sum(segment_weights(rl).values())  # [R]
    total = jnp.sum(rewards * w, axis=-1)  # [N, G]
    same = jnp.all(total == total[:, :1], axis=1)
    return jnp.mean(same.astype(jnp.float32))


def compute_advantages(rewards, reasoning, rl) -> dict[str, jax.Array]:
    """Per-segment sequence advantages.

    Args:
      rewards: [N, G, R] in ``rl.reward_names`` order.
      reasoning: [B, 2] reasoning tokens in the (tool, reply) segments, B = N*G.
      rl: the ``cfg.rl`` group.

    Returns:
      ``{"tool": [N, G], "reply": [N, G]}``.
    """
    n, g, _ = rewards.shape
    adv_fn = get_advantage(rl.advantage)
    lp = rl.length_penalty
    targets = {"tool": float(lp.tool_target), "reply": float(lp.reply_target)}
    out = {}
    for i, (seg, w) in enumerate(segment_weights(rl).items()):
        r, weights = rewards, w
        if float(lp.coef) > 0:
            pen = length_penalty(
                lengths=reasoning[:, i], target=targets[seg], coef=float(lp.coef)
            ).reshape(n, g, 1)
            r = jnp.concatenate([rewards, -pen], axis=-1)  # [N, G, R + 1]
            weights = jnp.concatenate([w, jnp.ones(1)])
        out[seg] = adv_fn(r, weights=weights)
    return out


def gather_trained(batch: dict) -> dict[str, jax.Array]:
    """The batch's per-token arrays at its trained positions.

    Args:
      batch: from ``episodes_to_batch``: targets, segments [B, T] int32,
        old_logp [B, T] float32, trained_pos [B, K] int32 (-1 = padding).

    Returns:
      idx (positions, padding clipped to 0), targets, segments (0 on padding)
      [B, K] int32; old_logp [B, K] float32 (0 on padding).
    """
    pos = batch["trained_pos"]  # [B, K]
    valid = pos >= 0
    idx = jnp.maximum(pos, 0)

    def take(x):
        return jnp.take_along_axis(x, idx, axis=1)

    return {
        "idx": idx,
        "targets": take(batch["targets"]),
        "segments": jnp.where(valid, take(batch["segments"]), 0),
        "old_logp": jnp.where(valid, take(batch["old_logp"]), 0.0),
    }


def _logprobs(params, frozen, rows, *, graphdef, mtp=False):
    """(logp [M, K] at the gathered positions, extra terms).

    The decoder runs over [M, T], the LM head at the K gathered positions only.
    `extra`: for models with routed experts "moe_aux" (router_aux_loss_coef x
    the load-balancing loss over the rows' real tokens) and "moe_aux_loss" (the
    loss itself); with `mtp`, "mtp": (ce, hits, count), the MTP head's CE summed
    over the trained tokens it can predict (position idx - 1 drafts the token at
    idx), its correct argmax count, and how many there were.
    """
    model = nnx.merge(graphdef, params, frozen)
    hidden, _, routers = model.hidden_states(
        rows["inputs"], rows["positions"], rows["attn"]
    )  # [M, T, D]
    h = jnp.take_along_axis(hidden, rows["idx"][..., None], axis=1)  # [M, K, D]
    logp = token_logprobs(logits=model.logits(h), targets=rows["targets"])
    term, metrics = moe_aux_term(routers, model.config, rows["attn"])
    extra = {"moe_aux": term, **metrics} if metrics else {}
    if not mtp:
        return logp, extra
    seg = rows["attn"].astype(jnp.int32)  # one causal document, padding apart
    hm = mtp_hidden(model, hidden, rows["inputs"], rows["positions"], seg)
    at = jnp.maximum(rows["idx"] - 1, 0)  # [M, K]
    logits = model.logits(jnp.take_along_axis(hm, at[..., None], axis=1))
    mtp_logp = token_logprobs(logits=logits, targets=rows["targets"])  # [M, K]
    w = ((rows["segments"] > 0) & (rows["idx"] > 0)).astype(jnp.float32)
    hit = (jnp.argmax(logits, -1) == rows["targets"]).astype(jnp.float32)
    extra["mtp"] = (-jnp.sum(mtp_logp * w), jnp.sum(hit * w), jnp.sum(w))
    return logp, extra


def rl_logprobs(params, frozen, batch, *, graphdef) -> Float[Array, "B K"]:
    """Log-probs (float32) of the targets at ``batch["trained_pos"]``.

    Entry ``[b, k]`` is the log-prob of ``targets[b, trained_pos[b, k]]``; 0
    where ``trained_pos`` is padding (-1).
    """
    g = gather_trained(batch)
    rows = {k: batch[k] for k in ROW_KEYS} | {k: g[k] for k in ("idx", "targets")}
    logp, _ = _logprobs(params, frozen, rows, graphdef=graphdef)
    return jnp.where(batch["trained_pos"] >= 0, logp, 0.0)


def num_micro_batches(batch_size: int, micro_batch: int | None) -> int:
    """A, the number of micro-batches of ``micro_batch`` episodes (1 = no split).

    Raises:
      ValueError: ``micro_batch`` does not divide ``batch_size``.
    """
    m = int(micro_batch or 0)
    if m < 0:
        raise ValueError(f"rl.micro_batch must be >= 0 or None, got {m}")
    if m == 0 or m >= batch_size:
        return 1
    if batch_size % m:
        raise ValueError(
            f"rl.micro_batch={m} does not divide the batch's {batch_size} episodes "
            "(rollout.tasks * rollout.group)"
        )
    return batch_size // m


def _shares(units: Float[Array, " B"], a: int) -> Float[Array, " A"]:
    # each micro-batch's share of the batch's units (all 0 when there are none)
    per = units.reshape(a, -1).sum(-1)
    return per / jnp.maximum(per.sum(), 1.0)


def _micro_loss(params, frozen, rows, w_pg, w_tok, *, graphdef, rl, mtp_weight=0.0):
    """One micro-batch's weighted loss and weighted metric terms."""
    logp, extra = _logprobs(params, frozen, rows, graphdef=graphdef, mtp=mtp_weight > 0)
    mtp = extra.get("mtp")  # logp [M, K]
    trained = (rows["segments"] > 0).astype(jnp.float32)
    pg, m = policy_loss(
        logp=logp,
        old_logp=rows["old"],
        advantages=rows["advantages"],
        mask=trained,
        clip_eps=float(rl.clip_eps),
        clip_eps_high=rl.get("clip_eps_high"),
        ratio=rl.ratio,
        aggregation=rl.aggregation,
    )
    kl = jnp.zeros(())
    if "ref" in rows:
        kl, _ = kl_penalty(
            logp=logp, ref_logp=rows["ref"], mask=trained, estimator=rl.kl_estimator
        )
    loss = w_pg * pg + float(rl.kl_coef) * w_tok * kl
    gap = jnp.max(jnp.abs(logp - rows["old_logp"]) * trained, initial=0.0)
    aux = {
        "pg_loss": w_pg * pg,
        "kl": w_tok * kl,
        "clip_fraction": w_tok * m["clip_fraction"],
        "ratio_mean": w_tok * m["ratio_mean"],
        "approx_kl": w_tok * m["approx_kl"],
        "moe_aux_loss": w_tok * extra.get("moe_aux_loss", jnp.zeros(())),
    }
    if "moe_aux" in extra:  # routed experts: token-weighted over micro-batches
        loss = loss + w_tok * extra["moe_aux"]
    if mtp is not None:  # its batch mean: the sum over the batch's MTP tokens
        ce_sum, hits, n = mtp
        loss = loss + mtp_weight * ce_sum / rows["mtp_units"]
        aux |= dict(zip(MTP_KEYS, (ce_sum, hits, n), strict=True))
    return loss, (jax.lax.stop_gradient(aux), jax.lax.stop_gradient(gap))


def _accumulated_grads(
    params, frozen, micro, w_pg, w_tok, *, graphdef, rl, mtp_weight=0.0
):
    """Sum over the A micro-batches of the weighted loss's grads (``lax.scan``)."""
    grad_fn = jax.value_and_grad(_micro_loss, has_aux=True)
    kw = {"graphdef": graphdef, "rl": rl, "mtp_weight": mtp_weight}

    def body(carry, xs):
        grads, loss, aux, gap = carry
        rows, wp, wt = xs
        (ls, (a, gp)), g = grad_fn(params, frozen, rows, wp, wt, **kw)
        grads = jax.tree.map(jnp.add, grads, g)
        aux = jax.tree.map(jnp.add, aux, a)
        return (grads, loss + ls, aux, jnp.maximum(gap, gp)), None

    zero = jnp.zeros((), jnp.float32)
    aux0 = dict.fromkeys(AUX_KEYS + (MTP_KEYS if mtp_weight > 0 else ()), zero)
    init = (jax.tree.map(jnp.zeros_like, params), zero, aux0, zero)
    (grads, loss, aux, gap), _ = jax.lax.scan(body, init, (micro, w_pg, w_tok))
    return grads, loss, aux, gap


def rl_train_step(
    state: TrainState, batch: dict, rng: jax.Array, *, graphdef, ref_params, cfg
) -> tuple[TrainState, dict[str, jax.Array]]:
    """``cfg.rl.inner_steps`` policy-gradient updates on one batch of episodes.

    Args:
      state: the train state.
      batch: from ``episodes_to_batch`` (``old_logp`` = the sampler's log-probs;
        B = N * G rows, split into micro-batches of ``cfg.rl.micro_batch``).
      rng: unused (kept for the common step signature).
      graphdef: the model's static graph.
      ref_params: reference-policy params for the KL term (same structure as
        ``state.params``; must not share buffers with the donated state).
      cfg: the run config (uses rl and optim).

    Returns:
      (new state, metrics), the loss terms from the first inner step:
      train/loss, rl/pg_loss, rl/kl, rl/clip_fraction, rl/ratio_mean,
      rl/logprob_gap_max (max |trainer - sampler| log-prob over trained
      tokens; old params = sampler params there), rl/adv_tool_mean_abs,
      rl/adv_reply_mean_abs, rl/frac_reward_zero_std (``frac_reward_zero_std``),
      rl/reward/<name> (batch means), rl/tokens_*,
      train/grad_norm, train/param_norm, train/update_norm, train/lr.

    Raises:
      ValueError: an unknown ``rl.aggregation`` or ``rl.old_logp``,
        ``rl.inner_steps`` < 1, or a ``rl.micro_batch`` that does not divide B.
    """
    del rng
    rl = cfg.rl
    if rl.aggregation not in AGGREGATION_UNITS:
        raise ValueError(
            f"rl.aggregation must be one of {sorted(AGGREGATION_UNITS)}: "
            f"{rl.aggregation!r}"
        )
    if rl.old_logp not in ("sampler", "trainer"):
        raise ValueError(f"rl.old_logp must be 'sampler' or 'trainer': {rl.old_logp}")
    inner = int(rl.inner_steps)
    if inner < 1:
        raise ValueError(f"rl.inner_steps must be >= 1, got {inner}")
    b = batch["inputs"].shape[0]
    a = num_micro_batches(b, rl.get("micro_batch"))

    adv = compute_advantages(batch["rewards"], batch["reasoning"], rl)  # whole group
    g = gather_trained(batch)  # [B, K] each
    rows = {k: batch[k] for k in ROW_KEYS} | g
    rows["advantages"] = segment_advantages(
        tool_advantages=adv["tool"],
        reply_advantages=adv["reply"],
        segment_ids=g["segments"],
        fold_missing_tool=bool(rl.get("fold_missing_tool", False)),
    )  # [B, K]
    micro = jax.tree.map(lambda x: x.reshape(a, b // a, *x.shape[1:]), rows)

    def logp_all(params):  # [A, M, K], no grad, one micro-batch at a time
        out = jax.lax.map(
            lambda r: _logprobs(params, state.frozen, r, graphdef=graphdef)[0], micro
        )
        return jax.lax.stop_gradient(out)

    if float(rl.kl_coef):
        micro["ref"] = logp_all(ref_params)
    micro["old"] = micro["old_logp"]
    if rl.old_logp == "trainer":  # old = the current params, recomputed
        micro["old"] = logp_all(state.params)

    trained = (g["segments"] > 0).astype(jnp.float32)  # [B, K]
    w_pg = _shares(AGGREGATION_UNITS[rl.aggregation](trained), a)  # [A]
    w_tok = _shares(AGGREGATION_UNITS["token-mean"](trained), a)  # [A]
    mtp_weight = float(cfg.get("mtp_weight", 0.0) or 0.0)
    model = nnx.merge(graphdef, state.params, state.frozen)  # trace time only
    if getattr(model, "mtp", None) is None:
        mtp_weight = 0.0  # no head: no MTP term (as in SFT)
    if mtp_weight > 0:  # the MTP CE's denominator: its tokens in the whole batch
        units = jnp.maximum(jnp.sum(trained * (g["idx"] > 0)), 1.0)
        micro["mtp_units"] = jnp.broadcast_to(units, (a,))

    tx = make_optimizer(cfg.optim)
    params, opt_state = state.params, state.opt_state
    first = None
    for i in range(inner):  # unrolled: inner_steps is small (1-4)
        grads, loss, aux, gap = _accumulated_grads(
            params,
            state.frozen,
            micro,
            w_pg,
            w_tok,
            graphdef=graphdef,
            rl=rl,
            mtp_weight=mtp_weight,
        )
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        if i == 0:
            first = (loss, aux, gap, grads, updates)
    loss, aux, gap, grads, updates = first
    masks = segment_masks(batch["segments"])
    metrics = {
        "train/loss": loss,
        "rl/pg_loss": aux["pg_loss"],
        "rl/kl": aux["kl"],
        "rl/clip_fraction": aux["clip_fraction"],
        "rl/ratio_mean": aux["ratio_mean"],
        "rl/approx_kl_old": aux["approx_kl"],
        "rl/logprob_gap_max": gap,
        "rl/adv_tool_mean_abs": jnp.mean(jnp.abs(adv["tool"])),
        "rl/adv_reply_mean_abs": jnp.mean(jnp.abs(adv["reply"])),
        "rl/frac_reward_zero_std": frac_reward_zero_std(batch["rewards"], rl),
        "rl/tokens_tool": jnp.sum(masks["tool"]),
        "rl/tokens_reply": jnp.sum(masks["reply"]),
        "rl/reasoning_tool_mean": jnp.mean(batch["reasoning"][:, 0]),
        "rl/reasoning_reply_mean": jnp.mean(batch["reasoning"][:, 1]),
        "train/grad_norm": optax.tree.norm(grads),
        "train/param_norm": optax.tree.norm(params),
        "train/update_norm": optax.tree.norm(updates),
        "train/lr": make_schedule(cfg.optim)(state.step),
    }
    if model.config.num_experts:  # the load-balancing loss (token-weighted mean)
        metrics["train/moe_aux_loss"] = aux["moe_aux_loss"]
    if mtp_weight > 0:
        n = jnp.maximum(aux["mtp_count"], 1.0)
        metrics["rl/mtp_ce"] = aux["mtp_ce"] / n
        metrics["rl/mtp_accuracy"] = aux["mtp_accuracy"] / n
    means = jnp.mean(batch["rewards"], axis=(0, 1))  # [R]
    for j, name in enumerate(rl.reward_names):
        metrics[f"rl/reward/{name}"] = means[j]
    new = state.replace(step=state.step + inner, params=params, opt_state=opt_state)
    return new, metrics


def rl_step_fn(graphdef, cfg: ml_collections.ConfigDict):
    """``(state, batch, rng, ref_params) -> (state, metrics)``, unjitted (to jit
    plainly, ``jit_rl_step``, or for a mesh, ``hat_jax.parallel.place_on_mesh``)."""

    def step(state, batch, rng, ref_params):
        return rl_train_step(
            state, batch, rng, graphdef=graphdef, ref_params=ref_params, cfg=cfg
        )

    return step


def jit_rl_step(graphdef, cfg: ml_collections.ConfigDict):
    """``(state, batch, rng, ref_params) -> (state, metrics)``, the state donated.

    ``ref_params`` is an argument (not baked into the program); give it its own
    buffers (e.g. ``jax.tree.map(jnp.copy, state.params)``), since the state's
    are donated.
    """
    return jax.jit(rl_step_fn(graphdef, cfg), donate_argnums=(0,))
