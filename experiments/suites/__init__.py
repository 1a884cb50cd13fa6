"""The evaluation suites, by name: T1, T2, T3, the harness-edit test, IFEval
and its in-world proxy, and held-out generated apps (the base world's premise).

``get_suite("t1").build(SuiteOptions(harness), n)`` gives the first ``n`` cases
of a suite; ``hat eval run`` (``experiments.eval_run_cmd``) runs them.
"""

from experiments.suites import (  # noqa: F401  (register)
    apps,
    edit,
    ifeval,
    ifeval_proxy,
    t1,
    t2,
    t3,
)
from experiments.suites.base import (
    SUITES,
    Suite,
    SuiteOptions,
    get_suite,
    register_suite,
)

__all__ = ["SUITES", "Suite", "SuiteOptions", "get_suite", "register_suite"]
