"""The complete-agent latency replay: a trace through the agent loop, measured.

:func:`replay` runs a trace once per concurrency level against one backend,
chosen by name in ``BACKENDS``: ``embedded`` (our JAX sampler, virtual clock,
batched model calls; see ``serving.schedule``) or ``endpoint`` (an
OpenAI-compatible server on the wall clock, spec-decode counters from its
``/metrics``). It writes, under ``out``:

- ``replay.json``: per concurrency level the summary (``serving.metrics``),
  every turn's record and ``spec_errors`` (why the endpoint's counters could
  not be read: the level is then reported without them);
- ``replay.md``: the Markdown table and its notes;
- ``latency_cdf.png``: the latency CDF of the answered turns per concurrency
  level.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hat_jax.endpoint import PolicyError, api_key_from_env
from hat_jax.jsonl import write_text_atomic
from hat_jax.printable import shown
from serving import cpuload, metrics, prom, repeats
from serving.cases import Job
from serving.policies import embedded_policy, endpoint_policy, served_model
from serving.schedule import TurnRecord, run_real, run_virtual
from serving.toollatency import ToolLatency


@dataclasses.dataclass(frozen=True)
class ReplayOptions:
    """How to replay.

    Attributes:
      max_new_tokens: per model call.
      mtp_k: drafts per step for the embedded sampler (0: no MTP).
      timeout_s: per model call (endpoint); a slower turn is an error.
      time_scale: arrival times are divided by it (endpoint only).
      label: the backend's name in the table.
      api_key_env: endpoint: the environment variable holding the API key
        (None: ``HAT_API_KEY`` if set); the name is kept, never the key.
      prefix_reuse: embedded: each call reuses the cache of the prefix it
        shares with the previous call (as vLLM's prefix caching; with MTP the
        trunk's and the MTP layer's, attention-only models only).
      closed_loop: ``concurrency`` clients each send their next message when
        the last is answered (the trace's times unused; ``serving.schedule``).
      tool_latency_ms, tool_latency_sigma: a modelled delay per backend tool
        call, lognormal with this median and log-sd (``serving.toollatency``);
        0 ms: none (the simulator's tools answer at once).
      repeats: how many times each level is replayed; its summary is the
        median over them, with [min, max] intervals (``serving.repeats``).
    """

    max_new_tokens: int = 128
    mtp_k: int = 0
    timeout_s: float = 60.0
    time_scale: float = 1.0
    label: str = ""
    api_key_env: str | None = None
    prefix_reuse: bool = True
    closed_loop: bool = False
    tool_latency_ms: float = 0.0
    tool_latency_sigma: float = 0.0
    repeats: int = 1

    def __post_init__(self):
        if self.max_new_tokens < 1 or self.mtp_k < 0 or self.repeats < 1:
            raise ValueError(
                f"need max_new_tokens >= 1, mtp_k >= 0 and repeats >= 1, got "
                f"{self.max_new_tokens}, {self.mtp_k} and {self.repeats}"
            )
        for name in ("timeout_s", "time_scale"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        self.tool_latency()  # its own range checks

    def tool_latency(self) -> ToolLatency | None:
        """The modelled tool latency, or None when there is none."""
        if self.tool_latency_ms == 0:
            return None
        return ToolLatency(self.tool_latency_ms / 1000, self.tool_latency_sigma)


def _embedded(target, opts: ReplayOptions):
    """(policy, runner, spec reader) for a JAX model (workdir / HF folder / model)."""
    if isinstance(target, tuple):  # (model, tokenizer), as tests build them
        model, tokenizer = target
    else:
        from hat_jax.eval.backends import load_jax_model

        model, tokenizer = load_jax_model(str(target))
    k = opts.mtp_k if getattr(model, "mtp", None) is not None else 0
    if opts.mtp_k and not k:
        print(f"note: {target} has no MTP head; decoding without drafts")
    policy = embedded_policy(
        model,
        tokenizer,
        max_new_tokens=opts.max_new_tokens,
        mtp_k=k,
        prefix_reuse=opts.prefix_reuse,
    )

    def runner(jobs, backend, concurrency):
        policy.sampler.forget()  # every level and repeat starts with no kept cache
        return run_virtual(
            jobs,
            policy,
            backend,
            concurrency=concurrency,
            closed=opts.closed_loop,
            tool_latency=opts.tool_latency(),
        )

    return policy, runner, None


def _endpoint(url: str, opts: ReplayOptions):
    key = api_key_from_env(opts.api_key_env)
    policy = endpoint_policy(
        url,
        served_model(url, api_key=key),
        max_new_tokens=opts.max_new_tokens,
        timeout_s=opts.timeout_s,
        api_key=key,
    )

    def runner(jobs, backend, concurrency):
        return run_real(
            jobs,
            policy,
            backend,
            concurrency=concurrency,
            time_scale=opts.time_scale,
            closed=opts.closed_loop,
            tool_latency=opts.tool_latency(),
        )

    return policy, runner, lambda: prom.read_spec(url)


# name -> (target, options) -> (policy, runner, spec reader or None)
BACKENDS: dict[str, Callable[..., tuple]] = {
    "embedded": _embedded,
    "endpoint": _endpoint,
}


def _noted(errors: list[str], fails: type, read: Callable[..., Any], *args) -> Any:
    """``read(*args)``; when it raises ``fails`` (a lying /metrics page, counters
    that cannot be), None, with the reason in ``errors`` and on stderr."""
    try:
        return read(*args)
    except fails as e:
        errors.append(str(e))
        print(f"note: no spec-decode counters: {shown(e)}", file=sys.stderr)
        return None


def _records(records: Sequence[TurnRecord]) -> list[dict[str, Any]]:
    """One repeat's turns as JSON; each call carries ``call``, its index in the
    repeat's `metrics.unique_calls`: a batched call appears in every turn it
    served with one index, so sum over distinct (``repeat``, ``call``) pairs,
    not over turns."""
    index = {id(c): i for i, c in enumerate(metrics.unique_calls(records))}
    out = []
    for r in records:
        d = dataclasses.asdict(r)
        d.update(latency=r.latency, queue_s=r.queue_s)
        for c, row in zip(r.calls, d["calls"]):
            row["call"] = index[id(c)]
        out.append(d)
    return out


def _one_repeat(runner, read_spec, jobs, tools, c, spec_errors):
    """One pass of the trace at concurrency ``c``: (records, spec counts or
    None, cores other processes used meanwhile)."""
    read = read_spec or (lambda: None)
    before = _noted(spec_errors, PolicyError, read)
    cpu0 = cpuload.snapshot()
    records = runner(jobs, tools, c)
    busy = cpuload.foreign_cores(cpu0, cpuload.snapshot())
    after = _noted(spec_errors, PolicyError, read)
    spec = _noted(spec_errors, ValueError, prom.spec_delta, before, after)
    return records, spec, busy


def _print_repeat(label, c, rep, n, records, s, busy) -> None:
    lat = s["latency_s"]
    which = f" repeat {rep + 1}/{n}" if n > 1 else ""
    other = "" if busy is None else f", other processes {busy:.2f} cores"
    print(
        f"[{label} c={c}{which}] {len(records)} msgs, {s['answered']}/"
        f"{len(records)} answered, P50 {lat['p50']:.3f}s P95 {lat['p95']:.3f}s "
        f"(answered) errors {s['errors']} timeouts {s['timeouts']}, "
        f"{s['new_tokens']} new tokens, mean batch {s['mean_batch']:.2f}{other}"
    )


def replay(
    jobs: Sequence[Job],
    backend_kind: str,
    target: Any,
    out: str | Path,
    *,
    concurrency: Sequence[int] = (1,),
    opts: ReplayOptions = ReplayOptions(),
    tool_backend=None,
) -> dict[str, Any]:
    """Replays ``jobs`` at each concurrency level; writes and returns the results."""
    from sim.tools import SimBackend

    if backend_kind not in BACKENDS:
        raise ValueError(f"unknown backend {backend_kind!r}; have {sorted(BACKENDS)}")
    if not concurrency or min(concurrency) < 1:
        raise ValueError(f"concurrency levels must be >= 1, got {list(concurrency)}")
    _, runner, read_spec = BACKENDS[backend_kind](target, opts)
    tools = tool_backend or SimBackend(None, seed=0)
    label = opts.label or backend_kind + (f" mtp{opts.mtp_k}" if opts.mtp_k else "")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs, rows, curves = [], [], {}
    for c in concurrency:
        spec_errors: list[str] = []
        summaries, foreign, turns, pooled = [], [], [], []
        spec_all = []
        for rep in range(opts.repeats):
            records, spec, busy = _one_repeat(runner, read_spec, jobs, tools, c,
                                              spec_errors)  # fmt: skip
            summaries.append(metrics.summarize(records, spec))
            foreign.append(busy)
            spec_all.append(spec)
            turns += [{**t, "repeat": rep} for t in _records(records)]
            pooled += metrics.answered_latencies(records)
            _print_repeat(label, c, rep, opts.repeats, records, summaries[-1], busy)
        summary = repeats.combine(summaries, foreign)
        runs.append(
            {
                "concurrency": c,
                "summary": summary,
                "spec_counters": spec_all,  # per repeat
                "spec_errors": spec_errors,
                "turns": turns,
            }
        )
        rows.append(metrics.table_row(label, c, summary))
        ok = f"{summary['answered']}/{summary['messages']} answered"
        times = f", {opts.repeats} repeats" if opts.repeats > 1 else ""
        curves[f"{label} c={c} ({ok}{times})"] = pooled
    result = {
        "backend": backend_kind,
        "target": str(target) if not isinstance(target, tuple) else "<in-memory>",
        "options": dataclasses.asdict(opts),
        "clock": "virtual" if backend_kind == "embedded" else "wall",
        "runs": runs,
    }
    write_text_atomic(out / "replay.json", json.dumps(result, indent=1, default=float))
    lat = opts.tool_latency()
    workload = (
        "Arrivals: "
        + ("closed loop (each client sends when answered)" if opts.closed_loop
           else "the trace's times (open loop)")
        + "; tool calls: "
        + (f"modelled lognormal latency, median {lat.median_s * 1000:g} ms, "
           f"sigma {lat.sigma:g}" if lat else "simulator, no modelled latency")
        + ".\n\n"
    )  # fmt: skip
    write_text_atomic(out / "replay.md", workload + metrics.markdown_table(rows))
    metrics.plot_cdf(curves, out / "latency_cdf.png")
    return result
