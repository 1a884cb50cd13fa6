"""The generated apps: valid harnesses, a teacher its judge passes, and a judge
that scripted policies trying to game it do not pass."""

import copy
import re

import numpy as np
import pytest

from experiments.world.apps import judge
from experiments.world.apps.episode import INTENTS
from experiments.world.apps.teacher import AppBackend, AppTeacher
from experiments.world.apps.world import EPISODE_KEY, episode, gold_turn, play
from hat_jax.harness import TurnRequest, dump_harness, load_harness, run_turns
from hat_jax.harness.policy import PolicyOutput
from hat_jax.harness.unseen import unseen_identifiers
from hat_jax.text.chat import render_assistant

N = 240  # episodes of each kind (full apps, mini apps)


@pytest.fixture(scope="module")
def episodes():
    return [
        episode(7, i, size=size) for size in ("full", "mini", "drill") for i in range(N)
    ]


@pytest.fixture(scope="module")
def golds(episodes):
    return play(episodes, seed=3)


def test_apps_load_back_as_harness_folders(episodes, tmp_path):
    for i, ep in enumerate(episodes[:40:3]):
        folder = dump_harness(ep.app.harness, tmp_path / f"h{i}")
        assert load_harness(folder) == ep.app.harness


def test_apps_vary(episodes):
    apps = [ep.app for ep in episodes[:N]]
    assert len({a.domain.key for a in apps}) >= 25
    assert {a.harness.layout.format for a in apps} == {
        "markdown",
        "xml",
        "plain",
        "compact",
    }
    assert {ep.intent for ep in episodes} == set(INTENTS)
    assert {ep.lang for ep in episodes} == {"zh", "en"}
    n_tools = [len(a.harness.tools) for a in apps]
    n_skills = [len(a.harness.skills) for a in apps]
    assert min(n_tools) >= 1 and max(n_tools) >= 6
    assert 2 <= min(n_skills) and max(n_skills) == 6
    assert any(a.skill_tag for a in apps) and any(a.hook_tag for a in apps)
    assert any(
        len(p.get("lookup", {}).get("id", ())) == 2 for p in (a.params for a in apps)
    )  # fmt: skip  (nested arguments)
    names = [t.name for a in apps for t in a.harness.tools]
    assert len(set(names)) > 0.95 * len(names)  # drawn fresh per app


def test_teacher_passes_its_own_judge(episodes, golds):
    bad = [(ep.message, judge.failures(t, ep)) for ep, t in zip(episodes, golds)]
    assert [b for b in bad if b[1]] == []
    faults = sum(any(not x.ok for x in t.tool_calls) for t in golds)
    assert faults >= 10  # the faults were really injected, and recovered from


def test_no_gold_names_an_identifier_absent_from_its_context(golds):
    assert [unseen_identifiers(t.messages) for t in golds if
            unseen_identifiers(t.messages)] == []  # fmt: skip


def test_episodes_are_fixed_functions_of_seed_and_index():
    a, b = gold_turn(5, 11), gold_turn(5, 11)
    assert a.messages == b.messages and a.meta == b.meta
    assert gold_turn(5, 12).messages != a.messages


class Scripted:
    """The teacher's turn, changed by ``edit(message, episode)``."""

    def __init__(self, episodes, edit):
        self.teacher = AppTeacher(episodes)
        self.edit = edit

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        out = self.teacher.generate(conversations, fmt=fmt, seed=seed)
        res = []
        for conv, o in zip(conversations, out):
            key = (str(conv[0]["content"]), conv[1]["content"])
            ep = self.teacher.episodes[self.teacher.table[key]]
            msg = self.teacher.next_message(conv, ep)
            msg = self.edit(copy.deepcopy(msg), ep)
            res.append(PolicyOutput(render_assistant(msg, "qwen_xml")) if msg else o)
        return res


def _success(episodes, edit) -> float:
    policy = Scripted(episodes, edit)
    backend = AppBackend(episodes)
    reqs = [
        TurnRequest(e.message, e.context, {EPISODE_KEY: i}, e.app.harness)
        for i, e in enumerate(episodes)
    ]
    trajs = run_turns(episodes[0].app.harness, reqs, policy, backend, seed=0)
    return float(np.mean([judge.success(t, e) for t, e in zip(trajs, episodes)]))


def _constant(msg, ep):
    return {"role": "assistant", "content": "Hi! Happy to help, just ask."}


def _memoriser(msg, ep):  # taolive_v1's names, whatever the harness says
    names = {"lookup": "get_product_info_by_link_id", "stock": "check_stock"}
    for call in msg.get("tool_calls", ()):
        role = next((r for r, n in ep.app.tools.items() if n == call["name"]), None)
        if role:
            call["name"] = names.get(role, "get_promotions")
        elif call["name"] == "load_skill":
            call["arguments"] = {"name": "item_qa"}
    return msg


def _wrong_numbers(msg, ep):
    if msg.get("content"):
        msg["content"] = re.sub(
            r"\d+", lambda m: str(int(m.group()) + 1), msg["content"]
        )
    return msg


def _wrong_language(msg, ep):
    if msg.get("content"):
        other = "Thanks, done." if ep.lang == "zh" else "好的，已处理。"
        nums = " ".join(re.findall(r"\d+", msg["content"]))
        msg["content"] = f"{other} {nums}".strip()
    return msg


def _no_sign_off(msg, ep):
    if msg.get("content"):
        msg["content"] = re.sub(r"\s*#[A-Za-z]{3,}", "", msg["content"])
    return msg


def test_judge_resists_scripted_gaming(episodes):
    eps = episodes[:120] + episodes[N : N + 120]
    assert _success(eps, lambda m, e: None) == 1.0  # the teacher itself
    assert _success(eps, _constant) <= 0.05
    assert _success(eps, _memoriser) <= 0.25  # chat episodes load nothing else
    tagged = [e for e in eps if e.app.skill_tag or e.app.hook_tag]
    assert len(tagged) >= 20
    assert _success(tagged, _no_sign_off) == 0.0
    numbered = [e for e in eps if e.intent != "chat"]
    assert _success(numbered, _wrong_numbers) <= 0.1  # fault turns quote nothing
    assert _success(eps, _wrong_language) <= 0.05


def test_apps_suite_scores_the_teacher_and_not_a_memoriser():
    from experiments.suites import SuiteOptions, get_suite

    suite = get_suite("apps")
    opts = SuiteOptions(load_harness("taolive_v1"))
    cases = suite.build(opts, 40)
    assert cases == suite.build(opts, 40)[:40]  # a prefix, deterministic
    rollout = suite.rollout(opts)
    for policy, want in ((suite.reference(cases), 1.0), (None, 0.0)):
        if policy is None:  # the memoriser, as a policy of its own
            policy = Scripted([c.payload for c in cases], _memoriser)
        scores = suite.judge(cases, rollout(cases, policy, 0))
        assert np.mean([s["success"].value for s in scores]) == want
        calls = [s["n_calls"].value for s in scores]
        valid = sum(s["valid_tools"].value * n for s, n in zip(scores, calls))
        assert valid / sum(calls) == want
        tagged = [s["sign_off"].value for s in scores if "sign_off" in s]
        assert len(tagged) >= 5 and (not want or np.mean(tagged) == 1.0)
