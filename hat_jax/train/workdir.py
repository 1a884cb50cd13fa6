"""Before a stage trains: its config checked, its workdir's record kept.

`check_config(cfg)` refuses sizes no run can use (a step count, batch size or
sequence length below 1 or past a sane cap, a sequence longer than the model's
positions, ...) before any work, naming each key and value.

`open_run(workdir, record)` guards a resume. A workdir that holds a checkpoint
belongs to the config in its `config.json`: a rerun whose record differs in a
key that shapes the trained state (model, data, optimiser, seed, ...) is
refused with the keys named, unless `allow_config_change` (then the change is
printed and recorded in `metrics.jsonl`) or `fresh` (the earlier run's outputs
are deleted first). `config.json` is written only by `RunRecord.commit`, which
the stage calls after its restore succeeded, so a failed resume never loses
the record of what the checkpoint holds (`hat convert` reads it).

    run = open_run(workdir, record, fresh=..., allow_config_change=...)
    ... build state; restore_latest(ckpt, state, workdir); trim metrics.jsonl ...
    run.commit(start)                      # config.json (+ the change row)

`restore_latest` names a checkpoint that does not fit the new state (an
allowed change of the model's shape) as such instead of orbax's shape error.

`commit` adds a ``"provenance"`` object (`hat_jax.provenance.collect`: git
SHA and dirty flag, command line, package versions, devices) to the record it
writes; it describes the run, so `config_diff` (and the resume check) ignore
it, and it never reaches a checkpoint.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ml_collections

from hat_jax import provenance
from hat_jax.jsonl import DataError, json_type, read_json, write_text_atomic

__all__ = [
    "QUIET_KEYS",
    "RECORDED_KEYS",
    "ConfigChangeError",
    "RunConfigError",
    "RunRecord",
    "check_config",
    "config_diff",
    "open_run",
    "read_run_config",
    "restore_latest",
]

# The outputs a stage writes into its workdir; `fresh` deletes these only.
OUTPUTS = (
    "ckpt",
    "tb",
    "eval",
    "wandb",
    "metrics.jsonl",
    "rollouts.jsonl",
    "config.json",
)
ABSENT = "<absent>"  # how a key missing on one side shows in a diff
PROVENANCE = "provenance"  # config.json's description of the run, never compared

# How often a run logs, saves or evaluates: a resumed run under a new value
# ends in the same state, so these may change silently.
QUIET_KEYS = frozenset(
    {
        "train.log_every",
        "train.save_every",
        "train.keep",
        "train.decision_every",
        "train.decision_rows",
        "eval.every",
        "eval.at_start",
        # held-out evaluation and trackers: logged, never trained on
        "data.eval",
        "train.eval_every",
        "train.eval_batches",
        "tracking.wandb",
        "tracking.project",
        "tracking.name",
        "tracking.rollout_samples",
    }
)
# Where a run stops: continuing a run further (the schedule, `optim.*`,
# unchanged) gives the state an uninterrupted run of the new length has, so the
# change is allowed, but printed and recorded in metrics.jsonl, never silent.
RECORDED_KEYS = frozenset({"train.steps"})

# key -> the least value it may take; checked wherever a config has the key.
MINIMUM = {
    "train.steps": 1,
    "train.save_every": 1,
    "train.keep": 1,
    "train.log_every": 1,
    "train.decision_every": 0,
    "train.decision_rows": 1,
    "batch_size": 1,
    "seq_len": 1,
    "grad_accum": 1,
    "loss_chunk": 1,
    "top_k": 0,
    "optim.total_steps": 1,
    "optim.cycles": 1,
    "optim.warmup_steps": 0,
    "lora.rank": 0,
    "data.max_prompt_tokens": 1,
    "sampling.max_new_tokens": 1,
    "sampling.top_k": 0,
    "rollout.tasks": 1,
    "rollout.group": 1,
    "rollout.n_cases": 1,
    "rollout.max_new_tokens": 1,
    "rollout.max_rows": 0,
    "rl.max_len": 1,
    "rl.micro_batch": 0,
    "rl.inner_steps": 1,
    "eval.n_cases": 0,
    "eval.every": 0,
    "eval.max_new_tokens": 1,
}
COUNT_MAX = 2**31 - 1  # steps and counts: optax and the data order count in int32
# key -> the largest value it may take (else COUNT_MAX): the sizes that allocate.
MAXIMUM = {
    "batch_size": 1 << 16,
    "seq_len": 1 << 20,
    "grad_accum": 1 << 16,
    "loss_chunk": 1 << 20,
    "lora.rank": 1 << 16,
    "data.max_prompt_tokens": 1 << 20,
    "sampling.max_new_tokens": 1 << 20,
    "rollout.tasks": 1 << 16,
    "rollout.group": 1 << 16,
    "rollout.n_cases": 1 << 20,
    "rollout.max_new_tokens": 1 << 20,
    "rl.max_len": 1 << 20,
    "rl.micro_batch": 1 << 16,
    "eval.n_cases": 1 << 20,
    "eval.max_new_tokens": 1 << 20,
    "train.decision_rows": 1 << 20,
}
TOKENS_PER_STEP = 1 << 27  # batch_size * seq_len: one step's batch on the host
# Sequence lengths a model from scratch must hold (its max_position_embeddings).
LENGTH_KEYS = ("seq_len", "rl.max_len")
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
# A model built from scratch (init_from "") needs these >= 1.
MODEL_MINIMUM = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
)
NON_NEGATIVE_FLOATS = (
    "optim.lr",
    "optim.weight_decay",
    "optim.clip_norm",
    "optim.end_lr_frac",
    "optim.cycle_decay",
)


# Adam's moment decays live in [0, 1), its epsilon in (0, 1): optax accepts any
# value and trains on nonsense.
UNIT_FLOATS = {"optim.b1": "[0, 1)", "optim.b2": "[0, 1)", "optim.eps": "(0, 1)"}
UNIT_FLOATS["loss_share"] = "[0, 1]"  # of a micro-batch's positions (SFT)


class RunConfigError(ValueError):
    """A stage config (or its rerun in a workdir) that cannot be used."""


class ConfigChangeError(RunConfigError):
    """A workdir's checkpoint belongs to another config."""


