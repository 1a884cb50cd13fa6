"""`hat --version` and `hat env` (text and --json)."""

import json
import platform
from importlib.metadata import version

import pytest

from hat_jax.cli import env_cmd
from hat_jax.cli import main as hat_main


def test_version_prints_the_distribution_version(capsys):
    assert hat_main.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"hat {version('hat_jax')}") and out.endswith("\n")
    sha = env_cmd.git_sha()
    assert (f"(git {sha})" in out) if sha else ("git" not in out)


def test_version_is_also_an_option_of_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_:  # an abbreviation reaches argparse
        hat_main.main(["--vers"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("hat ")


def test_env_json(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HAT_CACHE", str(tmp_path / "cache"))
    assert hat_main.main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["hat_jax"] == version("hat_jax")
    assert info["python"]["version"] == platform.python_version()
    assert info["packages"]["jax"] == version("jax")
    assert info["packages"]["orbax-checkpoint"] == version("orbax-checkpoint")
    assert set(info["extras"]) == {"wandb", "submitit", "vllm"}
    assert info["jax"]["devices"] and info["jax"]["backend"]
    assert info["cpu"]["cores"] >= 1 and info["cpu"]["model"]
    assets = info["caches"]["assets"]
    assert assets["path"] == str(tmp_path / "cache") and assets["set_by"] == "HAT_CACHE"
    assert assets["exists"] is False


def test_env_text(monkeypatch, capsys):
    monkeypatch.setattr(env_cmd, "dist_version", lambda n: None if n == "vllm" else "9")
    assert hat_main.main(["env"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("hat_jax  9")
    assert "  flax                 9\n" in out
    assert "  vllm                 not installed" in out
    assert "devices (backend " in out and "cpu: " in out and "  assets " in out


def test_a_broken_backend_is_reported_not_raised(monkeypatch):
    import jax

    def fail():
        raise RuntimeError("no backend")

    monkeypatch.setattr(jax, "devices", fail)
    info = env_cmd.devices()
    assert info == {"error": "RuntimeError: no backend"}
    assert env_cmd._device_lines(info) == ["devices: none (RuntimeError: no backend)"]


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    """`hat ... | head`: output to a reader that has left is no error message and
    no traceback; the exit status is a shell's for SIGPIPE (128 + 13)."""
    import os
    import subprocess
    import sys

    code = "import sys; from hat_jax.cli.main import main; sys.exit(main())"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for unbuffered in ("", "1"):  # output written at once, or at the flush
        env_run = env | ({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
        for args in (["env", "--json"], ["--version"], ["env", "--help"]):
            read, write = os.pipe()
            os.close(read)  # every write to `write` now fails with EPIPE
            argv = [sys.executable, "-c", code, *args]
            proc = subprocess.run(
                argv, stdout=write, stderr=subprocess.PIPE, env=env_run, timeout=120
            )
            os.close(write)
            assert proc.stderr.decode() == "", args
            # argparse's help printer may swallow the error itself (then exits 0)
            assert proc.returncode in ((0, 141) if "--help" in args else (141,))
