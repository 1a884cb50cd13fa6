"""`run_sft` on 8 simulated CPU devices: one device vs a mesh, and a resumed mesh run.

Usage: python mesh_sft_worker.py ROOT CONFIG_SPEC [KEY=VALUE ...]

Prints one JSON line: the largest |difference| of the final params between the
single-device run and the mesh run (data=2, fsdp=2, tensor=2), the per-step
losses of both, whether a mesh run that crashed after step 3 (checkpoint at 2)
and was resumed ends bit-identical to the uninterrupted mesh run, and the
shardings some params had.
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
from hat_jax.train.sft import run_sft  # noqa: E402

MESH = ("mesh.data=2", "mesh.fsdp=2", "mesh.tensor=2")


class Crash(Exception):
    pass


def leaves(state) -> dict[str, np.ndarray]:
    flat = jax.tree_util.tree_flatten_with_path(state.params)[0]
    return {jax.tree_util.keystr(p): np.asarray(x) for p, x in flat}


def main() -> None:
    root, spec, *overrides = sys.argv[1:]
    plain, _, _ = run_sft(load_config(spec, overrides), f"{root}/one", progress=False)
    cfg = load_config(spec, [*overrides, *MESH])
    mesh, _, _ = run_sft(cfg, f"{root}/mesh", progress=False)

    def crash(step, state):
        if step == 3:
            raise Crash

    try:
        run_sft(cfg, f"{root}/crashed", progress=False, on_step=crash)
    except Crash:
        pass
    resumed, _, _ = run_sft(cfg, f"{root}/crashed", progress=False)
    a, b, c = leaves(plain), leaves(mesh), leaves(resumed)
    specs = {
        k: str(v.sharding.spec)
        for k, v in zip(
            [
                jax.tree_util.keystr(p)
                for p, _ in jax.tree_util.tree_flatten_with_path(mesh.params)[0]
            ],
            jax.tree.leaves(mesh.params),
        )
    }
    print(
        json.dumps(
            {
                "devices": jax.device_count(),
                "max_param_diff": max(float(np.abs(a[k] - b[k]).max()) for k in a),
                "resumed_bit_identical": all(
                    b[k].tobytes() == c[k].tobytes() for k in b
                ),
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