def _lookup(cfg: Mapping, key: str) -> tuple[bool, Any]:
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def check_config(cfg: ml_collections.ConfigDict) -> None:
    """Refuses sizes outside their bounds (`MINIMUM`, `MAXIMUM`) before any work.

    Only keys the config has are checked, so one table serves every stage. A
    model built from scratch (`init_from` "") is checked as a `config.json` is
    (`hat_jax.models.hf_check`), and sequence lengths against its
    `max_position_embeddings`.

    Raises:
      RunConfigError: naming every bad key with its value and its bound.
    """
    d = cfg.to_dict()
    bounds = dict(MINIMUM)
    scratch = not str(d.get("init_from") or "")
    if scratch:
        bounds |= {f"model.{k}": 1 for k in MODEL_MINIMUM}
    bad = []
    for key, least in bounds.items():
        found, v = _lookup(d, key)
        if not found or v is None:
            continue
        most = MAXIMUM.get(key, COUNT_MAX)
        if isinstance(v, bool) or not isinstance(v, int):
            bad.append(f"{key}={_short(v)} (must be an integer >= {least})")
        elif v < least:
            bad.append(f"{key}={_short(v)} (must be >= {least})")
        elif v > most:
            bad.append(f"{key}={_short(v)} (must be <= {most})")
    for key in NON_NEGATIVE_FLOATS:
        found, v = _lookup(d, key)
        if found and v is not None:
            if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                bad.append(f"{key}={_short(v)} (must be a finite number >= 0)")
    for key, interval in UNIT_FLOATS.items():
        found, v = _lookup(d, key)
        if not found or v is None:
            continue
        ok = isinstance(v, int | float) and not isinstance(v, bool)
        ok = ok and 0 <= v <= 1 and (v < 1 or interval.endswith("]"))
        ok = ok and (v > 0 or interval.startswith("["))
        if not ok:
            bad.append(f"{key}={_short(v)} (must be in {interval})")
    dtype = d.get("compute_dtype")
    if dtype is not None and dtype not in COMPUTE_DTYPES:
        bad.append(f"compute_dtype={dtype!r} (must be one of {list(COMPUTE_DTYPES)})")
    if not bad:
        bad += _combined_problems(d, scratch)
    if bad:
        raise RunConfigError("config error: " + "; ".join(bad))
    _note_short_schedule(d)


def _note_short_schedule(d: Mapping) -> None:
    """Says so when the learning-rate schedule ends before the run does."""
    found_t, total = _lookup(d, "optim.total_steps")
    found_s, steps = _lookup(d, "train.steps")
    if not (found_t and found_s) or not all(isinstance(v, int) for v in (total, steps)):
        return
    _, inner = _lookup(d, "rl.inner_steps")
    updates = steps * (inner if isinstance(inner, int) and inner > 0 else 1)
    if total < updates:
        print(
            f"note: optim.total_steps={total} ends the schedule before the run's "
            f"{updates} updates: the last {updates - total} run at "
            "optim.lr x optim.end_lr_frac",
            file=sys.stderr,
        )


