"""The one client for OpenAI-compatible servers (vLLM, hosted APIs), on httpx.

Every endpoint user goes through :class:`EndpointClient`: the harness's
``OpenAIPolicy``, the eval backend's ``/v1/models`` lookup, the serving replay's
streamed completions and the LLM judge. The client

- follows no redirect: a 3xx is a :class:`PolicyError` naming where it pointed,
  so the API key is never sent to another origin, and the body of a redirect is
  never taken for a reply;
- holds each call to one overall deadline (``timeout_s``) across connecting,
  sending, reading and retrying: a server that drips bytes or hangs makes the
  call raise :class:`PolicyTimeout` when the deadline passes;
- reads at most ``max_bytes`` of a reply (uncompressed: it asks for identity
  encoding) and refuses a bigger one;
- retries, with exponential back-off (or the server's ``Retry-After``), on HTTP
  429 and 5xx and on a refused connection only; any other failure is final;
- raises :class:`PolicyError`, naming the request and what was wrong, for every
  failure, malformed replies included (:func:`parse_completion`,
  :func:`parse_chat`, :func:`parse_models`, :func:`parse_events`): a field of
  the wrong type, a NaN or infinite log-probability, a token id outside
  ``[0, 2**31)``, text holding a lone surrogate (not UTF-8, it would break
  every file it is written to). Server text quoted in an error has its control
  characters escaped (``hat_jax.printable.shown``).

Paths are under ``/v1`` (the OpenAI API); ``root=True`` reaches the server's
own pages beside it (vLLM's ``/metrics`` and ``/health``) with the same rules.

The API key is given by the caller, or read from an environment variable with
:func:`api_key_from_env` (``HAT_API_KEY`` unless another name is given, e.g.
``hat eval run --api-key-env OPENAI_API_KEY``); it is sent only as a bearer
header to the base URL's origin, never put in a URL, a repr or an error.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urljoin

import httpx

from hat_jax.printable import shown

API_KEY_ENV = "HAT_API_KEY"
MAX_BYTES = 16 << 20
_DETAIL = 300  # characters of a reply quoted in an error
TOKEN_ID_LIMIT = 2**31  # token ids are int32 everywhere downstream
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class PolicyError(RuntimeError):
    """A policy could not produce an output (endpoint down, bad response...)."""


class PolicyTimeout(PolicyError):
    """A model call ran out of time (counted apart from other errors)."""


def api_key_from_env(
    name: str | None = None, *, default: str = API_KEY_ENV
) -> str | None:
    """The API key in environment variable ``name``.

    With ``name`` None, the variable ``default`` is read and may be unset (no
    key). Other variables (``OPENAI_API_KEY``...) are read only when named, so
    a key meant for one service is not sent to another by accident.

    Raises:
      ValueError: ``name`` was given but is unset or empty.
    """
    if name is None:
        return os.environ.get(default) or None
    key = os.environ.get(name)
    if not key:
        raise ValueError(f"environment variable {name} (the API key) is not set")
    return key


def origin(url: str) -> str:
    """``scheme://host:port`` of an absolute URL."""
    try:
        u = httpx.URL(url)
    except httpx.InvalidURL:
        return repr(url[:100])
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return f"{u.scheme}://{u.host}:{port}"


@dataclasses.dataclass
class _Reply:
    status: int
    location: str | None
    retry_after: str | None
    chunks: list[tuple[float, bytes]]  # (monotonic arrival time, bytes)

    @property
    def data(self) -> bytes:
        return b"".join(c for _, c in self.chunks)


