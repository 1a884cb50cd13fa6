"""hat_jax.endpoint against local servers: redirects, deadlines, caps, retries,
malformed replies and API keys. No assertion depends on how fast the machine is:
the slow servers hold a call 60 s (or forever) against a 1 s deadline."""

import json
import threading
import time

import pytest

from hat_jax.endpoint import (
    EndpointClient,
    PolicyError,
    PolicyTimeout,
    api_key_from_env,
    parse_chat,
    parse_models,
)
from hat_jax.eval.backends import BackendOptions, openai_policy, served_models
from hat_jax.harness import OpenAIPolicy
from serving.policies import endpoint_policy
from sim.judge_llm import Endpoint, LLMJudge, chat
from tests.local_http import Local, send

CONV = [[{"role": "user", "content": "hi"}]]
HOLD_S = 60.0  # how long the slow servers hold a request: far past any deadline
GOOD = {"choices": [{"text": "ok", "token_ids": [1], "finish_reason": "stop"}]}


def answer(reply, code=200, headers=()):
    return lambda h, n: send(h, code, reply, headers)


# ------------------------------------------------------------------ redirects
@pytest.mark.parametrize("elsewhere", [True, False])
def test_redirect_is_refused_and_the_key_stays_home(elsewhere):
    with Local(answer(GOOD)) as other:
        target = other.url + "/v1/completions" if elsewhere else "/v1/elsewhere"
        with Local(answer(GOOD, 302, [("Location", target)])) as server:
            policy = OpenAIPolicy(server.url, "m", api_key="sekrit-key", retries=2)
            with pytest.raises(PolicyError, match="HTTP 302 redirect to") as e:
                policy.generate(CONV)
    want = other.url if elsewhere else server.url
    assert want in str(e.value) and "refused" in str(e.value)
    assert "sekrit" not in str(e.value) and "sekrit" not in repr(policy.client)
    assert other.requests == []  # nothing, key or not, reached the other origin
    assert len(server.requests) == 1  # not followed, not retried
    assert server.requests[0][1]["Authorization"] == "Bearer sekrit-key"


def test_urls_never_carry_credentials():
    with pytest.raises(ValueError, match="environment variable"):
        EndpointClient("http://user:pass@127.0.0.1:1")
    with pytest.raises(ValueError, match="http"):
        EndpointClient("ftp://127.0.0.1:1")


# ---------------------------------------------------------- deadline and size
def hold(h, n):  # headers never come
    h.local.stop.wait(HOLD_S)


def drip(h, n):  # one byte at a time, forever
    h.send_response(200)
    h.send_header("Content-Length", "1000000")
    h.end_headers()
    try:
        while not h.local.stop.wait(0.05):
            h.wfile.write(b" ")
            h.wfile.flush()
    finally:
        h.local.gone.set()  # the client hung up (or the test ended)


def stall(h, n):  # half a reply, then silence
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b'{"choices": ')
    h.wfile.flush()
    h.local.stop.wait(HOLD_S)


@pytest.mark.parametrize("respond", [hold, drip, stall], ids=lambda f: f.__name__)
def test_the_deadline_holds_against_a_slow_server(respond):
    with Local(respond) as server:
        client = EndpointClient(server.url, timeout_s=1.0, retries=3)
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout, match="deadline passed"):
            client.post_json("completions", {"prompt": "x"})
        assert time.monotonic() - t0 < HOLD_S / 2  # long before the server gave up
        if respond is drip:  # and the client stops reading, too
            assert server.gone.wait(HOLD_S / 2)
    assert len(server.requests) == 1  # a timeout is not retried


def test_the_caller_returns_at_the_deadline_whatever_the_transport_does():
    release = threading.Event()
    client = EndpointClient("http://127.0.0.1:1", timeout_s=1.0, retries=0)
    # One socket operation may wait as long as was left at its start; many in a
    # row could add up. The call itself must still end at the deadline.
    client._attempt = lambda *args: release.wait(HOLD_S)
    t0 = time.monotonic()
    try:
        with pytest.raises(PolicyTimeout):
            client.get_json("models")
        assert time.monotonic() - t0 < HOLD_S / 2
    finally:
        release.set()


