"""Tool-schema ops: names, parameters, property order, descriptions, shape,
enum spellings and distractor tools."""

from __future__ import annotations

import dataclasses

import numpy as np

from augment import schema as S
from augment.distractors import DISTRACTORS
from augment.names import PARAM_RE, fresh_name, rename_all
from augment.ops import finish, pick, register_op, subset
from augment.paraphrase import paraphrase
from augment.text import path_texts, rename_refs, rewrite_harness_text
from hat_jax.harness.mapping import Mapping, schema_leaves
from hat_jax.harness.spec import LOAD_SKILL, Harness, Skill, Tool

WRAPPERS = ("args", "params", "query", "request", "input", "payload", "options")
WRAPPERS += ("spec", "filters", "data", "req", "body", "selector", "target")
WRAPPER_DOCS = (
    "The arguments of this call, as one object.",
    "Request fields.",
    "What to look up.",
    "Query parameters.",
    "All inputs of the call.",
)
ENUM_STYLES = ("upper", "title", "camel", "kebab", "suffix", "prefix", "zh")
_SUFFIXES = ("_info", "_detail", "_query", "_q", "_topic", "_field")
_PREFIXES = ("ask_", "q_", "about_", "topic_", "by_")
_ZH = {
    "price": "价格",
    "size": "尺码",
    "stock": "库存",
    "color": "颜色",
    "colour": "颜色",
    "material": "材质",
    "specs": "规格",
    "shipping": "物流",
    "title": "标题",
    "selling_points": "卖点",
    "size_chart": "尺码表",
    "all": "全部",
    "zh": "中文",
    "en": "英文",
    "ja": "日文",
    "ko": "韩文",
}
DESC_NOTES = ("Read-only.", "Safe to call more than once.", "Returns JSON.")


def reserved(h: Harness) -> set[str]:
    """Every identifier a new name must not reuse."""
    keys = {k for t in h.tools for k in S.all_keys(t.parameters)}
    return {LOAD_SKILL} | {t.name for t in h.tools} | {s.name for s in h.skills} | keys


def _with_tools(h: Harness, tools) -> Harness:
    return h.replace(tools=tuple(tools))


@register_op("rename_tools", "tool_schema", ranges={"frac": (0.0, 1.0)})
def rename_tools(h, traj, rng, *, frac=1.0):
    """Rename tools (skill references and gold calls follow)."""
    names = rename_all(subset(rng, [t.name for t in h.tools], frac), rng, reserved(h))
    m = Mapping.identity(h)
    m.tools.update(names)

    def rw(text: str) -> str:
        return rename_refs(text, tools=names)

    h2 = rewrite_harness_text(h, rw)
    h2 = _with_tools(
        h2, [dataclasses.replace(t, name=names.get(t.name, t.name)) for t in h2.tools]
    )
    return finish("rename_tools", {"frac": frac}, h, traj, h2, m, rewrite=rw)


@register_op("rename_params", "tool_schema", ranges={"frac": (0.0, 1.0)})
def rename_params(h, traj, rng, *, frac=0.5):
    """Rename parameters at any depth, consistently across tools."""
    keys = list(dict.fromkeys(k for t in h.tools for k in S.all_keys(t.parameters)))
    chosen = subset(rng, keys, frac)
    taken = set(reserved(h))
    keymap = {}
    for k in chosen:
        keymap[k] = fresh_name(
            k, rng, taken, styles=("snake", "snake", "camel"), ns=False, valid=PARAM_RE
        )
        taken.add(keymap[k])
    m = Mapping.identity(h)
    tools, moves = [], []
    for t in h.tools:
        params, paths = S.rename_keys(t.parameters, keymap)
        m.params[t.name] = {p: paths.get(p, p) for p in m.params[t.name]}
        tools.append(dataclasses.replace(t, parameters=params))
        moves += paths.items()
    texts = path_texts(moves)
    h2 = _with_tools(h, tools)
    h2 = rewrite_harness_text(h2, lambda s: rename_refs(s, params=keymap, paths=texts))
    return finish("rename_params", {"frac": frac}, h, traj, h2, m)


