"""The in-world IFEval proxy: held out from training, within budget, scored right."""

import json
import re

import numpy as np
import pytest

from experiments import eval_run_cmd
from experiments.sim_cmd import main as sim_main
from experiments.suites import SuiteOptions, get_suite
from experiments.suites import ifeval_proxy as proxy
from experiments.world import banks
from experiments.world.base_data import BASE_STREAM, write_base_data
from experiments.world.prompts import PROMPT_STREAM, prompt_at, write_prompts
from experiments.world.tokenizer import train_tokenizer
from hat_jax.eval.ifeval import registry
from hat_jax.eval.ifeval.text import count_words
from hat_jax.eval.records import read_records
from hat_jax.eval.runner import same_policy
from hat_jax.harness import ScriptedPolicy, load_harness, read_jsonl
from tests.experiments.suite_run import suite_records

N_BASE, N_PROMPTS, N_SIM = 2000, 2000, 200  # the tiny world's data, about


@pytest.fixture(scope="module")
def opts():
    return SuiteOptions(load_harness("taolive_v1"))


@pytest.fixture(scope="module")
def cases(opts):
    return proxy.build(opts, proxy.SIZE)


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    """Training data as the pipeline writes it (base seed 0, OPD prompts seed 1)."""
    root = tmp_path_factory.mktemp("train")
    write_base_data(root / "base.jsonl", n=N_BASE, seed=0)
    write_prompts(root / "prompts.jsonl", n=N_PROMPTS, seed=1)
    return root


def _training_prompts(root) -> list[str]:
    base = [t.user_message for t in read_jsonl(root / "base.jsonl")]
    with open(root / "prompts.jsonl", encoding="utf-8") as f:
        opd = [json.loads(line)["messages"][0]["content"] for line in f]
    cli_default = [prompt_at(0, i)[1] for i in range(500)]  # `hat world prompts`
    return base + opd + cli_default


def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"\{\w+\}", template)
    return re.compile(".+".join(re.escape(p) for p in parts))


HELDOUT = [_pattern(t) for t in banks.HELDOUT_REQUESTS]


def _heldout(text: str) -> bool:
    return any(p.match(text) for p in HELDOUT) or any(
        topic in text for topic, _ in banks.HELDOUT_TOPICS
    )


def test_size_ids_and_instructions(cases):
    assert proxy.SIZE >= 300 and len(cases) == proxy.SIZE
    assert len({c.case_id for c in cases}) == len(cases)
    assert len({c.payload.prompt for c in cases}) == len(cases)
    seen = {i for c in cases for i in c.payload.instruction_id_list}
    assert seen == set(registry.names()) - proxy.EXCLUDED and len(seen) == 22
    for c in cases:
        assert c.messages == ({"role": "user", "content": c.payload.prompt},)
        assert 1 <= len(c.payload.instruction_id_list) <= 3


def test_heldout_banks_and_seed_stream_are_apart():
    assert not set(banks.HELDOUT_TOPICS) & set(banks.TOPICS)
    assert not set(banks.HELDOUT_REQUESTS) & set(banks.REQUESTS)
    topics = [t for t, _ in banks.TOPICS]
    assert not any(h in t or t in h for h, _ in banks.HELDOUT_TOPICS for t in topics)
    assert proxy.PROXY_STREAM not in (BASE_STREAM, PROMPT_STREAM)


def test_no_proxy_prompt_appears_in_training_data(cases, training):
    train = _training_prompts(training)
    assert len(train) == N_BASE + N_PROMPTS + 500
    ours = {c.payload.prompt for c in cases}
    assert not ours & set(train)
    # Every proxy prompt is on a held-out request and topic; no training one is.
    assert all(
        any(p.match(c.payload.prompt) for p in HELDOUT)
        and any(t in c.payload.prompt for t, _ in banks.HELDOUT_TOPICS)
        for c in cases
    )
    leaked = [t for t in train if _heldout(t)]
    assert leaked == []
    # The check can see a leak: the training banks' own prompts match theirs.
    trained = [_pattern(t) for t in banks.REQUESTS]
    instruct = [t for t in train if any(p.match(t) for p in trained)]
    assert len(instruct) > 1000