def test_retries_stop_at_the_deadline():
    def slow_503(h, n):
        server.stop.wait(0.3)
        send(h, 503, b"busy")

    with Local(slow_503) as server:
        client = EndpointClient(
            server.url, timeout_s=1.0, retries=1000, sleep=lambda s: None
        )
        with pytest.raises(PolicyError, match="503"):
            client.post_json("completions", {})
    assert 1 <= len(server.requests) < 1000


@pytest.mark.parametrize("length", [True, False], ids=["sized", "unsized"])
def test_a_reply_over_the_cap_is_refused(length):
    big = json.dumps({"choices": [{"text": "x" * 5000}]}).encode()
    with Local(lambda h, n: send(h, 200, big, length=length)) as server:
        client = EndpointClient(server.url, max_bytes=4096)
        with pytest.raises(PolicyError, match="4096-byte cap"):
            client.post_json("completions", {})
        ok = EndpointClient(server.url, max_bytes=len(big))
        assert len(ok.post_json("completions", {})["choices"][0]["text"]) == 5000


# -------------------------------------------------------------------- retries
@pytest.mark.parametrize("code", [429, 500, 503])
def test_busy_and_server_errors_are_retried_with_backoff(code):
    delays = []
    with Local(answer({"error": "busy"}, code)) as server:
        client = EndpointClient(
            server.url, retries=2, backoff_s=0.5, sleep=delays.append
        )
        with pytest.raises(PolicyError, match=f"HTTP {code}"):
            client.post_json("completions", {})
    assert len(server.requests) == 3 and delays == [0.5, 1.0]


def test_retry_after_and_recovery():
    def busy_once(h, n):
        if n == 0:
            return send(h, 429, b"{}", [("Retry-After", "3")])
        send(h, 200, GOOD)

    delays = []
    with Local(busy_once) as server:
        client = EndpointClient(server.url, backoff_s=0.5, sleep=delays.append)
        assert client.post_json("completions", {}) == GOOD
    assert delays == [3.0] and len(server.requests) == 2


@pytest.mark.parametrize("code", [400, 401, 404])
def test_client_errors_are_not_retried(code):
    delays = []
    with Local(answer({"error": "no"}, code)) as server:
        client = EndpointClient(server.url, retries=3, sleep=delays.append)
        with pytest.raises(PolicyError, match=f"HTTP {code}"):
            client.post_json("completions", {})
    assert len(server.requests) == 1 and delays == []


def test_a_refused_connection_is_retried():
    with Local(answer(GOOD)) as server:
        url = server.url
    delays = []  # the server is closed: nothing listens on that port now
    client = EndpointClient(url, retries=2, backoff_s=0.1, sleep=delays.append)
    with pytest.raises(PolicyError, match="cannot connect"):
        client.get_json("models")
    assert delays == [0.1, 0.2]


# ---------------------------------------------------------- malformed replies
def choice(**fields):
    return {"choices": [{"text": "ok", **fields}]}


