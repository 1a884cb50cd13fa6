"""Tracking: held-out loss in SFT, the offline W&B sink, TensorBoard run names.

One SFT run with a held-out file, the W&B sink (offline) and a TensorBoard name
is compared with the same run without them: the training is bit-identical, the
held-out loss equals a direct forward + CE with the checkpoint's params, and the
W&B history holds metrics.jsonl's rows; no network connection is made.
"""

import json
import shutil
import socket
import struct
import sys
import threading

import jax
import numpy as np
import pytest
from flax import nnx

from hat_jax.checkpoints.train_state import Checkpointer
from hat_jax.cli.config_flags import load_config
from hat_jax.harness.tokens import read_jsonl, write_jsonl
from hat_jax.train import build, data
from hat_jax.train.metrics import read_metrics
from hat_jax.train.sft import run_sft
from hat_jax.train.tracking import check_tracking, tb_logdir
from tests.train_helpers import CONFIG, memo_trajectories, tiny_overrides

STEPS, EVERY = 4, 2


def wandb_records(path):
    """(kind, record) of each record of an offline run's `.wandb` file.

    The file is a LevelDB log (32 KiB blocks of checksummed chunks) after a
    7-byte ":W&B" header; each record is a `wandb_internal_pb2.Record`.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    raw = path.read_bytes()
    ident, magic, _ = struct.unpack("<4sHB", raw[:7])
    assert ident == b":W&B" and magic == 0xBEE1
    pos, block, buf = 7, 32768, b""
    while pos + 7 <= len(raw):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a chunk header: padding
            pos += left
            continue
        _, n, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        if n == 0 and kind == 0:
            pos += left
            continue
        chunk, pos = raw[pos + 7 : pos + 7 + n], pos + 7 + n
        buf = chunk if kind in (1, 2) else buf + chunk  # full/first, middle/last
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            yield rec.WhichOneof("record_type"), rec


def _history(run_dir) -> dict[int, dict]:
    (path,) = run_dir.glob("*.wandb")
    out = {}
    for kind, rec in wandb_records(path):
        if kind == "history":
            items = rec.history.item
            row = {
                i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in items
            }
            out[int(rec.history.step.num)] = row
    return out


def _config(run_dir) -> dict:
    (path,) = run_dir.glob("*.wandb")
    for kind, rec in wandb_records(path):
        if kind == "run":
            return {i.key: json.loads(i.value_json) for i in rec.run.config.update}
    raise AssertionError("no run record")


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Refuses non-loopback connections here; W&B's base URL is a local listener
    that records any connection (the wandb-core service is its own process). It
    listens on 127.0.0.2, where no other test's server lives: a client of another
    test (another xdist worker) retrying a closed 127.0.0.1 port that the kernel
    gave this listener cannot reach it."""
    attempts, hits = [], []
    real = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else None
        loopback = ("127.0.0.1", "127.0.0.2", "::1", "localhost")
        if self.family == socket.AF_UNIX or host in loopback:
            return real(self, address)
        attempts.append(address)
        raise OSError(f"no network in this test: {address}")

    monkeypatch.setattr(socket.socket, "connect", guarded)
    srv = socket.socket()
    srv.bind(("127.0.0.2", 0))
    srv.listen()
    srv.settimeout(0.1)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            hits.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    for k in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DIR", "WANDB_PROJECT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.2:{srv.getsockname()[1]}")
    for k in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(k, str(tmp_path / "wandb_home" / k.lower()))
    try:
        yield attempts, hits
    finally:
        import wandb

        wandb.teardown()  # ends the service process this test started
        stop.set()
        thread.join()
        srv.close()


def _eval_batches(cfg, tok):
    """The held-out batches, built here from data.py's parts (file order)."""
    examples, _ = data.tokenize(read_jsonl(cfg.data.eval), tok, seq_len=cfg.seq_len)
    rows = data.pack_rows(examples, range(len(examples)), cfg.seq_len, tok.pad_id)
    b = cfg.batch_size
    return [
        {k: v[i : i + b] for k, v in rows.items()}
        for i in range(0, len(rows["inputs"]), b)
    ]


def _direct_eval(graphdef, state, batches) -> tuple[float, float]:
    """Token-weighted CE and accuracy over the batches: full logits, float64."""
    model = nnx.merge(graphdef, state.params, state.frozen)
    nll = hits = count = 0.0
    for b in batches:
        logits = np.asarray(
            model.forward(
                b["inputs"], b["positions"], segment_ids=b["segment_ids"]
            ).logits,
            np.float64,
        )
        m = logits.max(-1, keepdims=True)
        logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
        picked = np.take_along_axis(logp, b["targets"][..., None], -1)[..., 0]
        w = b["loss_mask"].astype(np.float64)
        nll -= (picked * w).sum()
        hits += ((logits.argmax(-1) == b["targets"]) * w).sum()
        count += w.sum()
    return nll / count, hits / count


