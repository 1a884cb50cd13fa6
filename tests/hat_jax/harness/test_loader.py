"""Harness folders: the builtins load, dump round-trips, and every malformed folder
gives `path:line: ...` errors (never another exception)."""

import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hat_jax.harness import (
    BUILTIN,
    HarnessError,
    builtin_path,
    dump_harness,
    load_harness,
    skill_references,
    tool_references,
)

MANIFEST = "manifest.yaml"
AFTER_SALES = "skills/03_after_sales.md"
STOCK = "tools/02_check_stock.json"
ERROR_LINE = re.compile(r"^(.+):(\d+): \S")


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "h"
    shutil.copytree(builtin_path("taolive_v1"), d)
    return d


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def errors_of(folder):
    with pytest.raises(HarnessError) as info:
        load_harness(folder)
    errors = info.value.errors
    assert errors and all(ERROR_LINE.match(e) for e in errors), errors
    assert str(info.value) == "\n".join(errors)
    return errors


def assert_error(folder, rel, line, fragment):
    errors = errors_of(folder)
    prefix = f"{folder / rel}:{line}: " if line else f"{folder / rel}:"
    hits = [e for e in errors if e.startswith(prefix) and fragment in e]
    assert hits, f"no {prefix}...{fragment!r} in {errors}"


@pytest.mark.parametrize("name", BUILTIN)
def test_builtins_load(name):
    h = load_harness(name)
    assert h == load_harness(builtin_path(name))
    assert any(s.kind == "reply" for s in h.skills)
    assert h.hook("require_skill").params == {"kinds": ["reply"]}


def test_v2_is_the_evolved_v1():
    v1, v2 = load_harness("taolive_v1"), load_harness("taolive_v2")
    assert v1.name == v2.name and v1.version != v2.version
    assert v1.tool("get_product_info_by_link_id") and not v2.tool(
        "get_product_info_by_link_id"
    )
    item = v2.tool("query_item").parameters["properties"]["item"]
    assert item["required"] == ["link_id"] and "fields" in item["properties"]
    assert v2.skill("campaign_double12").kind == "strategy"
    assert v2.hook("compliance") and not v1.hook("compliance")
    assert any("Double 12" in r for r in v2.rules)
    for s in v2.skills:
        assert "get_product_info_by_link_id" not in s.body
        assert 8 <= len(s.body.splitlines()) <= 25, s.name
    assert "query_item" in [r for r, _, _ in tool_references(v2.skill("item_qa").body)]


@pytest.mark.parametrize("name", BUILTIN)
def test_dump_round_trips(name, tmp_path):
    h = load_harness(name)
    out = dump_harness(h, tmp_path / "out")
    assert load_harness(out) == h
    with pytest.raises(FileExistsError):
        dump_harness(h, out)
    # A changed harness (new order, odd text) overwrites the old files.
    h2 = h.replace(
        skills=h.skills[::-1],
        tools=h.tools[::-1],
        persona="Line one.\n  indented: yes\n\ttab and trailing space \n",
        rules=("a: colon", "# not a comment", "'quoted'", "- dash"),
    )
    dump_harness(h2, out, overwrite=True)
    assert load_harness(out) == h2


def test_dump_keeps_skill_body_whitespace(tmp_path):
    h = load_harness("taolive_v1")
    odd = h.skills[0].__class__("odd", "strategy", "d: with colon", "\n\nBody\n\n")
    h = h.replace(skills=(*h.skills, odd))
    assert load_harness(dump_harness(h, tmp_path / "o")) == h


def test_reference_conventions():
    body = "Call `check_stock` then `get_promotions(link_id=3)`; not ``x``.\n"
    body += "Then load_skill(\"after_sales\") or load_skill(name='item_qa')."
    assert [r for r, _, _ in tool_references(body)] == ["check_stock", "get_promotions"]
    assert [r for r, _, _ in skill_references(body)] == ["after_sales", "item_qa"]
    name, start, end = tool_references(body)[0]
    assert body[start:end] == name


