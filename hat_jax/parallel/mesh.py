"""The device mesh: four named axes, sizes chosen per run.

    data    pure data parallel: params replicated, the batch split
    fsdp    data parallel with params, grads and optimiser state split (ZeRO-3)
    tensor  heads / FFN columns split inside each matmul (Megatron style)
    expert  routed experts split on their stacked axis 0

`make_mesh(fsdp=-1)` puts every device on one axis; the product of the sizes must
equal the number of devices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh

__all__ = ["AXES", "axis_sizes", "make_mesh", "resolve_sizes"]

AXES = ("data", "fsdp", "tensor", "expert")


def resolve_sizes(n_devices: int, **sizes: int) -> dict[str, int]:
    """Axis sizes with at most one `-1` filled so that their product is `n_devices`."""
    unknown = set(sizes) - set(AXES)
    if unknown:
        raise ValueError(f"unknown mesh axes {sorted(unknown)}; have {AXES}")
    out = {a: int(sizes.get(a, 1)) for a in AXES}
    fill = [a for a, s in out.items() if s == -1]
    if len(fill) > 1:
        raise ValueError(f"only one mesh axis may be -1, got {fill}")
    if any(s < 1 for a, s in out.items() if a not in fill):
        raise ValueError(f"mesh axis sizes must be >= 1 or -1, got {out}")
    known = math.prod(s for a, s in out.items() if a not in fill)
    if fill:
        if n_devices % known:
            raise ValueError(f"{n_devices} devices do not split into {out}")
        out[fill[0]] = n_devices // known
    if math.prod(out.values()) != n_devices:
        raise ValueError(
            f"mesh {out} has {math.prod(out.values())} devices, not {n_devices}"
        )
    return out


def make_mesh(
    data: int = 1,
    fsdp: int = -1,
    tensor: int = 1,
    expert: int = 1,
    *,
    devices: Sequence[jax.Device] | None = None,
) -> Mesh:
    """A `Mesh` over `devices` (default `jax.devices()`, all hosts) with `AXES`.

    The last axes (tensor, expert) get neighbouring devices, which on a
    GPU node are the NVLink-closest ones.
    """
    devs = list(jax.devices() if devices is None else devices)
    sizes = resolve_sizes(len(devs), data=data, fsdp=fsdp, tensor=tensor, expert=expert)
    grid = np.asarray(devs, dtype=object).reshape([sizes[a] for a in AXES])
    return Mesh(grid, AXES)


def axis_sizes(mesh: Mesh) -> dict[str, int]:
    """{axis name: size} of a mesh."""
    return dict(zip(mesh.axis_names, mesh.devices.shape, strict=True))
