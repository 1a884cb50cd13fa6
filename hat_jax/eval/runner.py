"""The case runner: cases → policy (agent loop or plain chat) → judges → records.

Suites (``experiments/suites``) supply the cases, a rollout and a judge; this
module knows nothing of the simulator. A run:

1. splits the case list into fixed batches of ``batch_size`` by position, so a
   batch's members depend only on the list (``--limit`` takes a prefix, and a
   prefix keeps the batches of the full list);
2. skips every batch whose cases all have records (``RecordWriter.done``); a
   batch with some records (a kill during its writes) runs again whole, so its
   conversations are batched exactly as before, and only the missing records
   are written;
3. rolls the batch out (one ``run_turns`` for agent cases, one
   ``policy.generate`` for chat cases) with seed ``seed * 1_000_003 + batch``,
   judges it, and appends one record per case, flushed at once.

An interrupted run, restarted with the same arguments, therefore writes the
records an uninterrupted run would have, and the summary (computed from the
records alone, ``hat_jax.eval.summary``) is the same.

``policy_for(batch)`` returns the policy for a batch: the same model for every
batch, or a reference policy built from the batch's cases (the simulator's
oracle needs them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from tqdm import tqdm

from hat_jax.eval.records import Record, RecordWriter
from hat_jax.harness import (
    Policy,
    ToolBackend,
    Trajectory,
    TurnRequest,
    run_turns,
    strip_reasoning,
)

BATCH_SEED_STRIDE = 1_000_003  # batch seeds: seed * stride + batch index
CHAT_HARNESS = "chat"  # the harness id recorded for chat-only cases


class Scored(Protocol):
    """One judge's verdict (``sim.rewards.Score`` and the like)."""

    value: float
    rationale: str


@dataclasses.dataclass(frozen=True)
class EvalCase:
    """One case of a suite.

    Attributes:
      case_id: unique within the suite and stable: a function of (suite, seed,
        index), so records from an earlier run can be matched.
      request: an agent turn (``request.harness`` is the harness in force).
      messages: a chat-only case instead: the conversation to complete.
      tags: what the summary breaks results down by (intent, lang, kind...).
      input: a JSON-able description of the case, written into its record.
      payload: the suite's own data for its judge and reference policy (never
        written).
    """

    case_id: str
    request: TurnRequest | None = None
    messages: tuple[Mapping[str, Any], ...] | None = None
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)
    input: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    payload: Any = None


# (batch, policy, seed) -> one Trajectory per case, in order
Rollout = Callable[[Sequence[EvalCase], Policy, int], list[Trajectory]]
# (batch, trajectories) -> per case, judge name -> verdict
Judge = Callable[[Sequence[EvalCase], Sequence[Trajectory]], list[Mapping[str, Scored]]]
PolicyFor = Callable[[Sequence[EvalCase]], Policy]


def same_policy(policy: Policy) -> PolicyFor:
    """``policy_for`` that returns one policy for every batch."""
    return lambda batch: policy


def agent_rollout(backend: ToolBackend) -> Rollout:
    """Agent cases through ``run_turns`` with ``backend`` running the tools."""

    def rollout(batch: Sequence[EvalCase], policy: Policy, seed: int):
        requests = [c.request for c in batch]
        if any(r is None or r.harness is None for r in requests):
            raise ValueError("agent cases need a request with its harness")
        return run_turns(requests[0].harness, requests, policy, backend, seed=seed)

    return rollout


def chat_rollout(batch: Sequence[EvalCase], policy: Policy, seed: int):
    """Chat-only cases: one ``policy.generate`` call, no harness, no tools."""
    convs = [[dict(m) for m in c.messages or ()] for c in batch]
    outs = policy.generate(convs, seed=seed)
    trajs = []
    for conv, out in zip(convs, outs):
        user = next((m["content"] for m in conv if m.get("role") == "user"), "")
        reply = strip_reasoning(out.text)
        messages = conv + [{"role": "assistant", "content": out.text}]
        meta = {"finish_reason": out.finish_reason}
        if out.tokens is not None:
            meta["generated_tokens"] = len(out.tokens)
        trajs.append(
            Trajectory(
                CHAT_HARNESS, user, messages, reply=reply, status="ok", meta=meta
            )
        )
    return trajs


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return False
    return True


def trajectory_record(traj: Trajectory) -> dict[str, Any]:
    """A trajectory as written into a record: live objects and per-token
    generations dropped from ``meta`` (the number of sampled tokens kept)."""
    meta = {k: v for k, v in traj.meta.items() if k != "generations" and _jsonable(v)}
    gens = traj.meta.get("generations")
    if gens:
        meta["generated_tokens"] = sum(len(g.get("tokens") or ()) for g in gens)
    return dataclasses.replace(traj, meta=meta).to_dict()


def make_record(
    suite: str, case: EvalCase, traj: Trajectory, scores: Mapping[str, Scored]
) -> Record:
    """One case's record (``hat_jax.eval.records`` lists the fields)."""
    return {
        "id": case.case_id,
        "suite": suite,
        "harness": traj.harness_id,
        "input": dict(case.input),
        "tags": dict(case.tags),
        "trajectory": trajectory_record(traj),
        "scores": {k: float(s.value) for k, s in scores.items()},
        "rationales": {k: str(s.rationale) for k, s in scores.items()},
    }


def batches(n: int, batch_size: int) -> list[range]:
    """The fixed batches of positions ``0..n-1``."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return [range(lo, min(lo + batch_size, n)) for lo in range(0, n, batch_size)]


def run_cases(
    suite: str,
    cases: Sequence[EvalCase],
    *,
    policy_for: PolicyFor,
    rollout: Rollout,
    judge: Judge,
    writer: RecordWriter,
    batch_size: int = 32,
    seed: int = 0,
    progress: bool = True,
) -> int:
    """Runs the cases that have no record yet (module docstring).

    Returns:
      The number of records written by this call.
    """
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        raise ValueError(f"suite {suite}: case ids are not unique")
    written = 0
    with tqdm(
        total=len(cases), desc=suite, unit="case", disable=not progress or None
    ) as bar:
        for k, span in enumerate(batches(len(cases), batch_size)):
            batch = [cases[i] for i in span]
            if all(c.case_id in writer.done for c in batch):
                bar.update(len(batch))
                continue
            trajs = rollout(batch, policy_for(batch), seed * BATCH_SEED_STRIDE + k)
            verdicts = judge(batch, trajs)
            for case, traj, scores in zip(batch, trajs, verdicts, strict=True):
                if case.case_id not in writer.done:
                    writer.write(make_record(suite, case, traj, scores))
                    written += 1
            bar.update(len(batch))
    return written