@register_op("reorder_properties", "tool_schema")
def reorder_properties(h, traj, rng):
    """Shuffle property order (and `required`) in every tool schema."""
    tools = list(h.tools)
    for _ in range(16):
        tools = [
            dataclasses.replace(t, parameters=S.shuffle_props(t.parameters, rng))
            for t in h.tools
        ]
        if [list(S.props(t.parameters)) for t in tools] != [
            list(S.props(t.parameters)) for t in h.tools
        ]:
            break
    # Leaves listed in the new order, so carried gold calls write their
    # arguments in the order the schema now shows them.
    m = Mapping.identity(h)
    m.params = {t.name: {p: p for p in schema_leaves(t.parameters)} for t in tools}
    return finish("reorder_properties", {}, h, traj, _with_tools(h, tools), m)


@register_op("rewrite_tool_descriptions", "tool_schema", ranges={"p": (0.0, 1.0)})
def rewrite_tool_descriptions(h, traj, rng, *, p=0.7, notes=True):
    """Paraphrase tool and parameter descriptions (names and numbers kept)."""
    tools = []
    for t in h.tools:
        desc = paraphrase(t.description, rng, p)
        if notes and rng.random() < 0.3:
            desc = f"{desc} {pick(rng, DESC_NOTES)}"
        params = S.map_descriptions(t.parameters, lambda s: paraphrase(s, rng, p))
        tools.append(dataclasses.replace(t, description=desc, parameters=params))
    h2 = _with_tools(h, tools)
    return finish(
        "rewrite_tool_descriptions", {"p": p}, h, traj, h2, Mapping.identity(h)
    )


@register_op("nest_args", "tool_schema", ranges={"frac": (0.0, 1.0)})
def nest_args(h, traj, rng, *, frac=0.5, wrapper=""):
    """Wrap a tool's arguments into one object parameter."""
    if wrapper and not PARAM_RE.match(wrapper):
        raise ValueError(f"wrapper {wrapper!r} is not a parameter name")
    m = Mapping.identity(h)
    candidates = [t.name for t in h.tools if S.props(t.parameters)]
    chosen = set(subset(rng, candidates, frac))
    tools, moves = [], []
    for t in h.tools:
        if t.name not in chosen:
            tools.append(t)
            continue
        w = wrapper or pick(rng, WRAPPERS)
        params = S.nest(t.parameters, w, pick(rng, WRAPPER_DOCS))
        m.params[t.name] = {p: (w, *q) for p, q in m.params[t.name].items()}
        moves += [(p, (w, *p)) for p in S.all_paths(t.parameters)]
        tools.append(dataclasses.replace(t, parameters=params))
    texts = path_texts(moves)
    h2 = rewrite_harness_text(
        _with_tools(h, tools), lambda s: rename_refs(s, paths=texts)
    )
    return finish(
        "nest_args", {"frac": frac, "wrapper": wrapper or None}, h, traj, h2, m
    )


@register_op("flatten_args", "tool_schema", ranges={"frac": (0.0, 1.0)})
def flatten_args(h, traj, rng, *, frac=1.0):
    """Replace object parameters by their properties at the top level."""
    m = Mapping.identity(h)
    pairs = [
        (t.name, k)
        for t in h.tools
        for k, v in S.props(t.parameters).items()
        if S.is_struct(v)
    ]
    chosen = subset(rng, pairs, frac)
    tools, moves = [], []
    for t in h.tools:
        params = t.parameters
        cur = {p: p for p in S.all_paths(t.parameters)}
        for name, outer in chosen:
            if name != t.name:
                continue
            params, moved = S.flatten(params, outer, set())
            cur = {
                p: (moved[q[:2]] + q[2:] if q[:2] in moved else q)
                for p, q in cur.items()
            }
        m.params[t.name] = {p: cur[p] for p in m.params[t.name]}
        moves += cur.items()
        tools.append(dataclasses.replace(t, parameters=params))
    texts = path_texts(moves)
    h2 = rewrite_harness_text(
        _with_tools(h, tools), lambda s: rename_refs(s, paths=texts)
    )
    return finish("flatten_args", {"frac": frac}, h, traj, h2, m)


