"""A procedurally generated app: a real :class:`Harness` around a domain's records.

:func:`draw_app` draws everything an agent must read from its context afresh:
tool, parameter and skill names and the sign-off tag
(:mod:`experiments.world.apps.idents`, disjoint from every name the taolive
harnesses and the HSA pools use), which tools and skills the app has (2-6
each), flat or nested arguments, enums and optional arguments, decoy tools with
near-miss names, skill bodies whose rules matter (a sign-off tag, a field every
answer must also give), the reply hook's limits and the prompt's format, order
and titles. The records behind the tools are drawn too, so nothing a reply
quotes can be known without calling a tool.

:class:`App` keeps, beside the harness, which identifier plays which role: the
teacher (:mod:`~experiments.world.apps.teacher`) and the judge
(:mod:`~experiments.world.apps.judge`) read the playbook from it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from augment.names import NAME_RE
from experiments.world.apps import idents
from experiments.world.apps import texts as T
from experiments.world.apps.domain import Attr, Domain
from hat_jax.harness import Harness, HookSpec, PromptLayout, Skill, Tool
from hat_jax.harness.spec import PROMPT_FORMATS, SECTION_NAMES

REPLY_ROLES = ("qa", "service", "guide", "chat")
TOOL_ROLES = ("lookup", "stock", "policy", "deals", "reserve")


def pick(rng: np.random.Generator, items):
    return items[int(rng.integers(len(items)))]


@dataclasses.dataclass(frozen=True)
class App:
    """One generated app.

    Attributes:
      harness: the harness the agent runs under.
      domain: what the records are.
      tools: tool role -> the tool's name (roles this app has).
      params: tool role -> {argument role ("id", "qty", "topic") -> path of
        parameter names (one name, or wrapper then name when nested)}.
      skills: skill role -> the skill's name (roles this app has).
      hook_tag, skill_tag: sign-off tags of the reply hook and of the reply
        skills' bodies ("" when none).
      must_say: reply-skill role -> the attr key every answer under it also
        gives (a body rule), for the roles that have one.
      records: record number -> its fields (attr keys, stock, price).
      policies: policy key -> its number.
      deals: record number -> its deals (only records with a live deal).
      shop_deals: the app-wide deals.
      featured: the record the context shows as featured.
    """

    harness: Harness
    domain: Domain
    size: str
    tools: dict[str, str]
    params: dict[str, dict[str, tuple[str, ...]]]
    skills: dict[str, str]
    hook_tag: str
    skill_tag: str
    must_say: dict[str, str]
    records: dict[int, dict[str, Any]]
    policies: dict[str, int]
    deals: dict[int, list[dict[str, int]]]
    shop_deals: list[dict[str, int]]
    featured: int

    def context(self, minute: int) -> dict[str, Any]:
        """What the prompt's context section shows."""
        return {
            "desk": self.harness.name,
            f"featured_{self.domain.entity_en.replace(' ', '_')}": self.featured,
            "records": len(self.records),
            "minute": minute,
        }


def _draw_value(rng: np.random.Generator, attr: Attr) -> Any:
    if attr.numeric:
        return int(rng.integers(attr.lo, attr.hi + 1))
    return pick(rng, attr.values)


def draw_records(rng, d: Domain, n: int) -> dict[int, dict[str, Any]]:
    out = {}
    for i in range(1, n + 1):
        rec: dict[str, Any] = {}
        for attr in (*d.attrs, d.stock, d.price):
            v = _draw_value(rng, attr)
            if attr.numeric:
                rec[attr.key] = v
            else:
                rec[attr.key], rec[attr.key + "_zh"] = v
        out[i] = rec
    return out


