"""`hat replay --mtp-head`: the embedded model drafting with another model's head."""

import argparse
import json

import chex
import pytest
from flax import nnx

from hat_jax.checkpoints.hf import save_hf
from hat_jax.models import build_model
from serving import replay_cmd


def _args(**kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    replay_cmd.add_arguments(p)
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()]
    return p.parse_args(argv)


def test_mtp_head_drafts_with_the_donors_head(
    tiny_model, qwen_tokenizer, small_trace, tmp_path
):
    donor = build_model(tiny_model.config, seed=1)
    save_hf(tiny_model, tmp_path / "model", tokenizer=qwen_tokenizer)
    save_hf(donor, tmp_path / "donor", tokenizer=qwen_tokenizer)
    model, _ = replay_cmd._grafted(str(tmp_path / "model"), str(tmp_path / "donor"))
    chex.assert_trees_all_equal(
        nnx.state(model.mtp, nnx.Param), nnx.state(donor.mtp, nnx.Param)
    )

    out = tmp_path / "replay"
    args = _args(
        trace=small_trace,
        model=tmp_path / "model",
        mtp=1,
        mtp_head=tmp_path / "donor",
        limit=2,
        max_new_tokens=4,
        out=out,
    )
    assert replay_cmd.run(args) == 0
    (run,) = json.loads((out / "replay.json").read_text())["runs"]
    assert run["summary"]["messages"] == 2
    assert 0 <= run["summary"]["mtp_acceptance_rate"] <= 1


def test_mtp_head_needs_the_embedded_backend_and_drafts(small_trace, tmp_path, capsys):
    for which in ({"endpoint": "http://127.0.0.1:9", "mtp": 1}, {"model": tmp_path}):
        args = _args(trace=small_trace, mtp_head=tmp_path, out=tmp_path / "r", **which)
        assert replay_cmd.run(args) == 1
        assert "--mtp-head needs the embedded backend" in capsys.readouterr().err


def test_mtp_head_without_a_head_is_a_message(
    tiny_model, qwen_tokenizer, small_trace, tmp_path, capsys
):
    plain = build_model(tiny_model.config.replace(mtp_num_hidden_layers=0))
    save_hf(tiny_model, tmp_path / "model", tokenizer=qwen_tokenizer)
    save_hf(plain, tmp_path / "plain", tokenizer=qwen_tokenizer)
    args = _args(
        trace=small_trace,
        model=tmp_path / "model",
        mtp=1,
        mtp_head=tmp_path / "plain",
        out=tmp_path / "r",
    )
    assert replay_cmd.run(args) == 1
    assert "no MTP head" in capsys.readouterr().err


def test_prompt_format_and_compact_results_reach_the_replay(
    small_trace, tmp_path, monkeypatch
):
    """`--prompt-format` renders every job's harness in that format and
    `--compact-results` gives the replay compact tools, as a sweep's replay
    step does; without them, each harness's own format and full results."""
    seen = []

    def fake_replay(jobs, kind, target, out, *, concurrency, opts, tool_backend):
        seen.append(({j.harness.layout.format for j in jobs}, tool_backend.compact))

    monkeypatch.setattr(replay_cmd, "replay", fake_replay)
    args = _args(trace=small_trace, model=tmp_path, out=tmp_path / "r")
    assert replay_cmd.run(args) == 0
    args = _args(trace=small_trace, model=tmp_path, out=tmp_path / "r",
                 prompt_format="compact")  # fmt: skip
    args.compact_results = True
    assert replay_cmd.run(args) == 0
    (own, full), (fmts, compact) = seen
    assert fmts == {"compact"} and compact
    assert own and "compact" not in own and not full


def test_repeats_reach_the_replay_and_zero_is_refused(
    small_trace, tmp_path, monkeypatch
):
    seen = []

    def fake_replay(jobs, kind, target, out, *, concurrency, opts, tool_backend):
        seen.append(opts.repeats)

    monkeypatch.setattr(replay_cmd, "replay", fake_replay)
    for extra in ({}, {"repeats": 5}):
        args = _args(trace=small_trace, model=tmp_path, out=tmp_path / "r", **extra)
        assert replay_cmd.run(args) == 0
    assert seen == [1, 5]
    with pytest.raises(SystemExit):
        _args(trace=small_trace, model=tmp_path, out=tmp_path / "r", repeats=0)
