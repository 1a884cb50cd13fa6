"""VLLMServer's lifecycle against a stand-in `vllm.entrypoints.openai.api_server`
module (an HTTP server with /health): start, wait for health, stop the group."""

import os
import socket
import sys
import textwrap

import pytest

from serving.launch import VLLMServer

FAKE = """
import argparse, http.server, sys
if "--crash" in sys.argv:
    sys.exit("stand-in vLLM: crashing as asked")
p = argparse.ArgumentParser()
p.add_argument("--port", type=int)
p.add_argument("--host")
args, _ = p.parse_known_args()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
http.server.HTTPServer((args.host, args.port), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def fake_vllm(tmp_path, monkeypatch):
    pkg = tmp_path / "vllm" / "entrypoints" / "openai"
    pkg.mkdir(parents=True)
    for d in (pkg, pkg.parent, pkg.parent.parent):
        (d / "__init__.py").write_text("")
    (pkg / "api_server.py").write_text(textwrap.dedent(FAKE))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return tmp_path


def test_server_starts_healthy_and_stops(fake_vllm, tmp_path):
    args = ["--host", "127.0.0.1", "--port", str(_free_port())]
    server = VLLMServer(args, python=sys.executable, log=tmp_path / "log.txt")
    with server as s:
        assert s.healthy()
        pid = s.proc.pid
    assert server.proc.poll() is not None and not server.healthy()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_server_that_dies_reports_its_log(fake_vllm, tmp_path):
    args = ["--host", "127.0.0.1", "--port", str(_free_port()), "--crash"]
    server = VLLMServer(args, python=sys.executable, log=tmp_path / "log.txt")
    with pytest.raises(RuntimeError, match="(?s)vLLM exited with 1.*crashing as asked"):
        server.start()
