"""The oracle teacher: gold trajectories under both builtin harnesses pass every
hook, call what the playbook needs, load the right skills, quote only tool facts,
and recover from every fault type."""

import dataclasses
import functools
import json

import numpy as np
import pytest

from hat_jax.harness import (
    LOAD_SKILL,
    HookContext,
    HookSpec,
    Mapping,
    OpenAIPolicy,
    feedback_message,
    load_harness,
    run_hooks,
    unsupported_numbers,
)
from hat_jax.text.toolcall import parse_reply
from sim.binding import bind, canonical_mapping, gold_skills, strategy_skill
from sim.catalog import make_catalog
from sim.oracle import Case, OraclePolicy, case_request, gold_trajectories, make_teacher
from sim.oracle_replies import T
from sim.tools import FaultConfig
from sim.types import FAULT_KINDS, INTENTS, LANGS, RoomSnapshot, needed_roles
from sim.viewers import render_message, sample_codes

HARNESSES = ("taolive_v1", "taolive_v2")


def room(catalog, clock: float, room_id: str) -> RoomSnapshot:
    active = {
        s.link_id: s.price for s in catalog.flash_sales if s.start <= clock < s.end
    }
    stock = {p.link_id: max(p.stock - 5 * p.link_id, 2) for p in catalog.products}
    stock[catalog.products[-1].link_id] = 0  # one link sold out
    return RoomSnapshot(room_id, catalog, clock, 2, stock, active, "taolive_v1")


@functools.cache
def all_cases() -> tuple[Case, ...]:
    """Every intent in both languages, in rooms with and without a flash sale."""
    out = []
    for seed in (5, 6):
        catalog = make_catalog("dev", seed)
        clock = catalog.flash_sales[0].start + 120.0 if seed == 5 else 30.0
        snap = room(catalog, clock, f"room-{seed}")
        rng = np.random.default_rng(seed)
        for intent in INTENTS:
            for lang in LANGS:
                codes = sample_codes(
                    rng, catalog, 3, intent_mix={intent: 1.0}, lang_mix={lang: 1.0}
                )
                for k, code in enumerate(codes):
                    msg = render_message(code, catalog)
                    out.append(Case(f"{seed}-{intent}-{lang}-{k}", snap, msg))
    return tuple(out)


@functools.cache
def gold(harness_name: str):
    harness = load_harness(harness_name)
    return harness, bind(harness), gold_trajectories(list(all_cases()), harness)


def facts(traj) -> list[str]:
    return [t.result for t in traj.tool_calls if t.ok and t.name != LOAD_SKILL]


def failing_hooks(harness, traj) -> list[str]:
    """Replays the pre-reply and reply hooks on the final reply."""
    out = []
    for checkpoint in ("pre_reply", "reply"):
        ctx = HookContext(
            harness,
            checkpoint,
            traj.user_message,
            tuple(traj.meta["loaded_skills"]),
            tuple(facts(traj)),
            reply=traj.reply,
        )
        out += [s.name for s, r in run_hooks(harness, checkpoint, ctx) if not r.passed]
    return out


@pytest.mark.parametrize("name", HARNESSES)
def test_gold_trajectories_are_correct(name):
    harness, binding, trajs = gold(name)
    cases = all_cases()
    assert {(c.message.intent, c.message.lang) for c in cases} == {
        (i, lang) for i in INTENTS for lang in LANGS
    }
    for case, traj in zip(cases, trajs):
        msg = case.message
        where = f"{case.case_id}: {msg.text!r} -> {traj.reply!r}"
        assert traj.status == "ok", where
        assert traj.harness_id == harness.id
        assert all(e.passed for e in traj.hook_events if e.checkpoint != "input"), where
        assert not failing_hooks(harness, traj), where
        assert len(traj.reply) <= 120 and "\n" not in traj.reply, where
        # The needed roles were called with the harness's names, and answered.
        called = {t.name for t in traj.tool_calls if t.ok}
        for role in needed_roles(msg):
            assert binding.tools[role] in called, (where, role)
        real = [t for t in traj.tool_calls if t.name != LOAD_SKILL]
        assert len(real) == len(needed_roles(msg)), where  # nothing redundant
        # The right skills, and nothing else.
        assert traj.meta["loaded_skills"] == list(
            gold_skills(binding, msg, case.snapshot)
        )
        assert binding.reply_skill(msg) in traj.meta["loaded_skills"]
        strategy = strategy_skill(binding, msg, case.snapshot)
        if strategy:
            assert strategy in traj.meta["loaded_skills"], where
        # Every number in the reply is in a tool result.
        assert not unsupported_numbers(traj.reply, facts(traj)), where


