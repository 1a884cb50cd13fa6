"""Run with 8 simulated CPU devices: sharded vs single-device SFT step, as JSON.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
        python tests/hat_jax/parallel/sharded_worker.py

Prints one JSON line per config: max abs differences of loss, grads and the
updated params, and the specs some params got.
"""

import functools
import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_collections  # noqa: E402
import numpy as np  # noqa: E402

from hat_jax.models import ModelConfig, build_model  # noqa: E402
from hat_jax.parallel import (  # noqa: E402
    batch_sharding,
    get_rules,
    jit_sharded_step,
    make_mesh,
    shard_train_state,
)
from hat_jax.train.sft import sft_loss, sft_train_step  # noqa: E402
from hat_jax.train.state import init_state, make_optimizer  # noqa: E402

BASE = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
)
CONFIGS = {
    "dense": (ModelConfig(model_type="qwen3", **BASE), dict(data=2, fsdp=2, tensor=2)),
    "moe": (
        ModelConfig(
            model_type="qwen3_moe",
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=16,
            **BASE,
        ),
        dict(fsdp=2, tensor=2, expert=2),
    ),
}
SHOW = ("embed_tokens", "layers/0/self_attn/q_proj/kernel", "layers/0/mlp/gate_proj")


def run_cfg():
    return ml_collections.ConfigDict(
        {
            "compute_dtype": "float32",
            "grad_accum": 1,
            "loss_chunk": 8,
            "optim": {
                "lr": 1e-3,
                "b1": 0.9,
                "b2": 0.95,
                "eps": 1e-8,
                "weight_decay": 0.01,
                "warmup_steps": 0,
                "total_steps": 10,
                "end_lr_frac": 0.1,
                "clip_norm": 1.0,
            },
        }
    )


def make_batch(vocab, b=4, t=16):
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, vocab, (b, t + 1))
    seg = np.ones((b, t), np.int32)
    seg[:, t // 2 :] = 2  # two packed documents per row
    pos = np.concatenate([np.arange(t // 2), np.arange(t - t // 2)])
    return {
        "inputs": jnp.asarray(tokens[:, :-1], jnp.int32),
        "targets": jnp.asarray(tokens[:, 1:], jnp.int32),
        "positions": jnp.asarray(np.broadcast_to(pos, (b, t)), jnp.int32),
        "segment_ids": jnp.asarray(seg),
        "loss_mask": jnp.asarray(rng.random((b, t)) < 0.7),
    }


def max_diff(a, b):
    d = jax.tree.map(lambda x, y: float(jnp.max(jnp.abs(x - y))), a, b)
    return max(jax.tree.leaves(d))


def check(name, mcfg, mesh_sizes):
    cfg = run_cfg()
    graphdef, state = init_state(
        build_model(mcfg, seed=0), make_optimizer(cfg.optim), seed=0
    )
    batch = make_batch(mcfg.vocab_size)
    rng = jax.random.PRNGKey(1)
    loss_fn = functools.partial(sft_loss, graphdef=graphdef, cfg=cfg)
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    step_fn = functools.partial(sft_train_step, graphdef=graphdef, cfg=cfg)

    (loss1, _), g1 = jax.jit(grad_fn)(state.params, state.frozen, batch)
    new1, m1 = jax.jit(step_fn)(state, batch, rng)

    mesh = make_mesh(**mesh_sizes)
    sstate, shardings, report = shard_train_state(state, mesh, get_rules(mcfg.family))
    bs = batch_sharding(mesh)
    sbatch = jax.device_put(batch, bs)
    (loss2, _), g2 = jax.jit(
        grad_fn,
        in_shardings=(shardings.params, shardings.frozen, bs),
        out_shardings=(None, shardings.params),
    )(sstate.params, sstate.frozen, sbatch)
    specs = {
        p: str(v.sharding.spec)
        for p, v in _flat(sstate.params).items()
        if any(s in p for s in SHOW)
    }
    n_sharded = sum(
        any(a is not None for a in v.sharding.spec)
        for v in _flat(sstate.params).values()
    )
    step = jit_sharded_step(step_fn, shardings, bs)
    new2, m2 = step(sstate, sbatch, rng)
    out_specs_kept = all(
        v.sharding.spec == shardings_flat.spec
        for v, shardings_flat in zip(
            jax.tree.leaves(new2.params), jax.tree.leaves(shardings.params), strict=True
        )
    )
    return {
        "name": name,
        "devices": len(jax.devices()),
        "loss": float(loss1),
        "loss_diff": abs(float(loss1) - float(loss2)),
        "grad_diff": max_diff(g1, g2),
        "grad_max": max(float(jnp.max(jnp.abs(x))) for x in jax.tree.leaves(g1)),
        "step_loss_diff": abs(float(m1["train/loss"]) - float(m2["train/loss"])),
        "param_diff": max_diff(new1.params, new2.params),
        "opt_diff": max_diff(new1.opt_state, new2.opt_state),
        "specs": specs,
        "n_params": len(jax.tree.leaves(sstate.params)),
        "n_sharded": n_sharded,
        "out_specs_kept": out_specs_kept,
        "unmatched": report.unmatched,
        "replicated_dims": report.replicated_dims,
    }


def _flat(tree):
    from hat_jax.parallel.rules import leaf_path

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {leaf_path(p): v for p, v in flat}


if __name__ == "__main__":
    names = sys.argv[1:] or list(CONFIGS)
    for n in names:
        print(json.dumps(check(n, *CONFIGS[n])), flush=True)