def test_references_fit_the_word_and_token_budget(cases, training):
    sim = training / "sim.jsonl"
    argv = ["generate", "--harness", "taolive_v1", "--n", str(N_SIM), "--seed", "0"]
    assert sim_main([*argv, "--split", "train", "--out", str(sim)]) == 0
    files = [sim, training / "base.jsonl", training / "prompts.jsonl"]
    tok = train_tokenizer(files, vocab_size=2048, out=training / "tok")
    refs = [c.payload.reference for c in cases]
    assert max(count_words(r) for r in refs) <= proxy.MAX_WORDS
    tokens = [len(tok.encode(r)) for r in refs]
    assert max(tokens) <= proxy.BUDGET_TOKENS, max(tokens)
    # Measured limits are tens of words, not hundreds.
    for c in cases:
        for iid, kw in zip(c.payload.instruction_id_list, c.payload.kwargs):
            if iid == "length_constraints:number_words":
                assert kw["num_words"] <= proxy.MAX_WORDS + 3


def _key(c):
    return (c.case_id, dict(c.input), dict(c.tags), c.messages)


def test_cases_are_a_deterministic_prefix(opts, cases):
    short, long = proxy.build(opts, 6), proxy.build(opts, 13)
    assert [_key(c) for c in short] == [_key(c) for c in long[:6]]
    assert [_key(c) for c in long] == [_key(c) for c in cases[:13]]
    other = proxy.build(SuiteOptions(opts.harness, seed=1), 6)
    assert [c.payload.prompt for c in other] != [c.payload.prompt for c in short]


def _scores(tmp_path, name, opts, cases, policy_for):
    suite = get_suite("ifeval_proxy")
    recs = suite_records(tmp_path / f"{name}.jsonl", suite, opts, cases, policy_for)
    return {m: np.mean([r["scores"][m] for r in recs]) for m in suite.metrics}


def _const(text):
    return same_policy(ScriptedPolicy(lambda messages: text))


def test_reference_passes_and_replies_that_ignore_the_prompt_fail(
    tmp_path, opts, cases
):
    suite = get_suite("ifeval_proxy")
    ref = _scores(tmp_path, "ref", opts, cases, suite.reference)
    assert ref["prompt_level_strict"] >= 0.95 and ref["prompt_level_loose"] >= 0.95
    for name, text in [("ok", "OK."), ("empty", ""), ("other", "Sure, here it is.")]:
        s = _scores(tmp_path, name, opts, cases, _const(text))
        assert s["prompt_level_strict"] <= 0.1, (name, s)
        assert s["prompt_level_loose"] <= 0.1, (name, s)
    # The reference answer of the next prompt: fluent, but not what was asked.
    refs = [c.payload.reference for c in cases]
    shifted = {c.payload.prompt: [refs[i - 1]] for i, c in enumerate(cases)}
    wrong = _scores(
        tmp_path, "wrong", opts, cases, same_policy(ScriptedPolicy(shifted))
    )
    assert wrong["prompt_level_strict"] <= ref["prompt_level_strict"] - 0.5
    assert wrong["instruction_level_strict"] < ref["instruction_level_strict"] - 0.3


def test_hat_eval_run_with_the_reference_policy(tmp_path):
    out = tmp_path / "run"
    argv = ["--suite", "ifeval_proxy", "--policy", "oracle", "--limit", "12"]
    assert eval_run_cmd.main([*argv, "--no-progress", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())["suites"]["ifeval_proxy"]
    assert s["title"] == "IFEval proxy (in-world)" and s["n"] == 12
    assert s["size"] == proxy.SIZE
    assert s["metrics"]["prompt_level_strict"]["mean"] == 1.0
    assert set(s["by"]["n_instructions"]) <= {"1", "2", "3"}
    assert s["extra"] and all(v["strict"]["mean"] == 1.0 for v in s["extra"].values())
    rec = read_records(out / "ifeval_proxy" / "records.jsonl")[0]
    assert rec["harness"] == "chat" and "strict" in rec["trajectory"]["meta"]["ifeval"]