@pytest.mark.parametrize("name", HARNESSES)
def test_replies_follow_the_playbook(name):
    harness, binding, trajs = gold(name)
    cjk = 0
    for case, traj in zip(all_cases(), trajs):
        msg, snap, reply = case.message, case.snapshot, traj.reply
        has_cjk = any("\u4e00" <= ch <= "\u9fff" for ch in reply)
        assert has_cjk == (msg.lang == "zh"), reply
        cjk += has_cjk
        link = msg.link_id or snap.featured_link
        if msg.intent == "product_question" and msg.attribute == "price":
            price = f"{snap.price_now(link):.2f}".rstrip("0").rstrip(".")
            assert price in reply, (msg.text, reply)
        if msg.intent == "injection":
            assert reply.startswith(T["refuse"][0] if msg.lang == "zh" else "Sorry")
        if msg.intent == "forbidden_claim":
            product = snap.catalog.product(link)
            assert not any(c in reply for c in product.forbidden_claims), reply
        if name == "taolive_v2" and msg.intent == "purchase_intent":
            assert "双12" in reply or "Double 12" in reply
    assert cjk > 0


@pytest.mark.parametrize("name", HARNESSES)
def test_gold_trajectories_score_one_on_every_reward(name):
    from sim.rewards import judge_all

    harness, binding, trajs = gold(name)
    for case, traj in zip(all_cases(), trajs):
        scores = judge_all(traj, case.snapshot, case.message, binding)
        low = {k: s.rationale for k, s in scores.items() if s.value < 1}
        assert not low, (case.message.text, traj.reply, low)


def test_meta_is_json_and_complete():
    harness, binding, trajs = gold("taolive_v2")
    case, traj = all_cases()[0], trajs[0]
    assert "sim" not in traj.meta
    assert traj.meta["room_context"] == case.snapshot.context()
    assert traj.meta["message"] == dataclasses.asdict(case.message)
    assert traj.meta["room_id"] == case.snapshot.room_id
    assert traj.meta["catalog_id"] == case.snapshot.catalog.catalog_id
    assert traj.meta["case"] == case.case_id
    assert Mapping.from_dict(traj.meta["mapping"]).tools == binding.mapping.tools
    json.loads(traj.to_json())


def test_deterministic_and_duplicates_split():
    harness = load_harness("taolive_v1")
    cases = list(all_cases()[:20])
    twin = dataclasses.replace(cases[0], case_id="twin")  # same prompt and message
    faults = FaultConfig(timeout=0.2, malformed=0.1, permission_denied=0.1)

    def run():
        trajs = gold_trajectories(cases + [twin], harness, faults=faults, seed=9)
        return [json.dumps({**t.to_dict(), "timings": None}) for t in trajs]

    first = run()
    assert first == run()
    assert json.loads(first[-1])["meta"]["case"] == "twin"


def price_case(binding_name: str, plan) -> Case:
    case = next(
        c
        for c in all_cases()
        if c.message.intent == "product_question" and c.message.attribute == "price"
    )
    return dataclasses.replace(case, case_id=f"fault-{plan}", fault_plan=plan)


@pytest.mark.parametrize("name", HARNESSES)
@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_recovery_after_one_fault(name, fault):
    harness = load_harness(name)
    case = price_case(name, (fault,))
    (traj,) = gold_trajectories([case], harness)
    real = [t for t in traj.tool_calls if t.name != LOAD_SKILL]
    assert [(t.ok, t.fault) for t in real] == [(False, fault), (True, None)]
    assert real[0].name == real[1].name and real[0].arguments == real[1].arguments
    assert traj.status == "ok" and not failing_hooks(harness, traj)
    price = f"{case.snapshot.price_now(case.message.link_id):.2f}"
    assert price.rstrip("0").rstrip(".") in traj.reply
    calling = [m for m in traj.messages if m.get("tool_calls")]
    assert "once more" in calling[1]["reasoning"]  # the retry says why


@pytest.mark.parametrize("name", HARNESSES)
@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_double_fault_gives_a_safe_checking_reply(name, fault):
    harness = load_harness(name)
    case = price_case(name, (fault, fault))
    (traj,) = gold_trajectories([case], harness)
    real = [t for t in traj.tool_calls if t.name != LOAD_SKILL]
    assert [t.fault for t in real] == [fault, fault]
    assert traj.status == "ok" and not failing_hooks(harness, traj)
    assert traj.reply == T["checking"][0 if case.message.lang == "zh" else 1] + (
        "～" if case.message.lang == "zh" else "."
    )
    assert not unsupported_numbers(traj.reply, [])  # no number at all


def test_partial_failure_answers_the_rest_and_says_checking():
    harness = load_harness("taolive_v1")
    case = next(
        c
        for c in all_cases()
        if c.message.intent == "purchase_intent" and c.message.lang == "zh"
    )
    # product_info answers; promotions fails twice (calls 1 and 2).
    case = dataclasses.replace(case, fault_plan=(None, "timeout", "timeout"))
    (traj,) = gold_trajectories([case], harness)
    assert traj.status == "ok" and not failing_hooks(harness, traj)
    assert T["checking_rest"][0] in traj.reply
    assert not unsupported_numbers(traj.reply, facts(traj))


