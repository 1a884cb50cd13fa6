"""The one registry and spec parser (hat_jax/registry.py)."""

import pytest

from hat_jax.registry import Registry, literal, parse_call, parse_name, split_top


def test_literals_are_parsed_never_evaluated():
    assert literal(" true ") is True and literal("False") is False
    assert literal("none") is None and literal("'none'") == "none"
    assert literal("3") == 3 and literal("-2.5e1") == -25.0
    assert literal("__import__('os')") == "__import__('os')"  # a bare string
    with pytest.raises(ValueError, match="too long"):
        literal("1" * 40)
    with pytest.raises(ValueError, match="out of range"):
        literal("1e999")


def test_calls_split_outside_quotes_and_name_what_is_unbalanced():
    assert parse_call("jsd") == ("jsd", [])
    assert parse_call("f(a='x,y', b=2)") == ("f", ["a='x,y'", " b=2"])
    assert parse_name("gdpo(renorm=none)") == ("gdpo", (), {"renorm": None})
    assert parse_name("jsd(0.5)") == ("jsd", (0.5,), {})
    with pytest.raises(ValueError, match=r"a '\)' is missing"):
        parse_call("f(a=1")
    with pytest.raises(ValueError, match="unexpected"):
        parse_call("f(g(1))")
    with pytest.raises(ValueError, match="positional argument after keyword"):
        parse_name("f(a=1, 2)")


def test_registry_names_binds_and_refuses():
    reg: Registry = Registry("thing", fixed=("x",))

    @reg.register("scale")
    def scale(*, x, factor=2.0):
        return x * factor

    assert reg.names() == ("scale",) and "scale" in reg and len(reg) == 1
    assert reg.bind("scale(3)")(x=2) == 6 and reg.bind("scale")(x=2) == 4.0
    with pytest.raises(ValueError, match="already registered"):
        reg.add("scale", scale)
    with pytest.raises(ValueError, match=r"unknown thing 'nope'; have \['scale'\]"):
        reg.lookup("nope")
    with pytest.raises(KeyError, match="unknown thing"):
        reg["nope"]
    with pytest.raises(ValueError, match="bad parameter 'y'"):
        reg.bind("scale(y=1)")


def test_split_top_nests_brackets_only_when_asked():
    assert split_top("a=1,b=[1,2],c={'x': 1, 'y': 2}", ",", brackets=True) == [
        "a=1",
        "b=[1,2]",
        "c={'x': 1, 'y': 2}",
    ]
    assert split_top("a=[1,2]", ",") == ["a=[1", "2]"]  # call args: no brackets
    assert split_top("f(a,b),g", ",", brackets=True) == ["f(a,b)", "g"]
