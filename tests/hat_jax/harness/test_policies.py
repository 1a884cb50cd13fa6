"""Policies: the JAX sampler (batched, tokens + log-probs) and an HTTP endpoint."""

import contextlib
import http.server
import json
import threading
import time

import numpy as np
import pytest

from hat_jax.harness.policy import (
    OpenAIPolicy,
    PolicyError,
    ScriptedPolicy,
    render_prompt,
    thinking_prefill,
)
from hat_jax.models import ModelConfig, build_model
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.text.toolcall import ToolCall

SYSTEM = {"role": "system", "content": "You are the host of a live room."}
CONVERSATIONS = [
    [SYSTEM, {"role": "user", "content": "3号链接多少钱？"}],
    [
        SYSTEM,
        {"role": "user", "content": "Is link 2 in stock in size M? Thanks!"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [ToolCall("check_stock", {"link_id": 2, "size": "M"})],
        },
        {"role": "tool", "content": '{"stock": 4}'},
    ],
    [SYSTEM, {"role": "user", "content": "hi"}],
]


# ---------------------------------------------------------------- SamplerPolicy
@pytest.fixture(scope="module")
def qwen_tokenizer():
    from hat_jax.text.qwen_tokenizer import load_qwen3_6_tokenizer

    return load_qwen3_6_tokenizer()


@pytest.fixture(scope="module")
def tiny_sampler(qwen_tokenizer):
    cfg = ModelConfig(
        model_type="qwen3",
        vocab_size=qwen_tokenizer.vocab_size,  # 248,077
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
    )
    return Sampler(build_model(cfg, seed=0), qwen_tokenizer, chunk=8)


class CountingSampler:
    """Wraps a Sampler and records each generate call's batch."""

    def __init__(self, sampler):
        self.sampler, self.tokenizer, self.batches = sampler, sampler.tokenizer, []

    def generate(self, prompts, params=None, **kw):
        self.batches.append([list(p) for p in prompts])
        return self.sampler.generate(prompts, params, **kw)


def test_sampler_policy_generates_the_batch_in_one_call(tiny_sampler, qwen_tokenizer):
    from hat_jax.harness import SamplerPolicy

    sampler = CountingSampler(tiny_sampler)
    params = SamplingParams(max_new_tokens=6)
    policy = SamplerPolicy(sampler, qwen_tokenizer, params)
    outs = policy.generate(CONVERSATIONS, fmt="qwen_xml")
    assert len(sampler.batches) == 1 and len(outs) == len(CONVERSATIONS)
    stop = set(qwen_tokenizer.stop_ids)
    for conv, prompt, out in zip(CONVERSATIONS, sampler.batches[0], outs):
        assert prompt == qwen_tokenizer.encode(render_prompt(conv))
        assert out.prompt_tokens == prompt
        assert 1 <= len(out.tokens) <= 6 and len(out.logprobs) == len(out.tokens)
        assert all(lp <= 1e-6 for lp in out.logprobs)
        body = out.tokens[:-1] if out.tokens[-1] in stop else out.tokens
        assert out.text == qwen_tokenizer.decode(body)
        assert out.finish_reason in ("stop", "length")
    # batched greedy decoding equals decoding a conversation alone (the longest:
    # the same prompt bucket, so one more compile only)
    (alone,) = policy.generate([CONVERSATIONS[1]])
    assert alone.tokens == outs[1].tokens
    np.testing.assert_allclose(alone.logprobs, outs[1].logprobs, atol=1e-4)


def test_sampler_policy_seeds_and_thinking_prefill(tiny_sampler, qwen_tokenizer):
    from hat_jax.harness import SamplerPolicy

    params = SamplingParams(max_new_tokens=6, temperature=1.0, stop_ids=())
    policy = SamplerPolicy(tiny_sampler, params=params, enable_thinking=True)
    a = policy.generate(CONVERSATIONS[:1], seed=7)[0]
    b = policy.generate(CONVERSATIONS[:1], seed=7)[0]
    assert a.tokens == b.tokens  # a fixed seed reproduces
    assert a.text.startswith(thinking_prefill(True)) == (thinking_prefill(True) != "")
    assert a.prompt_tokens == qwen_tokenizer.encode(
        render_prompt(CONVERSATIONS[0], enable_thinking=True)
    )
    draws = {tuple(policy.generate(CONVERSATIONS[:1])[0].tokens) for _ in range(3)}
    assert len(draws) > 1  # without a seed each call draws afresh


