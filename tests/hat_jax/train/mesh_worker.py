"""A stage (sft, opd, rl) on 8 simulated CPU devices: one device vs a mesh, and a
mesh run that crashed and resumed.

Usage: python mesh_worker.py STAGE ROOT CONFIG_SPEC [KEY=VALUE ...]

Prints one JSON line: the largest |difference| of the final params between the
single-device run and the mesh run (data=2, fsdp=2, tensor=2), the per-step
losses of both, whether a mesh run that crashed after step 3 (checkpoint at 2)
and was resumed ends bit-identical to the uninterrupted mesh run (params and
metrics rows but timings), and the shardings the mesh run's params had.
"""

import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from hat_jax.cli.config_flags import load_config  # noqa: E402
from hat_jax.train.metrics import read_metrics  # noqa: E402

MESH = ("mesh.data=2", "mesh.fsdp=2", "mesh.tensor=2")
TIMING = ("train/tokens_per_s", "rl/rollout_s", "rl/step_s", "eval/seconds")


class Crash(Exception):
    pass


def stage_runner(stage: str):
    if stage == "sft":
        from hat_jax.train.sft import run_sft

        return run_sft
    if stage == "opd":
        from hat_jax.train.opd import run_opd

        return run_opd
    from experiments.sim_task import SimTask
    from hat_jax.train.rl_run import run_rl

    class Alternating(SimTask):
        """A random policy earns 0 everywhere: every advantage would be 0 and
        every gradient rounding noise (which AdamW blows up to full-size
        updates). Rollout i of a step earns i % 2 accuracy, so each group has
        some advantage."""

        def __init__(self):
            self.count = 0

        def shape(self, rewards, name):
            self.count += 1
            return super().shape(rewards, name) | {"accuracy": float(self.count % 2)}

    return lambda *a, **k: run_rl(*a, task=Alternating(), **k)


def extra(stage: str, cfg) -> dict:
    """OPD's teacher: another random init of the student's shape (a copy of the
    student would give zero divergence, so gradients of rounding noise only)."""
    if stage != "opd":
        return {}
    from hat_jax.train import build

    _, mcfg = build.make_model(cfg)
    return {"teacher": build.build_model(mcfg, seed=int(cfg.seed) + 1)}


def leaves(state) -> dict[str, np.ndarray]:
    flat = jax.tree_util.tree_flatten_with_path(state.params)[0]
    return {jax.tree_util.keystr(p): np.asarray(x) for p, x in flat}


def rows(path: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in read_metrics(path)]


def main() -> None:
    stage, root, spec, *overrides = sys.argv[1:]
    # the four runs compile the same programs: JAX's persistent cache (as the
    # driver uses it) compiles each once
    from experiments.driver.pipeline import enable_compile_cache

    enable_compile_cache(f"{root}/_jax_cache")
    run = stage_runner(stage)
    one = load_config(spec, overrides)
    plain, _, _ = run(one, f"{root}/one", progress=False, **extra(stage, one))
    cfg = load_config(spec, [*overrides, *MESH])
    mesh, _, _ = run(cfg, f"{root}/mesh", progress=False, **extra(stage, cfg))

    def crash(step, state):
        if step == 3:
            raise Crash

    try:
        run(cfg, f"{root}/crashed", progress=False, on_step=crash, **extra(stage, cfg))
    except Crash:
        pass
    resumed, _, _ = run(cfg, f"{root}/crashed", progress=False, **extra(stage, cfg))
    a, b, c = leaves(plain), leaves(mesh), leaves(resumed)
    flat = jax.tree_util.tree_flatten_with_path(mesh.params)[0]
    specs = {jax.tree_util.keystr(p): str(x.sharding.spec) for p, x in flat}
    print(
        json.dumps(
            {
                "devices": jax.device_count(),
                "max_param_diff": max(float(np.abs(a[k] - b[k]).max()) for k in a),
                "resumed_bit_identical": all(
                    b[k].tobytes() == c[k].tobytes() for k in b
                ),
                "resumed_rows_equal": rows(f"{root}/crashed/metrics.jsonl")
                == rows(f"{root}/mesh/metrics.jsonl"),
                "losses_one": [
                    r["train/loss"] for r in read_metrics(f"{root}/one/metrics.jsonl")
                ],
                "losses_mesh": [
                    r["train/loss"] for r in read_metrics(f"{root}/mesh/metrics.jsonl")
                ],
                "checkpoints": sorted(os.listdir(f"{root}/crashed/ckpt")),
                "specs": specs,
            }
        )
    )


if __name__ == "__main__":
    main()
