"""The README stands alone: its code fences render, its paths exist in the clone."""

import re
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# a repository path in backticks: a top-level folder, then more of a path
PATH = re.compile(
    r"`((?:hat_jax|augment|sim|serving|experiments|paper|benchmarks|docs)/[^`\s]*)`"
)


def test_fences_are_closed_and_render_as_code():
    tokens = MarkdownIt().parse(README)
    fences = [t for t in tokens if t.type == "fence"]
    opened = [ln for ln in README.splitlines() if ln.startswith("```")]
    assert len(opened) == 2 * len(fences), "an unclosed or stray ``` fence"
    for t in fences:  # a fence that swallowed prose would hold a heading
        assert not re.search(r"^#{1,3} [A-Z]", t.content, re.M), t.content[:200]
    headings = [t for t in tokens if t.type == "heading_open"]
    assert len(headings) >= 10  # the sections render as sections


def test_paths_it_names_exist():
    named = sorted(set(PATH.findall(README)))
    assert len(named) > 40
    missing = [p for p in named if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, missing


def test_it_never_points_outside_the_clone():
    assert "../shared" not in README and "DESIGN.md" not in README


def test_every_hat_command_module_follows_one_naming_scheme():
    """`hat X` lives in a module named X_cmd.py (`eval run`: eval_run_cmd.py)."""
    import re as _re

    setup = (ROOT / "setup.py").read_text()
    block = setup.split('"hat.commands": [')[1].split("]")[0]
    entry = dict(_re.findall(r'"(\w+)=([\w.]+)"', block))  # plugin commands
    assert len(entry) >= 11
    for name in entry:
        assert entry[name].rsplit(".", 1)[1] == f"{name}_cmd", entry[name]
    builtin = sorted(p.name for p in (ROOT / "hat_jax" / "cli").glob("*_cmd.py"))
    assert {"chat_cmd.py", "convert_cmd.py", "train_cmd.py"} <= set(builtin)
    for old in ("chat.py", "convert.py"):
        assert not (ROOT / "hat_jax" / "cli" / old).exists()