def _words_of(v: str) -> tuple[list[str], str]:
    for sep in ("_", "-", " "):
        if sep in v:
            return v.split(sep), sep
    return [v], "_"


def respell(values: list[str], style: str, rng: np.random.Generator) -> dict | None:
    """A new spelling for every value (None if the style cannot change them all)."""
    if style == "zh":
        if not all(v.lower() in _ZH for v in values):
            return None
        table = {v: _ZH[v.lower()] for v in values}
    else:
        fix = pick(rng, _SUFFIXES if style == "suffix" else _PREFIXES)
        table = {}
        for v in values:
            words, sep = _words_of(v)
            table[v] = {
                "upper": v.upper(),
                "title": sep.join(w.capitalize() for w in words),
                "camel": words[0].lower() + "".join(w.capitalize() for w in words[1:]),
                "kebab": "-".join(w.lower() for w in words),
                "suffix": v + fix,
                "prefix": fix + v,
            }[style]
    new = list(table.values())
    if any(a == b for a, b in table.items()) or len(set(new)) < len(new):
        return None
    if set(new) & set(values):
        return None
    return table


@register_op(
    "enum_spelling",
    "tool_schema",
    choices={"style": ("", *ENUM_STYLES)},
    ranges={"frac": (0.0, 1.0)},
)
def enum_spelling(h, traj, rng, *, style="", frac=1.0):
    """Respell string enum values (gold arguments mapped)."""
    m = Mapping.identity(h)
    sites = [(t.name, p) for t in h.tools for p in S.enum_leaves(t.parameters)]
    tools = {t.name: t for t in h.tools}
    respelt: dict[str, str] = {}
    clash: set[str] = set()
    for name, path in subset(rng, sites, frac):
        t = tools[name]
        values = S.enum_node(S.at(t.parameters, path))["enum"]
        styles = [style] if style else [ENUM_STYLES[i] for i in rng.permutation(7)]
        table = next((tb for s in styles if (tb := respell(values, s, rng))), None)
        if table is None:
            continue
        params = S.respell_enum(t.parameters, path, table)
        tools[name] = dataclasses.replace(t, parameters=params)
        leaf = next(p for p, q in m.params[name].items() if q == path)
        m.values.setdefault(name, {})[leaf] = table
        clash |= {a for a, b in table.items() if respelt.get(a, b) != b}
        respelt.update(table)
    respelt = {a: b for a, b in respelt.items() if a not in clash}

    def rw(text: str) -> str:
        return rename_refs(text, values=respelt)

    h2 = _with_tools(h, [tools[t.name] for t in h.tools])
    h2 = h2.replace(
        tools=tuple(
            dataclasses.replace(t, parameters=S.map_descriptions(t.parameters, rw))
            for t in h2.tools
        ),
        skills=tuple(
            Skill(s.name, s.kind, s.description, rw(s.body)) for s in h2.skills
        ),
    )
    return finish("enum_spelling", {"style": style or None}, h, traj, h2, m)


@register_op("add_distractor_tools", "tool_schema", ranges={"n": (0, 8)})
def add_distractor_tools(h, traj, rng, *, n=0):
    """Add plausible tools the gold trajectory never needs (n=0: 1 to 3)."""
    count = n or int(rng.integers(1, 4))
    taken = reserved(h)
    pool = [d for d in DISTRACTORS if d["name"] not in taken]
    idx = rng.permutation(len(pool))[:count]
    tools = list(h.tools)
    m = Mapping.identity(h)
    for i in idx:
        d = pool[int(i)]
        name = d["name"] if rng.random() < 0.4 else fresh_name(d["name"], rng, taken)
        taken.add(name)
        tool = Tool(name, d["description"], d["parameters"])
        tools.insert(int(rng.integers(len(tools) + 1)), tool)
        m.added_tools.append(name)
    return finish("add_distractor_tools", {"n": n}, h, traj, _with_tools(h, tools), m)
