"""IFEval: the 541 prompts, our checkers for its 25 instruction types, scoring.

``load_prompts()`` gives the prompts to ask a model; ``score_responses(rows)``
scores `{prompt, response}` rows strict and loose, prompt- and
instruction-level, as Google's ``instruction_following_eval`` defines them
(checked verdict for verdict against a packaged copy of it in the tests).
"""

from hat_jax.eval.ifeval.data import Prompt, load_prompts, read_responses
from hat_jax.eval.ifeval.registry import build, names, register
from hat_jax.eval.ifeval.scoring import (
    METRICS,
    evaluate,
    loose_variants,
    score_responses,
    summarize,
    summary_markdown,
)

__all__ = [
    "METRICS",
    "Prompt",
    "build",
    "evaluate",
    "load_prompts",
    "loose_variants",
    "names",
    "read_responses",
    "register",
    "score_responses",
    "summarize",
    "summary_markdown",
]
