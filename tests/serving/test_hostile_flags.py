"""Nonsense flags of `hat trace make`, `hat replay`, `hat serve` and `hat eval run`
are argparse usage errors naming the flag (exit 2), never a traceback, a hang or a
run on nonsense; the library entry points refuse the same values."""

import pytest

from hat_jax.cli.main import main
from hat_jax.endpoint import EndpointClient
from serving.replay import ReplayOptions, replay

TRACE = ["trace", "make", "--out", "unused.jsonl"]
REPLAY = ["replay", "--trace", "unused.jsonl", "--endpoint", "http://127.0.0.1:9",
          "--out", "unused"]  # fmt: skip
SERVE = ["serve", "unused-folder", "--print-args"]
EVAL = ["eval", "run", "--policy", "fixed", "--out", "unused"]

BAD = [
    (TRACE, "--rate", "nan"),
    (TRACE, "--rate", "-1"),
    (TRACE, "--rate", "0"),
    (TRACE, "--rate", "inf"),
    (TRACE, "--seed", "-1"),
    (TRACE, "--seed", "4294967296"),
    (TRACE, "--n-messages", "0"),
    (TRACE, "--rooms", "-3"),
    (TRACE, "--harness", "/etc"),
    (REPLAY, "--concurrency", ","),
    (REPLAY, "--concurrency", "a"),
    (REPLAY, "--concurrency", "0"),
    (REPLAY, "--concurrency", "1,,4"),
    (REPLAY, "--concurrency", "100000000"),
    (REPLAY, "--limit", "-1"),
    (REPLAY, "--limit", "0"),
    (REPLAY, "--timeout", "-1"),
    (REPLAY, "--timeout", "inf"),
    (REPLAY, "--timeout", "nan"),
    (REPLAY, "--time-scale", "0"),
    (REPLAY, "--time-scale", "-2"),
    (REPLAY, "--time-scale", "inf"),
    (REPLAY, "--time-scale", "nan"),
    (REPLAY, "--mtp", "-1"),
    (REPLAY, "--max-new-tokens", "0"),
    (SERVE, "--port", "0"),
    (SERVE, "--port", "70000"),
    (SERVE, "--mtp", "-1"),
    (SERVE, "--max-model-len", "0"),
    (EVAL, "--timeout", "inf"),
    (EVAL, "--timeout", "0"),
    (EVAL, "--timeout", "nan"),
    (EVAL, "--concurrency", "0"),
    (EVAL, "--concurrency", "-1"),
    (EVAL, "--seed", "-1"),
    (EVAL, "--batch-size", "0"),
    (EVAL, "--max-new-tokens", "-5"),
    (EVAL, "--temperature", "nan"),
    (EVAL, "--temperature", "-1"),
]


@pytest.mark.parametrize(
    "argv, flag, value", BAD, ids=[f"{a[0]} {f} {v}" for a, f, v in BAD]
)
def test_bad_flags_are_usage_errors(tmp_path, monkeypatch, capsys, argv, flag, value):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main([*argv, flag, value])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"argument {flag}" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing was run or written


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0, -1.0, 10**400])
def test_endpoint_client_refuses_a_timeout_that_is_no_deadline(value):
    with pytest.raises(ValueError, match="timeout_s must be a finite number > 0"):
        EndpointClient("http://127.0.0.1:9", timeout_s=value)


@pytest.mark.parametrize(
    "setting, value, why",
    [
        ("max_bytes", 0, "max_bytes must be an integer >= 1"),
        ("retries", -1, "retries must be an integer >= 0"),
        ("backoff_s", float("nan"), "backoff_s must be a finite number >= 0"),
    ],
)
def test_endpoint_client_refuses_other_settings(setting, value, why):
    with pytest.raises(ValueError, match=why):
        EndpointClient("http://127.0.0.1:9", **{setting: value})


@pytest.mark.parametrize(
    "fields, why",
    [
        ({"time_scale": 0.0}, "time_scale must be"),
        ({"time_scale": float("nan")}, "time_scale must be"),
        ({"timeout_s": float("inf")}, "timeout_s must be"),
        ({"max_new_tokens": 0}, "max_new_tokens >= 1"),
    ],
)
def test_replay_options_refuse_nonsense(fields, why):
    with pytest.raises(ValueError, match=why):
        ReplayOptions(**fields)


def test_replay_refuses_a_zero_concurrency_level(tmp_path):
    with pytest.raises(ValueError, match=r"concurrency levels must be >= 1, got \[0\]"):
        replay([], "embedded", None, tmp_path / "out", concurrency=[0])
    assert not (tmp_path / "out").exists()