M, S, T = MANIFEST, AFTER_SALES, STOCK
QA, PROMO = "skills/01_item_qa.md", "tools/03_get_promotions.json"
# One text replacement each: id -> (file, old, new, error line, message fragment).
# fmt: off
EDITS = {
    "bad_yaml": (M, "format: markdown", "format: markdown: x", 24, "invalid YAML"),
    "bad_json": (T, '"minimum": 1,', '"minimum": 1', 10, "invalid JSON"),
    "unknown_hook": (M, "name: factual_risk", "name: fact_check", 48,
                     "unknown hook 'fact_check'"),
    "unknown_hook_param": (M, "max_chars: 300", "max_char: 300", 38,
                           "unknown param 'max_char'"),
    "hook_param_type": (M, "max_chars: 120", "max_chars: short", 45,
                        "reply_format.max_chars: expected an integer"),
    "hook_param_value": (M, "kinds: [reply]", "kinds: [reply, answer]", 42,
                         "unknown skill kind 'answer'"),
    "hook_twice": (M, "- name: factual_risk", "- name: tool_args", 48, "listed twice"),
    "unknown_section": (M, "tool_list, constraints]", "tool_list, footer]", 23,
                        "unknown section 'footer'"),
    "unknown_format": (M, "format: markdown", "format: html", 24,
                       "unknown prompt format 'html'"),
    "no_tool_list": (M, "tool_list, constraints]", "constraints]", 23,
                     "expected 'tool_list'"),
    "skill_without_kind": (S, "kind: reply\n", "", 2, "missing key 'kind'"),
    "unknown_skill_kind": (S, "kind: reply", "kind: answer", 3,
                           "unknown skill kind 'answer'"),
    "no_description": (S, "description: R", "summary: R", 2,
                       "missing key 'description'"),
    "multi_line_description": (S, "description: R", "description: |\n  Two\n  R", 4,
                               "expected one line"),
    "no_front_matter": (S, "---\nname", "name", 1, "front matter"),
    "duplicate_skills": ("skills/02_chit_chat.md", "name: chit_chat", "name: item_qa",
                         2, "duplicate skill name 'item_qa'"),
    "duplicate_tools": ("tools/04_get_shipping_policy.json", '"get_shipping_policy"',
                        '"check_stock"', 2, "duplicate tool name 'check_stock'"),
    "tool_named_load_skill": (T, '"check_stock"', '"load_skill"', 2,
                              "clashes with the built-in"),
    "property_without_type": (T, '"type": "string",', "", 12, 'expected a "type"'),
    "parameters_not_object": (PROMO, '"type": "object"', '"type": "array"', 4,
                              'expected {"type": "object"'),
    "required_not_a_property": (T, '["link_id"]', '["link_id", "size"]', 17,
                                "required names 'size'"),
    "enum_wrong_type": (T, '"string",', '"string", "enum": ["S", 2],', 13,
                        "enum value 2"),
    "empty_enum": (T, '"string",', '"string", "enum": [],', 13, "non-empty list"),
    "unknown_json_type": (T, '"integer"', '"int"', 8, "unknown type 'int'"),
    "unsupported_keyword": (T, '"minimum": 1,', '"minimum": 1, "pattern": "x",', 9,
                            "unsupported schema keyword 'pattern'"),
    "minimum_above_maximum": (T, '"minimum": 1,', '"minimum": 5, "maximum": 2,', 9,
                              "below minimum"),
    "default_does_not_fit": (T, '"minimum": 1,', '"minimum": 1, "default": "3",', 9,
                             "default does not fit"),
    "duplicate_json_key": (T, '"minimum": 1,', '"minimum": 1, "minimum": 2,', 9,
                           "duplicate key 'minimum'"),
    "nan_in_json": (T, '"minimum": 1,', '"minimum": NaN,', 9, "NaN is not a JSON"),
    "missing_tool": (S, "`get_shipping_policy` first", "`get_shipping_rules` first",
                     10, "unknown tool 'get_shipping_rules'"),
    "missing_skill": (QA, '"promotion_push")', '"promo_push")', 25,
                      "unknown skill 'promo_push'"),
    "zero_turn_limit": (M, "turn_limit: 6", "turn_limit: 0", 32,
                        "turn_limit: expected an integer 1..100, got 0"),
    "bool_turn_limit": (M, "turn_limit: 6", "turn_limit: true", 32,
                        "turn_limit: expected an integer 1..100, got True"),
    "negative_retry_limit": (M, "retry_limit: 2", "retry_limit: -1", 33,
                             "retry_limit: expected an integer 0..20, got -1"),
    "unknown_tool_call_format": (M, "qwen_xml", "json_mode", 34,
                                 "unknown tool-call format 'json_mode'"),
    "extra_manifest_key": (M, "turn_limit: 6", "turn_limit: 6\nlanguage: zh", 33,
                           "unknown key in the manifest: 'language'"),
    "missing_manifest_key": (M, "name: taolive\n", "", 1, "missing key 'name'"),
    "duplicate_yaml_key": (M, "retry_limit: 2", "retry_limit: 2\nturn_limit: 4", 34,
                           "duplicate key 'turn_limit'"),
    "unquoted_version": (M, 'version: "1.0"', "version: 1.0", 4, "quote it"),
    "multi_line_rule": (M, "  - Never talk", "  - |\n    Two\n    R\n  - Never talk",
                        15, "rules[3]: expected one line"),
    "python_tag_not_run": (M, "turn_limit: 6", "turn_limit: !!python/name:os.system",
                           32, "invalid YAML"),
}
# fmt: on


@pytest.mark.parametrize("case", EDITS.values(), ids=EDITS.keys())
def test_malformed_folder(folder, case):
    rel, old, new, line, fragment = case
    edit(folder / rel, old, new)
    assert_error(folder, rel, line, fragment)


