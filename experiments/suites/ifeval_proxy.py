"""IFEval proxy (in-world): IFEval-style prompts the tiny world's model can answer.

Real IFEval asks for more than a 1-2 M parameter model trained on the world's
own text can write (it scores 0), so this suite asks ``SIZE`` = 400 prompts
from the world's constraint generator (``experiments.world.instruct``), 1-3
IFEval instructions each, and scores them as the ``ifeval`` suite does (its
judge, measures, instruction weighting and per-category rates).

Held out from training, in two ways (``tests/experiments/test_ifeval_proxy.py``
checks both):

- seeds: prompt ``i`` is drawn from ``default_rng([1000 * seed + 505,
  PROXY_STREAM, i])``; the base data draws on stream 101, the OPD prompts on
  202;
- templates: the requests and topics are ``banks.HELDOUT_REQUESTS`` and
  ``banks.HELDOUT_TOPICS``, which the training generators never draw (they use
  ``instruct.TRAINING``), so no proxy prompt can equal a training prompt.

Budgets: drafts start at 2-4 sentences and a reference answer has at most
``MAX_WORDS`` = 50 words (39 on average; 55 tokens on average and at most 86
of a world tokenizer trained on 200 sim + 2,000 base + 2,000 prompt lines,
measured), within the 96 new tokens (``BUDGET_TOKENS``) of the tiny runs'
eval; the measured limits (words, sentences, letters, capitals) are read off
that answer, so they are tens, not hundreds. Three instruction types cannot
fit and are left out: all capitals (2.7 world-BPE tokens a word), JSON (2.3)
and repeating the prompt. No prompt is vacuous: a bare ``"OK."`` fails each
one (a lone "fewer than N words" would pass any short reply).

The ``reference`` policy (``--policy oracle``) replies with the generator's own
response, which passes every checker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from experiments.suites import ifeval
from experiments.suites.base import Suite, SuiteOptions, dataset_seed, register_suite
from experiments.world import banks
from experiments.world.instruct import Spec, follows, make_instruct
from hat_jax.eval.ifeval import Prompt
from hat_jax.eval.ifeval.text import count_words
from hat_jax.eval.runner import EvalCase, chat_rollout
from hat_jax.harness import ScriptedPolicy

SIZE = 400
SEED_OFFSET = 505
PROXY_STREAM = 303  # apart from base_data.BASE_STREAM and prompts.PROMPT_STREAM
MAX_WORDS = 50
BUDGET_TOKENS = 96  # the tiny runs' eval max_new_tokens (hat_tiny.py `ev`)
NEUTRAL = "OK."  # a reply that ignores the instructions: fails every prompt
MAX_TRIES = 50
EXCLUDED = frozenset(
    {
        "change_case:english_capital",
        "detectable_format:json_format",
        "combination:repeat_prompt",
    }
)
SPEC = Spec(
    requests=banks.HELDOUT_REQUESTS,
    topics=banks.HELDOUT_TOPICS,
    shape=(2, 1, 1),
    exclude=EXCLUDED,
)


@dataclasses.dataclass(frozen=True)
class ProxyPrompt(Prompt):
    """An IFEval prompt with the generator's compliant response."""

    reference: str = ""


def proxy_prompt(seed: int, index: int) -> ProxyPrompt:
    """Prompt ``index`` for dataset seed ``seed``: within budget, not vacuous.

    Raises:
      RuntimeError: no draw in ``MAX_TRIES`` fit (a bank or planner bug).
    """
    rng = np.random.default_rng([seed, PROXY_STREAM, index])
    for _ in range(MAX_TRIES):
        ex = make_instruct(rng, SPEC)
        ids, kwargs = ex["instruction_id_list"], ex["kwargs"]
        if count_words(ex["response"]) <= MAX_WORDS and not follows(
            NEUTRAL, ids, kwargs
        ):
            return ProxyPrompt(
                key=index,
                prompt=ex["prompt"],
                instruction_id_list=tuple(ids),
                kwargs=tuple(kwargs),
                reference=ex["response"],
            )
    raise RuntimeError(f"no proxy prompt fit its budget in {MAX_TRIES} draws")


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    """The first ``n`` proxy prompts as chat cases (no system prompt, no tools)."""
    seed = dataset_seed(opts, SEED_OFFSET)
    out = []
    for i in range(n):
        p = proxy_prompt(seed, i)
        out.append(
            EvalCase(
                f"ifeval_proxy-{i:05d}",
                messages=({"role": "user", "content": p.prompt},),
                tags={"n_instructions": str(len(p.instruction_id_list))},
                input=p.as_dict(),
                payload=p,
            )
        )
    return out


def reference_for(batch: Sequence[EvalCase]) -> ScriptedPolicy:
    """Replies to each prompt of ``batch`` with its generator's response."""
    return ScriptedPolicy({c.payload.prompt: [c.payload.reference] for c in batch})


SUITE = register_suite(
    Suite(
        name="ifeval_proxy",
        title="IFEval proxy (in-world)",
        size=SIZE,
        build=build,
        rollout=lambda opts: chat_rollout,
        judge=ifeval.judge,
        metrics=ifeval.METRICS,
        group_by=("n_instructions",),
        reference=reference_for,
        extra=ifeval.extra,
        weights=dict(ifeval.SUITE.weights),
    )
)
