"""LoRA runs (adapters only, resume, merged export); stage chaining via HF folders."""

import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from hat_jax.checkpoints.hf import load_hf, save_hf
from hat_jax.cli.config_flags import load_config
from hat_jax.models import LoRAParam, has_lora, merge_lora
from hat_jax.train import build
from hat_jax.train.opd import run_opd
from hat_jax.train.sft import run_sft
from tests.train_helpers import CONFIG, memo_trajectories, tiny_overrides

TOKENS = jnp.asarray(np.random.default_rng(0).integers(4, 40, size=(2, 11)))


def _cfg(memo_jsonl, memo_tokenizer, arg="steps=3,seq_len=64,batch_size=2", **kw):
    folder, vocab = memo_tokenizer
    kw.setdefault("model.num_hidden_layers", 1)
    kw.setdefault("train.save_every", 1000)
    return load_config(
        f"{CONFIG}:{arg}", tiny_overrides(memo_jsonl, folder, vocab, **kw)
    )


def _flat(state):
    return {p: np.asarray(v[...]) for p, v in nnx.to_flat_state(state)}


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for path in a:
        assert a[path].tobytes() == b[path].tobytes(), path


def _model(graphdef, state):
    return nnx.merge(graphdef, state.params, state.frozen)


@pytest.fixture(scope="module")
def lora_run(memo_jsonl, memo_tokenizer, tmp_path_factory):
    """A 3-step LoRA SFT run: (cfg, workdir, base model, final state, graphdef)."""
    # total_steps 4: the schedule of a 4-step run, so resuming to 4 is comparable.
    lora = {"lora.rank": 4, "lora.alpha": 8.0, "optim.total_steps": 4}
    cfg = _cfg(memo_jsonl, memo_tokenizer, **lora)
    base, _ = build.make_model(cfg)  # the same seeded base the run starts from
    workdir = tmp_path_factory.mktemp("lora_sft")
    state, graphdef, _ = run_sft(cfg, workdir, progress=False)
    return cfg, workdir, base, state, graphdef


def test_lora_run_trains_only_the_adapters(lora_run):
    cfg, _, base, state, _ = lora_run
    assert int(state.step) == 3
    # The base weights are carried frozen, bit for bit.
    _assert_same(_flat(state.frozen), _flat(nnx.state(base, nnx.Param)))
    params = _flat(state.params)
    assert params and all(p[-1] in ("lora_a", "lora_b") for p in params)
    init = _flat(nnx.state(build.add_adapters(cfg, base), LoRAParam))
    assert init.keys() == params.keys()
    for path, x in params.items():
        assert not np.array_equal(x, init[path]), f"{path} did not train"
    # Optimiser state exists for the adapters only: Adam's moments mirror them.
    adam = [
        s
        for s in jax.tree.leaves(
            state.opt_state, is_leaf=lambda x: isinstance(x, optax.ScaleByAdamState)
        )
        if isinstance(s, optax.ScaleByAdamState)
    ]
    assert len(adam) == 1
    for moment in (adam[0].mu, adam[0].nu):
        assert jax.tree.structure(moment) == jax.tree.structure(state.params)
    n_adapter = sum(x.size for x in params.values())
    n_opt = sum(np.size(x) for x in jax.tree.leaves(state.opt_state))
    assert 2 * n_adapter <= n_opt < 2 * n_adapter + 8  # + a few step counters


def test_lora_merged_export_equals_the_adapted_model(lora_run, tmp_path):
    _, _, _, state, graphdef = lora_run
    adapted = _model(graphdef, state)
    assert has_lora(adapted)
    save_hf(adapted, tmp_path)
    exported, _ = load_hf(tmp_path)
    assert not has_lora(exported)
    want, got = np.asarray(adapted(TOKENS)), np.asarray(exported(TOKENS))
    assert np.abs(want - got).max() <= 1e-5
    base = np.asarray(merge_lora(adapted).layers[0].self_attn.q_proj.kernel[...])
    frozen = np.asarray(adapted.layers[0].self_attn.q_proj.kernel[...])
    assert np.abs(base - frozen).max() > 0  # the adapters did change the export


def test_hat_convert_exports_a_lora_workdir(lora_run, tmp_path):
    from hat_jax.cli.main import main

    _, workdir, _, state, graphdef = lora_run
    assert main(["convert", str(workdir), str(tmp_path / "hf")]) == 0
    exported, _ = load_hf(tmp_path / "hf")
    assert (tmp_path / "hf" / "tokenizer.json").exists()
    want = np.asarray(_model(graphdef, state)(TOKENS))
    assert np.abs(want - np.asarray(exported(TOKENS))).max() <= 1e-5


