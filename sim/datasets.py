"""Datasets of gold trajectories: cases from simulated rooms, the oracle, JSONL.

``make_cases(split, seed, n)`` runs the vectorized room dynamics (``sim.room``)
for a batch of rooms, each with its own catalog, and turns viewer messages into
:class:`~sim.oracle.Case` records: the room as it was when the message arrived
and the rendered message. ``generate`` answers them with the oracle teacher
(batched through the agent loop); ``write_dataset`` writes the trajectories as
JSONL.

Rooms. Room ``i`` of ``(split, seed)`` gets a catalog seed drawn from
``SeedSequence([split, seed, i])`` (32 bits, skipping any a previous room of the
same dataset drew), so its catalog is ``make_catalog(split, room_seed)``. Each
room streams for ``steps`` steps of ``dt`` seconds (default: two hours, the span
flash sales fall in) under a simple host policy: answer every pending message on
the next step and, with probability ``switch_p`` per step, put a random link on
screen. Purchases, flash sales and arrivals come from the dynamics. Every room
receives a few hundred messages; ``messages_per_room`` of them, drawn without
replacement, become cases, each with the room snapshot at the end of its arrival
step. Rooms run in chunks of ``ROOM_CHUNK`` (padded, so the jitted rollout is
compiled once) with one PRNG key per room folded with the step, so a room's
stream does not depend on the chunking, and the cases of ``n`` are a prefix of
the cases of any larger ``n``.

Splits. Catalogs of different splits draw brands from disjoint pools and carry
the split in ``catalog_id`` (hence in every SKU id) and in the room id;
:func:`assert_disjoint` checks a set of dataset files for any shared catalog,
SKU, brand or room.

Determinism. The same arguments give the same cases, the same trajectories and
byte-identical files: ``write_dataset`` empties each trajectory's ``timings``
(wall-clock seconds of the agent loop, different on every run); nothing else in
a trajectory depends on time or on batching (fault draws are seeded by (seed,
room, case, call index)). Keys keep their insertion order, which the code fixes,
rather than being sorted: some dicts are ordered data (``meta["room_context"]``
renders the prompt's room section in its order).
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hat_jax.harness import LOAD_SKILL, Harness, Trajectory, read_jsonl
from hat_jax.harness import Mapping as HarnessMapping
from hat_jax.jsonl import DataError, field, write_jsonl_atomic
from sim import room as R
from sim.catalog import STREAM_SECONDS, make_catalog
from sim.oracle import Case, gold_trajectories
from sim.tools import FaultConfig
from sim.types import INTENTS, LANGS, SPLITS, Catalog
from sim.viewers import (
    DEFAULT_INTENT_MIX,
    DEFAULT_LANG_MIX,
    mix_vector,
    render_message,
)

ROOM_CHUNK = 64  # rooms per jitted rollout
MAX_LINKS = 16  # link padding (make_catalog draws 6 to 16 links)
DT = 5.0  # seconds per step
STEPS = int(STREAM_SECONDS / DT)  # a two-hour stream
ARRIVAL_RATE = 0.05  # viewer messages per second (about 360 a stream)
SWITCH_P = 0.01  # per step: the host features another link (about every 8 min)
MAX_NEW = 4  # arrivals per step at most (mean 0.25 at the defaults)


def room_seeds(split: str, seed: int, n_rooms: int) -> list[int]:
    """The catalog seeds of rooms 0..n_rooms-1 of dataset (split, seed)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    out: list[int] = []
    used: set[int] = set()
    for i in range(n_rooms):
        ss = np.random.SeedSequence([SPLITS.index(split), int(seed), i])
        for value in ss.generate_state(8):  # 32-bit draws rarely collide
            if int(value) not in used:
                break
        used.add(int(value))
        out.append(int(value))
    return out


@jax.jit
def _stream(keys, params: R.RoomParams, features):
    """Rooms [R] for T steps (features [T, R]); per step: the state without its
    queue, the new messages [R, C, W] and their count [R]."""
    state = jax.vmap(R.reset)(keys, params)
    pop_all = jnp.full(keys.shape, params.queue_size, jnp.int32)

    def body(state, xs):
        t, feature = xs
        step_keys = jax.vmap(jax.random.fold_in, (0, None))(keys, t)
        action = R.RoomAction(feature=feature, answer=pop_all)
        state, obs = jax.vmap(R.step)(step_keys, state, action, params)
        slim = state.replace(queue=state.queue[:, :0])
        return state, (slim, obs.messages, obs.n_new)

    steps = jnp.arange(features.shape[0], dtype=jnp.uint32)
    return jax.lax.scan(body, state, (steps, features))[1]


