"""Sign-off tags: the reply hook's parameter, a reply skill's rule, the HSA ops."""

import numpy as np
import pytest

from augment import apply_spec, validate_augmented
from augment.ops_hooks import TAG_HEADS, TAG_TAILS, draw_tag
from hat_jax.harness import HookContext, get_hook, load_harness, render_system_prompt
from hat_jax.harness.hooks import resolve_params, validate_hook_params
from hat_jax.harness.signoff import (
    SKILL_RULE,
    TAG,
    required_tags,
    sign,
    signed_off,
    skill_tag,
)
from sim.datasets import make_cases
from sim.oracle import gold_trajectories


def test_signed_off_sign_and_tags():
    assert signed_off("3号链接199元～ #SunnyPicks", "#SunnyPicks")
    assert signed_off("Link 3 is ¥199. #SunnyPicks.", "#SunnyPicks")
    assert not signed_off("#SunnyPicks link 3 is ¥199", "#SunnyPicks")
    assert not signed_off("3号链接199元～", "#SunnyPicks")
    assert sign("Hi.", "#CozyCart") == "Hi. #CozyCart"
    assert sign("Hi. #CozyCart", "#CozyCart") == "Hi. #CozyCart"
    assert sign("Hi.", "") == "Hi."
    assert skill_tag("1. Call x for #3.\n" + SKILL_RULE.format(tag="#BoldDrop")) == (
        "#BoldDrop"
    )
    assert skill_tag("Viewers write 3号, link 3 or #3.") == ""  # a link, no tag
    assert all(TAG.fullmatch(draw_tag(np.random.default_rng(i))) for i in range(50))
    assert len({f"#{h}{t}" for h in TAG_HEADS for t in TAG_TAILS}) >= 500


def test_the_reply_hook_checks_and_shows_the_sign_off():
    h = load_harness("taolive_v1")
    assert validate_hook_params("reply_format", {"sign_off": "#SunnyPicks"}) == []
    for bad in ("SunnyPicks", "#12", "#a b"):
        assert validate_hook_params("reply_format", {"sign_off": bad}), bad
    params = resolve_params("reply_format", {"sign_off": "#SunnyPicks"})
    check = get_hook("reply_format").check

    def ok(reply):
        return check(params, HookContext(h, "reply", "hi", reply=reply)).passed

    assert ok("欢迎～ #SunnyPicks") and not ok("欢迎～")
    res = check(params, HookContext(h, "reply", "hi", reply="欢迎～"))
    assert "#SunnyPicks" in res.feedback
    plain = resolve_params("reply_format", {})  # no sign-off by default
    assert check(plain, HookContext(h, "reply", "hi", reply="欢迎～")).passed


@pytest.fixture(scope="module")
def golds():
    h = load_harness("taolive_v1")
    return h, gold_trajectories(make_cases("train", 5, 24), h)


@pytest.mark.parametrize("op", ["add_sign_off", "sign_off_skills"])
def test_the_ops_sign_every_gold_reply_and_validate(golds, op):
    h, trajs = golds
    for i, g in enumerate(trajs):
        spec = f"{op}|tighten_max_chars(factor=0.5)|paraphrase_skills|restyle_skills"
        h2, t2, m = apply_spec(h, g, spec, i)
        tags = required_tags(h2, "item_qa")
        assert len(tags) == 1 and signed_off(t2.reply, tags[0])
        assert validate_augmented(h, g, h2, t2, m) == []
        prompt = render_system_prompt(h2, None)
        # the hook's tag is in the prompt; a skill's only in the skill body
        assert (tags[0] in prompt) == (op == "add_sign_off")


def test_both_ops_share_one_tag(golds):
    h, (g, *_) = golds
    h2, t2, _ = apply_spec(h, g, "add_sign_off|sign_off_skills", 1)
    (tag,) = required_tags(h2, "chit_chat")
    assert t2.reply.endswith(tag) and t2.reply.count("#") == 1
