"""A /metrics or /health endpoint that lies, stalls or redirects: a PolicyError
naming it (a replay counts it and carries on), never an http.client traceback, a
hang or a redirect followed. No assertion depends on the machine's speed: the
stalling server holds a request 60 s against a 1 s deadline."""

import json
import time

import pytest

from hat_jax.cli.main import main
from hat_jax.endpoint import PolicyError, PolicyTimeout
from serving import prom
from serving.launch import VLLMServer
from tests.local_http import Local
from tests.serving.fake_openai import FakeServer

HOLD_S = 60.0
GOOD_PAGE = (
    "vllm:spec_decode_num_drafts_total 4\n"
    "vllm:spec_decode_num_draft_tokens_total 8\n"
    "vllm:spec_decode_num_accepted_tokens_total 6\n"
)


PER_POS = prom.PER_POS + "_total"


def page(text):
    """A /metrics page serving ``text``."""
    return reply(body=text.encode())


def reply(code=200, body=b"", headers=(), length=None):
    def respond(h, n):
        h.send_response(code)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body) if length is None else length))
        h.end_headers()
        h.wfile.write(body)

    return respond


def stall(h, n):
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b"vllm:")
    h.wfile.flush()
    h.local.stop.wait(HOLD_S)


LIARS = [
    # (respond, what the PolicyError says)
    (reply(body=b"vllm:x 1\n", length=1000), "peer closed connection"),  # short body
    (reply(headers=[("X-Pad", "a" * 300_000)]), "RemoteProtocolError"),  # long header
    (reply(302, headers=[("Location", "http://169.254.169.254/")]), "refused"),
    (reply(body=b"x" * (prom.MAX_BYTES + 1)), "byte cap"),
    (reply(body=b"\xff\xfe metrics"), "not UTF-8 text"),
    (reply(500, body=b"\x1b[2Jboom"), r"HTTP 500: \\x1b\[2Jboom"),
    (reply(body=GOOD_PAGE.replace("4", "NaN").encode()), "nan, not a finite count"),
    (reply(body=GOOD_PAGE.replace(" 8", " -8").encode()), "-8.0, not a finite count"),
    # each sample is checked before the engines' series are summed
    (page(GOOD_PAGE.replace("drafts_total 4", 'drafts_total{engine="0"} -5\n'
                            'vllm:spec_decode_num_drafts_total{engine="1"} 9')),
     r'drafts_total\{engine="0"\} is -5.0, not a finite count'),
    (page(GOOD_PAGE + "vllm:spec_decode_num_drafts_total 4\n"),
     "vllm:spec_decode_num_drafts_total is on the page more than once"),
    (page(f'{PER_POS}{{engine="0",position="0"}} 1\n'
          f'{PER_POS}{{ position="0" , engine="0" }} 1\n' + GOOD_PAGE),
     "more than once"),  # the same label set in another order
    (page(GOOD_PAGE + f'{PER_POS}{{position="0"}} 1 # no timestamp\n'),
     f"{PER_POS}: a line that is not name"),
    (page(GOOD_PAGE.replace("drafts_total 4", 'drafts_total{engine="0" 4')),
     "vllm:spec_decode_num_drafts_total: a line that is not name"),
    # Prometheus number syntax, not Python's float()
    (page(GOOD_PAGE.replace(" 8", " 1_0")), "draft_tokens_total has value 1_0, not a"),
    (page(GOOD_PAGE.replace(" 8", " infinity")), "has value infinity, not a number"),
    (page(GOOD_PAGE.replace(" 8", " nan")), "has value nan, not a number"),
    (page(GOOD_PAGE.replace(" 8", " 0x8")), "has value 0x8, not a number"),
    (page(GOOD_PAGE.replace(" 8", " +Inf")), "draft_tokens_total is inf, not a finite"),
    (page(GOOD_PAGE.replace(" 8", " 1e999")), "is inf, not a finite count"),
]  # fmt: skip


@pytest.mark.parametrize("respond, why", LIARS)
def test_a_lying_metrics_page_is_a_policy_error(respond, why):
    with Local(respond) as server:
        with pytest.raises(PolicyError, match=why) as e:
            prom.read_spec(server.url + "/v1")
    assert "/metrics" in str(e.value)
    assert server.paths == ["/metrics"]  # read once, nothing followed


def test_a_stalling_metrics_page_hits_the_deadline():
    with Local(stall) as server:
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout, match="deadline passed"):
            prom.read_spec(server.url, timeout_s=1.0)
        assert time.monotonic() - t0 < HOLD_S / 2


def test_a_page_without_counters_or_with_odd_lines_reads():
    odd = '# HELP x\nlonely_name\nbraces{a="}"}\nvllm:other 1 2 3\n' + GOOD_PAGE
    with Local(reply(body=odd.encode())) as server:
        assert prom.read_spec(server.url) == {
            "drafts": 4.0, "draft_tokens": 8.0, "accepted_tokens": 6.0,
        }  # fmt: skip
    with Local(reply(body=b"vllm:other 1\n")) as server:
        assert prom.read_spec(server.url) is None


