"""Hook ops: reply length limits, banned phrases, required skill kinds, turn
limits, a sign-off tag. Each new constraint is checked against the gold
trajectory (when one is given): a limit the gold reply cannot meet is moved to
the reply's length, or the reply is shortened only when every fact survives."""

from __future__ import annotations

from augment.facts import failing_hooks, loaded, shorten_reply, tool_results
from augment.ops import finish, register_op
from hat_jax.harness.hooks import resolve_params
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.signoff import hook_tag, sign, skill_tag
from hat_jax.harness.spec import Harness, HookSpec

BANNED_POOL = (
    "guaranteed",
    "lowest price online",
    "best price ever",
    "miracle",
    "act now",
    "trust me",
    "no risk at all",
    "cheapest anywhere",
    "100% original",
    "last chance ever",
    "闭眼入",
    "秒杀全网",
    "错过再等一年",
    "史上最低",
    "买到就是赚到",
    "绝对正品",
    "全网独家",
    "最后一波",
    "不买后悔",
    "官方认证",
)


def _set_params(h: Harness, name: str, **params) -> Harness:
    hooks = []
    found = False
    for spec in h.hooks:
        if spec.name == name:
            spec = HookSpec(name, {**dict(spec.params), **params})
            found = True
        hooks.append(spec)
    if not found:
        hooks.append(HookSpec(name, dict(params)))
    return h.replace(hooks=tuple(hooks))


def _max_chars(h: Harness) -> int | None:
    spec = h.hook("reply_format")
    return resolve_params(spec.name, spec.params)["max_chars"] if spec else None


def _reply_len(traj) -> int | None:
    if traj is None or traj.reply is None:
        return None
    return len(traj.reply.strip())


def _ok(h2: Harness, traj, reply=None) -> bool:
    return traj is None or traj.reply is None or not failing_hooks(h2, traj, reply)


@register_op("tighten_max_chars", "hooks", ranges={"factor": (0.0, 1.0)})
def tighten_max_chars(h, traj, rng, *, factor=0.0, shorten=True):
    """Lower the reply length limit (never below what the gold reply needs)."""
    old = _max_chars(h)
    if old is None:
        return finish("tighten_max_chars", {}, h, traj, h, Mapping.identity(h))
    f = factor or float(rng.uniform(0.5, 0.95))
    target = max(1, int(old * f))
    length, reply = _reply_len(traj), None
    if length is not None and length > target:
        short = (
            shorten_reply(traj.reply, target, tool_results(traj)) if shorten else None
        )
        h_try = _set_params(h, "reply_format", max_chars=target)
        if short and _ok(h_try, traj, short):
            reply = short
        else:
            target = length
    h2 = _set_params(h, "reply_format", max_chars=min(old, target))
    params = {"factor": round(f, 3), "shorten": shorten}
    return finish(
        "tighten_max_chars", params, h, traj, h2, Mapping.identity(h), reply=reply
    )


@register_op("loosen_max_chars", "hooks", ranges={"factor": (0.0, 10.0)})
def loosen_max_chars(h, traj, rng, *, factor=0.0):
    """Raise the reply length limit."""
    old = _max_chars(h)
    h2 = h
    f = factor or float(rng.uniform(1.15, 2.0))
    if old is not None:
        h2 = _set_params(h, "reply_format", max_chars=max(old, int(round(old * f))))
    params = {"factor": round(f, 3)}
    return finish("loosen_max_chars", params, h, traj, h2, Mapping.identity(h))


def _banned(h: Harness) -> list[str]:
    spec = h.hook("reply_format")
    return (
        list(resolve_params(spec.name, spec.params)["banned_phrases"]) if spec else []
    )


@register_op("add_banned_phrases", "hooks", ranges={"n": (0, 10)})
def add_banned_phrases(h, traj, rng, *, n=0):
    """Ban more phrases in replies (never one the gold reply uses)."""
    count = n or int(rng.integers(1, 4))
    have = _banned(h)
    reply = (traj.reply or "") if traj is not None else ""
    pool = [
        p for p in BANNED_POOL if p not in have and p.casefold() not in reply.casefold()
    ]
    picks = [pool[i] for i in rng.permutation(len(pool))[:count]]
    h2 = h
    if h.hook("reply_format") is not None and picks:
        h2 = _set_params(h, "reply_format", banned_phrases=have + picks)
    return finish("add_banned_phrases", {"n": n}, h, traj, h2, Mapping.identity(h))


