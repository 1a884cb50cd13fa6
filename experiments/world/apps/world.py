"""The generalist base world: episodes in generated apps, as training data.

Episode ``i`` of seed ``s`` is a fixed function of ``(s, i)``: a domain, a
fresh app around it (:func:`~experiments.world.apps.app.draw_app`) and a user
message (:func:`~experiments.world.apps.episode.draw_episode`). Its gold turn
is played by :class:`~experiments.world.apps.teacher.AppTeacher` through the
real agent loop (``hat_jax.harness.run_turns``: the same renderer, hooks and
tool-call parsing as taolive) against :class:`AppBackend` with injected faults,
so what is trained is what the loop shows a model, rendered in whichever
format the app's harness uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments.world.apps import domains
from experiments.world.apps.app import SIZES, draw_app, pick
from experiments.world.apps.episode import Episode, draw_episode
from experiments.world.apps.teacher import EPISODE_KEY, AppBackend, AppTeacher
from hat_jax.harness import Trajectory, TurnRequest, run_turns

APPS_STREAM = 113  # keeps app draws apart from other uses of the seed
FAULT_RATE = 0.06  # per tool call (taolive's simulator: a few percent)


def episode(seed: int, index: int, *, size: str = "full") -> Episode:
    """Episode ``index`` of ``seed`` in an app of ``size`` (each size its own
    stream)."""
    rng = np.random.default_rng([seed, APPS_STREAM, SIZES.index(size), index])
    domain = pick(rng, domains.DOMAINS)
    return draw_episode(rng, draw_app(rng, domain, size=size))


def episode_meta(ep: Episode) -> dict:
    """What a trajectory's meta records of its episode."""
    return {
        "domain": ep.app.domain.key,
        "intent": ep.intent,
        "lang": ep.lang,
        "format": ep.app.harness.layout.format,
        "size": ep.app.size,
    }


def gold_turn(seed: int, index: int, *, size: str = "full") -> Trajectory:
    """The gold trajectory of one episode (its loop seeded by ``(seed, index)``)."""
    ep = episode(seed, index, size=size)
    traj = play([ep], seed=seed * 1_000_003 + index)[0]
    traj.meta = {**traj.meta, **episode_meta(ep)}
    traj.timings = {}  # the teacher's wall times: not data (files stay byte-equal)
    return traj


def play(
    episodes: Sequence[Episode], *, seed: int = 0, fault_rate: float = FAULT_RATE
) -> list[Trajectory]:
    """The teacher's gold turns for ``episodes`` (``seed``: the loop's)."""
    backend = AppBackend(episodes, fault_rate=fault_rate)
    teacher = AppTeacher(episodes)
    requests = [
        TurnRequest(
            ep.message,
            room_context=ep.context,
            meta={EPISODE_KEY: i},
            harness=ep.app.harness,
        )
        for i, ep in enumerate(episodes)
    ]
    return run_turns(episodes[0].app.harness, requests, teacher, backend, seed=seed)
