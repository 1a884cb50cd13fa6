"""Text edits that keep meaning: reference renames and protected spans.

Skill bodies and descriptions name tools as `` `tool_name` ``, skills as
``load_skill("name")``, and may quote enum values and numbers. Renames rewrite
exactly those references (never a plain English word that happens to equal a
name); paraphrase and restyle edits never touch *protected* spans: code,
``load_skill(...)``, quotes, numbers, identifiers with ``_ . -`` and URLs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from augment.schema import map_descriptions
from hat_jax.harness.spec import Harness, Skill

_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_])?")
_LOAD = re.compile(r"load_skill\(\s*[\"']?$")
PROTECTED = re.compile(
    r"`[^`\n]*`"
    r"|load_skill\([^)\n]*\)"
    r"|\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』"
    r"|https?://\S+"
    r"|[A-Za-z0-9]*[\d_][A-Za-z0-9_.\-]*"  # numbers, prices, identifiers
    r"|[A-Za-z0-9]+[.\-][A-Za-z0-9][A-Za-z0-9_.\-]*"  # dotted/dashed names
)


def identifier_like(name: str) -> bool:
    """True for names no prose word equals (snake, dotted, camel, digits)."""
    return bool(re.search(r"[_.\-\d]|[a-z][A-Z]", name))


def rename_refs(
    text: str,
    *,
    tools: Mapping[str, str] | None = None,
    skills: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    paths: Mapping[str, str] | None = None,
    values: Mapping[str, str] | None = None,
) -> str:
    """Rewrites references to renamed tools, skills, parameters and values.

    A token is rewritten when it is backticked or quoted, an identifier-like
    name, a call (``name(``), or for skills inside ``load_skill(...)``;
    parameters also as ``key=``. ``paths`` maps dotted argument paths
    (``item.link_id``). All renames apply at once, so swaps are safe.
    """
    tools, skills, params = tools or {}, skills or {}, params or {}
    paths, values = paths or {}, values or {}
    if not (tools or skills or params or paths or values):
        return text

    def sub(m: re.Match) -> str:
        tok, a, b = m.group(0), m.start(), m.end()
        before, after = text[max(0, a - 16) : a], text[b : b + 2]
        ticked = any(before.endswith(q) and after.startswith(q) for q in "`\"'")
        ident = identifier_like(tok)
        if tok in skills and (_LOAD.search(before) or ticked or ident):
            return skills[tok]
        if tok in tools and (ticked or ident or after.startswith("(")):
            return tools[tok]
        if tok in paths:
            return paths[tok]
        keyword = after.lstrip().startswith("=") and not after.startswith("==")
        if tok in params and (ticked or keyword or ident):
            return params[tok]
        if tok in values and (ticked or ident):
            return values[tok]
        return tok

    return _TOKEN.sub(sub, text)


def path_texts(
    moves: Iterable[tuple[tuple[str, ...], tuple[str, ...]]],
) -> dict[str, str]:
    """Dotted-path text renames from path moves (ambiguous ones dropped).

    Only paths written with a dot are rewritten: a bare name such as
    ``link_id`` still names the same argument after nesting.
    """
    out: dict[str, str] = {}
    bad: set[str] = set()
    for old, new in moves:
        a, b = ".".join(old), ".".join(new)
        if len(old) < 2 or a == b:
            continue
        if out.get(a, b) != b:
            bad.add(a)
        out[a] = b
    return {a: b for a, b in out.items() if a not in bad}


def map_unprotected(text: str, fn: Callable[[str], str]) -> str:
    """Applies ``fn`` to the unprotected stretches of ``text`` only."""
    out, pos = [], 0
    for m in PROTECTED.finditer(text):
        out += [fn(text[pos : m.start()]), m.group(0)]
        pos = m.end()
    out.append(fn(text[pos:]))
    return "".join(out)


def protected_spans(text: str) -> list[str]:
    """The protected spans of ``text`` (what a meaning-keeping edit keeps)."""
    return [m.group(0) for m in PROTECTED.finditer(text)]


def rewrite_harness_text(h: Harness, fn: Callable[[str], str]) -> Harness:
    """``fn`` applied to every prose field: persona, rules, constraints, skill
    bodies and descriptions, tool descriptions (top level and parameters)."""
    return h.replace(
        persona=fn(h.persona),
        rules=tuple(fn(r) for r in h.rules),
        constraints=tuple(fn(c) for c in h.constraints),
        skills=tuple(
            Skill(s.name, s.kind, fn(s.description), fn(s.body)) for s in h.skills
        ),
        tools=tuple(
            t.__class__(t.name, fn(t.description), map_descriptions(t.parameters, fn))
            for t in h.tools
        ),
    )
