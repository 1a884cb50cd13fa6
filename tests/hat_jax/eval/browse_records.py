"""Eval output folders for the browse tests, written by the real writers.

``eval_run`` runs ``hat eval run`` itself (a reference policy, a few cases);
``write_suite`` writes hand-made cases through ``make_record`` and
``RecordWriter``, so each line is exactly what an eval writes.
"""

from dataclasses import dataclass
from pathlib import Path

from experiments import eval_run_cmd
from hat_jax.eval.records import RecordWriter
from hat_jax.eval.runner import EvalCase, make_record
from hat_jax.harness import Trajectory


@dataclass(frozen=True)
class Verdict:
    value: float
    rationale: str = ""


def eval_run(out: Path, policy: str, suite: str = "t2", limit: int = 6) -> Path:
    """``hat eval run --policy POLICY`` into ``out``."""
    argv = ["--suite", suite, "--policy", policy, "--limit", str(limit)]
    assert eval_run_cmd.main([*argv, "--out", str(out), "--no-progress"]) == 0
    return out


def case_record(suite, case_id, scores, tags=None, reply="ok", rationales=None):
    """One record as the runner makes it: a user message and ``reply``."""
    rationales = rationales or {}
    traj = Trajectory(
        "h@1",
        "hi",
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": reply}],
        reply=reply,
    )
    case = EvalCase(case_id, tags=dict(tags or {}), input={"message": "hi"})
    verdicts = {k: Verdict(v, rationales.get(k, "")) for k, v in scores.items()}
    return make_record(suite, case, traj, verdicts)


def write_suite(out: Path, suite: str, records) -> Path:
    """``records`` (from ``case_record``) into ``out/SUITE/records.jsonl``."""
    path = out / suite / "records.jsonl"
    with RecordWriter(path) as w:
        for r in records:
            w.write(r)
    return path


def success_run(out: Path, values, suite="t2", ids=None, tags=None) -> Path:
    """A suite of cases scoring ``values`` (success), ids ``c000``... by default."""
    ids = ids if ids is not None else range(len(values))
    recs = [
        case_record(suite, f"c{i:03d}", {"success": float(v)}, tags and tags(i))
        for i, v in zip(ids, values)
    ]
    write_suite(out, suite, recs)
    return out
