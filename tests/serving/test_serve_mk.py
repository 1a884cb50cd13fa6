"""serving/serve.mk's serve-env (issue 19): the shim goes into the serve env's
site-packages, asked for in the recipe's shell once the env exists; an empty or
outside path fails the recipe and nothing is written."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIM = ("hat_vllm_shim.py", "hat_vllm_shim.pth")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(
        ["make", "--no-print-directory", "-f", "serving/serve.mk", "PYTHON=sh", *args],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def fake_venv(root: Path) -> Path:
    """A serve env whose python prints $FAKE_SITE and whose pip does nothing."""
    bin_ = root / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").write_text('#!/bin/sh\nprintf "%s\\n" "$FAKE_SITE"\n')
    (bin_ / "pip").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    return root


def test_dry_run_writes_nothing_at_the_root(tmp_path):
    venv = tmp_path / "absent-venv"  # does not exist: what a fresh machine has
    res = make("-n", "serve-env", f"SERVE_VENV={venv}")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert " /hat_vllm_shim" not in text and "'/hat_vllm_shim" not in text
    # The site path is a shell variable, computed when the recipe runs.
    assert "site=$(" in text and 'get_paths()["purelib"]' in text
    assert '"$real/hat_vllm_shim.py"' in text and '"$real/hat_vllm_shim.pth"' in text
    assert not venv.exists()


def test_shim_goes_into_the_envs_site_packages(tmp_path):
    venv = fake_venv(tmp_path / "venv")
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    res = make("serve-env", f"SERVE_VENV={venv}", FAKE_SITE=str(site))
    assert res.returncode == 0, res.stdout + res.stderr
    assert (site / SHIM[0]).read_text() == (REPO / "serving/vllm_shim.py").read_text()
    assert (site / SHIM[1]).read_text() == "import hat_vllm_shim\n"
    assert (venv / ".installed").exists()


@pytest.mark.parametrize("where", ["empty", "outside", "missing", "venv_itself"])
def test_bad_site_fails_and_writes_nothing(tmp_path, where):
    venv = fake_venv(tmp_path / "venv")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    site = {
        "empty": "",
        "outside": str(outside),
        "missing": str(venv / "lib" / "nope"),
        "venv_itself": str(venv),
    }[where]
    before = {p: p.exists() for p in (Path("/") / SHIM[0], Path("/") / SHIM[1])}
    res = make("serve-env", f"SERVE_VENV={venv}", FAKE_SITE=site)
    assert res.returncode != 0
    assert "not installing the shim" in res.stderr
    assert not (venv / ".installed").exists()
    written = [p for p in tmp_path.rglob("hat_vllm_shim*")]
    assert written == []
    assert {p: p.exists() for p in before} == before
