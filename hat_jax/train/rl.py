"""Stage 3, HSA-RL: GRPO-family policy gradient over agent episodes.

    rewards [N, G, R] ─┬─ tool table ── GDPO (+ -CoT penalty) ─> A_tool  [N, G]
                       └─ reply table ─ GDPO (+ -CoT penalty) ─> A_reply [N, G]
    segments [B, T] + A_tool, A_reply ─> per-token advantages [B, T]
    logp (current params) vs old_logp (sampler) ─> PPO clip (token) / GSPO
    (sequence) surrogate + kl_coef * KL(pi || ref) ─> AdamW, `inner_steps` times

Environment-agnostic: episodes come from ``hat_jax.train.rl_batch`` (any rollout
source; the simulator wiring is ``experiments/rl_sim.py``). Config group
``cfg.rl``: reward_names, advantage (a ``get_advantage`` name, e.g. ``"gdpo"``),
segment_rewards (segment -> {reward: weight}), length_penalty (coef,
tool_target, reply_target), ratio (``"token"`` | ``"sequence"``), clip_eps,
clip_eps_high, aggregation, kl_coef, kl_estimator (``"k1"`` | ``"k3"``),
inner_steps, old_logp (``"sampler"`` | ``"trainer"``).

The CoT length penalty enters as one more reward column per segment (value
``-length_penalty(reasoning tokens of that segment)``, weight 1), so GDPO
normalises it within the group like the other rewards. The GSPO ratio is one
per sequence, over all its trained tokens (both segments).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx

from hat_jax.losses.policy import (
    get_advantage,
    kl_penalty,
    length_penalty,
    policy_loss,
    segment_advantages,
    segment_masks,
)
from hat_jax.losses.sft import token_logprobs
from hat_jax.train.sft import packed_forward
from hat_jax.train.state import TrainState, make_optimizer, make_schedule, tree_norm

__all__ = [
    "SEGMENTS",
    "compute_advantages",
    "jit_rl_step",
    "rl_logprobs",
    "rl_train_step",
    "segment_weights",
]

SEGMENTS = ("tool", "reply")  # segment ids 1 and 2


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


def rl_logprobs(params, frozen, batch, *, graphdef) -> jax.Array:
    """[B, T] log-probs of ``batch["targets"]`` under ``params``, in float32."""
    model = nnx.merge(graphdef, params, frozen)
    logits = packed_forward(
        model, batch["inputs"], batch["positions"], batch["attn"]
    )  # [B, T, V]
    return token_logprobs(logits=logits, targets=batch["targets"])


def rl_train_step(
    state: TrainState, batch: dict, rng: jax.Array, *, graphdef, ref_params, cfg
) -> tuple[TrainState, dict[str, jax.Array]]:
    """``cfg.rl.inner_steps`` policy-gradient updates on one batch of episodes.

    Args:
      state: the train state.
      batch: from ``episodes_to_batch`` (``old_logp`` = the sampler's log-probs).
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
      rl/adv_reply_mean_abs, rl/reward/<name> (batch means), rl/tokens_*,
      train/grad_norm, train/param_norm, train/update_norm, train/lr.
    """
    del rng
    rl = cfg.rl
    masks = segment_masks(batch["segments"])
    trained = masks["trained"].astype(jnp.float32)
    adv = compute_advantages(batch["rewards"], batch["reasoning"], rl)
    token_adv = segment_advantages(
        tool_advantages=adv["tool"],
        reply_advantages=adv["reply"],
        segment_ids=batch["segments"],
    )
    logp_fn = functools.partial(rl_logprobs, batch=batch, graphdef=graphdef)
    kl_coef = float(rl.kl_coef)
    ref_logp = (
        jax.lax.stop_gradient(logp_fn(ref_params, state.frozen)) if kl_coef else None
    )
    old = batch["old_logp"]
    if rl.old_logp == "trainer":  # old = the current params, recomputed
        old = jax.lax.stop_gradient(logp_fn(state.params, state.frozen))
    elif rl.old_logp != "sampler":
        raise ValueError(f"rl.old_logp must be 'sampler' or 'trainer': {rl.old_logp}")

    def loss_fn(params):
        logp = logp_fn(params, state.frozen)
        loss, m = policy_loss(
            logp=logp,
            old_logp=old,
            advantages=token_adv,
            mask=trained,
            clip_eps=float(rl.clip_eps),
            clip_eps_high=rl.get("clip_eps_high"),
            ratio=rl.ratio,
            aggregation=rl.aggregation,
        )
        m = dict(m, pg_loss=loss, kl=jnp.zeros(()))
        if kl_coef:
            kl, km = kl_penalty(
                logp=logp, ref_logp=ref_logp, mask=trained, estimator=rl.kl_estimator
            )
            loss = loss + kl_coef * kl
            m["kl"] = km["kl"]
        return loss, (m, logp)

    inner = int(rl.inner_steps)
    if inner < 1:
        raise ValueError(f"rl.inner_steps must be >= 1, got {inner}")
    tx = make_optimizer(cfg.optim)
    params, opt_state = state.params, state.opt_state
    first = None
    for i in range(inner):  # unrolled: inner_steps is small (1-4)
        (loss, (m, logp)), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        if i == 0:
            gap = jnp.abs(logp - batch["old_logp"]) * trained
            first = (loss, m, jnp.max(gap), grads, updates)
    loss, m, gap, grads, updates = first
    metrics = {
        "train/loss": loss,
        "rl/pg_loss": m["pg_loss"],
        "rl/kl": m["kl"],
        "rl/clip_fraction": m["clip_fraction"],
        "rl/ratio_mean": m["ratio_mean"],
        "rl/approx_kl_old": m["approx_kl"],
        "rl/logprob_gap_max": gap,
        "rl/adv_tool_mean_abs": jnp.mean(jnp.abs(adv["tool"])),
        "rl/adv_reply_mean_abs": jnp.mean(jnp.abs(adv["reply"])),
        "rl/tokens_tool": jnp.sum(masks["tool"]),
        "rl/tokens_reply": jnp.sum(masks["reply"]),
        "rl/reasoning_tool_mean": jnp.mean(batch["reasoning"][:, 0]),
        "rl/reasoning_reply_mean": jnp.mean(batch["reasoning"][:, 1]),
        "train/grad_norm": tree_norm(grads),
        "train/param_norm": tree_norm(params),
        "train/update_norm": tree_norm(updates),
        "train/lr": make_schedule(cfg.optim)(state.step),
    }
    means = jnp.mean(batch["rewards"], axis=(0, 1))  # [R]
    for j, name in enumerate(rl.reward_names):
        metrics[f"rl/reward/{name}"] = means[j]
    new = state.replace(step=state.step + inner, params=params, opt_state=opt_state)
    return new, metrics


def jit_rl_step(graphdef, cfg: ml_collections.ConfigDict):
    """``(state, batch, rng, ref_params) -> (state, metrics)``, the state donated.

    ``ref_params`` is an argument (not baked into the program); give it its own
    buffers (e.g. ``jax.tree.map(jnp.copy, state.params)``), since the state's
    are donated.
    """

    def step(state, batch, rng, ref_params):
        return rl_train_step(
            state, batch, rng, graphdef=graphdef, ref_params=ref_params, cfg=cfg
        )

    return jax.jit(step, donate_argnums=(0,))
