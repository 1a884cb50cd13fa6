"""Shared pieces of the RL tests: a tiny dense model, an RL config, a random batch."""

import ml_collections
import numpy as np

from hat_jax.models import ModelConfig, build_model
from hat_jax.train.rl_batch import episode_from_tokens, episodes_to_batch

REWARDS = ("accuracy", "effectiveness", "tool_rationality", "skill_selection")


def rl_config(**rl) -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.optim = ml_collections.ConfigDict(
        {
            "lr": 1e-3,
            "b1": 0.9,
            "b2": 0.95,
            "eps": 1e-8,
            "weight_decay": 0.0,
            "warmup_steps": 0,
            "total_steps": 1000,
            "end_lr_frac": 1.0,
            "clip_norm": 1.0,
        }
    )
    base = {
        "reward_names": REWARDS,
        "advantage": "gdpo",
        "segment_rewards": {
            "tool": {"tool_rationality": 1.0, "skill_selection": 0.5},
            "reply": {"accuracy": 1.0, "effectiveness": 2.0},
        },
        "length_penalty": {"coef": 0.0, "tool_target": 4, "reply_target": 2},
        "ratio": "token",
        "clip_eps": 0.2,
        "clip_eps_high": None,
        "aggregation": "token-mean",
        "kl_coef": 0.0,
        "kl_estimator": "k3",
        "inner_steps": 1,
        "old_logp": "sampler",
    }
    base.update(rl)
    c.rl = ml_collections.ConfigDict(base)
    return c


def tiny_model(vocab: int = 64, seed: int = 0, **fields):
    """A 2-layer Qwen3 (`fields` override its config, e.g. an MoE's)."""
    cfg = ModelConfig(
        **{
            "model_type": "qwen3",
            "vocab_size": vocab,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
        }
        | fields
    )
    return build_model(cfg, seed=seed)


# ---------------------------------------------------------------- episodes


def random_batch(vocab, n=2, g=3, t=12, seed=0):
    rng = np.random.default_rng(seed)
    eps = []
    for i in range(n * g):
        p, s = int(rng.integers(2, 5)), int(rng.integers(3, 8))
        ep = episode_from_tokens(
            rng.integers(0, vocab, p),
            rng.integers(0, vocab, s),
            -rng.random(s) * 3,
            rewards=dict(zip(REWARDS, rng.random(4).round(1))),
            group=i // g,
            segment=1 + i % 2,
        )
        ep.reasoning = (int(rng.integers(0, 9)), int(rng.integers(0, 9)))
        eps.append(ep)
    return episodes_to_batch(eps, pad_to=t, reward_names=REWARDS)
