"""Run the evaluation suites on a model, an endpoint or a reference policy.

Suites: t1 (Live-Stream QA, 2,000 cases), t2 (Harness-Variant QA, 1,000), t3
(Tool/Prompt Robustness, 1,200), edit (harness-edit test, 1,500 questions under
two harnesses), ifeval (541 prompts). Each case is rolled out through the agent
loop under its harness (plain chat for IFEval), judged, and written as one
record to OUT/SUITE/records.jsonl; OUT/summary.json and OUT/summary.md hold
the means with 95 % bootstrap intervals and the breakdowns (summary.json
also its "provenance": git SHA, command line, packages, devices, settings;
`hat_jax.provenance`). Run the same
command again to resume: cases with a record are skipped (a bigger --limit
extends a run). Decoding is greedy unless --temperature is set.

Examples:
  hat eval run --suite t1,t2,t3,edit,ifeval --model smollm2-135m-instruct \\
      --limit 20 --out runs/eval_smollm2
  hat eval run --suite t1,t2 --model runs/rl_tiny --out runs/eval_rl
  hat eval run --suite t1 --endpoint http://localhost:8000 --concurrency 16 \\
      --harness path/to/my_harness --out runs/eval_vllm
  OPENAI_API_KEY=... hat eval run --suite t1 --endpoint https://api.example.com \\
      --api-key-env OPENAI_API_KEY --served-model m --out runs/eval_api

An endpoint's API key is read from the environment, never from the command
line: HAT_API_KEY when set, or the variable named by --api-key-env. It is sent
only to the endpoint's own origin (redirects are refused).
  hat eval run --suite t1,t2,t3,edit --policy oracle --limit 50 --out /tmp/ref
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from experiments.suites import SuiteOptions, get_suite
from hat_jax import provenance
from hat_jax.cli.argtypes import count, finite, seed
from hat_jax.endpoint import API_KEY_ENV, api_key_from_env
from hat_jax.eval.backends import FIXED_SENTENCE, BackendOptions, make_policy
from hat_jax.eval.records import RecordWriter, check_run
from hat_jax.eval.runner import run_cases
from hat_jax.eval.summary import flat_metrics, summarize_suite, summary_markdown
from hat_jax.harness import PROMPT_FORMATS, load_harness

DEFAULT_SUITES = "t1,t2,t3,edit,ifeval"
SETS = ("t1", "t2", "t3", "ifeval")  # the paper's four evaluation sets
THINKING = {"auto": None, "on": True, "off": False}
REFERENCE_POLICIES = ("oracle", "fixed")
MAX_CONCURRENCY = 1024  # endpoint requests in flight (one thread each)


def add_arguments(p) -> None:
    p.add_argument(
        "--suite",
        default=DEFAULT_SUITES,
        help=f"comma-separated suites (default {DEFAULT_SUITES})",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="workdir, HF folder, .gguf or asset name (JAX)")
    src.add_argument("--endpoint", help="OpenAI-compatible server URL (vLLM)")
    src.add_argument(
        "--policy",
        choices=REFERENCE_POLICIES,
        help="a reference policy: the simulator's oracle, or one fixed sentence",
    )
    p.add_argument("--out", required=True, help="output folder (created; resumed)")
    p.add_argument(
        "--harness", default="taolive_v1", help="harness for t1-t3 (folder or name)"
    )
    p.add_argument(
        "--edit-harnesses",
        default="taolive_v1,taolive_d12",
        help="BEFORE,AFTER harnesses of the edit test",
    )
    p.add_argument(
        "--limit",
        type=parse_limits,
        help="the first N cases of each suite, or per suite: t1=300,t2=300,...",
    )
    p.add_argument(
        "--prompt-format",
        choices=PROMPT_FORMATS,
        help="render every harness's prompt in this format (default: its own)",
    )
    p.add_argument(
        "--compact-results",
        action="store_true",
        help="tools return only the fields a reply needs (sim/tools_compact.py)",
    )
    p.add_argument("--seed", type=seed, default=0, help="eval seed (default 0)")
    p.add_argument(
        "--batch-size",
        type=count(1),
        help="cases per batch (default: 8 with --model, whose memory grows with "
        "it, else 32)",
    )
    p.add_argument("--max-new-tokens", type=count(1), default=256)
    p.add_argument("--temperature", type=finite(0), default=0.0)
    p.add_argument("--thinking", choices=sorted(THINKING), default="auto")
    p.add_argument(
        "--concurrency",
        type=count(1, MAX_CONCURRENCY),
        default=8,
        help=f"endpoint requests in flight (1..{MAX_CONCURRENCY})",
    )
    p.add_argument("--served-model", help="endpoint model name (default: first)")
    p.add_argument(
        "--timeout",
        type=finite(0, open_low=True),
        default=120.0,
        help="endpoint: deadline of one request, its retries included (s)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help=f"environment variable holding the endpoint's API key (default "
        f"{API_KEY_ENV}, if set; the key itself never goes on the command line)",
    )
    p.add_argument(
        "--no-prefix-reuse",
        action="store_true",
        help="--model: prefill every prompt whole (default: each call reuses the "
        "cache of the prefix it shares with the previous call)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def parse_limits(text: str) -> dict[str, int] | int:
    """``--limit``: ``N`` for every suite, or ``name=N,...`` per suite."""
    try:
        if "=" not in text:
            limits: dict[str, int] | int = int(text)
            bad = limits < 1
        else:
            pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
            limits = {k.strip(): int(v) for k, v in pairs}
            bad = not limits or min(limits.values()) < 1
    except ValueError:
        bad = True
    if bad:
        raise argparse.ArgumentTypeError(
            f"expected a positive N or name=N,... with positive N, got {text!r}"
        )
    return limits


def suite_limit(limits: dict[str, int] | int | None, name: str, size: int) -> int:
    """The number of cases of suite ``name`` to run."""
    if isinstance(limits, dict):
        return min(limits.get(name, size), size)
    return size if limits is None else min(limits, size)


def _suites(text: str) -> list[str]:
    names = list(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    for name in names:
        get_suite(name)  # fails early on an unknown name
    if not names:
        raise ValueError("--suite names no suite")
    return names


def _config(args) -> dict:
    """What decides the records (checked when a run is resumed)."""
    return {
        "model": args.model,
        "endpoint": args.endpoint,
        "policy": args.policy,
        "served_model": args.served_model,
        "harness": args.harness,
        "edit_harnesses": args.edit_harnesses,
        "prompt_format": args.prompt_format,
        "compact_results": args.compact_results,
        "seed": args.seed,
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "thinking": args.thinking,
    }


class _Policies:
    """The policy of each batch; a model is loaded on first use only."""

    def __init__(self, args):
        self.args, self._policy = args, None

    def for_suite(self, suite):
        a = self.args
        if a.policy == "oracle":
            return suite.reference
        return lambda batch: self._get()

    def _get(self):
        if self._policy is None:
            a = self.args
            opts = BackendOptions(
                max_new_tokens=a.max_new_tokens,
                temperature=a.temperature,
                seed=a.seed,
                enable_thinking=THINKING[a.thinking],
                concurrency=a.concurrency,
                served_model=a.served_model,
                api_key_env=a.api_key_env,
                timeout_s=a.timeout,
                prefix_reuse=not a.no_prefix_reuse,
            )
            sources = (("jax", a.model), ("openai", a.endpoint))
            kind, target = next(
                ((k, t) for k, t in sources if t), ("fixed", FIXED_SENTENCE)
            )
            t0 = time.perf_counter()
            self._policy = make_policy(kind, target, opts)
            print(f"[{kind} backend {target}: {time.perf_counter() - t0:.1f}s]")
        return self._policy


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _totals(suites: dict) -> dict:
    sets = [n for n in SETS if n in suites]
    return {
        "sets": {n: {"run": suites[n]["n"], "full": suites[n]["size"]} for n in sets},
        "run": sum(suites[n]["n"] for n in sets),
        "full": sum(suites[n]["size"] or 0 for n in sets),
    }


def run(args) -> int:
    t0 = time.perf_counter()
    if args.batch_size is None:
        args.batch_size = 8 if args.model else 32
    names = _suites(args.suite)
    if args.api_key_env:
        if not args.endpoint:
            raise ValueError("--api-key-env is for --endpoint")
        api_key_from_env(args.api_key_env)  # fails now, not after the first batch
    if isinstance(args.limit, dict) and set(args.limit) - set(names):
        unknown = sorted(set(args.limit) - set(names))
        raise ValueError(f"--limit names suites not run: {unknown}")
    edit = tuple(h.strip() for h in args.edit_harnesses.split(","))
    if len(edit) != 2:
        raise ValueError(f"--edit-harnesses needs BEFORE,AFTER, got {edit}")
    harness = load_harness(args.harness).in_format(args.prompt_format)
    out = Path(args.out)
    check_run(out, _config(args))
    opts = SuiteOptions(
        harness,
        seed=args.seed,
        edit=edit,
        prompt_format=args.prompt_format,
        compact_results=args.compact_results,
    )
    policies = _Policies(args)
    summaries = {}
    for name in names:
        suite = get_suite(name)
        policy_for = policies.for_suite(suite)
        if policy_for is None:
            print(f"{name}: no {args.policy} policy for this suite; skipped")
            continue
        n = suite_limit(args.limit, name, suite.size)
        cases = suite.build(opts, n)
        with RecordWriter(out / name / "records.jsonl") as writer:
            run_cases(
                name,
                cases,
                policy_for=policy_for,
                rollout=suite.rollout(opts),
                judge=suite.judge,
                writer=writer,
                batch_size=args.batch_size,
                seed=args.seed,
                progress=not args.no_progress,
            )
            records = [writer.done[c.case_id] for c in cases]
        s = summarize_suite(
            records,
            metrics=suite.metrics,
            group_by=suite.group_by,
            size=suite.size * suite.cases_per_unit,
            weights=suite.weights,
        )
        if suite.extra is not None:
            s["extra"] = suite.extra(records)
        summaries[name] = {"title": suite.title, **s}
        print(_line(name, s))
    run_info = {
        "source": args.model or args.endpoint or f"policy:{args.policy}",
        "harness": harness.id,
        "edit": " -> ".join(edit),
        "seed": args.seed,
        "limit": args.limit,
    }
    totals = _totals(summaries)
    if totals["sets"]:
        sets = " + ".join(f"{k} {v['full']}" for k, v in totals["sets"].items())
        run_info["full-size sets"] = f"{sets} = {totals['full']}"
    summary = {
        "run": run_info,
        "cases": totals,
        "metrics": flat_metrics(summaries),
        "suites": summaries,
        # where and how it ran; its config: what decides the records, the sets
        "provenance": provenance.collect(
            config={**_config(args), "suites": names, "limit": args.limit}
        ),
    }
    _write(out / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    _write(out / "summary.md", summary_markdown(summary))
    print(f"wrote {out}/summary.json, summary.md ({time.perf_counter() - t0:.1f}s)")
    return 0


def _line(name: str, s: dict) -> str:
    means = " ".join(
        f"{m} {100 * v['mean']:.1f}"
        for m, v in s["metrics"].items()
        if v["mean"] is not None
    )
    return f"{name}: {s['n']} cases | {means}"


def main(argv: Sequence[str] | None = None) -> int:
    """``hat eval run`` on its own (``python -m experiments.eval_run_cmd``)."""
    from hat_jax.cli.main import run_module

    return run_module("hat eval run", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