COUNTS = {"drafts": 5, "draft_tokens": 8, "accepted_tokens": 4}


@pytest.mark.parametrize(
    "before, after, why",
    [
        ({"drafts": 5, "draft_tokens": 8, "accepted_tokens": 6},
         {"drafts": 4, "draft_tokens": 9, "accepted_tokens": 7}, "ran backwards"),
        ({"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0},
         {"drafts": 1, "draft_tokens": 2, "accepted_tokens": 3}, "3 tokens accepted"),
        (COUNTS | {"accepted_per_pos": [4, 2]}, COUNTS | {"accepted_per_pos": [3, 2]},
         r"backwards: \['accepted_per_pos\[0\]'\]"),
        (COUNTS | {"accepted_per_pos": [0, 0]},
         COUNTS | {"drafts": 6, "accepted_per_pos": [2, 1]},
         r"positions \[0\] accepted more often than the 1 drafts"),
        (COUNTS | {"accepted_per_pos": [0, 0]},
         COUNTS | {"accepted_per_pos": [0, 0, 0]}, "per-position counters changed"),
        (COUNTS, COUNTS | {"accepted_per_pos": [1, 0]}, "counters changed"),
        (COUNTS | {"accepted_per_pos": [1, 0]}, COUNTS, "counters changed"),
        # vLLM counts a draft token only after every one before it was accepted
        (COUNTS | {"accepted_per_pos": [0, 0]},
         {"drafts": 9, "draft_tokens": 16, "accepted_tokens": 8,
          "accepted_per_pos": [1, 3]},
         r"per_pos: position 1 accepted 3 times, more than position 0 \(1\)"),
        # ... and adds each step's accepted tokens to the total and the positions
        (COUNTS | {"accepted_per_pos": [0, 0]},
         {"drafts": 9, "draft_tokens": 16, "accepted_tokens": 6,
          "accepted_per_pos": [3, 1]},
         "per_pos sums to 4 over positions, not the 2 of "
         "vllm:spec_decode_num_accepted_tokens"),
    ],
)  # fmt: skip
def test_counters_that_cannot_be_are_refused(before, after, why):
    with pytest.raises(ValueError, match=why):
        prom.spec_delta(before, after)


def test_per_position_counters_are_differenced_position_by_position():
    before = COUNTS | {"accepted_per_pos": [3, 1]}
    after = {"drafts": 9, "draft_tokens": 18, "accepted_tokens": 11,
             "accepted_per_pos": [7, 4]}  # fmt: skip
    assert prom.spec_delta(before, after) == {
        "drafts": 4, "draft_tokens": 10, "accepted_tokens": 7,
        "accepted_per_pos": [4, 3],
    }  # fmt: skip
    assert "accepted_per_pos" not in prom.spec_delta(COUNTS, COUNTS)  # older vLLM


def test_a_torn_scrape_is_let_through_a_lie_is_not():
    """vLLM adds a step's counts to each counter in turn, so a scrape of a
    server with several API processes can catch one step half counted: a
    mismatch within TORN_SHARE of the delta's drafts (or draft tokens) passes."""
    zero = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0,
            "accepted_per_pos": [0, 0, 0]}  # fmt: skip
    torn = {"drafts": 1000, "draft_tokens": 3000, "accepted_tokens": 2000,
            "accepted_per_pos": [900, 906, 210]}  # fmt: skip
    assert prom.TORN_SHARE * 1000 == 10  # 6 drafts up, 16 tokens off: one step
    assert prom.spec_delta(zero, torn)["accepted_per_pos"] == [900, 906, 210]
    with pytest.raises(ValueError, match="position 1 accepted 911 times"):
        prom.spec_delta(zero, torn | {"accepted_per_pos": [900, 911, 200]})
    with pytest.raises(ValueError, match="sums to 2031 over positions, not the 2000"):
        prom.spec_delta(zero, torn | {"accepted_per_pos": [900, 900, 231]})
    with pytest.raises(ValueError, match=r"positions \[0\] accepted more often"):
        prom.spec_delta(zero, torn | {"accepted_per_pos": [1011, 900, 89]})


def test_server_text_in_an_error_is_cut_short_and_escaped():
    """At most CUT (40) characters of each label name, label value or sample
    value, then "...", its control characters escaped."""
    long, cut = "\x1b[2J" + "A" * 500, "\\x1b[2J" + "A" * 36 + "..."  # 40 + ...
    for text, want in [
        (GOOD_PAGE + f'{PER_POS}{{position="{long}"}} 1\n', f"positions ['{cut}']"),
        (GOOD_PAGE.replace("drafts_total 4", f'drafts_total{{m="{long}"}} -4'),
         f'drafts_total{{m="{cut}"}} is -4.0'),
        (GOOD_PAGE.replace(" 8", f" {long}"), f"has value {cut}, not a number"),
        (GOOD_PAGE.replace(" 8", f'{{{"A" * 500}="1"}} -8'),  # a label name
         "{" + "A" * 40 + '...="1"} is -8.0'),
    ]:  # fmt: skip
        with Local(page(text)) as server, pytest.raises(PolicyError) as e:
            prom.read_spec(server.url)
        msg = str(e.value)
        assert want in msg and "\x1b" not in msg and len(msg) < 300, msg


