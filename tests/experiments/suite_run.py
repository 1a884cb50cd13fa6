"""Running a suite's cases through the real runner in tests: one place."""

from hat_jax.eval.records import RecordWriter, read_records
from hat_jax.eval.runner import run_cases


def suite_records(path, suite, opts, cases, policy_for, batch_size=32) -> list[dict]:
    """Runs ``cases`` of ``suite`` with ``policy_for`` into ``path``; its records."""
    with RecordWriter(path) as w:
        run_cases(
            suite.name,
            cases,
            policy_for=policy_for,
            rollout=suite.rollout(opts),
            judge=suite.judge,
            writer=w,
            batch_size=batch_size,
            progress=False,
        )
    recs = read_records(path)
    assert len(recs) == len(cases)
    return recs