@pytest.mark.parametrize(
    "reply, field",
    [
        (choice(text=5), r"choices\[0\]\.text is 5, not a string"),
        (choice(text=None), r"choices\[0\]\.text is null"),
        ({"choices": [{}]}, r"choices\[0\]\.text is null"),
        (choice(logprobs={"token_logprobs": [-0.5, None]}), "token_logprobs is"),
        (choice(logprobs={"token_logprobs": "-0.5"}), "not a list of numbers"),
        (choice(logprobs="none"), r"choices\[0\]\.logprobs is"),
        (choice(token_ids="1 2"), r"choices\[0\]\.token_ids is \"1 2\""),
        (choice(token_ids=[1, "2"]), r"token_ids is .*not a list of ints"),
        (choice(token_ids=[1.5]), r"token_ids is .*not a list of ints"),
        (choice(finish_reason=3), r"choices\[0\]\.finish_reason is 3"),
        ({**choice(), "prompt_token_ids": [None]}, "prompt_token_ids is"),
        ({"id": "x"}, "choices is null, not a non-empty list"),
        ({"choices": []}, r"choices is \[\], not a non-empty list"),
        ({"choices": [7]}, r"choices\[0\] is 7, not a JSON object"),
        (b"<html>502</html>", "response is not JSON"),
        (b'{"choices": [', "response is not JSON"),
        ([GOOD], r"reply is \[.*not a JSON object"),
    ],
)
def test_malformed_completions_are_policy_errors(reply, field):
    with Local(answer(reply)) as server:
        policy = OpenAIPolicy(server.url, "m", retries=2)
        with pytest.raises(PolicyError, match=field):
            policy.generate(CONV)
    assert len(server.requests) == 1  # a malformed reply is not retried


def test_a_good_completion_is_read():
    reply = choice(
        token_ids=[1, 2],
        logprobs={"token_logprobs": [-1, -0.5]},
        finish_reason="length",
    )
    with Local(answer({**reply, "prompt_token_ids": [7, 8]})) as server:
        (out,) = OpenAIPolicy(server.url, "m").generate(CONV)
    assert (out.text, out.tokens, out.logprobs) == ("ok", [1, 2], [-1.0, -0.5])
    assert out.finish_reason == "length" and out.prompt_tokens == [7, 8]


@pytest.mark.parametrize(
    "reply, field",
    [
        ({"choices": [{"message": {"content": None}}]}, r"message\.content is null"),
        ({"choices": [{"message": "hi"}]}, r"choices\[0\]\.message is \"hi\""),
        ({"choices": [{"text": "hi"}]}, r"choices\[0\]\.message is null"),
    ],
)
def test_malformed_chat_replies(reply, field):
    with pytest.raises(PolicyError, match=field):
        parse_chat(reply, "POST x")


def test_malformed_model_lists():
    assert parse_models({"data": [{"id": "a"}, {"id": "b"}]}, "GET x") == ["a", "b"]
    with pytest.raises(PolicyError, match=r"data\[1\]\.id is 3"):
        parse_models({"data": [{"id": "a"}, {"id": 3}]}, "GET x")
    with pytest.raises(PolicyError, match="data is"):
        parse_models({"data": "a"}, "GET x")
    with Local(answer([1, 2])) as server:
        with pytest.raises(PolicyError, match="not a JSON object"):
            served_models(server.url)


@pytest.mark.parametrize(
    "events, field",
    [
        ([{"choices": [{"text": 5}]}], r"event 1 choices\[\]\.text"),
        ([{"choices": [{"text": "a"}]}, {"choices": "b"}], "event 2 choices"),
        ([{"choices": [], "usage": {"completion_tokens": "3"}}], "event 1 usage"),
        (["not an object"], "event 1 is"),
    ],
)
def test_malformed_stream_events(events, field):
    data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    with Local(answer(data.encode())) as server:
        policy = endpoint_policy(server.url, "m")
        with pytest.raises(PolicyError, match=field):
            policy.generate(CONV)
    with Local(answer(b"data: {oops\n\n")) as server:
        with pytest.raises(PolicyError, match="event 1: response is not JSON"):
            endpoint_policy(server.url, "m").generate(CONV)


# ------------------------------------------------------------------- API keys
def keyed(key, reply=GOOD):
    """A server that answers only requests bearing ``key``."""

    def respond(h, n):
        if h.headers.get("Authorization") != f"Bearer {key}":
            return send(h, 401, {"error": "no key"})
        if h.path == "/v1/models":
            return send(h, 200, {"data": [{"id": "served"}]})
        send(h, 200, reply)

    return respond


