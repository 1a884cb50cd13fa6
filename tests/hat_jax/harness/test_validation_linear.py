"""Validation does linear work and bounded error text. Work is counted (equality
comparisons, characters scanned), never timed: a quadratic version trips the
budget in its first moments instead of running for minutes."""

import shutil

import pytest

from hat_jax.harness import HarnessError, builtin_path, load_harness
from hat_jax.harness import loader as loader_mod
from hat_jax.harness.json_schema import MAX_LISTED, check_schema, validate_json
from hat_jax.harness.spec import Skill

N = 100_000


class Budget(Exception):
    pass


class Counted(str):
    """A string that counts the equality tests made on it (and raises past a
    budget) and the characters scanned by ``count``/``find``/slicing."""

    work, budget = 0, 0

    def _spend(self, n: int) -> None:
        Counted.work += n
        if Counted.work > Counted.budget:
            raise Budget(f"more than {Counted.budget} units of work")

    def __eq__(self, other):
        self._spend(1)
        return str.__eq__(self, other)

    def __ne__(self, other):
        self._spend(1)
        return str.__ne__(self, other)

    __hash__ = str.__hash__

    def count(self, sub, start=0, end=None):
        self._spend(len(self) if end is None else end - start)
        return str.count(self, sub, start, end)

    def find(self, sub, start=0, end=None):
        self._spend(len(self) if end is None else end - start)
        return str.find(self, sub, start, end)

    def __getitem__(self, key):
        out = str.__getitem__(self, key)
        self._spend(len(out))
        return out


@pytest.fixture
def budget():
    def set_budget(n):
        Counted.work, Counted.budget = 0, n

    yield set_budget
    Counted.work, Counted.budget = 0, 0


def test_enum_of_100k_values_with_duplicates(budget):
    values = [Counted(f"v{i}") for i in range(N)] + [Counted("v7"), Counted("v99999")]
    budget(10 * N)  # a pairwise check needs ~N * N / 2 = 5e9
    errors = check_schema({"type": "string", "enum": values})
    assert errors == [
        (("enum", N), "enum value 'v7' is listed twice"),
        (("enum", N + 1), "enum value 'v99999' is listed twice"),
    ]
    assert Counted.work <= 10 * N


def test_enum_duplicates_follow_json_equality():
    errors = check_schema({"type": ["number", "boolean"], "enum": [1, True, 1.0, 0]})
    assert errors == [(("enum", 2), "enum value 1.0 is listed twice")]


def test_type_names_must_be_unique():
    errors = check_schema({"type": ["string"] * N, "enum": ["a"]})
    assert errors == [(("type",), "type lists a name twice: a list of 100000 items")]


def test_required_of_100k_names(budget):
    names = [Counted(f"p{i}") for i in range(N)]
    props = {n: {"type": "string"} for n in names}
    required = [Counted(f"p{i}") for i in range(N)] + [Counted("p5"), Counted("nope")]
    budget(10 * N)
    errors = check_schema({"type": "object", "properties": props, "required": required})
    assert errors == [
        (("required", N), "required lists 'p5' twice"),
        (("required", N + 1), "required names 'nope': not a property"),
    ]


def test_array_default_against_a_100k_enum(budget):
    enum = [Counted(f"v{i}") for i in range(N)]
    schema = {"type": "array", "items": {"type": "string", "enum": enum}}
    value = [Counted(f"v{i}") for i in range(0, N, 2)] + [Counted("zz")]
    budget(10 * N)
    (error,) = validate_json(value, schema)
    assert error.startswith(f"arguments[{N // 2}]: expected one of [")
    assert error.endswith(f'"v{MAX_LISTED - 1}", ... and 99,980 more]')


def test_100k_bad_references_scan_the_body_once(budget):
    body = Counted("".join(f"Call `zz{i % 7}` now.\n" for i in range(N)))
    skill = Skill("s", "reply", "d", body)
    names = {"skill": ["s"], "tool": ["load_skill", "real"]}
    errors = []
    budget(20 * len(body))  # counting lines from the start per reference: N * N
    loader_mod._check_references([("f.md", skill, 2, 7)], names, errors)
    assert len(errors) == N
    assert errors[0] == (
        "f.md:7: skill 's' refers to an unknown tool 'zz0'; expected one of "
        "['load_skill', 'real']"
    )
    assert errors[-1].startswith(f"f.md:{7 + N - 1}: skill 's' refers to an unknown")


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "h"
    shutil.copytree(builtin_path("taolive_v1"), d)
    return d


def test_100k_bad_references_in_a_folder(folder):
    p = folder / "skills" / "01_item_qa.md"
    text = p.read_text()
    p.write_text(text + "".join(f"`t{i % 10}`\n" for i in range(N)))
    start = text.count("\n") + 1
    with pytest.raises(HarnessError) as info:
        load_harness(folder)
    e = info.value
    assert e.total == N and len(e.errors) == loader_mod.MAX_ERRORS + 1
    assert e.errors[0] == (
        f"{p}:{start}: skill 'item_qa' refers to an unknown tool 't0'; expected one "
        "of ['load_skill', 'check_stock', 'get_product_info_by_link_id', "
        "'get_promotions', 'get_shipping_policy']"
    )
    assert (
        e.errors[-1] == f"{folder}:1: ... and {N - 200:,} more errors (first 200 shown)"
    )
    assert sum(map(len, e.errors)) < 200 * 300


def test_3000_skills_unknown_names_are_listed_briefly(folder):
    for i in range(3000):
        (folder / "skills" / f"9{i:04d}.md").write_text(
            f"---\nname: s{i:04d}\nkind: strategy\ndescription: S.\n---\n\n"
            f'Then load_skill("gone{i}").\n'
        )
    with pytest.raises(HarnessError) as info:
        load_harness(folder)
    e = info.value
    assert e.total == 3000 and len(e.errors) == loader_mod.MAX_ERRORS + 1
    first = e.errors[0]
    assert first.endswith(", ... and 2,985 more]") and "'s0014'" in first
    assert "'s0015'" not in first and len(first) < 600
    assert len(str(e)) < 201 * 600