def test_missing_manifest(folder):
    (folder / M).unlink()
    assert_error(folder, M, 1, "missing file")


def test_manifest_not_a_mapping(folder):
    (folder / M).write_text("- just\n- a list\n")
    assert_error(folder, M, 1, "expected a mapping")


def test_empty_skills_dir(folder):
    for p in (folder / "skills").glob("*.md"):
        p.unlink()
    assert_error(folder, "skills", 1, "expected skill files")
    assert len(errors_of(folder)) == 1  # no cascade (reply skill, require_skill)


def test_no_reply_skill(folder):
    for p in (folder / "skills").glob("*.md"):
        p.write_text(p.read_text().replace("kind: reply", "kind: strategy"))
    assert_error(folder, "skills", 1, "expected at least one kind: reply skill")
    assert_error(folder, M, 42, "require_skill: no skill has kind 'reply'")


def test_not_utf8(folder):
    (folder / T).write_bytes(b'{\n  "name": "\xff"\n}\n')
    assert_error(folder, T, 2, "expected UTF-8")


def test_unexpected_file(folder):
    (folder / "skills" / "notes.txt").write_text("hi")
    assert_error(folder, "skills/notes.txt", 1, "holds only *.md")


def test_all_errors_are_collected(folder):
    edit(folder / MANIFEST, "turn_limit: 6", "turn_limit: 0")
    edit(folder / MANIFEST, "format: markdown", "format: html")
    edit(folder / AFTER_SALES, "kind: reply", "kind: answer")
    edit(folder / STOCK, '"type": "integer"', '"type": "int"')
    errors = errors_of(folder)
    assert len(errors) == 4, errors  # and no cascade from the broken tool
    lines = [(e.split(":")[0], int(e.split(":")[1])) for e in errors]
    assert sorted(lines) == [
        (str(folder / MANIFEST), 24),
        (str(folder / MANIFEST), 32),
        (str(folder / AFTER_SALES), 3),
        (str(folder / STOCK), 8),
    ]


def test_not_a_folder(tmp_path):
    with pytest.raises(HarnessError, match=r":1: expected a harness folder"):
        load_harness(tmp_path / "nope")


# --- Random mutations never raise anything but HarnessError ----------------------

TOKENS = [
    b"- ",
    b": ",
    b"\n",
    b"  ",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"'",
    b",",
    b"&a ",
    b"*a",
    b"!!python/object:os.system ",
    b"<<: *a\n",
    b"---\n",
    b"...",
    b"\t",
    b"null",
    b"1e999",
    b"-1",
    b"\xff",
    b"\x00",
    b"#",
    b"|",
    b">",
    b"%YAML 1.1\n",
    b"? ",
    "\uff1a".encode(),
    b"9" * 5000,
    b"NaN",
    b"!!binary ",
    b"2020-13-45",
    b"!!set ",
    b"[[[[[[[[",
    b'{"a": {"b": {"c": ',
    b"true",
    b"0x1F",
    b".inf",
]


@st.composite
def mutated(draw, original: bytes) -> bytes:
    data = original
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "line", "token"]))
        pos = draw(st.integers(0, len(data)))
        if op == "insert":
            data = data[:pos] + draw(st.binary(min_size=1, max_size=6)) + data[pos:]
        elif op == "delete":
            data = data[:pos] + data[pos + draw(st.integers(1, 40)) :]
        elif op == "replace":
            data = (
                data[:pos] + draw(st.binary(min_size=1, max_size=3)) + data[pos + 1 :]
            )
        elif op == "token":
            data = data[:pos] + draw(st.sampled_from(TOKENS)) + data[pos:]
        else:  # duplicate, drop, or swap whole lines
            lines = data.split(b"\n")
            i, j = (draw(st.integers(0, len(lines) - 1)) for _ in range(2))
            how = draw(st.sampled_from(["dup", "drop", "swap", "indent"]))
            if how == "dup":
                lines.insert(j, lines[i])
            elif how == "drop":
                del lines[i]
            elif how == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = b"  " + lines[i]
            data = b"\n".join(lines)
    return data


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz") / "h"
    shutil.copytree(builtin_path("taolive_v2"), d)
    return d


FUZZED = [MANIFEST, "tools/01_query_item.json", "skills/01_item_qa.md"]


@pytest.mark.parametrize("rel", FUZZED)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_mutations_raise_only_harness_error(scratch, rel, data):
    path = scratch / rel
    original = (builtin_path("taolive_v2") / rel).read_bytes()
    path.write_bytes(data.draw(mutated(original)))
    try:
        load_harness(scratch)
    except HarnessError as e:
        assert e.errors and all(ERROR_LINE.match(m) for m in e.errors), e.errors
    finally:
        path.write_bytes(original)
