"""Running a trace's turns at their arrival times: a virtual or a real clock.

Each turn is ``hat_jax.harness.run_turn`` (the full agent loop: input hooks,
model calls, tools, reply hooks, retries) in its own thread, with a per-turn
proxy policy that records every model call. ``concurrency`` is how many turns
are in flight; a message that arrives while all slots are busy waits (FIFO),
and that wait is part of its latency.

- :func:`run_virtual` (the embedded backend). On CPU the model is far slower
  than real time, so the clock is virtual: model calls are run for real and
  their measured wall time advances the clock; host work between calls
  (prompt rendering, hooks, tools) is charged with the thread's CPU time.
  The in-flight turns' model calls are batched: when every in-flight turn is
  waiting on the model, the calls whose turn was ready by the batch's start
  time run as one ``generate`` (call-level batching: a call that becomes
  ready while a batch runs waits for the next batch; vLLM's continuous
  batching would let it join at the next token).
- :func:`run_real` (an endpoint). Wall clock; the dispatcher sleeps until each
  arrival (``time_scale`` compresses the trace), and in-flight turns call the
  endpoint from their own threads (the server batches).

Arrivals: the trace's times (open loop), or ``closed=True``: a fixed number of
clients (``concurrency``), each sending its next message when its last one is
answered, as ``vllm bench serve --max-concurrency`` with every request ready at
once; a message's arrival is then when a client sends it (no queueing).

``tool_latency`` (``serving.toollatency``) charges every backend tool call a
modelled delay (counted in ``tools_s`` and ``tool_delay_s``).

A turn whose model call raises is recorded with status ``"error"`` (or
``"timeout"``) and its message; nothing stops the replay.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import heapq
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from hat_jax.harness import run_turn
from serving.cases import Job
from serving.policies import CallStats, PolicyTimeout
from serving.toollatency import TimedBackend, ToolLatency


@dataclasses.dataclass
class TurnRecord:
    """One replayed message. Times in seconds on the replay's clock."""

    index: int
    session: str
    arrival: float
    start: float = 0.0  # when a slot took it
    end: float = 0.0
    status: str = "error"  # ok | failed | turn_limit | error | timeout
    error: str | None = None
    reply: str | None = None
    model_s: float = 0.0  # waiting on model calls (batching wait included)
    tools_s: float = 0.0
    hooks_s: float = 0.0
    first_token: float | None = None  # clock time of the turn's first token
    tool_calls: int = 0  # backend tool calls (load_skill is the loop's own)
    tool_delay_s: float = 0.0  # their modelled latency, inside tools_s
    calls: list[CallStats] = dataclasses.field(default_factory=list)

    @property
    def latency(self) -> float:
        return self.end - self.arrival

    @property
    def queue_s(self) -> float:
        return self.start - self.arrival


def _finish_ok(rec: TurnRecord, traj, *, virtual: bool) -> None:
    """The turn's outcome. On the virtual clock the modelled tool delays were
    charged, not slept, so they join the harness's measured tool time; on the
    wall clock the harness timed the sleeps already."""
    rec.status, rec.reply = traj.status, traj.reply
    rec.tools_s = traj.timings.get("tools", 0.0) + (rec.tool_delay_s if virtual else 0)
    rec.hooks_s = traj.timings.get("hooks", 0.0)


def _tools(backend, latency: ToolLatency | None, rec: TurnRecord, wait):
    """``backend`` with each call's modelled delay noted in ``rec`` and passed to
    ``wait`` (the virtual clock's charge, or a sleep); ``backend`` itself without."""
    if latency is None:
        return backend

    def charge(seconds: float) -> None:
        rec.tool_calls += 1
        rec.tool_delay_s += seconds
        wait(seconds)

    return TimedBackend(backend, latency, rec.index, charge)


def _closed(records: Sequence[TurnRecord]) -> None:
    """Closed loop: a message arrives when its client sends it (a slot took it)."""
    for r in records:
        r.arrival = r.start


def _fail(rec: TurnRecord, e: Exception) -> None:
    rec.status = "timeout" if isinstance(e, PolicyTimeout) else "error"
    rec.error = f"{type(e).__name__}: {e}"
    rec.tools_s = rec.tool_delay_s  # at least (the harness's timings went with it)


# ---------------------------------------------------------------- virtual clock
@dataclasses.dataclass
class _Pending:
    convs: list
    fmt: Any
    ready: float
    result: tuple | None = None  # (outputs, stats, done) or (exc, None, done)


class _VirtualTurn:
    """One turn's thread state and the proxy policy its agent loop calls."""

    def __init__(self, sched: _Virtual, job: Job, rec: TurnRecord):
        self.sched, self.job, self.rec = sched, job, rec
        self.resume = rec.start  # clock time the host work resumed at
        self.cpu0 = 0.0
        self.delay = 0.0  # modelled tool seconds since the host work resumed

    def _wait(self, seconds: float) -> None:
        self.delay += seconds

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        host = time.thread_time() - self.cpu0 + self.delay
        self.delay = 0.0
        s = self.sched
        with s.cond:
            p = _Pending(list(conversations), fmt, self.resume + host)
            s.pending[self] = p
            s.host.discard(self)
            s.cond.notify_all()
            while p.result is None:
                s.cond.wait()
        outs, stats, done = p.result
        self.rec.model_s += done - p.ready
        self.resume, self.cpu0 = done, time.thread_time()
        if stats is None:
            raise outs
        self.rec.calls.append(stats)
        if self.rec.first_token is None:
            self.rec.first_token = done - stats.wall_s + min(stats.ttft_s)
        return outs

    def body(self) -> None:
        self.cpu0 = time.thread_time()
        s = self.sched
        tools = _tools(s.backend, s.tool_latency, self.rec, self._wait)
        try:
            traj = run_turn(self.job.harness, self.job.request, self, tools)
            _finish_ok(self.rec, traj, virtual=True)
        except Exception as e:  # counted per turn, never fatal
            _fail(self.rec, e)
        with self.sched.cond:
            host = time.thread_time() - self.cpu0 + self.delay
            self.rec.end = self.resume + host
            self.sched.host.discard(self)
            self.sched.finished.append(self)
            self.sched.cond.notify_all()


