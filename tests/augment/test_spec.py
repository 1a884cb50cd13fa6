"""Spec strings: parsing, errors naming their position, determinism."""

import pytest

from augment import apply_spec, format_spec, parse_spec


def test_parse_forms():
    assert parse_spec("rename_tools|reorder_sections|format(xml)") == [
        ("rename_tools", {}),
        ("reorder_sections", {}),
        ("format", {"fmt": "xml"}),
    ]
    assert parse_spec(" nest_args( frac = 1 , wrapper='args' ) ") == [
        ("nest_args", {"frac": 1.0, "wrapper": "args"})
    ]
    assert parse_spec("reorder_skill_rules(numbered=true,keep=1)") == [
        ("reorder_skill_rules", {"numbered": True, "keep": 1})
    ]
    assert parse_spec("") == [] and parse_spec("   ") == []


@pytest.mark.parametrize(
    "spec",
    [
        "rename_tools|format(markdown)|tighten_max_chars(factor=0.5,shorten=false)",
        "nest_args(wrapper=query)|add_distractor_tools(n=2)|enum_spelling(style=zh)",
    ],
)
def test_format_round_trip(spec):
    ops = parse_spec(spec)
    assert parse_spec(format_spec(ops)) == ops


@pytest.mark.parametrize(
    "spec, where, what",
    [
        ("rename_tools|bogus", "spec op 2 ('bogus')", "unknown op 'bogus'"),
        (
            "format(foo)",
            "spec op 1",
            "expected one of ['markdown', 'xml', 'plain', 'compact']",
        ),
        ("rename_tools(frac=2)", "spec op 1", "expected 0.0 to 1.0"),
        ("rename_tools(fraction=1)", "spec op 1", "has no param 'fraction'"),
        ("nest_args(frac=abc)", "spec op 1", "frac: expected a number"),
        ("add_distractor_tools(n=1.5)", "spec op 1", "n: expected an integer"),
        ("reorder_skill_rules(numbered=3)", "spec op 1", "expected true or false"),
        ("rename_tools||format", "spec op 2", "empty op"),
        ("format(fmt=xml,fmt=plain)", "spec op 1", "given twice"),
        ("nest_args(frac=1,args)", "spec op 1", "use key=value"),
        ("reorder_properties(1)", "spec op 1", "use key=value"),
        ("rename tools", "spec op 1", "expected name or name(key=value"),
        ("format(xml", "spec op 1", "expected name or name(key=value"),
    ],
)
def test_errors_name_the_position(spec, where, what):
    with pytest.raises(ValueError) as e:
        parse_spec(spec)
    assert where in str(e.value) and what in str(e.value)


def test_apply_is_deterministic_and_tags_the_version(harnesses, golds):
    h, t = harnesses["taolive_v1"], golds["taolive_v1"]["price"]
    spec = "rename_tools|paraphrase_skills|format"
    a = apply_spec(h, t, spec, 5)
    b = apply_spec(h, t, spec, 5)
    c = apply_spec(h, t, spec, 6)
    assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
    assert a[0] != c[0]
    assert a[0].version.startswith("1.0+hsa.") and a[1].harness_id == a[0].id
    assert t.harness_id == h.id  # the source trajectory is untouched
    assert apply_spec(h, t, "", 0) == (h, t, apply_spec(h, t, "", 0)[2])