def test_eval_backend_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.delenv("HAT_API_KEY", raising=False)
    monkeypatch.setenv("MY_KEY", "k1")
    with Local(keyed("k1")) as server:
        policy = openai_policy(server.url, BackendOptions(api_key_env="MY_KEY"))
        assert policy.model == "served" and policy.generate(CONV)[0].text == "ok"
        with pytest.raises(PolicyError, match="HTTP 401"):
            openai_policy(server.url, BackendOptions())  # no key anywhere
        monkeypatch.setenv("HAT_API_KEY", "k1")  # the default variable
        assert openai_policy(server.url, BackendOptions()).model == "served"
    with pytest.raises(ValueError, match="UNSET_KEY"):
        openai_policy(server.url, BackendOptions(api_key_env="UNSET_KEY"))


def test_api_key_from_env_reads_only_what_it_is_told(monkeypatch):
    monkeypatch.delenv("HAT_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "not-for-us")
    assert api_key_from_env() is None  # OPENAI_API_KEY only when named
    assert api_key_from_env("OPENAI_API_KEY") == "not-for-us"
    monkeypatch.setenv("HAT_API_KEY", "ours")
    assert api_key_from_env() == "ours"
    monkeypatch.setenv("EMPTY_KEY", "")
    with pytest.raises(ValueError, match="EMPTY_KEY"):
        api_key_from_env("EMPTY_KEY")


def test_judge_endpoints_take_their_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("HAT_JUDGE_API_KEY", "j1")
    monkeypatch.setenv("OTHER_KEY", "j2")
    assert Endpoint("http://h").key() == "j1"
    assert Endpoint("http://h", api_key_env="OTHER_KEY").key() == "j2"
    assert Endpoint("http://h", api_key="j3").key() == "j3"
    assert "j3" not in repr(Endpoint("http://h", api_key="j3"))
    reply = {"choices": [{"message": {"content": "fine"}}]}
    with Local(keyed("j2", reply)) as server:
        judge = LLMJudge([Endpoint(server.url, api_key_env="OTHER_KEY")])
        assert chat(judge.clients[judge.plan[0]], "m", []) == "fine"
        assert server.requests[0][1]["Authorization"] == "Bearer j2"
    monkeypatch.delenv("UNSET_KEY", raising=False)
    with pytest.raises(ValueError, match="UNSET_KEY"):
        LLMJudge([Endpoint("http://h", api_key_env="UNSET_KEY")])


@pytest.mark.parametrize("code", [401, 500])
def test_a_server_echoing_the_key_does_not_get_it_printed(code):
    def echo(h, n):
        send(h, code, {"you_sent": h.headers.get("Authorization")})

    with Local(echo) as server:
        client = EndpointClient(server.url, api_key="sk-echo-789", retries=1,
                                sleep=lambda s: None)  # fmt: skip
        with pytest.raises(PolicyError) as e:
            client.post_json("completions", {})
    assert "sk-echo" not in str(e.value) and "<api key>" in str(e.value)


# ------------------------------------------------------------ hostile replies
def logprobs(raw: bytes) -> bytes:
    """A completion whose token_logprobs list is ``raw``, as JSON text."""
    return b'{"choices": [{"text": "ok", "logprobs": {"token_logprobs": %s}}]}' % raw


ID_RANGE = r"not a token id in \[0, 2\*\*31\)"


@pytest.mark.parametrize(
    "reply, field",
    [
        (logprobs(b"[NaN]"), r"token_logprobs\[0\] is NaN, not a finite number"),
        (logprobs(b"[-1, -Infinity]"), r"token_logprobs\[1\] is -Infinity, not a"),
        (logprobs(b"[-1e999]"), r"token_logprobs\[0\] is -Infinity"),
        (logprobs(b"[-1" + b"0" * 400 + b"]"), r"\[0\] is -10000.*not a finite"),
        (choice(token_ids=[1, -1]), r"token_ids\[1\] is -1, " + ID_RANGE),
        (choice(token_ids=[2**31]), r"token_ids\[0\] is 2147483648, " + ID_RANGE),
        ({**choice(), "prompt_token_ids": [0, 10**30]}, r"prompt_token_ids\[1\] is"),
        (choice(token_ids=[True]), r"token_ids is \[true\], not a list of ints"),
        (b'{"choices": [{"text": "ok\\ud800"}]}',
         r"choices\[0\]\.text holds a lone surrogate U\+D800 at character 2"),
        (b'{"choices": [{"text": "ok", "finish_reason": "\\udfff"}]}',
         r"finish_reason holds a lone surrogate U\+DFFF"),
    ],
)  # fmt: skip
def test_hostile_completions_are_policy_errors_naming_the_field(reply, field):
    with Local(answer(reply)) as server:
        with pytest.raises(PolicyError, match=field) as e:
            OpenAIPolicy(server.url, "m").generate(CONV)
    str(e.value).encode("utf-8")  # the message itself prints anywhere
    assert len(server.requests) == 1


def test_a_paired_surrogate_escape_is_text():
    reply = b'{"choices": [{"text": "ok \\ud83d\\ude00", "token_ids": [0, 5]}]}'
    with Local(answer(reply)) as server:
        (out,) = OpenAIPolicy(server.url, "m").generate(CONV)
    assert out.text == "ok \U0001f600" and out.tokens == [0, 5]


def test_hostile_chat_models_and_stream_text():
    with pytest.raises(PolicyError, match=r"message\.content holds a lone surrogate"):
        parse_chat({"choices": [{"message": {"content": "a\ud800"}}]}, "POST x")
    with pytest.raises(PolicyError, match=r"data\[0\]\.id holds a lone surrogate"):
        parse_models({"data": [{"id": "\udc00m"}]}, "GET x")
    data = b'data: {"choices": [{"text": "hi \\udc80"}]}\n\ndata: [DONE]\n\n'
    with Local(answer(data)) as server:
        with pytest.raises(
            PolicyError, match=r"event 1 choices\[\]\.text holds a lone"
        ):
            endpoint_policy(server.url, "m").generate(CONV)
    data = (
        b'data: {"choices": [], "usage": {"completion_tokens": -3}}\n\ndata: [DONE]\n\n'
    )
    with Local(answer(data)) as server:
        with pytest.raises(PolicyError, match="event 1 usage is malformed"):
            endpoint_policy(server.url, "m").generate(CONV)


def test_server_text_in_an_error_has_its_control_characters_escaped():
    with Local(answer(b"\x1b]0;pwned\x07\x1b[2J", 400)) as server:
        with pytest.raises(PolicyError) as e:
            EndpointClient(server.url).post_json("completions", {})
    assert "\x1b" not in str(e.value) and "\\x1b]0;pwned\\x07" in str(e.value)
    with pytest.raises(PolicyError) as e:
        parse_chat({"choices": [{"message": {"content": ["\x9b31m"]}}]}, "POST x")
    assert "\x9b" not in str(e.value) and "\\x9b31m" in str(e.value)


def test_root_paths_reach_the_server_beside_v1():
    with Local(answer(b"up")) as server:
        client = EndpointClient(server.url + "/v1")
        assert client.get_text("health", root=True) == "up"
        assert client.url("metrics", root=True) == server.url + "/metrics"
    assert server.requests[0][0] == "/health"


@pytest.mark.parametrize(
    "data",
    [
        b"<html>hi</html>",  # not a stream at all
        b'data: {"choices": [{"text": "hi"}]}\n\n',  # cut before [DONE]
        b"",
        b'data: [DONE]\n\ndata: {"choices": [{"text": "more"}]}\n\n',
    ],
)
def test_a_stream_that_is_not_a_whole_stream_is_a_policy_error(data):
    from hat_jax.endpoint import PolicyError, parse_events

    with pytest.raises(PolicyError, match="stream|DONE"):
        parse_events([(0.0, data)] if data else [], "POST x")
