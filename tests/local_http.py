"""A local HTTP server for tests that talk to one: ``respond(handler, n)``
answers the n-th request, so a test scripts a server that lies, stalls or
redirects."""

import contextlib
import http.server
import json
import threading


class Local:
    """A ThreadingHTTPServer on 127.0.0.1; ``respond(handler, n)`` answers the
    n-th request (from 0; ``handler.local`` is this server). Records each
    request's path and headers."""

    def __init__(self, respond):
        self.respond, self.requests = respond, []
        self.stop = threading.Event()  # releases handlers that hold or drip
        self.gone = threading.Event()
        self.lock = threading.Lock()
        local = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.handle_any()

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.handle_any()

            def handle_any(self):
                self.local = local
                with local.lock:
                    n = len(local.requests)
                    local.requests.append((self.path, dict(self.headers)))
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    local.respond(self, n)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def paths(self) -> list[str]:
        """The path of each request so far."""
        return [path for path, _ in self.requests]

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def send(h, code, data, headers=(), length=True):
    data = data if isinstance(data, bytes) else json.dumps(data).encode()
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    for k, v in headers:
        h.send_header(k, v)
    if length:
        h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
