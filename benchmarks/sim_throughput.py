"""Room-steps per second: the vectorized rooms (jit + vmap) vs a per-room Python loop.

The same dynamics three ways, on rooms built from a pool of real catalogs:
  scan     `sim.room.rollout`: T steps of R rooms per jitted call (lax.scan), the
           stacked observations included;
  step     one jitted `step_batch` call per step from a Python loop (keys split on
           the host each step, as an agent loop would);
  python   `sim.room_python.step` room by room, NumPy noise drawn per room-step.
Times include dispatch; each is taken after a warm-up call, with block_until_ready.
The Python loop runs a subset of rooms (at most --py-rooms) for --py-steps steps;
its rate is per room-step and does not depend on R, so it is extrapolated to R
rooms. Measurements are interleaved (scan, step, python, repeat) and medians
reported, so machine drift hits all alike.

    python benchmarks/sim_throughput.py [--rooms 1,4,...,4096] [--steps 100]
        [--reps 7] [--out benchmarks/results/sim_throughput.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from sim import room, room_python
from sim.catalog import make_catalog

SWITCH_EVERY = 60  # steps between featured-link changes in the fixed policy


def _actions(n_steps: int, params: room.RoomParams) -> room.RoomAction:
    """A fixed policy both sides follow: answer one message a step; put the next
    link on screen every SWITCH_EVERY steps. [T, R]."""
    t = np.arange(n_steps)[:, None]
    n = np.asarray(params.n_links)[None, :]
    nxt = (t // SWITCH_EVERY) % n + 1
    feature = np.where(t % SWITCH_EVERY == 0, nxt, -1).astype(np.int32)
    return room.RoomAction(jnp.asarray(feature), jnp.ones_like(jnp.asarray(feature)))


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _measure(n_rooms: int, pool, world: dict, key, args) -> dict:
    """One row of the table: interleaved timings of scan, step and python."""
    params = room.make_params([pool[i % len(pool)] for i in range(n_rooms)], **world)
    start = room.reset_batch(jax.random.split(key, n_rooms), params)
    actions = _actions(args.steps, params)
    per_step = [
        jax.tree.map(lambda x, t=t: x[t], actions) for t in range(args.step_calls)
    ]
    state = {"scan": start, "step": start}

    def scan():
        s, obs = room.rollout(key, state["scan"], actions, params)
        jax.block_until_ready((s, obs))
        state["scan"] = s

    def step():
        s = state["step"]
        for t, a in enumerate(per_step):
            keys = jax.random.split(jax.random.fold_in(key, t), n_rooms)
            s, obs = room.step_batch(keys, s, a, params)
        jax.block_until_ready((s, obs))
        state["step"] = s

    py = [
        room_python.room_params(params, r) for r in range(min(n_rooms, args.py_rooms))
    ]
    feature = np.asarray(actions.feature)
    rng = np.random.default_rng(0)

    def python():
        for r, p in enumerate(py):
            s = room_python.reset(p)
            for t in range(args.py_steps):
                noise = room_python.draw_noise(rng, p)
                room_python.step(noise, s, int(feature[t % len(feature), r]), 1, p)

    scan(), step()  # warm up: compile
    work = {
        "scan": n_rooms * args.steps,
        "step": n_rooms * args.step_calls,
        "python": len(py) * args.py_steps,
    }
    rates = {k: [] for k in work}
    for _ in range(args.reps):
        for name, fn in (("scan", scan), ("step", step), ("python", python)):
            rates[name].append(work[name] / _time(fn))
    row = {"rooms": n_rooms, "python_measured": f"{len(py)} x {args.py_steps}"}
    for k, v in rates.items():
        row[f"{k}_room_steps_s"] = statistics.median(v)
        row[f"{k}_room_steps_s_best"] = max(v)
    for k in ("scan", "step"):  # the ratio within each interleaved rep, then median
        ratios = [a / b for a, b in zip(rates[k], rates["python"])]
        row[f"{k}_over_python"] = statistics.median(ratios)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rooms", default="1,4,16,64,256,1024,4096")
    ap.add_argument("--steps", type=int, default=100, help="steps per scan call")
    ap.add_argument("--step-calls", type=int, default=20, help="steps timed, step")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--py-rooms", type=int, default=8)
    ap.add_argument("--py-steps", type=int, default=100)
    ap.add_argument("--catalogs", type=int, default=64, help="pool, cycled")
    ap.add_argument("--impl", default="threefry2x32", help="jax PRNG implementation")
    ap.add_argument("--out", default="benchmarks/results/sim_throughput.json")
    args = ap.parse_args()

    pool = [make_catalog("train", i) for i in range(args.catalogs)]
    world = {"campaign_time": 3600.0}  # RoomParams defaults otherwise
    key = jax.random.key(0, impl=args.impl)
    rows = []
    for n_rooms in map(int, args.rooms.split(",")):
        row = _measure(n_rooms, pool, world, key, args)
        rows.append(row)
        print(
            f"rooms {n_rooms:5d}: scan {row['scan_room_steps_s']:11.0f} "
            f"step {row['step_room_steps_s']:11.0f} "
            f"python {row['python_room_steps_s']:8.0f} room-steps/s, "
            f"scan/python {row['scan_over_python']:7.1f}x",
            flush=True,
        )

    print(
        f"\nroom-steps per second, median of {args.reps} interleaved runs; ratios: "
        f"median of the per-run ratios "
        f"(scan: {args.steps} steps per call; python: at most {args.py_rooms} rooms "
        f"x {args.py_steps} steps timed, per room-step rate extrapolated to R rooms)"
    )
    print(
        f"{'rooms':>6s} {'scan':>12s} {'step calls':>12s} {'python':>9s} "
        f"{'scan/python':>12s} {'step/python':>12s}"
    )
    for r in rows:
        print(
            f"{r['rooms']:6d} {r['scan_room_steps_s']:12.0f} "
            f"{r['step_room_steps_s']:12.0f} {r['python_room_steps_s']:9.0f} "
            f"{r['scan_over_python']:11.1f}x {r['step_over_python']:11.1f}x"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "numpy": np.__version__,
        "world": world,
        "args": vars(args),
    }
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
