# ruff: noqa: E501, E741, B023  (tables of cases; lambdas bind their loop value)
"""Servers that lie: redirects with the key, drips, floods, malformed completions."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from hostile_common import BUILTIN, CANARY, FIX, ROOT  # noqa: F401

CASES = []
KEY = "sk-CANARY-KEY"


def serve(behaviour):
    seen = {"auth_other": [], "requests": 0}
    other = None

    class Other(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            seen["auth_other"].append(self.headers.get("Authorization"))
            self._ok()

        do_GET = do_POST

        def _ok(self):
            body = json.dumps(
                {
                    "data": [{"id": "m"}],
                    "choices": [{"text": "hi", "index": 0, "finish_reason": "stop"}],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _send(self, code, body, headers=()):
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode("utf-8", "surrogatepass")
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            if not any(k.lower() == "content-length" for k, _ in headers):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            seen["requests"] += 1
            if self.path.rstrip("/").endswith("/models"):
                return self._send(
                    200, {"object": "list", "data": [{"id": "m", "object": "model"}]}
                )
            return behaviour(self, seen, other)

        def do_POST(self):
            seen["requests"] += 1
            n = int(self.headers.get("Content-Length", 0) or 0)
            self.rfile.read(n)
            return behaviour(self, seen, other)

    o = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=o.serve_forever, daemon=True).start()
    other = o.server_address[1]
    s = ThreadingHTTPServer(("127.0.0.1", 0), H)
    s.daemon_threads = True
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return {"port": s.server_address[1], "_srv": (s, o), "_seen": seen}


def completion(text="好的", **extra):
    ch = {"text": text, "index": 0, "finish_reason": "stop", **extra}
    return {
        "id": "x",
        "object": "text_completion",
        "choices": [ch],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }


def redirect(h, seen, other):
    h._send(302, b"", [("Location", f"http://localhost:{other}/v1/completions")])


def redirect_models(h, seen, other):
    h._send(307, b"", [("Location", f"http://localhost:{other}/v1/completions")])


def drip(h, seen, other):
    h.send_response(200)
    h.send_header("Content-Length", "100000")
    h.end_headers()
    try:
        for _ in range(200):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(1)
    except OSError:
        pass


def flood(h, seen, other):
    h.send_response(200)
    h.send_header("Content-Length", str(200 * 2**20))
    h.end_headers()
    try:
        chunk = b"x" * 2**20
        for _ in range(200):
            h.wfile.write(chunk)
    except OSError:
        pass


def short(h, seen, other):
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b'{"choices": [')
    h.close_connection = True


def hangup(h, seen, other):
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def always500(h, seen, other):
    h._send(500, {"error": "boom"})


def retry_after_huge(h, seen, other):
    h._send(429, {"error": "slow"}, [("Retry-After", "99999999")])


def const(body, code=200):
    return lambda h, seen, other: h._send(code, body)


def long_header(h, seen, other):
    h.send_response(200)
    h.send_header("X-Big", "a" * 200000)
    h.send_header("Content-Length", "2")
    h.end_headers()
    h.wfile.write(b"{}")


def echo_key(h, seen, other):
    h._send(401, {"error": f"bad key {h.headers.get('Authorization')}"})


B = {
    "redirect 302 with key": redirect,
    "redirect 307": redirect_models,
    "drip": drip,
    "flood 200MB": flood,
    "short body": short,
    "hang up": hangup,
    "500 forever": always500,
    "429 Retry-After huge": retry_after_huge,
    "long header": long_header,
    "echoes key": echo_key,
    "not json": const("<html>hi</html>"),
    "json list": const([1, 2]),
    "choices empty": const({"choices": []}),
    "choices str": const({"choices": "x"}),
    "text number": const(completion(text=5)),
    "text null": const(completion(text=None)),
    "text surrogate": const(
        '{"choices": [{"text": "a\\ud800b", "index": 0, "finish_reason": "stop"}]}'
    ),
    "logprobs nan": const(
        '{"choices": [{"text": "a", "index": 0, "finish_reason": "stop", "logprobs": {"token_logprobs": [NaN], "tokens": ["a"]}}]}'
    ),
    "logprobs str": const(
        completion(logprobs={"token_logprobs": "x", "tokens": ["a"]})
    ),
    "token_ids negative": const(completion(token_ids=[-5])),
    "token_ids huge": const(completion(token_ids=[2**40])),
    "token_ids str": const(completion(token_ids="abc")),
    "huge tool call": const(
        completion(
            text='<tool_call>\n{"name": "check_stock", "arguments": {"link_id": '
            + "9" * 100000
            + "}}\n</tool_call>"
        )
    ),
    "deep json": const('{"choices": ' + "[" * 100000 + "]" * 100000 + "}"),
    "unknown tool": const(
        completion(
            text='<tool_call>\n{"name": "os.system", "arguments": {"cmd": "touch /tmp/PWNED"}}\n</tool_call>'
        )
    ),
}


def judge_for(name):
    def judge(rc, out, err, d, subs):
        seen = subs.get("_seen", {})
        text = out + err
        if rc is None:
            return "hang"
        if any(a and KEY in a for a in seen.get("auth_other", [])) or KEY in text:
            return "escape"
        if "Traceback (most recent call last)" in text:
            return "traceback"
        if len(seen.get("auth_other", [])) > 0:
            return "escape"  # followed a redirect at all
        import os

        if os.path.exists("/tmp/PWNED"):
            return "escape"
        # Either a clear error, or the eval finished with failures counted in records
        recs = list(d.glob("o/**/records.jsonl"))
        rj = d / "o" / "replay.json"
        if rc == 0 and rj.exists():
            txt = rj.read_text()
            r = json.loads(txt)["runs"][0]["summary"]
            return (
                "ok-counted"
                if r["errors"] + r["timeouts"] == r["messages"]
                else "accepted"
            )
        if rc == 0 and not recs:
            return "accepted"
        return "clear" if rc != 0 else "ok-counted"

    return judge


def teardown(d, subs):
    for s in subs.get("_srv", ()):
        s.shutdown()
        s.server_close()


for name, b in B.items():
    CASES.append(
        dict(
            surface="endpoint",
            name=f"eval endpoint: {name}",
            argv=[
                "eval",
                "run",
                "--suite",
                "t1",
                "--limit",
                "1",
                "--endpoint",
                "http://127.0.0.1:{port}/v1",
                "--out",
                "{d}/o",
                "--timeout",
                "5",
                "--no-progress",
            ],
            setup=(lambda b: lambda d: serve(b))(b),
            teardown=teardown,
            judge=judge_for(name),
            timeout=90,
        )
    )
    if name in (
        "redirect 302 with key",
        "drip",
        "flood 200MB",
        "short body",
        "long header",
        "echoes key",
        "not json",
    ):
        CASES.append(
            dict(
                surface="replay-ep",
                name=f"replay endpoint: {name}",
                argv=[
                    "replay",
                    "--trace",
                    str(FIX / "good_trace.jsonl"),
                    "--endpoint",
                    "http://127.0.0.1:{port}/v1",
                    "--out",
                    "{d}/o",
                    "--timeout",
                    "5",
                    "--limit",
                    "1",
                ],
                setup=(lambda b: lambda d: serve(b))(b),
                teardown=teardown,
                judge=judge_for(name),
                timeout=90,
            )
        )