def _draw_deal(rng, price: int) -> dict[str, int]:
    threshold = int(rng.integers(max(price // 2, 10), price * 2 + 20)) // 10 * 10
    off = max(2, int(threshold * float(rng.uniform(0.05, 0.3))))
    return {"threshold": threshold, "off": off}


def _fill(text: str, **kw: Any) -> str:
    return text.format(**kw)


def _tool(name: str, desc: str, props: dict, required: list[str]) -> Tool:
    params: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        params["required"] = required
    return Tool(name=name, description=desc, parameters=params)


def _id_schema(rng, d: Domain) -> dict[str, Any]:
    desc = _fill(pick(rng, T.ID_DESCRIPTIONS), entity=d.entity_en)
    return {"type": "integer", "minimum": 1, "description": desc}


def _build_tools(rng, d: Domain, roles, taken: set[str], words: dict, mini: bool):
    """Tools for ``roles`` (+ decoys): (tools, role -> name, role -> params)."""
    names, params, tools = {}, {}, []
    for role in roles:
        name = idents.fresh(rng, "tool", taken)
        names[role] = name
        desc = _fill(pick(rng, T.TOOL_DESCRIPTIONS[role]), **words)
        props: dict[str, Any] = {}
        required: list[str] = []
        paths: dict[str, tuple[str, ...]] = {}
        ptaken: set[str] = set()
        if role in ("lookup", "stock", "reserve", "deals"):
            key = idents.fresh(rng, "param", ptaken)
            props[key] = _id_schema(rng, d)
            paths["id"] = (key,)
            if role != "deals":
                required.append(key)
        if role == "reserve":
            key = idents.fresh(rng, "param", ptaken)
            desc_q = pick(rng, T.QTY_DESCRIPTIONS)
            props[key] = {"type": "integer", "minimum": 1, "description": desc_q}
            paths["qty"] = (key,)
            required.append(key)
        if role == "policy":
            key = idents.fresh(rng, "param", ptaken)
            topics = [p.key for p in d.policies]
            desc_t = pick(rng, T.TOPIC_DESCRIPTIONS)
            props[key] = {"type": "string", "enum": topics, "description": desc_t}
            paths["topic"] = (key,)
            if rng.random() < 0.5:
                required.append(key)
        if props and rng.random() < 0.3:  # nested: every argument in one object
            wrapper = idents.fresh(rng, "param", ptaken)
            inner: dict[str, Any] = {
                "type": "object",
                "description": pick(rng, T.WRAPPER_DOCS),
                "properties": props,
            }
            if required:
                inner["required"] = required
            props, required = {wrapper: inner}, [wrapper] if required else []
            paths = {k: (wrapper, *v) for k, v in paths.items()}
        params[role] = paths
        tools.append(_tool(name, desc, props, required))
    for _ in range(
        int(rng.integers(0, 2 if mini else 3))
    ):  # decoys: a near-miss of a real name
        near = _near_miss(rng, names[pick(rng, roles)], taken)
        desc = pick(rng, T.DECOY_TOOL_DESCRIPTIONS)
        key = idents.fresh(rng, "param", set())
        props = {key: {"type": "integer", "minimum": 1, "description": "A number."}}
        tools.append(_tool(near, desc, props, [key]))
    order = rng.permutation(len(tools))
    return [tools[int(i)] for i in order], names, params


NEAR_SUFFIXES = ("_v2", "2", "_old", "_admin", "_internal", "_bulk", "X", "_staff")


def _allowed(name: str) -> bool:
    return bool(NAME_RE.match(name)) and (
        idents.norm(name) not in idents.forbidden_identifiers()
    )


def _near_miss(rng, name: str, taken: set[str]) -> str:
    """A decoy's name: ``name`` with a small change (a suffix, a dropped
    letter), fresh and not forbidden."""
    for _ in range(20):
        if rng.random() < 0.7 or len(name) < 5:
            cand = name + pick(rng, NEAR_SUFFIXES)
        else:
            i = int(rng.integers(1, len(name) - 1))
            cand = name[:i] + name[i + 1 :]
        if cand not in taken and _allowed(cand):
            taken.add(cand)
            return cand
    return idents.fresh(rng, "tool", taken)


def _flat(tools, names, params):
    """Tools whose nested argument objects are unwrapped (the drill's)."""
    out = []
    for t in tools:
        props = dict(t.parameters.get("properties", {}))
        role = next((r for r, n in names.items() if n == t.name), None)
        paths = params.get(role, {}) if role else {}
        if role and any(len(p) == 2 for p in paths.values()):
            (inner,) = props.values()
            t = _tool(t.name, t.description, dict(inner["properties"]),
                      list(inner.get("required", ())))  # fmt: skip
            params[role] = {k: p[-1:] for k, p in paths.items()}
        out.append(t)
    return out, names, params


def _body(rng, role: str, words: dict, extra: list[str], drill: bool) -> str:
    lines = [_fill(s, **words) for s in (T.DRILL_BODIES if drill else T.BODIES)[role]]
    return "\n".join(lines + extra) + "\n"


SIZES = ("full", "mini", "drill")


def draw_app(rng: np.random.Generator, domain: Domain, *, size: str = "full") -> App:
    """A fresh app around ``domain`` (everything drawn from ``rng``).

    ``size``: ``full``; ``mini``, a short app (about half the tokens): compact
    format, the persona, skill index, tool list and constraints only, 2-3
    skills and 1-3 tools; ``drill``, the shortest (about 350 tokens): the skill
    index and tool list only, 2 skills with one-line bodies, 1-2 tools, so that
    nearly every trained token copies an identifier or a value from a few
    hundred tokens back (where a from-scratch model's copying forms).
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    d = domain
    mini = size != "full"
    drill = size == "drill"
    taken: set[str] = set()
    p = 0.0 if mini else 0.8
    skill_roles = ["qa", "chat"]
    skill_roles += [r for r in ("service", "guide", "deals") if rng.random() < p]
    if size == "mini" and rng.random() < 0.5:
        skill_roles.append("guide")
    if not mini and rng.random() < 0.3:
        skill_roles.append("decoy")
    tool_roles = ["lookup"]
    more = ("stock",) if drill else ("stock", "reserve")
    tool_roles += [r for r in more if rng.random() < 0.6 - mini / 5 - drill / 10]
    if "service" in skill_roles:
        tool_roles.append("policy")
    if "deals" in skill_roles:
        tool_roles.append("deals")
    fields = ", ".join(a.en for a in d.attrs[:3])
    topics = ", ".join(p.en for p in d.policies)
    words = {
        "entity": d.entity_en,
        "domain": d.en,
        "action": d.action_en,
        "fields": fields,
        "topics": topics,
    }
    tools, tool_names, params = _build_tools(rng, d, tool_roles, taken, words, mini)
    if drill:  # flat arguments only
        tools, tool_names, params = _flat(tools, tool_names, params)
    skill_names = {r: idents.fresh(rng, "skill", taken) for r in skill_roles}
    skill_tag = idents.sign_off_tag(rng) if rng.random() < 0.35 else ""
    hook_tag = ""  # the drill shows no constraints section, so no hook tag there
    if rng.random() < 0.3 and not drill:
        hook_tag = skill_tag or idents.sign_off_tag(rng)
    refs = {f"{role}": f"`{name}`" for role, name in tool_names.items()}
    step_words = dict(words)
    step_words |= {k: refs.get(k, "the tool") for k in ("lookup", "policy", "deals")}
    step_words["stock_step"] = (
        f" For how many are left, also call {refs['stock']}." if "stock" in refs else ""
    )
    step_words["topic_step"] = (
        ", passing the topic" if params.get("policy", {}).get("topic") else ""
    )
    step_words["deals_step"] = (
        f', then follow load_skill("{skill_names["deals"]}")'
        if "deals" in skill_names
        else ""
    )
    must_say: dict[str, str] = {}
    skills = []
    for role in skill_roles:
        extra = []
        kind = "strategy" if role == "deals" else "reply"
        if role in ("qa", "guide") and rng.random() < 0.2:
            attr = pick(rng, [a for a in d.attrs if a.numeric] or [d.price])
            must_say[role] = attr.key
            rule = pick(rng, T.MUST_SAY_RULES)
            extra.append(_fill(rule, field=attr.en, entity=d.entity_en))
        if skill_tag and kind == "reply" and role != "decoy":
            extra.append(_fill(pick(rng, T.SIGN_OFF_RULES), tag=skill_tag))
        desc = _fill(pick(rng, T.DESCRIPTIONS[role]), **words)
        body = _body(rng, role, step_words, extra, drill)
        skills.append(Skill(skill_names[role], kind, desc, body))
    skills = [skills[int(i)] for i in rng.permutation(len(skills))]

    n_records = int(rng.integers(5, 41))
    records = draw_records(rng, d, n_records)
    deals = {
        i: [_draw_deal(rng, rec[d.price.key])]
        for i, rec in records.items()
        if rng.random() < 0.4
    }
    shop_deals = [_draw_deal(rng, 100) for _ in range(int(rng.integers(0, 3)))]
    policies = {p.key: int(rng.integers(p.lo, p.hi + 1)) for p in d.policies}

    fmt = "compact" if mini else pick(rng, PROMPT_FORMATS)
    order = list(SECTION_NAMES)
    if drill:
        order = ["skill_index", "tool_list"]
    elif mini:
        order = ["persona", "skill_index", "tool_list", "constraints"]
    elif rng.random() < 0.5:
        rest = [order[int(i)] for i in rng.permutation(len(order) - 1) + 1]
        order = ["persona", *rest]
    titles = {s: pick(rng, T.TITLES[s]) for s in SECTION_NAMES}
    name = f"{pick(rng, T.BIZ_HEADS)} {d.en}"
    persona = _fill(
        pick(rng, T.PERSONAS), name=pick(rng, T.ASSISTANT_NAMES), biz=name, domain=d.en
    )
    persona += " " + pick(rng, T.LANGUAGE_LINES)
    rules = [_fill(r, entity=d.entity_en) for r in T.RULES]
    rules = [rules[int(i)] for i in rng.permutation(len(rules))[: rng.integers(3, 7)]]
    if mini:
        persona = persona.split(". ")[0] + ". " + pick(rng, T.LANGUAGE_LINES)
    constraints = [pick(rng, T.CONSTRAINTS[:2]), pick(rng, T.CONSTRAINTS[2:])]
    reply_params: dict[str, Any] = {"max_chars": int(rng.integers(80, 201))}
    if rng.random() < 0.6 and not drill:
        k = int(rng.integers(1, 4))
        reply_params["banned_phrases"] = [
            T.BANNED[int(i)] for i in rng.permutation(len(T.BANNED))[:k]
        ]
    if hook_tag:
        reply_params["sign_off"] = hook_tag
    hooks = [HookSpec("input_check", {"max_chars": 300}), HookSpec("tool_args")]
    if rng.random() < (0.5 if drill else 0.8):
        hooks.append(HookSpec("require_skill", {"kinds": ["reply"]}))
    hooks += [HookSpec("reply_format", reply_params), HookSpec("factual_risk")]
    harness = Harness(
        name=name,
        version="1.0",
        persona=persona,
        rules=tuple(rules),
        constraints=tuple(constraints),
        layout=PromptLayout(order=tuple(order), format=fmt, titles=titles),
        turn_limit=int(rng.integers(5, 8)),
        retry_limit=2,
        skills=tuple(skills),
        tools=tuple(tools),
        hooks=tuple(hooks),
    )
    return App(
        harness=harness,
        domain=d,
        size=size,
        tools=tool_names,
        params=params,
        skills=skill_names,
        hook_tag=hook_tag,
        skill_tag=skill_tag,
        must_say=must_say,
        records=records,
        policies=policies,
        deals=deals,
        shop_deals=shop_deals,
        featured=int(rng.integers(1, n_records + 1)),
    )