def test_heldout_wandb_and_tb_name_leave_training_unchanged(
    memo_tokenizer, tmp_path, no_network
):
    attempts, hits = no_network
    folder, vocab = memo_tokenizer
    trajs = memo_trajectories()
    train_path, eval_path = tmp_path / "train.jsonl", tmp_path / "eval.jsonl"
    write_jsonl(trajs[:14], train_path)
    write_jsonl(trajs[14:], eval_path)  # 6 held-out chats of 32 tokens: 2 batches
    spec = f"{CONFIG}:steps={STEPS},seq_len=32,batch_size=4"
    common = {
        "model.num_hidden_layers": 1,
        "train.save_every": EVERY,
        "train.keep": 5,
        "train.decision_every": 0,
    }
    plain_cfg = load_config(spec, tiny_overrides(train_path, folder, vocab, **common))
    tracked = {
        **common,
        "data.eval": str(eval_path),
        "train.eval_every": EVERY,
        "train.eval_batches": 0,
        "tracking.wandb": "offline",
        "tracking.name": "sweep/hsa_sft",
    }
    cfg = load_config(spec, tiny_overrides(train_path, folder, vocab, **tracked))
    plain, _, _ = run_sft(plain_cfg, tmp_path / "plain", progress=False)
    work = tmp_path / "tracked"
    state, graphdef, last = run_sft(cfg, work, progress=False)

    # the training is bit-identical with held-out eval and W&B
    for x, y in zip(jax.tree.leaves(plain), jax.tree.leaves(state), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    rows = read_metrics(work / "metrics.jsonl")
    plain_rows = read_metrics(tmp_path / "plain" / "metrics.jsonl")
    assert [r["train/loss"] for r in rows] == [r["train/loss"] for r in plain_rows]
    assert not any("eval/loss" in r for r in plain_rows)
    assert [r["step"] for r in rows if "eval/loss" in r] == [2, 4]

    # eval/loss = a direct forward + CE over the held-out file, params of that step
    tok = build.load_tokenizer(str(folder))
    batches = _eval_batches(cfg, tok)
    assert len(batches) == 2
    loss4, acc4 = _direct_eval(graphdef, state, batches)
    np.testing.assert_allclose(last["eval/loss"], loss4, rtol=1e-5)
    np.testing.assert_allclose(last["eval/accuracy"], acc4, atol=1e-6)
    assert last["eval/loss_tokens"] == sum(b["loss_mask"].sum() for b in batches)
    shutil.rmtree(work / "ckpt" / "4")  # the newest is then step 2's
    with Checkpointer(work / "ckpt", save_every=EVERY, keep=5) as ckpt:
        at2, _, step = ckpt.restore_latest(state)
    assert step == 2
    loss2, _ = _direct_eval(graphdef, at2, batches)
    np.testing.assert_allclose(rows[1]["eval/loss"], loss2, rtol=1e-5)
    assert rows[1]["eval/loss"] != last["eval/loss"]

    # TensorBoard: events under tb/<tracking.name>
    assert tb_logdir(work, cfg.tracking) == str(work / "tb" / "sweep" / "hsa_sft")
    assert any(
        p.name.startswith("events.out") for p in (work / "tb/sweep/hsa_sft").iterdir()
    )

    # W&B: one offline run in the workdir, its history = metrics.jsonl's rows
    (run_dir,) = (work / "wandb" / "wandb").glob("offline-run-*")
    history = _history(run_dir)
    assert sorted(history) == list(range(1, STEPS + 1))
    for r in rows:
        got = history[r["step"]]
        assert {k: got[k] for k in r if k != "step"} == {
            k: v for k, v in r.items() if k != "step"
        }
    config = _config(run_dir)
    assert config["seq_len"] == 32 and config["model"]["hidden_size"] == 32
    assert config["data"]["eval"] == str(eval_path)
    assert attempts == [] and hits == []  # no connection left this machine
    home = tmp_path / "wandb_home"
    written = [p for p in home.rglob("*") if p.is_file()] if home.exists() else []
    assert not any("api_key" in p.read_text(errors="replace") for p in written)
    assert not any(p.name in ("netrc", ".netrc", "settings") for p in written)


def test_tracking_checks_and_a_missing_wandb(monkeypatch):
    check_tracking(None)
    check_tracking({"wandb": "", "name": "run_a/sft-1"})
    with pytest.raises(ValueError, match=r"tracking\.wandb must be one of"):
        check_tracking({"wandb": "cloud"})
    for bad in ("../x", "/abs", "a//b", "a b"):
        with pytest.raises(ValueError, match=r"tracking\.name"):
            check_tracking({"name": bad})
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'hat_jax\[wandb\]'"):
        check_tracking({"wandb": "offline"})
