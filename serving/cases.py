"""A trace's messages as agent-loop requests, with the simulator's rooms behind them.

The rooms are rebuilt from the trace header (``sim.datasets.make_cases``), each
message finds its case by id and is checked against the stored text, and each
request carries the room in ``meta`` for ``sim.tools.SimBackend`` (as
``sim.oracle.case_request`` does). Tools run without random faults.
"""

from __future__ import annotations

import dataclasses

from hat_jax.harness import Harness, TurnRequest, load_harness
from serving.trace import Message, Trace, TraceError
from sim.binding import bind
from sim.oracle import Case, case_request


@dataclasses.dataclass(frozen=True)
class Job:
    """One message to replay: when it arrives and the request it becomes."""

    index: int
    message: Message
    request: TurnRequest
    harness: Harness

    @property
    def t(self) -> float:
        return self.message.t


def trace_cases(trace: Trace) -> dict[str, Case]:
    """The simulator cases behind a trace's messages, by case id."""
    from sim.datasets import make_cases

    h = trace.header
    per_room = h["messages_per_room"]
    # The very cases make_trace drew: about n_messages of them, whatever the
    # number of session lines (read_trace holds per_room to n_messages / rooms).
    cases = make_cases(
        h["split"], h["seed"], per_room * h["rooms"], messages_per_room=per_room
    )
    return {c.case_id: c for c in cases}


def trace_jobs(
    trace: Trace, path: str = "<trace>", *, prompt_format: str | None = None
) -> list[Job]:
    """The trace's messages as :class:`Job` records, in arrival order
    (``prompt_format``: every session's harness rendered in it; None: its own).

    Raises:
      TraceError: a message's case is unknown to the simulator, or its text
        differs from what the simulator renders now.
    """
    by_id = trace_cases(trace)
    bindings = {}
    for s in trace.sessions:
        if s.harness not in bindings:
            harness = load_harness(s.harness).in_format(prompt_format)
            bindings[s.harness] = bind(harness)
    jobs = []
    for i, m in enumerate(trace.messages):
        case = by_id.get(m.case)
        if case is None:
            raise TraceError(path, 0, f"a simulator case for message {i}", m.case)
        if case.message.text != m.text:
            raise TraceError(
                path, 0, f"message {i} text {case.message.text!r} (simulator)", m.text
            )
        binding = bindings[trace.session(m.session).harness]
        jobs.append(Job(i, m, case_request(case, binding), binding.harness))
    return jobs
