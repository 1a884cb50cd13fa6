"""IFEval: the 541 instruction-following prompts, asked as plain chat.

Case ``i`` is the ``i``-th prompt of ``hat_jax.eval.ifeval.load_prompts()``
(the real 541, from the ``ifeval-input-data`` asset: ``hat assets fetch``),
sent as one user message with no harness, no system prompt and no tools; the
reply (reasoning stripped) is scored by ``hat_jax.eval.ifeval.score_responses``
strict and loose. Per case: prompt-level verdicts (0 / 1) and the share of its
instructions followed; the summary weights the latter by each prompt's number
of instructions, so it is IFEval's instruction-level accuracy. The verdicts per
instruction go into the record (``trajectory.meta["ifeval"]``) and the summary
adds the rates per instruction category.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from experiments.suites.base import Suite, SuiteOptions, register_suite
from hat_jax.eval.runner import EvalCase, chat_rollout
from hat_jax.harness import Trajectory

SIZE = 541
METRICS = (
    "prompt_level_strict",
    "instruction_level_strict",
    "prompt_level_loose",
    "instruction_level_loose",
)
WEIGHT = "n_instructions"


class _Verdict:
    """A Scored value with its reason."""

    def __init__(self, value: float, rationale: str = ""):
        self.value, self.rationale = float(value), rationale


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    """The first ``n`` IFEval prompts as chat cases."""
    from hat_jax.eval.ifeval import load_prompts

    out = []
    for p in load_prompts()[:n]:
        out.append(
            EvalCase(
                f"ifeval-{p.key:05d}",
                messages=({"role": "user", "content": p.prompt},),
                input=p.as_dict(),
                payload=p,
            )
        )
    return out


def _why(ids: Sequence[str], verdicts: Sequence[bool]) -> str:
    missed = [i for i, ok in zip(ids, verdicts) if not ok]
    return "all followed" if not missed else "not followed: " + ", ".join(missed)


def judge(batch: Sequence[EvalCase], trajs: Sequence[Trajectory]) -> list:
    """Strict and loose verdicts; also kept in ``traj.meta["ifeval"]``."""
    from hat_jax.eval.ifeval import score_responses

    rows = [
        {**c.payload.as_dict(), "response": t.reply or ""}
        for c, t in zip(batch, trajs, strict=True)
    ]
    records, _ = score_responses(rows)
    out = []
    for t, r in zip(trajs, records):
        ids, n = r["instruction_id_list"], len(r["instruction_id_list"])
        t.meta["ifeval"] = {k: r[k] for k in ("instruction_id_list", "strict", "loose")}
        out.append(
            {
                "prompt_level_strict": _Verdict(
                    all(r["strict"]), _why(ids, r["strict"])
                ),
                "instruction_level_strict": _Verdict(sum(r["strict"]) / n),
                "prompt_level_loose": _Verdict(all(r["loose"]), _why(ids, r["loose"])),
                "instruction_level_loose": _Verdict(sum(r["loose"]) / n),
                WEIGHT: _Verdict(n),
            }
        )
    return out


def extra(records: Sequence[dict]) -> dict:
    """Strict and loose rates per instruction category (pooled instructions)."""
    pooled = collections.defaultdict(list)
    for r in records:
        v = r["trajectory"]["meta"]["ifeval"]
        for iid, s, lo in zip(v["instruction_id_list"], v["strict"], v["loose"]):
            pooled[iid.split(":")[0]].append((s, lo))
    return {
        cat: {
            "n": len(vs),
            "strict": {"mean": sum(s for s, _ in vs) / len(vs)},
            "loose": {"mean": sum(lo for _, lo in vs) / len(vs)},
        }
        for cat, vs in sorted(pooled.items())
    }


SUITE = register_suite(
    Suite(
        name="ifeval",
        title="IFEval",
        size=SIZE,
        build=build,
        rollout=lambda opts: chat_rollout,
        judge=judge,
        metrics=METRICS,
        extra=extra,
        weights={m: WEIGHT for m in METRICS if m.startswith("instruction")},
    )
)