class EndpointClient:
    """An OpenAI-compatible server at ``base_url`` (module docstring).

    Args:
      base_url: ``http(s)://host:port[/prefix]``, with or without ``/v1``.
      api_key: sent as ``Authorization: Bearer`` to this origin only.
      timeout_s: the deadline of one call, retries included (finite, > 0).
      max_bytes: the largest reply read (>= 1).
      retries: extra attempts after HTTP 429/5xx or a refused connection.
      backoff_s: the first retry's delay, doubled each time.
      sleep: waits between attempts (tests pass a recorder).

    Raises:
      ValueError: a bad URL or setting, named.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_bytes: int = MAX_BYTES,
        retries: int = 2,
        backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ):
        try:
            url = httpx.URL(base_url.rstrip("/"))
        except httpx.InvalidURL as e:
            raise ValueError(f"bad endpoint URL {base_url!r}: {e}") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"endpoint URL must be http(s)://host..., got {url}")
        if url.userinfo:
            # A password in a URL ends up in logs and configs; take it from env.
            raise ValueError("put the API key in an environment variable, not the URL")
        if url.query or url.fragment:
            raise ValueError(f"endpoint URL takes no query or fragment: {url}")
        _check_settings(timeout_s, max_bytes, retries, backoff_s)
        base = str(url)
        self.base = base if base.endswith("/v1") else base + "/v1"
        self.root = self.base.removesuffix("/v1")
        self.timeout_s, self.max_bytes = timeout_s, max_bytes
        self.retries, self.backoff_s, self.sleep = retries, backoff_s, sleep
        self._headers = {"Accept-Encoding": "identity"}
        self._secret = api_key or None  # never shown: scrubbed from server text
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(follow_redirects=False)

    def __repr__(self) -> str:  # never the key
        return f"EndpointClient({self.base!r}, timeout_s={self.timeout_s})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EndpointClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def url(self, path: str, *, root: bool = False) -> str:
        """``path`` under ``/v1``, or under the server's root with ``root``."""
        return f"{self.root if root else self.base}/{path.lstrip('/')}"

    # ------------------------------------------------------------------ calls
    def get_json(self, path: str) -> Any:
        """``GET`` a JSON reply (any JSON value; the parse_* helpers check it)."""
        where = f"GET {self.url(path)}"
        return parse_json(self.request("GET", path).data, where)

    def get_text(self, path: str, *, root: bool = False) -> str:
        """``GET`` a UTF-8 text reply (a Prometheus page, a health check)."""
        data = self.request("GET", path, root=root).data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            where = f"GET {self.url(path, root=root)}"
            raise PolicyError(
                f"{where}: reply is not UTF-8 text (byte {e.start}: "
                f"{data[e.start : e.start + 4]!r})"
            ) from None

    def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """``POST`` a JSON body, return the JSON reply."""
        where = f"POST {self.url(path)}"
        return parse_json(self.request("POST", path, body).data, where)

    def post_events(
        self, path: str, body: dict[str, Any]
    ) -> list[tuple[float, dict[str, Any]]]:
        """``POST`` a streamed request: its server-sent events with arrival times."""
        reply = self.request("POST", path, body)
        return parse_events(reply.chunks, f"POST {self.url(path)}")

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        root: bool = False,
    ) -> _Reply:
        """One call with its retries, under the deadline; a 2xx reply or raises."""
        url = self.url(path, root=root)
        where = f"{method} {url}"
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        deadline = time.monotonic() + self.timeout_s
        for attempt in range(self.retries + 1):
            try:
                reply = self._bounded(where, method, url, data, deadline)
            except httpx.ConnectError as e:
                last, retry_after = f"cannot connect: {e}", None
            except httpx.TimeoutException:
                raise PolicyTimeout(self._late(where)) from None
            except httpx.HTTPError as e:
                raise PolicyError(f"{where}: {type(e).__name__}: {e}") from None
            else:
                if 200 <= reply.status < 300:
                    return reply
                if 300 <= reply.status < 400:
                    to = urljoin(url, reply.location or "")
                    raise PolicyError(
                        f"{where}: HTTP {reply.status} redirect to {origin(to)} "
                        "refused (redirects are not followed)"
                    )
                detail = reply.data[:_DETAIL].decode(errors="replace")
                if self._secret:  # a server may echo the request's headers
                    detail = detail.replace(self._secret, "<api key>")
                last = f"HTTP {reply.status}: {shown(detail)}"
                if reply.status != 429 and reply.status < 500:
                    raise PolicyError(f"{where}: {last}")
                retry_after = reply.retry_after
            if attempt == self.retries:
                break
            delay = self.backoff_s * 2**attempt
            if (
                retry_after
                and retry_after.strip().isascii()
                and (retry_after.strip().isdigit())
            ):
                delay = max(delay, float(retry_after))
            if time.monotonic() + delay >= deadline:
                last += " (no time left to retry)"
                break
            self.sleep(delay)
        raise PolicyError(f"{where} failed: {last}")

    def _late(self, where: str) -> str:
        return f"{where}: timed out (the {self.timeout_s}s deadline passed)"

    def _bounded(self, where, method, url, data, deadline) -> _Reply:
        """One attempt, in a worker thread so the caller returns at the deadline.

        httpx's timeouts bound each socket operation, not their sum; the worker
        ends on its own (each operation waits at most the time that was left).
        """
        box: dict[str, Any] = {}
        done = threading.Event()

        def work():
            try:
                box["reply"] = self._attempt(where, method, url, data, deadline)
            except BaseException as e:  # handed to the caller
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=work, name="hat-endpoint", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise PolicyTimeout(self._late(where))
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def _attempt(self, where, method, url, data, deadline) -> _Reply:
        left = deadline - time.monotonic()
        if left <= 0:
            raise PolicyTimeout(self._late(where))
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        with self._http.stream(
            method, url, content=data, headers=headers, timeout=httpx.Timeout(left)
        ) as resp:
            cap = f"{where}: reply over the {self.max_bytes}-byte cap"
            size = resp.headers.get("Content-Length", "")
            if size.isdigit() and int(size) > self.max_bytes:
                raise PolicyError(f"{cap} ({size} bytes)")
            chunks, n = [], 0
            for chunk in resp.iter_raw():
                now = time.monotonic()
                n += len(chunk)
                if n > self.max_bytes:
                    raise PolicyError(cap)
                if now > deadline:  # a server dripping bytes
                    raise PolicyTimeout(self._late(where))
                chunks.append((now, chunk))
            return _Reply(
                resp.status_code,
                resp.headers.get("Location"),
                resp.headers.get("Retry-After"),
                chunks,
            )