def test_tight_reply_limit_is_met_up_front():
    base = load_harness("taolive_v2")
    hooks = tuple(
        HookSpec(h.name, {**h.params, "max_chars": 60})
        if h.name == "reply_format"
        else h
        for h in base.hooks
    )
    harness = base.replace(hooks=hooks)
    trajs = gold_trajectories(list(all_cases()), harness)
    assert all(t.status == "ok" and len(t.reply) <= 60 for t in trajs)
    assert all(e.passed for t in trajs for e in t.hook_events)  # no retries needed


def test_hook_feedback_gets_a_different_reply():
    harness = load_harness("taolive_v1")
    binding = bind(harness)
    case = next(c for c in all_cases() if c.message.intent == "purchase_intent")
    (traj,) = gold_trajectories([case], harness)
    policy = OraclePolicy([case], binding)
    rejected = traj.messages + [feedback_message([("reply_format", "too long")])]
    fixed = policy.next_message(rejected, case, binding)
    assert fixed["content"] and fixed["content"] != traj.reply
    assert "tool_calls" not in fixed


def test_augmented_harness_with_renames_and_hermes_calls():
    """Renamed tool and skills, a nested argument and another call format."""
    base = load_harness("taolive_v2")
    tool = base.tool("check_stock")
    renamed_tool = dataclasses.replace(tool, name="stock_of")
    skills = tuple(
        dataclasses.replace(s, name="answer_item") if s.name == "item_qa" else s
        for s in base.skills
    )
    tools = tuple(renamed_tool if t.name == "check_stock" else t for t in base.tools)
    harness = base.replace(tools=tools, skills=skills, tool_call_format="hermes")
    hsa = Mapping.identity(base)
    hsa.tools["check_stock"] = "stock_of"
    hsa.skills["item_qa"] = "answer_item"
    mapping = canonical_mapping(base).compose(hsa)
    cases = [c for c in all_cases() if c.message.intent == "product_question"]
    trajs = gold_trajectories(cases, harness, mapping=mapping)
    binding = bind(harness, mapping)
    for case, traj in zip(cases, trajs):
        assert traj.status == "ok", (case.message.text, traj.reply)
        assert "answer_item" in traj.meta["loaded_skills"]
        names = {t.name for t in traj.tool_calls}
        assert "check_stock" not in names and "item_qa" not in str(traj.tool_calls)
        if case.message.attribute == "stock":
            assert "stock_of" in names
        assert not failing_hooks(harness, traj)
        first = next(m for m in traj.messages if m.get("tool_calls"))
        assert first["tool_calls"]  # parsed back from the hermes rendering
        assert binding.reply_skill(case.message) == "answer_item"


def test_policy_lookup_and_teacher_factory():
    harness = load_harness("taolive_v1")
    binding = bind(harness)
    case = all_cases()[0]
    teacher = make_teacher("oracle", cases=[case], bindings=binding)
    assert isinstance(teacher, OraclePolicy)
    request = case_request(case, binding)
    conv = [
        {"role": "system", "content": teacher.table.popitem()[0][0]},
        {"role": "user", "content": request.user_message},
    ]
    teacher = make_teacher("oracle", cases=[case], bindings=[binding])
    (out,) = teacher.generate([conv], fmt="qwen_xml")
    assert not parse_reply(out.text, "qwen_xml").errors
    with pytest.raises(KeyError):
        teacher.generate([[conv[0], {"role": "user", "content": "unknown"}]])
    with pytest.raises(ValueError, match="separate batches"):
        OraclePolicy([case, case], binding)
    llm = make_teacher("openai", base_url="http://localhost:1", model="m")
    assert isinstance(llm, OpenAIPolicy)
    with pytest.raises(ValueError):
        make_teacher("nope")


def _key_values(value, key=None):
    """Brute force: every (key, number) pair of a JSON value, as printed text."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _key_values(v, key if k in ("zh", "en") else k)
    elif isinstance(value, list):
        for v in value:
            yield from _key_values(v, key)
    elif key is not None and not isinstance(value, bool):
        yield key, str(value)


@pytest.mark.parametrize("name", HARNESSES)
def test_reply_reasoning_names_where_each_number_comes_from(name):
    """The reasoning before a reply names, key then value, each number the reply
    quotes, and each named pair is in a tool result of the turn."""
    _, _, trajs = gold(name)
    named_any = 0
    for traj in trajs:
        last = traj.messages[-1]
        why = last.get("reasoning") or ""
        if not why.startswith("Quote "):
            continue
        named_any += 1
        pairs = why.removeprefix("Quote ").split(";")[0].split(", ")
        results = [json.loads(t) for t in facts(traj)]
        have = {(k, v) for r in results for k, v in _key_values(r)}
        for pair in pairs:
            key, value = pair.rsplit(" ", 1)
            assert value in traj.reply, (traj.reply, pair)
            assert any(k == key and value in v for k, v in have), (pair, have)
    assert named_any >= len(trajs) // 3
