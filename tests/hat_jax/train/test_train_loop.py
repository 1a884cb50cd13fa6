"""The shared loop: NaN/inf stops with a clear error; the run's output files."""

import argparse
import json
import os

import jax.numpy as jnp
import ml_collections
import pytest

from hat_jax.checkpoints.train_state import Checkpointer
from hat_jax.cli import train_cmd
from hat_jax.train.loop import train
from hat_jax.train.metrics import NonFiniteError, read_metrics
from hat_jax.train.state import TrainState
from tests.train_helpers import CONFIG, tiny_overrides


class _Counter:
    """A resumable stand-in data iterator."""

    def __init__(self):
        self.i = 0

    def __next__(self):
        self.i += 1
        return {"inputs": jnp.zeros((2, 4), jnp.int32)}

    def position(self):
        return {"i": self.i}

    def restore(self, pos):
        self.i = pos["i"]


def _loop_cfg(steps):
    return ml_collections.ConfigDict(
        {"train": {"steps": steps, "save_every": 1, "keep": 5, "log_every": 1}}
    )


def test_nan_stops_with_step_and_metric_and_keeps_last_good(tmp_path):
    def init():
        z = jnp.zeros((), jnp.float32)
        return TrainState(
            step=jnp.zeros((), jnp.int32),
            params={"w": z},
            frozen={},
            opt_state={"m": z},
            rng=jnp.zeros((2,), jnp.uint32),
        )

    def step_fn(state, batch, rng):
        step = state.step + 1
        bad = jnp.where(step == 3, jnp.nan, 0.0)
        m = {"train/loss": 1.0 / step, "train/grad_norm": 1.0 + bad}
        return state.replace(step=step), m

    with pytest.raises(NonFiniteError, match=r"step 3: train/grad_norm is nan"):
        train(
            _loop_cfg(5),
            workdir=tmp_path,
            init_fn=init,
            data=_Counter(),
            step_fn=step_fn,
            progress=False,
        )
    with Checkpointer(tmp_path / "ckpt", save_every=1, keep=5) as ckpt:
        assert ckpt.all_steps() == [1, 2]
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2]


def test_cli_trains_3_steps_on_simulator_data(sim_jsonl, tokenizer_dir, tmp_path):
    parser = argparse.ArgumentParser()
    train_cmd.add_arguments(parser)
    overrides = tiny_overrides(sim_jsonl, tokenizer_dir, **{"train.save_every": 3})
    args = parser.parse_args(
        ["sft", f"--config={CONFIG}:steps=3,seq_len=1024,batch_size=1"]
        + ["--workdir", str(tmp_path), "--no-progress"]
        + [f"--config.{o}" for o in overrides]
    )
    assert train_cmd.run(args) == 0
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model"]["hidden_size"] == 32 and config["stage"] == "sft"
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in (
        "train/loss",
        "train/accuracy",
        "train/grad_norm",
        "train/param_norm",
        "train/update_norm",
        "train/lr",
        "train/tokens_per_s",
        "train/loss_tokens",
    ):
        assert all(key in r for r in rows), key
    assert all(r["train/loss_tokens"] > 0 for r in rows)
    assert rows[0]["train/lr"] > 0
    assert os.listdir(tmp_path / "ckpt") == ["3"]
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(tmp_path / "tb"))


def test_metrics_drop_a_torn_last_line_and_locate_other_bad_ones(tmp_path):
    from hat_jax.jsonl import DataError
    from hat_jax.train.metrics import trim_metrics

    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step": 1, "x": NaN}\n{"step": 2}\n{"step": 3, "lo')
    rows = read_metrics(path)  # a kill mid-write leaves the last line cut
    assert [r["step"] for r in rows] == [1, 2] and rows[0]["x"] != rows[0]["x"]
    trim_metrics(path, 1)
    assert path.read_bytes() == b'{"step": 1, "x": NaN}\n'
    for raw, line in [(b'{"step": 1}\n\xff\n', 2), (b'[1]\n{"step": 2}\n', 1),
                      (b'{"step": 1\n{"step": 2}\n', 1)]:  # fmt: skip
        path.write_bytes(raw)
        with pytest.raises(DataError, match=f"metrics.jsonl:{line}: "):
            read_metrics(path)
