"""Variant families: named distributions over op compositions.

The split. Every *train* family perturbs exactly one HSA dimension (tool
schemas, skill identifiers, skill content, prompt structure or hooks), with
random params and random op order. Every *held-out* family combines two or more
dimensions at once, in combinations no training family produces (identifiers
of tools and skills together, reshaped schemas under rewritten skills, prompt
restructuring under shifted hooks, one op from each of the five dimensions).
The Harness-Variant QA set uses only held-out families, so it measures whether
a model learnt to *read* its harness rather than the particular edits it saw.
Each held-out family changes what a correct turn does on every message, so a
model that memorised taolive_v1 fails it: new tool and skill names
(all_identifiers, everything), a sign-off rule in the reply skills
(reshaped_rewritten), a sign-off rule in the reply hook (prompt_under_hooks);
``tests/experiments/test_gaming.py`` holds a v1 memoriser to <= 20 % success on
each.
``call_format`` (switching qwen_xml/hermes) is in no family: it changes the
output format itself, and stays available to explicit specs.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from augment.ops import all_ops
from augment.spec import format_spec

Sampler = Callable[[np.random.Generator], Any]


def U(lo: float, hi: float) -> Sampler:
    return lambda rng: round(float(rng.uniform(lo, hi)), 2)


def C(*values: Any) -> Sampler:
    return lambda rng: values[int(rng.integers(len(values)))]


@dataclasses.dataclass(frozen=True)
class Slot:
    """With probability ``p``, one of ``choices``: (op name, {param: sampler})."""

    p: float
    choices: tuple[tuple[str, dict[str, Sampler]], ...]


def slot(p: float, *choices: str | tuple[str, dict[str, Sampler]]) -> Slot:
    return Slot(p, tuple((c, {}) if isinstance(c, str) else c for c in choices))


_TIGHTEN = ("tighten_max_chars", {"factor": U(0.5, 0.95)})
_LOOSEN = ("loosen_max_chars", {"factor": U(1.15, 2.0)})
_BAN = ("add_banned_phrases", {"n": C(1, 2, 3)})
_PARA = ("paraphrase_skills", {"p": U(0.3, 0.9)})
_RESTYLE = "restyle_skills"
_REORDER_RULES = ("reorder_skill_rules", {"numbered": C(False, True)})
# Held-out reshapes touch every tool, so the call a case needs is reshaped too
# (a v1-shaped call fails); flatten_args (train only) undoes nesting and changes
# nothing of v1's flat tools.
_NEST_ALL = ("nest_args", {"frac": C(1.0)})
_RENAME_ALL_PARAMS = ("rename_params", {"frac": C(1.0)})

TRAIN_FAMILIES: dict[str, tuple[Slot, ...]] = {
    "tool_renames": (
        slot(1.0, ("rename_tools", {"frac": U(0.4, 1.0)})),
        slot(0.5, ("rename_params", {"frac": U(0.3, 1.0)})),
    ),
    "schema_reshape": (
        slot(0.7, ("nest_args", {"frac": U(0.3, 1.0)}), "flatten_args"),
        slot(0.6, "reorder_properties"),
        slot(0.5, "enum_spelling"),
    ),
    "tool_catalog": (
        slot(0.8, ("rewrite_tool_descriptions", {"p": U(0.3, 0.9)})),
        slot(0.7, ("add_distractor_tools", {"n": C(1, 2, 3)})),
    ),
    "skill_renames": (slot(1.0, ("rename_skills", {"frac": U(0.4, 1.0)})),),
    "skill_rewrite": (
        slot(0.6, _REORDER_RULES),
        slot(0.6, _RESTYLE),
        slot(0.6, _PARA),
        slot(0.5, "sign_off_skills"),
    ),
    "prompt_restructure": (
        slot(0.7, "reorder_sections"),
        slot(0.7, "retitle_sections"),
        slot(0.6, "format"),
    ),
    "hook_shift": (
        slot(0.8, _TIGHTEN, _LOOSEN),
        slot(0.5, _BAN, ("drop_banned_phrases", {"frac": U(0.2, 0.8)})),
        slot(0.4, "toggle_required_skills"),
        slot(0.3, "shift_turn_limit"),
        slot(0.5, "add_sign_off"),
    ),
}

HELDOUT_FAMILIES: dict[str, tuple[Slot, ...]] = {
    "all_identifiers": (
        slot(1.0, "rename_tools"),
        slot(1.0, "rename_skills"),
        slot(0.6, "rename_params"),
    ),
    "reshaped_rewritten": (
        slot(1.0, _NEST_ALL),
        slot(0.5, "enum_spelling"),
        slot(1.0, _PARA, _RESTYLE, _REORDER_RULES),
        slot(1.0, "sign_off_skills"),
        slot(0.5, "reorder_properties"),
    ),
    "prompt_under_hooks": (
        slot(1.0, "format", "reorder_sections"),
        slot(0.7, "retitle_sections"),
        slot(1.0, _TIGHTEN, _BAN),
        slot(1.0, "add_sign_off"),
        slot(0.4, "add_distractor_tools"),
    ),
    "everything": (
        slot(1.0, "rename_tools", _RENAME_ALL_PARAMS, _NEST_ALL, "enum_spelling"),
        slot(1.0, "rename_skills"),
        slot(1.0, _PARA, _RESTYLE, _REORDER_RULES),
        slot(1.0, "format", "reorder_sections", "retitle_sections"),
        slot(1.0, _TIGHTEN, _BAN, "toggle_required_skills", _LOOSEN),
        slot(0.5, "add_distractor_tools", "reorder_properties"),
    ),
}
FAMILIES = {**TRAIN_FAMILIES, **HELDOUT_FAMILIES}


def family_dimensions(family: str) -> list[set[str]]:
    """For each slot of ``family``, the dimensions its choices touch."""
    ops = all_ops()
    return [{ops[name].dimension for name, _ in s.choices} for s in FAMILIES[family]]


def sample_family_spec(family: str, rng: np.random.Generator) -> str:
    """A random spec string from ``family`` (at least one op, random order)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; have {sorted(FAMILIES)}")
    slots = FAMILIES[family]
    chosen = [s for s in slots if rng.random() < s.p] or [slots[0]]
    ops = []
    for s in chosen:
        name, samplers = s.choices[int(rng.integers(len(s.choices)))]
        ops.append((name, {k: f(rng) for k, f in samplers.items()}))
    ops = [ops[i] for i in rng.permutation(len(ops))]
    return format_spec(ops)


def family_arg(text: str) -> str:
    """argparse type of ``--family``: the name of a family."""
    if text not in FAMILIES:
        raise argparse.ArgumentTypeError(
            f"unknown family {text!r}; have {', '.join(sorted(FAMILIES))}"
        )
    return text