# ------------------------------------------------------------------ OpenAIPolicy
class FakeServer:
    """A tiny OpenAI-compatible completions server on 127.0.0.1."""

    def __init__(self, mode="ok", delay=0.0, meet=0):
        self.mode, self.delay, self.meet = mode, delay, meet
        self.bodies, self.paths, self.inflight, self.max_inflight = [], [], 0, 0
        self.lock = threading.Condition()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers["Content-Length"])
                body = json.loads(self.rfile.read(n))
                with server.lock:
                    server.bodies.append(body)
                    server.paths.append(self.path)
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                    server.lock.notify_all()
                    # `meet`: no answer until that many requests were in flight
                    # at once, so overlap is shown by the order of events, not
                    # by timing; a client that never overlaps waits 10 s here
                    server.lock.wait_for(
                        lambda: server.max_inflight >= server.meet, timeout=10
                    )
                try:
                    time.sleep(server.delay)
                    self.answer(body)
                finally:
                    with server.lock:
                        server.inflight -= 1

            def answer(self, body):
                if server.mode in ("500", "400"):
                    return self.send(int(server.mode), b'{"error": "boom"}')
                if server.mode == "not_json":
                    return self.send(200, b"<html>hello</html>")
                if server.mode == "no_choices":
                    return self.send(200, b'{"choices": []}')
                # Echo the last user turn so each answer can be matched to its prompt.
                last = body["prompt"].rsplit("<|im_start|>user\n", 1)[-1]
                text = "echo: " + last.split("<|im_end|>")[0]
                choice = {
                    "text": text,
                    "finish_reason": "stop",
                    "token_ids": [1, 2, 3],
                    "logprobs": {"token_logprobs": [-0.5, -0.25, 0.0]},
                }
                self.send(200, json.dumps({"choices": [choice]}).encode())

            def send(self, code, data):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)  # the client may have timed out

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_openai_policy_concurrent_requests_in_order():
    convs = [
        [SYSTEM, {"role": "user", "content": f"question {i}"}] for i in range(6)
    ] + [CONVERSATIONS[1]]
    with FakeServer(meet=2) as server:
        policy = OpenAIPolicy(server.url + "/v1/", "tiny", max_tokens=32, max_workers=4)
        outs = policy.generate(convs, fmt="qwen_xml", seed=10)
    assert [o.text for o in outs[:6]] == [f"echo: question {i}" for i in range(6)]
    assert outs[6].text.startswith("echo: <tool_response>")  # the tool turn
    assert all(o.tokens == [1, 2, 3] and o.logprobs == [-0.5, -0.25, 0.0] for o in outs)
    assert server.max_inflight >= 2  # requests overlapped
    assert set(server.paths) == {"/v1/completions"}
    by_prompt = {b["prompt"]: b for b in server.bodies}
    for i, conv in enumerate(convs):
        body = by_prompt[render_prompt(conv)]
        assert body["model"] == "tiny" and body["max_tokens"] == 32
        assert body["stop"] == ["<|im_end|>", "<|endoftext|>"]
        assert body["seed"] == 10 + i and body["logprobs"] == 0
        assert body["return_token_ids"] is True


@pytest.mark.parametrize(
    "mode, retries, attempts, message",
    [
        ("500", 2, 3, "HTTP 500"),  # server errors are retried
        ("400", 2, 1, "HTTP 400"),  # client errors are not
        ("not_json", 0, 1, "not JSON"),
        ("no_choices", 0, 1, r"choices is \[\], not a non-empty list"),
    ],
)
def test_openai_policy_clear_errors(mode, retries, attempts, message):
    with FakeServer(mode) as server:
        policy = OpenAIPolicy(server.url, "tiny", retries=retries, backoff_s=0.01)
        with pytest.raises(PolicyError, match=message):
            policy.generate(CONVERSATIONS[:1])
    assert len(server.bodies) == attempts


def test_openai_policy_timeout_and_refused_connection():
    with FakeServer(delay=1.0) as server:
        policy = OpenAIPolicy(server.url, "tiny", timeout_s=0.2, retries=0)
        with pytest.raises(PolicyError, match="timed out"):
            policy.generate(CONVERSATIONS[:1])
    # the server is closed now: nothing listens on that port
    with contextlib.suppress(Exception):
        server.httpd.socket.close()
    policy = OpenAIPolicy(server.url, "tiny", timeout_s=1.0, retries=1, backoff_s=0.01)
    with pytest.raises(PolicyError, match=r"POST http://127\.0\.0\.1:\d+/v1/comp"):
        policy.generate(CONVERSATIONS[:1])


