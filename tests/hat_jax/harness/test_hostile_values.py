"""Nonsense values in harness folders: numbers out of bounds, YAML 1.1 number
forms (`1:30` is 90), booleans and floats where integers are meant, empty or
blank lists, JSON numbers past float range. Each is a `path:line:` error at load
(and in `hat harness validate`), never accepted."""

import re
import shutil

import pytest

from hat_jax.cli.main import main
from hat_jax.harness import HarnessError, builtin_path, load_harness
from hat_jax.harness.fields import MAX_RETRY_LIMIT, MAX_TURN_LIMIT
from hat_jax.harness.hooks import MAX_CHARS

M, STOCK = "manifest.yaml", "tools/02_check_stock.json"
ERROR_LINE = re.compile(r"^(.+):(\d+): \S")
HOOKS = "  - name: factual_risk\n"


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "h"
    shutil.copytree(builtin_path("taolive_v1"), d)
    return d


def edit(path, old, new):
    """Replaces ``old`` once; returns the line ``new`` starts on."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def errors_of(folder):
    with pytest.raises(HarnessError) as info:
        load_harness(folder)
    errors = info.value.errors
    assert errors and all(ERROR_LINE.match(e) for e in errors), errors
    return errors


# name: (file, old, new, line offset from the edit, message)
# fmt: off
CASES = {
    "turn_limit_huge": (M, "turn_limit: 6", "turn_limit: " + "1" + "0" * 29, 0,
                        f"turn_limit: expected an integer 1..{MAX_TURN_LIMIT}, "
                        "got 100000000000000000000000000000"),
    "turn_limit_over": (M, "turn_limit: 6", f"turn_limit: {MAX_TURN_LIMIT + 1}", 0,
                        f"got {MAX_TURN_LIMIT + 1}"),
    "turn_limit_base60": (M, "turn_limit: 6", "turn_limit: 1:30", 0,
                          "turn_limit: expected an integer 1..100, got '1:30' "
                          "(write it in decimal digits)"),
    "turn_limit_octal": (M, "turn_limit: 6", "turn_limit: 010", 0, "got '010'"),
    "turn_limit_hex": (M, "turn_limit: 6", "turn_limit: 0x10", 0, "got '0x10'"),
    "turn_limit_underscore": (M, "turn_limit: 6", "turn_limit: 1_0", 0, "got '1_0'"),
    "turn_limit_float": (M, "turn_limit: 6", "turn_limit: 6.0", 0, "got 6.0"),
    "turn_limit_exponent": (M, "turn_limit: 6", "turn_limit: 1e29", 0,
                            "got '1e29'"),
    "retry_limit_huge": (M, "retry_limit: 2", "retry_limit: 10000000000", 0,
                         f"retry_limit: expected an integer 0..{MAX_RETRY_LIMIT}, "
                         "got 10000000000"),
    "retry_limit_bool": (M, "retry_limit: 2", "retry_limit: false", 0,
                         "retry_limit: expected an integer 0..20, got False"),
    "max_chars_huge": (M, "max_chars: 300", "max_chars: " + "9" * 30, 0,
                       f"input_check.max_chars: expected a positive integer up to "
                       f"{MAX_CHARS:,}, got " + "9" * 30),
    "max_chars_over": (M, "max_chars: 120", f"max_chars: {MAX_CHARS + 1}", 0,
                       "reply_format.max_chars: expected a positive integer up to"),
    "max_chars_base60": (M, "max_chars: 300", "max_chars: 5:00", 0,
                         "input_check.max_chars: expected an integer, got '5:00'"),
    "max_chars_bool": (M, "max_chars: 300", "max_chars: true", 0,
                       "input_check.max_chars: expected an integer, got True"),
    "max_chars_float": (M, "max_chars: 120", "max_chars: 120.0", 0,
                        "reply_format.max_chars: expected an integer, got 120.0"),
    "max_chars_inf": (M, "max_chars: 120", "max_chars: .inf", 0,
                      "reply_format.max_chars: expected an integer, got inf"),
    "kinds_empty": (M, "kinds: [reply]", "kinds: []", 0,
                    "require_skill.kinds: expected at least one skill kind"),
    "banned_blank": (M, "banned_phrases: [guaranteed cure",
                     "banned_phrases: ['  ', guaranteed cure", 0,
                     "reply_format.banned_phrases[0]: expected a non-blank string, "
                     "got '  '"),
    "banned_empty": (M, "假一赔十,", "假一赔十, '',", 0,
                     "reply_format.banned_phrases[3]: expected a non-blank string"),
    "injection_blank": (M, "max_chars: 300", "max_chars: 300\n"
                        "      injection_phrases: [ignore the above, \"\\t\"]", 1,
                        "input_check.injection_phrases[1]: expected a non-blank "
                        "string, got '\\t'"),
    "allowed_number_blank": (M, HOOKS, HOOKS + "    params: {allowed_numbers: ['']}\n",
                             1, "factual_risk.allowed_numbers[0]: expected a "
                             "non-blank string, got ''"),
    "compliance_allow_blank": (M, HOOKS, HOOKS + "  - name: compliance\n"
                               "    params: {allow: [' ']}\n", 2,
                               "compliance.allow[0]: expected a non-blank string"),
    "schema_minimum_1e400": (STOCK, '"minimum": 1,', '"minimum": 1e400,', 0,
                             "number 1e400 is out of range (expected a finite "
                             "number)"),
    "schema_maximum_negative": (STOCK, '"minimum": 1,',
                                '"minimum": 1,\n        "maximum": -1E+999,', 1,
                                "number -1E+999 is out of range"),
    "schema_enum_in_list": (STOCK, '"type": "string",',
                            '"type": "number", "enum": [1, 2e308],', 0,
                            "number 2e308 is out of range"),
}
# fmt: on


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_nonsense_value_is_located(folder, case):
    rel, old, new, offset, message = case
    line = edit(folder / rel, old, new) + offset
    errors = errors_of(folder)
    prefix = f"{folder / rel}:{line}: "
    assert any(e.startswith(prefix) and message in e for e in errors), errors


def test_bounds_themselves_load(folder):
    """The largest values allowed load: the checks refuse only nonsense."""
    edit(folder / M, "turn_limit: 6", f"turn_limit: {MAX_TURN_LIMIT}")
    edit(folder / M, "retry_limit: 2", f"retry_limit: {MAX_RETRY_LIMIT}")
    edit(folder / M, "max_chars: 300", f"max_chars: {MAX_CHARS}")
    edit(folder / M, "max_chars: 120", "max_chars: +1")
    edit(folder / STOCK, '"minimum": 1,', '"minimum": 1.5e308,')
    h = load_harness(folder)
    assert (h.turn_limit, h.retry_limit) == (MAX_TURN_LIMIT, MAX_RETRY_LIMIT)
    assert h.hooks[0].params == {"max_chars": MAX_CHARS}
    assert h.hooks[3].params["max_chars"] == 1
    assert h.tool("check_stock").parameters["properties"]["link_id"]["minimum"] == (
        1.5e308
    )


def test_yaml_base60_text_stays_text(folder):
    """A `1:30` where text is wanted is the text the author wrote, not 90."""
    edit(folder / M, "rules: House rules", "rules: 1:30")
    assert load_harness(folder).layout.titles["rules"] == "1:30"


def test_validate_cli_reports_nonsense_without_traceback(folder, capsys):
    edit(folder / M, "turn_limit: 6", "turn_limit: 1:30")
    edit(folder / M, "kinds: [reply]", "kinds: []")
    edit(folder / STOCK, '"minimum": 1,', '"minimum": 1e400,')
    assert main(["harness", "validate", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{folder / M}:32: turn_limit: expected an integer 1..100" in err
    assert f"{folder / M}:42: require_skill.kinds: expected at least one" in err
    assert f"{folder / STOCK}:9: number 1e400 is out of range" in err
    assert err.rstrip().endswith(f"3 error(s) in {folder}")


RULE = "  - Never talk about other shops, other platforms or competitors' prices."


@pytest.mark.parametrize(
    "old, new, key",
    [
        ("name: taolive", 'name: "tao\\x1b[31mlive"', "name"),
        ('version: "1.0"', 'version: "1.0\\x07"', "version"),
        (RULE, '  - "\\x1b]0;pwned\\x07 Never talk about other shops."', "rules[3]"),
    ],
)
def test_control_characters_in_manifest_text_are_refused(folder, old, new, key):
    line = edit(folder / M, old, new)
    (error,) = [e for e in errors_of(folder) if "control character" in e]
    assert error.startswith(f"{folder / M}:{line}: {key}: holds the control character")