@register_op("drop_banned_phrases", "hooks", ranges={"frac": (0.0, 1.0)})
def drop_banned_phrases(h, traj, rng, *, frac=0.5):
    """Allow some banned phrases again (a looser reply check)."""
    have = _banned(h)
    keep = [p for p in have if rng.random() >= frac]
    if have and len(keep) == len(have):
        keep.pop(int(rng.integers(len(keep))))
    h2 = _set_params(h, "reply_format", banned_phrases=keep) if have else h
    return finish(
        "drop_banned_phrases", {"frac": frac}, h, traj, h2, Mapping.identity(h)
    )


@register_op("toggle_required_skills", "hooks")
def toggle_required_skills(h, traj, rng):
    """Require or stop requiring a skill kind before the reply.

    Only kinds the gold trajectory loaded are added; a reply skill stays required.
    """
    spec = h.hook("require_skill")
    kinds = list(resolve_params(spec.name, spec.params)["kinds"]) if spec else []
    have = {s.kind for s in h.skills}
    got = set()
    if traj is not None:
        got = {s.kind for name in loaded(traj) if (s := h.skill(name))}
    options = [("drop", k) for k in kinds if k != "reply"]
    options += [("add", k) for k in sorted(got & have) if k not in kinds]
    h2 = h
    if spec is not None and options:
        what, kind = options[int(rng.integers(len(options)))]
        new = [k for k in kinds if k != kind] if what == "drop" else kinds + [kind]
        h2 = _set_params(h, "require_skill", kinds=new)
    return finish("toggle_required_skills", {}, h, traj, h2, Mapping.identity(h))


@register_op("shift_turn_limit", "hooks", ranges={"delta": (-10, 10)})
def shift_turn_limit(h, traj, rng, *, delta=0):
    """Change the model-call limit per message (never below the gold's calls)."""
    d = delta or int(rng.choice([-3, -2, -1, 1, 2, 3, 4]))
    need = 1
    if traj is not None:
        need = max(1, sum(m.get("role") == "assistant" for m in traj.messages))
    h2 = h.replace(turn_limit=max(need, h.turn_limit + d, 1))
    return finish("shift_turn_limit", {"delta": d}, h, traj, h2, Mapping.identity(h))


# Sign-off tags: "#" + one word of each list (600 tags).
TAG_HEADS = (
    "Sunny", "Lucky", "Cozy", "Fresh", "Bright", "Golden", "Sweet", "Happy", "Snappy",
    "Tiny", "Bold", "Swift", "Merry", "Calm", "Shiny", "Peachy", "Zesty", "Jolly",
    "Crisp", "Rosy", "Breezy", "Minty", "Dandy", "Plucky",
)  # fmt: skip
TAG_TAILS = (
    "Picks", "Deals", "Finds", "Haul", "Cart", "Shelf", "Corner", "Club", "Drop",
    "Live", "Shop", "Stage", "Studio", "Market", "Booth", "Basket", "Window", "Lane",
    "Spot", "Nook", "Crew", "Room", "Desk", "Stall", "Bazaar",
)  # fmt: skip


TAGS = tuple(f"#{h}{t}" for h in TAG_HEADS for t in TAG_TAILS)


def draw_tag(rng) -> str:
    """A random sign-off tag, e.g. ``#SunnyPicks``."""
    return TAGS[int(rng.integers(len(TAGS)))]


def signed_reply(h2: Harness, traj, tag: str) -> str | None:
    """The gold reply with ``tag`` appended, or None (no gold reply)."""
    if traj is None or traj.reply is None:
        return None
    return sign(traj.reply, tag)


def fit_reply(h2: Harness, reply: str | None) -> Harness:
    """``h2`` with the reply length limit raised to the signed reply, if needed."""
    limit = _max_chars(h2)
    if reply is None or limit is None or len(reply.strip()) <= limit:
        return h2
    return _set_params(h2, "reply_format", max_chars=len(reply.strip()))


def present_tag(h: Harness) -> str:
    """The sign-off tag ``h`` already asks for (hook or reply skill), or ""."""
    tags = [hook_tag(h)] + [skill_tag(s.body) for s in h.skills if s.kind == "reply"]
    return next((t for t in tags if t), "")


@register_op("add_sign_off", "hooks", choices={"tag": ("", *TAGS)})
def add_sign_off(h, traj, rng, *, tag=""):
    """The reply hook asks every reply to end with a tag (the gold reply gets it;
    the length limit grows by what the tag needs)."""
    t = present_tag(h) or tag or draw_tag(rng)  # one tag per harness
    h2, reply = h, None
    if h.hook("reply_format") is not None:
        h2 = _set_params(h, "reply_format", sign_off=t)
        reply = signed_reply(h2, traj, t)
        h2 = fit_reply(h2, reply)
    return finish("add_sign_off", {}, h, traj, h2, Mapping.identity(h), reply=reply)