def _combined_problems(d: dict[str, Any], scratch: bool) -> list[str]:
    """What the single bounds pass: divisibility, tokens per step, the model."""
    bad = []
    found_b, b = _lookup(d, "batch_size")
    found_a, a = _lookup(d, "grad_accum")
    if found_a and found_b and b % a:
        bad.append(f"batch_size={b} is not divisible by grad_accum={a}")
    found_s, t = _lookup(d, "seq_len")
    if found_b and found_s and b * t > TOKENS_PER_STEP:
        bad.append(
            f"batch_size * seq_len = {b} * {t} tokens per step (must be <= "
            f"{TOKENS_PER_STEP})"
        )
    model = d.get("model")
    if not scratch or not isinstance(model, Mapping):
        return bad
    from hat_jax.models.config import config_from_fields

    try:
        config_from_fields(dict(model))
    except ValueError as e:
        return [*bad, f"model: {e}"]
    most = model.get("max_position_embeddings", 4096)
    for key in LENGTH_KEYS:
        found, v = _lookup(d, key)
        if found and v is not None and v > most:
            bad.append(f"{key}={v} is longer than model.max_position_embeddings={most}")
    return bad


def read_run_config(path: str | Path) -> dict[str, Any]:
    """A workdir's `config.json`: a JSON object read from a regular file.

    Raises:
      RunConfigError: `path:line: ...` for a file that is not JSON, `path: ...`
        for one that is not a regular file or holds no object.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise RunConfigError(f"{path}: not a regular file (a fifo, device or folder)")
    try:
        value = read_json(path)
    except DataError as e:
        raise RunConfigError(str(e)) from None
    if not isinstance(value, dict):
        raise RunConfigError(f"{path}: expected a JSON object, got {json_type(value)}")
    return value


def _flatten(d: Mapping, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping) and v:
            out |= _flatten(v, f"{prefix}{k}.")
        else:  # an empty group is a leaf: it differs from a filled one
            out[f"{prefix}{k}"] = v
    return out


def _plain(record: Mapping) -> dict:
    # as config.json holds it: tuples as lists, odd values as strings
    return json.loads(json.dumps(record, default=str))


def config_diff(old: Mapping, new: Mapping) -> dict[str, dict[str, Any]]:
    """Dotted key -> {"old", "new"} for each leaf that differs (`ABSENT` if none).

    The top-level `PROVENANCE` object (where and how a run ran) is not compared.
    """
    old, new = ({k: v for k, v in d.items() if k != PROVENANCE} for d in (old, new))
    a, b = _flatten(_plain(old)), _flatten(_plain(new))
    return {
        k: {"old": a.get(k, ABSENT), "new": b.get(k, ABSENT)}
        for k in sorted(a.keys() | b.keys())
        if a.get(k, ABSENT) != b.get(k, ABSENT)
    }


def saved_steps(workdir: str | Path) -> list[int]:
    """The finished checkpoint steps in `workdir/ckpt` (orbax's `<step>` folders;
    an unfinished save's temporary folder is not one)."""
    ckpt = Path(workdir) / "ckpt"
    if not ckpt.is_dir():
        return []
    return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit())


def _show(changes: Mapping[str, Mapping]) -> str:
    return ", ".join(f"{k}: {c['old']!r} -> {c['new']!r}" for k, c in changes.items())