@dataclasses.dataclass(frozen=True)
class _Room:
    index: int
    room_id: str
    catalog: Catalog
    rng: np.random.Generator  # feature schedule, then the message draw


def _room_cases(
    room: _Room,
    r: int,
    out,
    params,
    k: int,
    harness_version: str,
) -> list[Case]:
    slim, messages, n_new = out
    arrivals = np.argwhere(np.arange(messages.shape[2])[None, :] < n_new[:, r, None])
    if len(arrivals) > k:
        pick = np.sort(room.rng.choice(len(arrivals), size=k, replace=False))
        arrivals = arrivals[pick]
    cases = []
    for j, (t, c) in enumerate(arrivals):
        state_t = jax.tree.map(lambda x, t=t: x[t], slim)
        snap = R.snapshot(
            state_t,
            params,
            r,
            room.catalog,
            room.room_id,
            harness_names=(harness_version, harness_version),
        )
        msg = render_message(messages[t, r, c], room.catalog)
        cases.append(Case(f"{room.room_id}-{j}", snap, msg))
    return cases


def make_cases(
    split: str,
    seed: int,
    n: int,
    *,
    messages_per_room: int = 8,
    intent_mix: Mapping[str, float] | None = None,
    lang_mix: Mapping[str, float] | None = None,
    steps: int = STEPS,
    dt: float = DT,
    arrival_rate: float = ARRIVAL_RATE,
    switch_p: float = SWITCH_P,
    harness_version: str = "taolive_v1",
) -> list[Case]:
    """``n`` cases from simulated rooms of ``split`` (module docstring).

    Args:
      split: one of SPLITS (decides the catalogs' brand pool).
      seed: the dataset seed.
      n: how many cases.
      messages_per_room: cases taken from each room's stream.
      intent_mix, lang_mix: viewer mixes (default: ``sim.viewers`` defaults).
      steps, dt: the stream's length in steps and seconds per step.
      arrival_rate: viewer messages per second.
      switch_p: per-step probability that the host features another link.
      harness_version: recorded in each snapshot (the harness in force).
    """
    if n < 0 or messages_per_room < 1 or steps < 1:
        raise ValueError(f"need n >= 0, messages_per_room >= 1, steps >= 1: {n}")
    imix = mix_vector(intent_mix or DEFAULT_INTENT_MIX, INTENTS)
    lmix = mix_vector(lang_mix or DEFAULT_LANG_MIX, LANGS)
    cases: list[Case] = []
    start = 0
    while len(cases) < n:
        need = -(-(n - len(cases)) // messages_per_room)
        count = min(ROOM_CHUNK, need)
        seeds = room_seeds(split, seed, start + count)[start:]
        rooms = []
        for i, s in zip(range(start, start + count), seeds):
            rng = np.random.default_rng([SPLITS.index(split), int(seed), i, 1])
            rooms.append(_Room(i, f"{split}-{seed}-{i}", make_catalog(split, s), rng))
        pad = rooms + [rooms[0]] * (ROOM_CHUNK - count)  # one compiled shape
        params = R.make_params(
            [r.catalog for r in pad],
            max_links=max(MAX_LINKS, *(len(r.catalog.products) for r in pad)),
            arrival_rate=arrival_rate,
            intent_mix=imix,
            lang_mix=lmix,
            dt=dt,
            max_new=MAX_NEW,
        )
        features = np.full((steps, ROOM_CHUNK), -1, np.int32)
        for r, room in enumerate(rooms):
            links = room.rng.integers(1, len(room.catalog.products) + 1, steps)
            features[:, r] = np.where(room.rng.random(steps) < switch_p, links, -1)
        words = np.asarray(seeds + [0] * (ROOM_CHUNK - count), np.uint32)
        keys = jax.vmap(jax.random.key)(jnp.asarray(words))
        out = jax.device_get(_stream(keys, params, jnp.asarray(features)))
        params = jax.device_get(params)
        before = len(cases)
        for r, room in enumerate(rooms):
            cases += _room_cases(
                room, r, out, params, messages_per_room, harness_version
            )
        if len(cases) == before:
            raise ValueError("the rooms received no messages: raise arrival_rate")
        start += count
    return cases[:n]


# --- Trajectories -------------------------------------------------------------------
def _catalog_meta(catalog: Catalog) -> dict[str, Any]:
    return {
        "split": catalog.split,
        "seed": catalog.seed,
        "skus": [p.sku_id for p in catalog.products],
        "brands": sorted({p.brand for p in catalog.products}),
    }


def fault_config(rate: float | FaultConfig | None) -> FaultConfig | None:
    """A FaultConfig from a total per-call rate split evenly over the kinds."""
    if rate is None or isinstance(rate, FaultConfig):
        return rate
    third = float(rate) / 3
    return FaultConfig(timeout=third, malformed=third, permission_denied=third)


def generate(
    harness: Harness,
    cases: Sequence[Case],
    *,
    mapping: HarnessMapping | None = None,
    faults: FaultConfig | float | None = None,
    seed: int = 0,
    batch_size: int = 256,
    reasoning: bool = True,
    progress: Callable[[int], Any] | None = None,
    compact_results: bool = False,
    reply_plan: bool = False,
    slips: float = 0.0,
    skills_first: bool = False,
    plan_first: bool = False,
) -> list[Trajectory]:
    """Oracle trajectories for ``cases`` under ``harness``, in order.

    Args:
      harness: the harness in force.
      cases: from :func:`make_cases`.
      mapping: taolive_v1 -> ``harness`` (``sim.oracle.gold_trajectories``).
      faults: injected tool-fault rates, or one total rate split evenly.
      seed: the fault seed.
      batch_size: cases per agent-loop batch (the output does not depend on it).
      reasoning: write the oracle's ``<think>`` lines.
      progress: called with the number of cases done after each batch.
      compact_results: tools return only the fields a reply needs.
      reply_plan: the reasoning before each reply names what it says
        (``sim.oracle.reply_plan``).
      slips: the share of cases whose first reply quotes wrong numbers that
        the hooks reject before the gold reply (``sim.oracle_slips``).
      skills_first: load the skills before the tool calls
        (``sim.oracle.OraclePolicy``).
      plan_first: name the reply plan in the turn's first reasoning too
        (``sim.oracle.OraclePolicy``; needs ``reply_plan``).

    Each trajectory's meta holds the oracle's records (``sim.oracle.annotate``)
    and ``catalog``: its split, seed, SKU ids and brands.
    """
    out: list[Trajectory] = []
    for lo in range(0, len(cases), batch_size):
        batch = cases[lo : lo + batch_size]
        trajs = gold_trajectories(
            batch,
            harness,
            mapping=mapping,
            faults=fault_config(faults),
            seed=seed,
            reasoning=reasoning,
            compact_results=compact_results,
            reply_plan=reply_plan,
            slips=slips,
            skills_first=skills_first,
            plan_first=plan_first,
        )
        for case, traj in zip(batch, trajs):
            traj.meta["catalog"] = _catalog_meta(case.snapshot.catalog)
        out += trajs
        if progress is not None:
            progress(len(batch))
    return out


def _dataset_row(traj: Trajectory) -> dict[str, Any]:
    d = traj.to_dict()
    d["timings"] = {}
    return d


def dataset_line(traj: Trajectory) -> str:
    """One trajectory as a dataset line (``Trajectory.to_json`` with ``timings``
    emptied)."""
    return json.dumps(_dataset_row(traj), ensure_ascii=False)


def write_dataset(trajs: Iterable[Trajectory], path: str | Path) -> int:
    """Writes trajectories as JSONL (byte-identical for equal inputs); returns the
    number of lines.

    The file appears only once complete: a trajectory that does not encode (a
    lone surrogate from the harness text, say) raises ``DataError`` naming its
    line, and nothing is written.
    """
    return write_jsonl_atomic(path, (_dataset_row(t) for t in trajs))


def read_dataset(path: str | Path) -> list[Trajectory]:
    """The trajectories of a dataset file, with the ``meta`` fields the checks
    and reports below read checked too.

    Raises:
      DataError: ``path:line: what was wrong``.
    """
    trajs = read_jsonl(path)
    for t in trajs:
        _check_meta(t)
    return trajs


def _check_meta(traj: Trajectory) -> None:
    """``meta.message``, ``meta.catalog`` and ``meta.hsa`` as ``summarize`` and
    ``assert_disjoint`` use them (each may be absent)."""
    where = traj.where or "trajectory"

    def opt(obj, key, kinds, label):
        kinds = (*kinds, type(None))
        return field(obj or {}, key, where, kinds, default=None, label=label)

    def strings(values, label):
        if not all(isinstance(v, str) for v in values):
            raise DataError(f"{where}: field '{label}' must hold only strings")

    msg = opt(traj.meta, "message", (dict,), "meta.message")
    for key in ("intent", "lang"):
        opt(msg, key, (str,), f"meta.message.{key}")
    cat = opt(traj.meta, "catalog", (dict,), "meta.catalog")
    for key in ("skus", "brands"):
        label = f"meta.catalog.{key}"
        strings(opt(cat, key, (list,), label) or (), label)
    hsa = opt(traj.meta, "hsa", (dict,), "meta.hsa")
    mapping = opt(hsa, "mapping", (dict,), "meta.hsa.mapping")
    if mapping:
        for key in ("tools", "skills"):
            table = opt(mapping, key, (dict,), f"meta.hsa.mapping.{key}") or {}
            strings(table.values(), f"meta.hsa.mapping.{key}")
        try:
            HarnessMapping.from_dict(mapping)
        except (TypeError, ValueError, AttributeError) as e:
            raise DataError(
                f"{where}: field 'meta.hsa.mapping' is not a harness mapping ({e})"
            ) from None


# --- Checks and reports -------------------------------------------------------------
def _keys(traj: Trajectory) -> dict[str, set[str]]:
    cat = traj.meta.get("catalog") or {}
    return {
        "catalog_id": {str(traj.meta.get("catalog_id"))},
        "room_id": {str(traj.meta.get("room_id"))},
        "sku": set(cat.get("skus", ())),
        "brand": set(cat.get("brands", ())),
    }


def assert_disjoint(*paths: str | Path) -> dict[str, int]:
    """Checks that dataset files share no catalog, SKU, brand or room.

    Returns the number of distinct catalogs per file.

    Raises:
      AssertionError: naming the two files and what they share.
    """
    seen = []
    for path in paths:
        keys: dict[str, set[str]] = collections.defaultdict(set)
        for traj in read_dataset(path):
            for name, values in _keys(traj).items():
                keys[name] |= values
        seen.append((str(path), keys))
    for i, (pa, ka) in enumerate(seen):
        for pb, kb in seen[i + 1 :]:
            for name in ka:
                shared = ka[name] & kb[name]
                assert not shared, f"{pa} and {pb} share {name}s {sorted(shared)[:5]}"
    return {p: len(k["catalog_id"]) for p, k in seen}


def _shares(counter: collections.Counter, names: Sequence[str], n: int) -> dict:
    return {k: round(counter[k] / max(n, 1), 4) for k in names}


def _base_names(traj: Trajectory) -> HarnessMapping | None:
    hsa = traj.meta.get("hsa") or {}
    return HarnessMapping.from_dict(hsa["mapping"]) if hsa.get("mapping") else None


def summarize(trajs: Sequence[Trajectory]) -> dict[str, Any]:
    """Mixes and counts of a set of trajectories (what ``hat sim report`` prints).

    Keys: n; intent, lang (shares); status, faults, tools, skills (counts; an
    augmented trajectory's tools and skills under the base harness's names, read
    back through ``meta["hsa"]["mapping"]``); tool_calls_mean, skill_loads_mean;
    hsa (how many carry an augmentation).
    """
    n = len(trajs)
    intents, langs, status = (collections.Counter() for _ in range(3))
    faults, tools, skills = (collections.Counter() for _ in range(3))
    n_tools = n_skills = hsa = 0
    for t in trajs:
        msg = t.meta.get("message") or {}
        intents[msg.get("intent")] += 1
        langs[msg.get("lang")] += 1
        status[t.status] += 1
        back = _base_names(t)
        hsa += back is not None
        for ex in t.tool_calls:
            if ex.fault:
                faults[ex.fault] += 1
            if ex.name == LOAD_SKILL:
                n_skills += 1
                name = str(ex.arguments.get("name"))
                skills[back.inverse_skill(name) if back else name] += 1
            else:
                n_tools += 1
                tools[back.inverse_tool(ex.name) if back else ex.name] += 1
    return {
        "n": n,
        "intent": _shares(intents, INTENTS, n),
        "lang": _shares(langs, LANGS, n),
        "status": dict(sorted(status.items())),
        "faults": dict(sorted(faults.items())),
        "tool_calls_mean": round(n_tools / max(n, 1), 3),
        "skill_loads_mean": round(n_skills / max(n, 1), 3),
        "tools": dict(tools.most_common()),
        "skills": dict(skills.most_common()),
        "hsa": hsa,
    }


def report(path: str | Path) -> dict[str, Any]:
    """:func:`summarize` of a dataset file, plus its size (lines, bytes).

    Raises:
      DataError: ``path:line: what was wrong`` for a bad line, or an empty file.
    """
    path = Path(path)
    trajs = read_dataset(path)
    return {**summarize(trajs), "lines": len(trajs), "bytes": path.stat().st_size}
