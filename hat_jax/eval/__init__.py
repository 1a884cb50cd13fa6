"""Evaluation: the case runner over any backend, records, statistics, IFEval."""

from hat_jax.eval.backends import BACKENDS, BackendOptions, make_policy
from hat_jax.eval.records import RecordWriter, check_run, read_records
from hat_jax.eval.runner import (
    EvalCase,
    agent_rollout,
    chat_rollout,
    run_cases,
    same_policy,
)
from hat_jax.eval.stats import (
    bootstrap,
    bootstrap_ci,
    error_reduction,
    mean_ci,
    weighted_mean_ci,
)
from hat_jax.eval.summary import flat_metrics, summarize_suite, summary_markdown

__all__ = [
    "BACKENDS",
    "BackendOptions",
    "EvalCase",
    "RecordWriter",
    "agent_rollout",
    "bootstrap",
    "bootstrap_ci",
    "chat_rollout",
    "check_run",
    "error_reduction",
    "flat_metrics",
    "make_policy",
    "mean_ci",
    "read_records",
    "run_cases",
    "same_policy",
    "summarize_suite",
    "summary_markdown",
    "weighted_mean_ci",
]
