"""Runs `hat train sft` (or opd) in-process and SIGKILLs itself after step KILL_AT.

Usage: python resume_worker.py WORKDIR KILL_AT CONFIG_SPEC [KEY=VALUE ...]
The stage is $RESUME_STAGE: sft (default) or opd.
"""

import os
import signal
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


if __name__ == "__main__":
    main()