def test_scripted_policy_forms():
    by_user = ScriptedPolicy({"3号链接多少钱？": ["a", "b"], "hi": ["c"]})
    convs = [CONVERSATIONS[0], CONVERSATIONS[2]]
    assert [o.text for o in by_user.generate(convs)] == ["a", "c"]
    step2 = convs[0] + [{"role": "assistant", "content": "a"}]
    assert by_user.generate([step2])[0].text == "b"
    assert by_user.batches == [2, 1]
    with pytest.raises(IndexError, match="script has 2 outputs"):
        by_user.generate([step2 + [{"role": "assistant", "content": "b"}]])
    with pytest.raises(KeyError, match="no script"):
        by_user.generate([CONVERSATIONS[1]])
    fn = ScriptedPolicy(lambda msgs: f"{len(msgs)} messages")
    assert [o.text for o in fn.generate(CONVERSATIONS)] == [
        "2 messages",
        "4 messages",
        "2 messages",
    ]
    assert [o.text for o in ScriptedPolicy(["x"]).generate(convs)] == ["x", "x"]


def test_sampler_policy_drives_the_agent_loop(tiny_sampler, qwen_tokenizer):
    """A random tiny model in the loop: batched calls, recorded tokens, no crash."""
    from hat_jax.harness import SamplerPolicy
    from hat_jax.harness.backend import StaticBackend
    from hat_jax.harness.loop import TurnRequest, run_turns
    from hat_jax.harness.spec import Harness, HookSpec, PromptLayout, Skill, Tool
    from hat_jax.harness.tokens import trajectory_to_tokens

    harness = Harness(
        name="tiny",
        version="0",
        persona="You are a host.",
        rules=(),
        constraints=(),
        layout=PromptLayout(),
        turn_limit=2,
        retry_limit=1,
        skills=(Skill("qa", "reply", "Answer questions.", "Be brief."),),
        tools=(Tool("ping", "Ping.", {"type": "object", "properties": {}}),),
        hooks=(HookSpec("reply_format", {"max_chars": 5}),),
    )
    sampler = CountingSampler(tiny_sampler)
    policy = SamplerPolicy(sampler, qwen_tokenizer, SamplingParams(max_new_tokens=6))
    requests = [TurnRequest(f"question {i}?") for i in range(3)]
    trajs = run_turns(harness, requests, policy, StaticBackend({"ping": "pong"}))
    calls = [t.meta["model_calls"] for t in trajs]
    assert len(sampler.batches[0]) == 3
    assert len(sampler.batches) == max(calls)  # one sampler call per iteration
    for traj in trajs:
        assert traj.status in ("ok", "failed", "turn_limit")
        gens = traj.meta["generations"]
        assert len(gens) == traj.meta["model_calls"]
        assert all(len(g["tokens"]) == len(g["logprobs"]) >= 1 for g in gens)
        ids, mask = trajectory_to_tokens(traj, qwen_tokenizer)
        assert mask.sum() >= len(gens)  # each call's <|im_end|> at least