def _check_settings(
    timeout_s: float, max_bytes: int, retries: int, backoff_s: float
) -> None:
    """Refuses settings that would hang, overflow or never read a byte."""

    def whole(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    def got(x: Any) -> str:
        text = repr(x)
        return text if len(text) <= 40 else text[:37] + "..."

    if not _finite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a finite number > 0, got {got(timeout_s)}")
    if not whole(max_bytes) or max_bytes < 1:
        raise ValueError(f"max_bytes must be an integer >= 1, got {got(max_bytes)}")
    if not whole(retries) or retries < 0:
        raise ValueError(f"retries must be an integer >= 0, got {got(retries)}")
    if not _finite(backoff_s) or backoff_s < 0:
        raise ValueError(
            f"backoff_s must be a finite number >= 0, got {got(backoff_s)}"
        )


# ------------------------------------------------------------------ replies
def parse_json(data: bytes, where: str) -> Any:
    """The JSON value of a reply body."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise PolicyError(f"{where}: response is not JSON: {data[:200]!r}") from None


def _bad(where: str, field: str, value: Any, want: str) -> PolicyError:
    text = json.dumps(value, ensure_ascii=False, default=str)[:_DETAIL]
    return PolicyError(f"{where}: {field} is {shown(text)}, not {want}")


def check_text(value: Any, where: str, field: str) -> str:
    """A string that is valid Unicode text (no lone surrogate)."""
    if not isinstance(value, str):
        raise _bad(where, field, value, "a string")
    m = _LONE_SURROGATE.search(value)
    if m:
        raise PolicyError(
            f"{where}: {field} holds a lone surrogate U+{ord(m.group()):04X} at "
            f"character {m.start()}, not valid Unicode text"
        )
    return value


def _object(value: Any, where: str, field: str = "reply") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, field, value, "a JSON object")
    return value


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _finite(x: Any) -> bool:
    """A number that is a finite float (not NaN, inf, or an int too big for one)."""
    try:
        return _number(x) and math.isfinite(float(x))
    except OverflowError:
        return False


def _ints(value: Any, where: str, field: str) -> list[int] | None:
    """Token ids: a list of ints in ``[0, TOKEN_ID_LIMIT)``, or None."""
    if value is None:
        return None
    ok = isinstance(value, list) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in value
    )
    if not ok:
        raise _bad(where, field, value, "a list of ints")
    for i, x in enumerate(value):
        if not 0 <= x < TOKEN_ID_LIMIT:
            raise _bad(where, f"{field}[{i}]", x, "a token id in [0, 2**31)")
    return list(value)


def _first_choice(reply: Any, where: str) -> dict[str, Any]:
    choices = _object(reply, where).get("choices")
    if not isinstance(choices, list) or not choices:
        raise _bad(where, "choices", choices, "a non-empty list")
    return _object(choices[0], where, "choices[0]")


@dataclasses.dataclass(frozen=True)
class Completion:
    """The first choice of a ``/v1/completions`` reply, checked."""

    text: str
    token_ids: list[int] | None
    logprobs: list[float] | None
    finish_reason: str | None
    prompt_token_ids: list[int] | None


def parse_completion(reply: Any, where: str) -> Completion:
    """``choices[0]`` of a completions reply; a PolicyError names a bad field."""
    choice = _first_choice(reply, where)
    text = check_text(choice.get("text"), where, "choices[0].text")
    lp = choice.get("logprobs")
    if lp is not None and not isinstance(lp, dict):
        raise _bad(where, "choices[0].logprobs", lp, "an object")
    values = (lp or {}).get("token_logprobs")
    if values is not None:
        field = "choices[0].logprobs.token_logprobs"
        if not isinstance(values, list) or not all(map(_number, values)):
            raise _bad(where, field, values, "a list of numbers")
        for i, x in enumerate(values):
            if not _finite(x):  # json reads NaN, Infinity, 1e999 and 400 digits
                raise _bad(where, f"{field}[{i}]", x, "a finite number")
        values = [float(x) for x in values]
    finish = choice.get("finish_reason")
    if finish is not None:
        check_text(finish, where, "choices[0].finish_reason")
    prompt_ids = reply.get("prompt_token_ids")
    field = "prompt_token_ids"
    if prompt_ids is None:
        prompt_ids, field = (
            choice.get("prompt_token_ids"),
            "choices[0].prompt_token_ids",
        )
    return Completion(
        text,
        _ints(choice.get("token_ids"), where, "choices[0].token_ids"),
        values,
        finish,
        _ints(prompt_ids, where, field),
    )


def parse_chat(reply: Any, where: str) -> str:
    """``choices[0].message.content`` of a chat-completions reply."""
    message = _object(
        _first_choice(reply, where).get("message"), where, "choices[0].message"
    )
    return check_text(message.get("content"), where, "choices[0].message.content")


def parse_models(reply: Any, where: str) -> list[str]:
    """The model ids of a ``/v1/models`` reply."""
    data = _object(reply, where).get("data", [])
    if not isinstance(data, list):
        raise _bad(where, "data", data, "a list")
    ids = []
    for i, m in enumerate(data):
        mid = _object(m, where, f"data[{i}]").get("id")
        ids.append(check_text(mid, where, f"data[{i}].id"))
    return ids


def parse_events(
    chunks: list[tuple[float, bytes]], where: str
) -> list[tuple[float, dict[str, Any]]]:
    """Server-sent ``data:`` events as objects, each with the time it arrived."""
    lines: list[tuple[float, bytes]] = []
    buf = b""
    for t, chunk in chunks:
        *done, buf = (buf + chunk).split(b"\n")
        lines += [(t, line) for line in done]
    if chunks and buf:
        lines.append((chunks[-1][0], buf))
    events, done = [], False
    for t, raw in lines:
        line = raw.strip()
        if done and line:
            raise PolicyError(f"{where}: data after the stream's [DONE]")
        if line == b"data: [DONE]":
            done = True
            continue
        if not line.startswith(b"data:"):
            continue
        k = len(events) + 1
        event = parse_json(line[5:], f"{where}: event {k}")
        events.append((t, _object(event, where, f"event {k}")))
    if not done:  # OpenAI and vLLM end every stream so; a cut one is not a reply
        head = b"".join(c for _, c in chunks)[:60]
        raise PolicyError(
            f"{where}: the stream ended without 'data: [DONE]' after "
            f"{len(events)} event(s) (began {head!r})"
        )
    return events


def stream_text(
    events: Sequence[tuple[float, Any]], where: str
) -> tuple[list[str], float | None, dict[str, int], str]:
    """A streamed completion's text parts, the first text's arrival time, its
    usage and finish reason; a PolicyError names a malformed field."""
    parts, first, usage, finish = [], None, {}, "stop"
    for k, (t, event) in enumerate(events, 1):
        got = event.get("usage")
        if got is not None:
            if not isinstance(got, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31
                for key, v in got.items()
                if key in ("prompt_tokens", "completion_tokens")
            ):
                raise _bad_event(where, k, "usage", got)
            usage = got
        choices = event.get("choices") or []
        if not isinstance(choices, list):
            raise _bad_event(where, k, "choices", choices)
        for choice in choices:
            if not isinstance(choice, dict):
                raise _bad_event(where, k, "choices[]", choice)
            text, why = choice.get("text"), choice.get("finish_reason")
            if text is not None and not isinstance(text, str):
                raise _bad_event(where, k, "choices[].text", text)
            if text:
                check_text(text, where, f"event {k} choices[].text")
            if why is not None and not isinstance(why, str):
                raise _bad_event(where, k, "choices[].finish_reason", why)
            if text and first is None:
                first = t
            parts.append(text or "")
            finish = why or finish
    return parts, first, usage, finish


def _bad_event(where: str, k: int, field: str, value: Any) -> PolicyError:
    text = json.dumps(value, default=str)[:200]  # ASCII: escapes everything odd
    return PolicyError(f"{where}: event {k} {field} is malformed: {text}")
