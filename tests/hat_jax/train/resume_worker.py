"""Runs `hat train sft` (or opd) in-process and SIGKILLs itself after step KILL_AT.

Usage: python resume_worker.py WORKDIR KILL_AT CONFIG_SPEC [KEY=VALUE ...]
The stage is $RESUME_STAGE: sft (default) or opd.
"""

import os
import signal
import subprocess
import sys

from hat_jax.cli.config_flags import load_config
from hat_jax.train.opd import run_opd
from hat_jax.train.sft import run_sft


def main() -> None:
    workdir, kill_at, spec, *overrides = sys.argv[1:]

    def on_step(step, state):
        del state
        if step == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, like a lost machine

    run = {"sft": run_sft, "opd": run_opd}[os.environ.get("RESUME_STAGE", "sft")]
    run(load_config(spec, overrides), workdir, on_step=on_step, progress=False)


def run_killed(workdir, kill_at, spec, overrides, *, stage="sft", timeout=120, **env):
    """Runs this worker in a child process (extra `env` variables added) and
    checks it died of its own SIGKILL; returns the finished process."""
    proc = subprocess.run(
        [sys.executable, __file__, str(workdir), str(kill_at), spec, *overrides],
        env=dict(os.environ, JAX_PLATFORMS="cpu", RESUME_STAGE=stage, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    return proc


if __name__ == "__main__":
    main()