def test_sampler_policy_max_rows_splits_calls_and_seeds():
    """`max_rows` chunks a call; chunk c of a call seeded s is seeded from (s, c);
    `pad_rows` pads a chunk to a power of two rows and drops the padding's
    outputs; the chunks' stats add up (a later chunk's rows wait)."""
    from hat_jax.harness import CallStats, SamplerPolicy
    from hat_jax.sampling.sampler import Completion, SamplingParams

    calls = []

    class Tok:
        stop_ids = (0,)

        def encode_batch(self, texts):
            return [[len(t) % 7 + 1, 5] for t in texts]

        def decode(self, ids):
            return "-".join(map(str, ids))

    class FakeSampler:
        tokenizer = None

        def generate(self, prompts, params, on_chunk=None):
            calls.append((len(prompts), params.seed))
            on_chunk([[9]] * len(prompts))
            return [Completion([len(calls), 0], [-0.5, -0.1], None, "stop")] * len(
                prompts
            )

    pol = SamplerPolicy(
        FakeSampler(), Tok(), SamplingParams(seed=3), max_rows=2, pad_rows=True
    )
    convs = [[{"role": "user", "content": "x" * i}] for i in range(5)]
    fmts = ["hermes", "qwen_xml"] * 2 + ["hermes"]
    outs, stats = pol.generate_measured(convs, fmt=fmts, seed=7)
    assert [c[0] for c in calls] == [2, 2, 1]  # the last chunk: 1 row, no padding
    assert [o.text for o in outs] == ["1", "1", "2", "2", "3"]
    assert outs[0].logprobs == [-0.5, -0.1] and outs[0].tokens == [1, 0]
    seeds = [c[1] for c in calls]
    assert len(set(seeds)) == 3
    pol.generate(convs, fmt="qwen_xml", seed=7)
    assert [c[1] for c in calls[3:]] == seeds  # a function of (seed, chunk)
    assert stats.batch == 5 and len(stats.ttft_s) == 5
    assert stats.new_tokens == 10 and stats.prompt_tokens == 10
    assert stats.ttft_s[2] >= stats.ttft_s[0]  # the second chunk waited
    pol3 = SamplerPolicy(FakeSampler(), Tok(), pad_rows=True)
    pol3.generate(convs[:3])
    assert calls[-1][0] == 4  # 3 rows padded to 4
    one = CallStats(batch=1, wall_s=1.0, ttft_s=[0.5], row_decode_s=0.5,
                    new_tokens=2, accepted_per_pos=(3, 1))  # fmt: skip
    both = CallStats.merged([one, one])
    assert both.ttft_s == [0.5, 1.5] and both.accepted_per_pos == (6, 2)
    assert both.wall_s == 2.0 and both.new_tokens == 4
    with pytest.raises(ValueError, match="max_rows"):
        SamplerPolicy(FakeSampler(), Tok(), max_rows=-1)


def test_sampler_policy_max_cells_caps_each_calls_prefill(tiny_sampler, qwen_tokenizer):
    """`max_cells` cuts a call into consecutive chunks with rows x bucket(longest
    prompt)^2 <= the cap (a lone over-long prompt still goes), each chunk as long
    as the cap allows (checked against every split by brute force); greedy
    outputs equal the uncut call's."""
    import itertools

    from hat_jax.harness import SamplerPolicy
    from hat_jax.sampling.sampler import _bucket

    def cells(lengths):
        return len(lengths) * max(_bucket(n, 32) for n in lengths) ** 2

    pol = SamplerPolicy(tiny_sampler, qwen_tokenizer, max_cells=3 * 64**2)
    for lengths in ([10, 40, 70, 5, 33, 64, 200, 1, 1, 1, 1], [300], [1] * 7):
        got = pol._chunks(lengths)
        assert got[0][0] == 0 and got[-1][1] == len(lengths)
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(got, got[1:]))
        for i, j in got:  # within the cap, or one row; never extendable
            assert j - i == 1 or cells(lengths[i:j]) <= pol.max_cells
            assert j == len(lengths) or cells(lengths[i : j + 1]) > pol.max_cells
        # greedy chunking gives the fewest calls of any split (brute force)
        n = len(lengths)
        fewest = min(
            len(cuts) + 1
            for k in range(n)
            for cuts in itertools.combinations(range(1, n), k)
            if all(
                b - a == 1 or cells(lengths[a:b]) <= pol.max_cells
                for a, b in zip((0, *cuts), (*cuts, n))
            )
        )
        assert len(got) == fewest
    pol_rows = SamplerPolicy(tiny_sampler, qwen_tokenizer, max_rows=2, max_cells=10**9)
    assert pol_rows._chunks([5] * 5) == [(0, 2), (2, 4), (4, 5)]
    with pytest.raises(ValueError, match="max_cells"):
        SamplerPolicy(tiny_sampler, qwen_tokenizer, max_cells=-1)

    params = SamplingParams(max_new_tokens=6)
    lens = [len(qwen_tokenizer.encode(render_prompt(c))) for c in CONVERSATIONS]
    counting = CountingSampler(tiny_sampler)
    cap = _bucket(max(lens), 32) ** 2  # one row per call
    cut = SamplerPolicy(counting, qwen_tokenizer, params, max_cells=cap)
    outs = cut.generate(CONVERSATIONS)
    assert [len(b) for b in counting.batches] == [1] * len(CONVERSATIONS)
    whole = SamplerPolicy(tiny_sampler, qwen_tokenizer, params).generate(CONVERSATIONS)
    assert [o.tokens for o in outs] == [o.tokens for o in whole]
