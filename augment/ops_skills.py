"""Skill ops: identifiers (rename) and content (reorder, restyle, paraphrase, a
sign-off rule).

Skill bodies are parsed into paragraphs and list runs (:mod:`augment.rules`);
every op keeps each rule's text (modulo paraphrase of instruction wording),
every tool reference, every ``load_skill`` reference and every number.
"""

from __future__ import annotations

import dataclasses

from augment.names import rename_all
from augment.ops import finish, pick, register_op, subset
from augment.ops_hooks import TAGS, draw_tag, fit_reply, present_tag, signed_reply
from augment.ops_tools import reserved
from augment.paraphrase import paraphrase
from augment.rules import BULLETS, parse_body, render_body
from augment.text import rename_refs, rewrite_harness_text
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.signoff import SKILL_RULE, skill_tag
from hat_jax.harness.spec import Harness, Skill

SKILL_STYLES = ("snake", "snake", "camel", "pascal", "kebab", "dotted")
MAX_KEEP = 50  # leading numbered rules reorder_skill_rules may keep in place


def _with_bodies(h: Harness, fn) -> Harness:
    return h.replace(skills=tuple(dataclasses.replace(s, body=fn(s)) for s in h.skills))


@register_op("rename_skills", "skill_ids", ranges={"frac": (0.0, 1.0)})
def rename_skills(h, traj, rng, *, frac=1.0):
    """Rename skills (gold load_skill calls and skill references follow)."""
    chosen = subset(rng, [s.name for s in h.skills], frac)
    names = rename_all(chosen, rng, reserved(h), styles=SKILL_STYLES)
    m = Mapping.identity(h)
    m.skills.update(names)

    def rw(text: str) -> str:
        return rename_refs(text, skills=names)

    h2 = rewrite_harness_text(h, rw)
    h2 = h2.replace(
        skills=tuple(
            dataclasses.replace(s, name=names.get(s.name, s.name)) for s in h2.skills
        )
    )
    return finish("rename_skills", {"frac": frac}, h, traj, h2, m, rewrite=rw)


@register_op("reorder_skill_rules", "skill_content", ranges={"keep": (0, MAX_KEEP)})
def reorder_skill_rules(h, traj, rng, *, numbered=False, keep=2):
    """Shuffle bullet rules inside each list (numbered lists: after `keep`)."""

    def body(s: Skill) -> str:
        blocks = parse_body(s.body)
        for b in blocks:
            if b.items is None or len(b.items) < 2:
                continue
            fixed = 0 if b.kind == BULLETS else keep if numbered else len(b.items)
            tail = b.items[fixed:]
            b.items = b.items[:fixed] + [tail[i] for i in rng.permutation(len(tail))]
        return render_body(blocks)

    h2 = _with_bodies(h, body)
    params = {"numbered": numbered, "keep": keep if numbered else None}
    return finish("reorder_skill_rules", params, h, traj, h2, Mapping.identity(h))


BULLET_MARKS = ("-", "*", "+", "•")
NUMBER_MARKS = ("{n}.", "{n})", "({n})", "Step {n}:")
LABEL_STYLES = ("keep", "bold", "dash", "bracket", "upper")
WRAP_STYLES = ("keep", "unwrap", "wrap")


@register_op(
    "restyle_skills",
    "skill_content",
    choices={
        "bullet": ("", *BULLET_MARKS),
        "labels": ("", *LABEL_STYLES),
        "wrap": ("", *WRAP_STYLES),
    },
)
def restyle_skills(h, traj, rng, *, bullet="", labels="", wrap=""):
    """Change list markers, numbering, rule labels and line wrapping."""
    style = {
        "bullet": bullet or pick(rng, BULLET_MARKS),
        "number": pick(rng, NUMBER_MARKS),
        "labels": labels or pick(rng, LABEL_STYLES),
        "wrap": wrap or pick(rng, WRAP_STYLES),
        "width": int(rng.integers(60, 101)),
    }

    def body(s: Skill) -> str:
        blocks = parse_body(s.body)
        for b in blocks:
            if b.items is None:
                continue
            b.mark = style["bullet"] if b.kind == BULLETS else style["number"]
            for item in b.items:
                item.label_style = style["labels"]
        return render_body(blocks, wrap=style["wrap"], width=style["width"])

    h2 = _with_bodies(h, body)
    params = {"bullet": bullet or None, "labels": labels or None, "wrap": wrap or None}
    return finish("restyle_skills", params, h, traj, h2, Mapping.identity(h))


@register_op("paraphrase_skills", "skill_content", ranges={"p": (0.0, 1.0)})
def paraphrase_skills(h, traj, rng, *, p=0.6, descriptions=True):
    """Reword instruction phrasing in skill bodies (and descriptions)."""
    skills = tuple(
        Skill(
            s.name,
            s.kind,
            paraphrase(s.description, rng, p) if descriptions else s.description,
            paraphrase(s.body, rng, p),
        )
        for s in h.skills
    )
    h2 = h.replace(skills=skills)
    params = {"p": p, "descriptions": descriptions}
    return finish("paraphrase_skills", params, h, traj, h2, Mapping.identity(h))


@register_op("sign_off_skills", "skill_content", choices={"tag": ("", *TAGS)})
def sign_off_skills(h, traj, rng, *, tag=""):
    """Every reply skill gains a rule: end each reply with a tag (the gold reply
    gets it; seen only after load_skill, so the agent must read the skill)."""
    t = present_tag(h) or tag or draw_tag(rng)  # one tag per harness
    rule = SKILL_RULE.format(tag=t)
    h2 = _with_bodies(
        h,
        lambda s: (
            f"{s.body.rstrip()}\n\n{rule}\n"
            if s.kind == "reply" and skill_tag(s.body) != t
            else s.body
        ),
    )
    reply = signed_reply(h2, traj, t)
    h2 = fit_reply(h2, reply)
    return finish("sign_off_skills", {}, h, traj, h2, Mapping.identity(h), reply=reply)
