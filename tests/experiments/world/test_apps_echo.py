"""Echo rows: the reply writes back exactly the wanted names of the user's list."""

import json
import re

import numpy as np
import pytest

from experiments.world.apps.echo import HOW, IN_LAYOUTS, layout, make_echo
from experiments.world.base_data import base_examples
from hat_jax.harness.unseen import unseen_identifiers

NAME = r"#?[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|#?[A-Za-z]"


def _parse(text: str, how: str) -> list[str]:
    """The names of a reply written in output layout ``how``."""
    if how == "json":
        return json.loads(text)
    if how == "lines":
        return text.split("\n")
    items = text.split(", ")
    return [x[1:-1] for x in items] if how == "ticks" else items


def _listed(user: str) -> list[tuple[str, str | None]]:
    """(name, label) of every list item in the user's message, in order."""
    body = user.split("\n", 1)[1]
    out = []
    for line in body.split("\n"):
        for item in re.findall(
            rf"`({NAME})`|\"({NAME})\"|({NAME})(?: \(([^)]+)\))?", line
        ):
            name = next(x for x in item[:3] if x)
            out.append((name, item[3] or None))
    return out


def test_replies_are_exact_copies_of_the_wanted_names():
    kept_rows = words_rows = 0
    for seed in range(300):
        ex = make_echo(np.random.default_rng(seed))
        user, reply = ex["messages"][0]["content"], ex["messages"][1]["content"]
        meta = ex["meta"]["echo"]
        got = _parse(reply, meta["layout"])
        listed = _listed(user)
        names = [n for n, _ in listed if not n.isdigit()]
        assert len(names) == meta["n"] and 12 <= meta["n"] <= 32
        if meta["kept"] is None:
            assert got == names
        else:
            kept_rows += 1
            labels = {lab for _, lab in listed}
            assert len(labels - {None}) >= 1
            assert got and all(n in names for n in got)
            assert got == [n for n in names if n in set(got)]  # order kept
        assert unseen_identifiers(ex["messages"]) == []  # names stand in its context
        if meta["words"]:  # plain words keep their layout (one cut each)
            assert meta["kept"] is None and layout(names, meta["layout"]) in user
            words_rows += 1
    assert 30 <= kept_rows <= 90  # SHARE_KIND = 0.3 of the identifier rows
    assert 90 <= words_rows <= 150  # SHARE_WORDS = 0.4


def test_layouts_round_trip():
    names = ["tally_loan", "op7k2", "#PebbleLantern", "cadence.wallet"]
    for how in HOW:
        assert _parse(layout(names, how), how) == names
    assert {h for h in IN_LAYOUTS} >= set(HOW) - {"json"} | {"json"}
    with pytest.raises(ValueError, match="unknown layout"):
        layout(names, "table")


def test_the_echo_mix_is_half_echo_and_deterministic():
    rows = list(base_examples(200, 0, "apps_echo"))
    kinds = [t.meta["kind"] for t in rows]
    assert set(kinds) == {"drill", "echo"} and 70 <= kinds.count("echo") <= 130
    again = list(base_examples(20, 0, "apps_echo"))
    assert [t.to_dict() for t in again] == [t.to_dict() for t in rows[:20]]
