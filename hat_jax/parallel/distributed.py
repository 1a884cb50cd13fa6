"""Multi-host start-up: one process per host, all of them in one JAX runtime.

Every host runs the same command; `initialize()` (before any other JAX call)
connects them through the coordinator, after which `jax.devices()` lists every
accelerator of the cluster and `make_mesh` spans them all. On 2 nodes x 8 GPUs::

    # on node i (i = 0, 1); node 0's address is the coordinator
    export HAT_COORDINATOR=10.0.0.1:12345 HAT_NUM_PROCESSES=2 HAT_PROCESS_ID=$i
    hat train sft --config=experiments/configs/paper_35b.py --workdir runs/35b

Under SLURM (`srun --nodes=2 --ntasks-per-node=1 hat train ...`) or on Cloud TPU
the variables can be left unset: `jax.distributed.initialize()` reads the
cluster's own environment. Without any of them and with one process nothing is
done, so single-host runs need no change.
"""

from __future__ import annotations

import os

import jax

__all__ = ["initialize"]

_ENV = {
    "coordinator_address": "HAT_COORDINATOR",
    "num_processes": "HAT_NUM_PROCESSES",
    "process_id": "HAT_PROCESS_ID",
}
_CLUSTER_ENV = ("SLURM_JOB_ID", "TPU_WORKER_HOSTNAMES", "OMPI_COMM_WORLD_SIZE")


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    environ: dict[str, str] | None = None,
) -> bool:
    """Joins the multi-host runtime; arguments override the `HAT_*` variables.

    Returns:
      True when `jax.distributed.initialize` was called, False for a
      single-process run (nothing configured).
    """
    env = os.environ if environ is None else environ
    given = {
        "coordinator_address": coordinator_address,
        "num_processes": num_processes,
        "process_id": process_id,
    }
    kw = {}
    for name, value in given.items():
        if value is None and env.get(_ENV[name]):
            value = env[_ENV[name]]
        if value is not None:
            kw[name] = value if name == "coordinator_address" else int(value)
    if not kw and not any(k in env for k in _CLUSTER_ENV):
        return False
    if int(kw.get("num_processes", 2)) == 1:
        return False
    jax.distributed.initialize(**kw)
    return True
