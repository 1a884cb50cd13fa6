"""Evolve a harness without training: Diagnose -> Confirm -> Edit -> Evaluate ->
Regression check, round after round, with early stop.

The agent (a trained model, an OpenAI-compatible endpoint, or the simulator's
oracle) answers Double 12 campaign traffic under the harness; its failures are
grouped into error classes, confirmed on reruns and sibling cases, and an
editor proposes typed edits (rules, skills, tool descriptions, hook
parameters, limits; `hat_jax/harness/edits.py`). A candidate is accepted only
if dev success rises beyond its paired 95 % interval and nothing regresses on a
held-out regression split (with tool faults). One folder per round under
--out: the error classes, the editor's proposals, each candidate's harness
folder, its diff, its records and the decision with its reason.
OUT/evolution.md, .json and .png report the rounds. Rerun the same command to
resume where it stopped (a proposal is never asked for twice).

Editors: `scripted` maps the error classes it knows to fixed edits (a
deterministic stand-in for tests and CPU runs, not an LLM); `llm` asks any
OpenAI-compatible endpoint (--editor-endpoint, --editor-model; its key from
HAT_API_KEY or --editor-api-key-env) for JSON edits, which are validated.

Examples:
  hat evolve --harness taolive_v1 --policy oracle --editor scripted --out /tmp/evo
  hat evolve --harness taolive_v1 --model runs/hat_tiny/_steps/sft-... \\
      --prompt-format compact --compact-results --editor scripted --out runs/evo
  hat evolve --harness taolive_v1 --endpoint http://localhost:8000 \\
      --editor llm --editor-endpoint https://api.example.com \\
      --editor-model big-model --editor-api-key-env EDITOR_KEY --out runs/evo_llm
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from experiments.evolve.editors import EDITORS, make_editor
from experiments.evolve.loop import Evolution, EvolveConfig, memoriser_for
from experiments.evolve.report import rows_table, write_report
from experiments.suites.simcases import oracle_for
from hat_jax.cli.argtypes import count, finite, seed
from hat_jax.eval.backends import BackendOptions, make_policy
from hat_jax.eval.runner import same_policy
from hat_jax.harness import PROMPT_FORMATS, load_harness

MAX_ROUNDS = 20
MAX_CASES = 2000


def add_arguments(p) -> None:
    p.add_argument("--harness", default="taolive_v1", help="the harness to evolve")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="workdir, HF folder, .gguf or asset name (JAX)")
    src.add_argument("--endpoint", help="the agent's OpenAI-compatible server URL")
    src.add_argument(
        "--policy",
        choices=("oracle", "memoriser"),
        help="a scripted agent: the simulator's oracle (follows the harness in "
        "force), or a memoriser of the start harness (a perfect fixed-harness model)",
    )
    p.add_argument("--editor", choices=sorted(EDITORS), default="scripted")
    p.add_argument("--editor-endpoint", help="llm editor: server URL")
    p.add_argument("--editor-model", default="editor", help="llm editor: model name")
    p.add_argument(
        "--editor-api-key-env",
        metavar="NAME",
        help="llm editor: variable holding its API key (default HAT_API_KEY)",
    )
    p.add_argument(
        "--editor-json-mode", choices=("schema", "object", "none"), default="schema"
    )
    p.add_argument(
        "--proposals", type=count(1, 16), default=1, help="llm answers per round"
    )
    p.add_argument(
        "--editor-thinking",
        choices=("auto", "on", "off"),
        default="auto",
        help="llm editor: send chat_template_kwargs.enable_thinking (auto: not sent)",
    )
    p.add_argument(
        "--editor-temperature",
        type=finite(0, 2),
        default=0.0,
        help="llm editor: sampling temperature (each proposal its own seed)",
    )
    p.add_argument("--rounds", type=count(1, MAX_ROUNDS), default=4)
    p.add_argument("--out", required=True, help="run folder (created; resumed)")
    for split, n in (("dev", 150), ("regression", 150), ("test", 150)):
        p.add_argument(
            f"--{split}-n", type=count(8, MAX_CASES), default=n, help=f"{split} cases"
        )
    p.add_argument("--tolerance", type=finite(0, 1), default=0.02)
    p.add_argument("--threshold", type=finite(0, 1), default=0.5)
    p.add_argument("--max-candidates", type=count(1, 16), default=4)
    p.add_argument("--prompt-format", choices=PROMPT_FORMATS)
    p.add_argument("--compact-results", action="store_true")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--batch-size", type=count(1), default=None)
    p.add_argument("--max-new-tokens", type=count(1), default=256)
    p.add_argument("--served-model", help="the agent endpoint's model name")
    p.add_argument("--api-key-env", metavar="NAME", help="the agent endpoint's key")
    p.add_argument("--no-progress", action="store_true")


def _editor(args):
    if args.editor == "llm":
        if not args.editor_endpoint:
            raise ValueError("--editor llm needs --editor-endpoint")
        return make_editor(
            "llm",
            base_url=args.editor_endpoint,
            model=args.editor_model,
            api_key_env=args.editor_api_key_env,
            json_mode=args.editor_json_mode,
            proposals=args.proposals,
            temperature=args.editor_temperature,
            thinking={"auto": None, "on": True, "off": False}[args.editor_thinking],
        )
    return make_editor(args.editor)


def _policy_for(args, start):
    if args.policy == "oracle":
        return oracle_for
    if args.policy == "memoriser":
        return memoriser_for(start)
    opts = BackendOptions(
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        served_model=args.served_model,
        api_key_env=args.api_key_env,
    )
    kind, target = ("jax", args.model) if args.model else ("openai", args.endpoint)
    return same_policy(make_policy(kind, target, opts))


def run(args) -> int:
    t0 = time.perf_counter()
    harness = load_harness(args.harness).in_format(args.prompt_format)
    cfg = EvolveConfig(
        rounds=args.rounds,
        dev_n=args.dev_n,
        regression_n=args.regression_n,
        test_n=args.test_n,
        tolerance=args.tolerance,
        threshold=args.threshold,
        max_candidates=args.max_candidates,
        seed=args.seed,
        batch_size=args.batch_size or (8 if args.model else 32),
        prompt_format=args.prompt_format,
        compact_results=args.compact_results,
    )
    editor = _editor(args)
    agent = {k: getattr(args, k) for k in ("policy", "model", "endpoint")}
    agent |= {"served_model": args.served_model, "max_new_tokens": args.max_new_tokens}
    evo = Evolution(
        harness,
        args.out,
        editor,
        _policy_for(args, harness),
        cfg,
        progress=not args.no_progress,
        agent=agent,
    )
    evo.evolve()
    ev = write_report(args.out)
    print(rows_table(ev["rows"]))
    took = time.perf_counter() - t0
    print(f"wrote {args.out}/evolution.md, .json, .png ({took:.0f}s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``hat evolve`` on its own (``python -m experiments.evolve.evolve_cmd``)."""
    from hat_jax.cli.main import run_module

    return run_module("hat evolve", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