def test_lora_run_resumes(lora_run, memo_jsonl, memo_tokenizer, tmp_path):
    cfg, workdir, base, state3, graphdef = lora_run
    longer = _cfg(
        memo_jsonl,
        memo_tokenizer,
        "steps=4,seq_len=64,batch_size=2",
        **{"lora.rank": 4, "lora.alpha": 8.0, "optim.total_steps": 4},
    )
    resumed, _, _ = run_sft(longer, tmp_path / "fresh", progress=False)
    # Resuming the 3-step folder gives the same 4th step as one 4-step run.
    shutil.copytree(workdir, tmp_path / "resume")
    again, _, _ = run_sft(longer, tmp_path / "resume", progress=False)
    assert int(again.step) == 4
    rows = (tmp_path / "resume" / "metrics.jsonl").read_text().split("\n")
    rows = [json.loads(r) for r in rows if r]
    # the longer run is recorded where it resumed (hat_jax.train.workdir)
    change = {"step": 3, "config_change": {"train.steps": {"old": 3, "new": 4}}}
    assert rows.pop(3) == change
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for a, b in zip(jax.tree.leaves(again.params), jax.tree.leaves(resumed.params)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    _assert_same(_flat(again.frozen), _flat(nnx.state(base, nnx.Param)))


def test_init_from_a_lora_workdir_gives_the_merged_model(
    memo_jsonl, memo_tokenizer, tmp_path
):
    # With an MTP head and mtp_weight > 0 the head is trained beside the adapters.
    kw = {"lora.rank": 4, "lora.alpha": 8.0, "model.mtp_num_hidden_layers": 1}
    cfg = _cfg(memo_jsonl, memo_tokenizer, "steps=2,seq_len=64,batch_size=2", **kw)
    state, graphdef, _ = run_sft(cfg, tmp_path / "stage1", progress=False)
    paths = _flat(state.params)
    assert any(p[0] == "mtp" for p in paths)
    assert not any(p[0] == "mtp" for p in _flat(state.frozen))
    merged = merge_lora(_model(graphdef, state))
    nxt = _cfg(memo_jsonl, memo_tokenizer, init_from=tmp_path / "stage1")
    model, mcfg = build.make_model(nxt)
    assert not has_lora(model) and mcfg.mtp_num_hidden_layers == 1
    _assert_same(
        _flat(nnx.state(model, nnx.Param)), _flat(nnx.state(merged, nnx.Param))
    )
    adapted = np.asarray(_model(graphdef, state)(TOKENS))
    assert np.abs(np.asarray(model(TOKENS)) - adapted).max() <= 1e-5


def test_trainable_filter_and_bad_lora_config(memo_jsonl, memo_tokenizer):
    kw = {"lora.rank": 4, "model.mtp_num_hidden_layers": 1}
    cfg = _cfg(memo_jsonl, memo_tokenizer, **kw)
    model = build.add_adapters(cfg, build.make_model(cfg)[0])
    trained = _flat(nnx.state(model, build.trainable_filter(cfg, model)))
    assert {p[0] for p in trained if p[-1] not in ("lora_a", "lora_b")} == {"mtp"}
    cfg.mtp_weight = 0.0  # no MTP loss: the head stays frozen
    assert build.trainable_filter(cfg, model) is LoRAParam
    cfg.lora.rank = 0  # full fine-tuning, no MTP loss: all but the head train
    trained = _flat(nnx.state(model, build.trainable_filter(cfg, model)))
    assert trained and not any(p[0] == "mtp" for p in trained)
    cfg.mtp_weight = 0.3
    assert build.trainable_filter(cfg, model) is nnx.Param
    assert build.add_adapters(cfg, model) is model
    cfg.lora.rank, cfg.lora.dropout = 4, 0.1
    with pytest.raises(ValueError, match="dropout"):
        build.lora_config(cfg)
    cfg.lora.rank, cfg.lora.dropout = -1, 0.0
    with pytest.raises(ValueError, match="rank"):
        build.lora_config(cfg)


@pytest.fixture(scope="module")
def exported(memo_jsonl, memo_tokenizer, tmp_path_factory):
    """A 2-step full SFT run exported to a HF folder (no tokenizer files)."""
    cfg = _cfg(memo_jsonl, memo_tokenizer, "steps=2,seq_len=64,batch_size=2")
    root = tmp_path_factory.mktemp("chain")
    state, graphdef, _ = run_sft(cfg, root / "sft", progress=False)
    save_hf(_model(graphdef, state), root / "hf")
    return root / "hf", _flat(state.params)


def test_sft_from_an_exported_hf_folder(exported, memo_jsonl, memo_tokenizer):
    folder, params = exported
    nxt = _cfg(memo_jsonl, memo_tokenizer, init_from=folder)
    model, _ = build.make_model(nxt)
    _assert_same(_flat(nnx.state(model, nnx.Param)), params)


def test_opd_with_lora_from_an_exported_hf_folder(exported, memo_tokenizer, tmp_path):
    folder, params = exported
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        "".join(
            json.dumps({"prompt": t.user_message}) + "\n" for t in memo_trajectories(4)
        )
    )
    over = {
        "data.train": prompts,
        "data.max_prompt_tokens": 48,
        "tokenizer": memo_tokenizer[0],
        "init_from": folder,
        "lora.rank": 4,
        "train.save_every": 1000,
    }
    cfg = load_config(
        "experiments/configs/opd_tiny.py:steps=2,max_new_tokens=4,batch_size=2",
        [f"{k}={v}" for k, v in over.items()],
    )
    model, _ = build.make_model(cfg)
    _assert_same(_flat(nnx.state(model, nnx.Param)), params)
    state, _, last = run_opd(cfg, tmp_path / "opd", progress=False)
    assert int(state.step) == 2 and np.isfinite(last["train/loss"])
    _assert_same(_flat(state.frozen), params)  # the student's base stays put
    assert all(p[-1] in ("lora_a", "lora_b") for p in _flat(state.params))


def test_init_from_a_folder_that_is_neither(memo_jsonl, memo_tokenizer, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    cfg = _cfg(memo_jsonl, memo_tokenizer, init_from=tmp_path)
    with pytest.raises(FileNotFoundError, match="neither a run workdir"):
        build.make_model(cfg)