class _Virtual:
    def __init__(self, policy, backend, concurrency: int, tool_latency=None):
        self.policy, self.backend = policy, backend
        self.tool_latency = tool_latency
        self.cond = threading.Condition()
        self.host: set[_VirtualTurn] = set()  # turns running host code
        self.pending: dict[_VirtualTurn, _Pending] = {}
        self.finished: list[_VirtualTurn] = []
        self.free = [0.0] * concurrency  # heap: when each slot frees up

    def start(self, job: Job, rec: TurnRecord) -> None:
        rec.start = max(rec.arrival, heapq.heappop(self.free))
        turn = _VirtualTurn(self, job, rec)
        with self.cond:
            self.host.add(turn)
        threading.Thread(target=turn.body, daemon=True).start()

    def quiesce(self) -> None:
        with self.cond:
            while self.host:
                self.cond.wait()
            for turn in self.finished:
                heapq.heappush(self.free, turn.rec.end)
            self.finished.clear()

    def run_batch(self, at: float) -> float:
        batch = [(t, p) for t, p in self.pending.items() if p.ready <= at]
        convs = [c for _, p in batch for c in p.convs]
        fmts = [
            f for _, p in batch for f in (
                [p.fmt] * len(p.convs) if isinstance(p.fmt, str) else p.fmt)
        ]  # fmt: skip
        try:
            outs, stats = self.policy.generate_measured(convs, fmt=fmts)
            done = at + stats.wall_s
        except Exception as e:  # every turn in the batch sees the error
            outs, stats, done = e, None, at
        with self.cond:
            k = 0
            for turn, p in batch:
                n = len(p.convs)
                p.result = (
                    (outs[k : k + n], stats, done) if stats else (outs, None, done)
                )
                k += n
                del self.pending[turn]
                self.host.add(turn)
            self.cond.notify_all()
        return done


def run_virtual(
    jobs: Sequence[Job],
    policy,
    backend,
    *,
    concurrency: int,
    closed: bool = False,
    tool_latency: ToolLatency | None = None,
) -> list[TurnRecord]:
    """Replays ``jobs`` on a virtual clock (module docstring)."""
    s = _Virtual(policy, backend, concurrency, tool_latency)
    times = [0.0 if closed else j.t for j in jobs]
    records = [TurnRecord(j.index, j.message.session, t) for j, t in zip(jobs, times)]
    waiting: deque[int] = deque()
    now, nxt = 0.0, 0
    while True:
        while nxt < len(jobs) and times[nxt] <= now:
            waiting.append(nxt)
            nxt += 1
        while waiting and len(s.free) > 0:
            i = waiting.popleft()
            s.start(jobs[i], records[i])
        s.quiesce()
        if waiting and s.free:
            continue  # a turn finished and freed a slot
        if not s.pending:
            if nxt >= len(jobs) and not waiting:
                break
            now = max(now, times[nxt]) if nxt < len(jobs) else now
            continue
        at = max(now, min(p.ready for p in s.pending.values()))
        if nxt < len(jobs) and times[nxt] <= at and s.free:
            now = times[nxt]  # admit it first: it may join this batch
            continue
        now = s.run_batch(at)
    if closed:
        _closed(records)
    return records


# ------------------------------------------------------------------- real clock
class _RealTurn:
    def __init__(self, policy, rec: TurnRecord, t0: float):
        self.policy, self.rec, self.t0 = policy, rec, t0

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        t = time.perf_counter()
        try:
            outs, stats = self.policy.generate_measured(conversations, fmt=fmt)
        finally:
            self.rec.model_s += time.perf_counter() - t
        self.rec.calls.append(stats)
        if self.rec.first_token is None:
            self.rec.first_token = t - self.t0 + min(stats.ttft_s)
        return outs


def run_real(
    jobs: Sequence[Job],
    policy,
    backend,
    *,
    concurrency: int,
    time_scale: float = 1.0,
    closed: bool = False,
    tool_latency: ToolLatency | None = None,
) -> list[TurnRecord]:
    """Replays ``jobs`` on the wall clock against an endpoint (module docstring).

    Arrival times are divided by ``time_scale``; reported times are wall seconds.
    """
    times = [0.0 if closed else j.t / time_scale for j in jobs]
    records = [TurnRecord(j.index, j.message.session, t) for j, t in zip(jobs, times)]
    t0 = time.perf_counter()

    def one(job: Job, rec: TurnRecord) -> None:
        rec.start = time.perf_counter() - t0
        tools = _tools(backend, tool_latency, rec, time.sleep)
        try:
            traj = run_turn(job.harness, job.request, _RealTurn(policy, rec, t0), tools)
            _finish_ok(rec, traj, virtual=False)
        except Exception as e:  # counted per turn, never fatal
            _fail(rec, e)
        rec.end = time.perf_counter() - t0

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        futures = []
        for job, rec in zip(jobs, records):
            delay = rec.arrival - (time.perf_counter() - t0)
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(one, job, rec))
        concurrent.futures.wait(futures)
    if closed:
        _closed(records)
    return records