class LyingMetrics(FakeServer):
    """The fake vLLM, with a /metrics page that breaks off mid-body."""

    def __init__(self):
        super().__init__()
        handler = self.httpd.RequestHandlerClass
        plain_get = handler.do_GET

        def do_GET(h):
            if h.path != "/metrics":
                return plain_get(h)
            reply(body=b"vllm:spec", length=5000)(h, 0)

        handler.do_GET = do_GET


def test_replay_counts_a_lying_metrics_page_and_finishes(tmp_path, small_trace, capsys):
    out = tmp_path / "out"
    with LyingMetrics() as server:
        argv = ["replay", "--trace", str(small_trace), "--endpoint", server.url,
                "--limit", "2", "--timeout", "30", "--time-scale", "1000"]  # fmt: skip
        assert main([*argv, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: no spec-decode counters: GET" in err and "Traceback" not in err
    (run,) = json.loads((out / "replay.json").read_text())["runs"]
    assert run["summary"]["messages"] == 2 and run["summary"]["errors"] == 0
    assert run["spec_counters"] == [None]  # per repeat: none readable
    assert len(run["spec_errors"]) == 2  # before and after the run
    assert all("/metrics" in e and "peer closed" in e for e in run["spec_errors"])


@pytest.mark.parametrize(
    "respond, why",
    [
        (reply(302, headers=[("Location", "http://example.com/health")]), "refused"),
        (reply(body=b"ok", length=100), "peer closed connection"),
        (reply(headers=[("X-Pad", "a" * 300_000)]), "RemoteProtocolError"),
        (reply(503, body=b"loading"), "HTTP 503"),
    ],
)
def test_a_lying_health_check_is_not_healthy_and_says_why(respond, why):
    with Local(respond) as server:
        vllm = VLLMServer(["--port", str(server.port)])
        assert vllm.healthy() is False
    assert why in vllm.last_check and "/health" in vllm.last_check
    assert server.paths == ["/health"]


def test_a_stalling_health_check_ends_at_its_deadline():
    with Local(stall) as server:
        vllm = VLLMServer(["--port", str(server.port)])
        t0 = time.monotonic()
        assert vllm.healthy() is False
        assert time.monotonic() - t0 < HOLD_S / 2
    assert "deadline passed" in vllm.last_check


def test_an_honest_health_check_passes():
    with Local(reply()) as server:
        vllm = VLLMServer(["--port", str(server.port)])
        assert vllm.healthy() and vllm.last_check == "healthy"


INFO = {
    "model_type": "qwen3", "tool_call_format": "qwen_xml", "tool_parser": "qwen3_xml",
    "mtp_layers": 0, "mtp_method": None, "hybrid": False, "dtype": "bfloat16",
    "max_position_embeddings": 4096, "cpu_problems": [],
}  # fmt: skip


@pytest.mark.parametrize(
    "edit, why",
    [
        ({"dtype": None}, "field 'dtype' must be a string"),
        ({"tool_parser": "--trust-remote-code"}, "field 'tool_parser' must be one of"),
        (
            {"max_position_embeddings": 0},
            "field 'max_position_embeddings' must be >= 1",
        ),
        ({"mtp_layers": "2"}, "field 'mtp_layers' must be an integer"),
        ({"hybrid": None}, "field 'hybrid' must be true or false"),
        ({"mtp_method": "--x"}, "field 'mtp_method' must be one of"),
    ],
)
def test_a_bad_serving_json_is_named_before_vllm_sees_it(tmp_path, capsys, edit, why):
    info = {**INFO, **edit}
    (tmp_path / "serving.json").write_text(json.dumps(info))
    assert main(["serve", str(tmp_path), "--print-args"]) == 1
    err = capsys.readouterr().err
    assert f"hat serve: error: {tmp_path / 'serving.json'}: {why}" in err
    assert "Traceback" not in err


def test_a_serving_json_missing_a_field_or_not_json(tmp_path, capsys):
    path = tmp_path / "serving.json"
    path.write_text(json.dumps({k: v for k, v in INFO.items() if k != "dtype"}))
    assert main(["serve", str(tmp_path), "--print-args"]) == 1
    assert "field 'dtype' is missing" in capsys.readouterr().err
    path.write_text("{")
    assert main(["serve", str(tmp_path), "--print-args"]) == 1
    assert f"{path}:1: invalid JSON" in capsys.readouterr().err
    path.write_text(json.dumps(INFO))
    assert main(["serve", str(tmp_path), "--print-args"]) == 0
    assert "--tool-call-parser qwen3_xml" in capsys.readouterr().out
