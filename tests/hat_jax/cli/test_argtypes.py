"""Flag types refuse nonsense with argparse's usage error, naming the flag."""

import argparse

import pytest

from hat_jax.cli.argtypes import count, finite, int_list, nonblank, seed


def _parser():
    p = argparse.ArgumentParser(prog="t", exit_on_error=False)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--timeout", type=finite(low=0, open_low=True), default=1.0)
    p.add_argument("--scale", type=finite(low=0, high=10))
    p.add_argument("--limit", type=count(low=1))
    p.add_argument("--concurrency", type=int_list(low=1), default=[1])
    p.add_argument("--ops", type=nonblank)
    return p


@pytest.mark.parametrize(
    "argv",
    [
        ["--seed", "-1"],
        ["--seed", str(2**32)],
        ["--seed", "1e3"],
        ["--seed", "٣"],  # a non-ASCII digit int() would take
        ["--timeout", "inf"],
        ["--timeout", "nan"],
        ["--timeout", "0"],
        ["--timeout", "-1"],
        ["--scale", "11"],
        ["--limit", "0"],
        ["--limit", "-1"],
        ["--concurrency", ","],
        ["--concurrency", "1,,4"],
        ["--concurrency", "a"],
        ["--concurrency", "0"],
        ["--ops", "  "],
    ],
)
def test_nonsense_is_a_usage_error_naming_the_flag(argv):
    with pytest.raises(argparse.ArgumentError) as e:
        _parser().parse_args(argv)
    assert argv[0] in str(e.value)


def test_good_values_parse():
    a = _parser().parse_args(
        ["--seed", "4294967295", "--timeout", "0.5", "--scale", "10", "--limit", "3"]
        + ["--concurrency", "1, 4,8", "--ops", "rename_tools"]
    )
    assert (a.seed, a.timeout, a.scale, a.limit) == (2**32 - 1, 0.5, 10.0, 3)
    assert a.concurrency == [1, 4, 8] and a.ops == "rename_tools"


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["chat", "--temperature", "nan"], "--temperature"),
        (["chat", "--top-p", "2"], "--top-p"),
        (["chat", "--top-k", "-5"], "--top-k"),
        (["chat", "--max-new-tokens", "-1"], "--max-new-tokens"),
        (["chat", "--seed", "-1"], "--seed"),
        (["plan", "--config=x.py", "--devices", "0"], "--devices"),
        (["plan", "--config=x.py", "--mesh", "fsdp="], "--mesh"),
        (["plan", "--config=x.py", "--mesh", "fsdp=2,fsdp=4"], "--mesh"),
        (["plan", "--config=x.py", "--device-memory", "nanGB"], "--device-memory"),
        (["plan", "--config=x.py", "--hardware", "tpu9"], "--hardware"),
        (["plan", "--config=x.py", "--kv-len", "1e30"], "--kv-len"),
        (["sweep", "--config=x.py", "--root", "r", "--workers", "0"], "--workers"),
        (["sweep", "--config=x.py", "--root", "r", "--only", ","], "--only"),
    ],
)
def test_commands_refuse_nonsense_flags_before_any_work(argv, flag, capsys):
    from hat_jax.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"argument {flag}" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "kw",
    [
        {"temperature": float("nan")},
        {"temperature": -1.0},
        {"top_p": 0.0},
        {"top_p": 1.5},
        {"top_k": -1},
        {"max_new_tokens": 0},
        {"max_new_tokens": True},
        {"seed": -1},
    ],
)
def test_sampling_params_refuse_what_the_sampler_cannot_do(kw):
    from hat_jax.sampling import SamplingParams

    with pytest.raises(ValueError, match=next(iter(kw))):
        SamplingParams(**kw)
    SamplingParams(temperature=0.7, top_p=0.9, top_k=50, seed=2**40)