class RunRecord:
    """What `open_run` decided; `commit` writes it once the restore succeeded.

    Attributes:
      workdir: the run folder.
      record: the new `config.json` contents.
      changes: the differing keys that get recorded (empty: none).
    """

    def __init__(self, workdir: Path, record: Mapping, changes: Mapping):
        self.workdir, self.record, self.changes = workdir, _plain(record), changes

    def commit(self, start: int) -> None:
        """Writes `config.json`; after a resume (`start` > 0) with changes, appends
        `{"step": start, "config_change": {key: {"old", "new"}}}` to metrics.jsonl
        and prints them (call after metrics.jsonl was trimmed to `start`)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        record = {**self.record, PROVENANCE: provenance.collect()}
        text = json.dumps(record, indent=2)
        write_text_atomic(self.workdir / "config.json", text)  # the record stays whole
        if start > 0 and self.changes:
            row = {"step": int(start), "config_change": dict(self.changes)}
            with open(self.workdir / "metrics.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            print(
                f"note: resuming {self.workdir} at step {start} with a changed "
                f"config ({_show(self.changes)}); recorded in metrics.jsonl",
                file=sys.stderr,
            )


def open_run(
    workdir: str | Path,
    record: Mapping,
    *,
    fresh: bool = False,
    allow_config_change: bool = False,
) -> RunRecord:
    """Decides whether a stage may (re)start in `workdir` with `record`.

    The rule, for a workdir that holds a checkpoint and its `config.json`:
    `QUIET_KEYS` (how often it logs, saves, evaluates) may differ silently;
    `RECORDED_KEYS` (`train.steps`, where it stops) may differ, and the change
    is recorded; any other difference (model, data, optimiser and its
    schedule, seed, tokenizer, init_from, ... and keys added or removed) is
    refused. A workdir without a checkpoint starts over whatever it holds.

    Args:
      workdir: the run folder; nothing in it is written here unless `fresh`.
      record: the stage's new config.json contents (config, model, data stats).
      fresh: delete the earlier run's outputs (`OUTPUTS`: ckpt/, tb/, eval/,
        wandb/, metrics.jsonl, rollouts.jsonl, config.json) and start over;
        other files stay, and an output that is a symlink loses the link only,
        never what it points to.
      allow_config_change: resume despite refused differences (recorded).

    Returns:
      The RunRecord to `commit` after the restore.

    Raises:
      ConfigChangeError: a refused difference, naming each key's old and new value.
      RunConfigError: a `config.json` beside a checkpoint that cannot be read.
    """
    workdir = Path(workdir)
    if fresh:
        for name in OUTPUTS:
            p = workdir / name
            if p.is_symlink():  # the link goes; what it points to is not ours
                p.unlink()
            elif p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    links = [name for name in OUTPUTS if (workdir / name).is_symlink()]
    if links:  # a run writes its outputs inside its workdir, never through a link
        raise RunConfigError(
            f"{workdir}: {', '.join(links)} is a symbolic link; a run writes only "
            "inside its workdir (--fresh removes the link, not its target)"
        )
    steps = saved_steps(workdir)
    path = workdir / "config.json"
    if not steps:
        return RunRecord(workdir, record, {})
    if not path.exists():
        print(
            f"note: {workdir} holds a checkpoint but no config.json; resuming "
            "without comparing configs",
            file=sys.stderr,
        )
        return RunRecord(workdir, record, {})
    try:
        old = read_run_config(path)
    except RunConfigError as e:
        raise RunConfigError(
            f"{e}; {workdir} holds a checkpoint (step {steps[-1]}) whose record "
            "cannot be read. Use --fresh to delete its checkpoints and metrics and "
            "start over, or another --workdir."
        ) from None
    diff = config_diff(old, record)
    refused = {k: c for k, c in diff.items() if k not in QUIET_KEYS | RECORDED_KEYS}
    if refused and not allow_config_change:
        hint = ""
        if "optim.total_steps" in refused and "train.steps" in diff:
            hint = (  # the schedule follows train.steps in our configs
                " To run longer on the old schedule, also pass "
                f"--config.optim.total_steps={refused['optim.total_steps']['old']}."
            )
        raise ConfigChangeError(
            f"{workdir} holds a checkpoint (step {steps[-1]}) of another config: "
            f"{_show(refused)}. Resuming would mix two configs in one run. Use "
            "another --workdir, --fresh to delete its checkpoints and metrics and "
            "start over, or --allow-config-change to resume anyway (the change is "
            f"recorded in metrics.jsonl).{hint}"
        )
    kept = {k: c for k, c in diff.items() if k not in QUIET_KEYS}
    return RunRecord(workdir, record, kept)


def restore_latest(ckpt, template, workdir: str | Path):
    """`ckpt.restore_latest(template)`, a checkpoint of another shape named so.

    Only reached with `allow_config_change` (else `open_run` refused first);
    `config.json` is still the checkpoint's then, as no commit ran.

    Raises:
      ConfigChangeError: the checkpoint does not fit the state `template`.
    """
    try:
        return ckpt.restore_latest(template)
    except ValueError as e:
        raise ConfigChangeError(
            f"{workdir}: its checkpoint does not fit the state this config builds "
            f"({e}); config.json is unchanged. Use --fresh to start over."
        ) from e
