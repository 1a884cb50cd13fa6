"""House rules on the source: import direction, no unsafe loaders, file sizes, test
helpers imported by package."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["hat_jax", "augment", "sim", "serving", "experiments", "paper"]
# package -> packages it must never import (DESIGN.md: imports flow one way)
FORBIDDEN = {
    "hat_jax": {"augment", "sim", "serving", "experiments", "paper"},
    "augment": {"sim", "serving", "experiments", "paper"},
    "sim": {"augment", "serving", "experiments", "paper"},
    "serving": {"experiments", "paper"},
    "experiments": {"paper"},
}
UNSAFE_CALLS = {"eval", "exec"}


def _sources():
    for pkg in PACKAGES:
        yield from sorted((ROOT / pkg).rglob("*.py")) if (ROOT / pkg).exists() else ()


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def test_imports_flow_one_way():
    bad = []
    for f in _sources():
        pkg = f.relative_to(ROOT).parts[0]
        for mod in _imports(ast.parse(f.read_text())):
            if mod in FORBIDDEN.get(pkg, ()):
                bad.append(f"{f.relative_to(ROOT)} imports {mod}")
    assert not bad, bad


def test_no_pickle_eval_exec_or_unsafe_yaml():
    bad = []
    for f in _sources():
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in UNSAFE_CALLS:
                    bad.append(f"{f}:{node.lineno} calls {node.func.id}")
            if isinstance(node, ast.Attribute) and node.attr in ("load", "unsafe_load"):
                if isinstance(node.value, ast.Name) and node.value.id == "yaml":
                    bad.append(f"{f}:{node.lineno} yaml.{node.attr}")
        assert "pickle" not in set(_imports(tree)), f
    assert not bad, bad


def test_files_are_small():
    big = [
        f"{f}: {n}" for f in _sources() if (n := len(f.read_text().splitlines())) > 600
    ]
    assert not big, big


def test_tests_import_helpers_by_package():
    """A test imports a helper as `tests.<folder>.<module>`, never by its bare
    name: bare names resolve only under pytest's default import mode, and to
    whichever folder's module pytest put on sys.path first."""
    tests = ROOT / "tests"
    helpers = {f.stem for f in tests.rglob("*.py")} - {"conftest"}
    bad = [
        f"{f.relative_to(ROOT)} imports {mod}"
        for f in sorted(tests.rglob("*.py"))
        for mod in _imports(ast.parse(f.read_text()))
        if mod in helpers
    ]
    assert not bad, bad
