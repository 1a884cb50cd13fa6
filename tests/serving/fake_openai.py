"""A tiny OpenAI-compatible completions server in a thread, for replay tests.

Streams a fixed reply as server-sent events, lists one model, exposes vLLM-style
spec-decode counters at ``/metrics``, and can be stopped midway (``kill``).
"""

import http.server
import json
import threading

REPLY = "Thanks for asking, the host will answer in a moment!"


class FakeServer:
    def __init__(self, kill_after: int | None = None):
        self.requests = 0
        self.auth: set[str] = set()  # every Authorization header on /v1
        self.kill_after = kill_after
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, code, body: bytes, ctype="application/json"):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.startswith("/v1/"):  # vLLM's key guards /v1 only
                    owner.auth.add(self.headers.get("Authorization", ""))
                if self.path == "/v1/models":
                    self.send(200, json.dumps({"data": [{"id": "tiny"}]}).encode())
                elif self.path == "/metrics":
                    n = owner.requests
                    text = (
                        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
                        f'vllm:spec_decode_num_drafts_total{{engine="0"}} {4 * n}\n'
                        f"vllm:spec_decode_num_draft_tokens_total {8 * n}\n"
                        f"vllm:spec_decode_num_accepted_tokens_total {6 * n}\n"
                        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total "
                        "counter\n"
                    )
                    for pos, per in enumerate((4, 2)):  # 6 accepted of 4 drafts
                        text += (
                            "vllm:spec_decode_num_accepted_tokens_per_pos_total"
                            f'{{engine="0",position="{pos}"}} {per * n}\n'
                        )
                    self.send(200, text.encode(), "text/plain")
                else:
                    self.send(404, b"{}")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests += 1
                owner.auth.add(self.headers.get("Authorization", ""))
                if owner.kill_after and owner.requests >= owner.kill_after:
                    threading.Thread(target=owner.kill, daemon=True).start()
                words = REPLY.split(" ")
                events = [
                    {"choices": [{"text": w + (" " if i < len(words) - 1 else "")}]}
                    for i, w in enumerate(words)
                ]
                events[-1]["choices"][0]["finish_reason"] = "stop"
                events.append(
                    {
                        "choices": [],
                        "usage": {
                            "prompt_tokens": len(body["prompt"]) // 4,
                            "completion_tokens": len(words),
                        },
                    }
                )
                data = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
                self.send(
                    200, (data + "data: [DONE]\n\n").encode(), "text/event-stream"
                )

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.alive = False

    def __enter__(self):
        self.thread.start()
        self.alive = True
        return self

    def kill(self):
        if self.alive:
            self.alive = False
            self.httpd.shutdown()
            self.httpd.server_close()

    def __exit__(self, *exc):
        self.kill()
