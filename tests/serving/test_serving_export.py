"""`hat export`: the folder loads back in hat_jax and transformers; serve flags."""

import json

import numpy as np
import pytest

from hat_jax.checkpoints.hf import load_hf
from hat_jax.text.chat import render_chat
from serving.export import export
from serving.launch import vllm_args

MESSAGES = [
    {"role": "system", "content": "You are the host."},
    {"role": "user", "content": "is #3 in stock?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"name": "check_stock", "arguments": {"link_id": 3}}],
    },
    {"role": "tool", "name": "check_stock", "content": '{"stock": 5}'},
    {"role": "assistant", "content": "Yes, 5 left!"},
    {"role": "user", "content": "thanks"},
]
TOOLS = [{"type": "function", "function": {"name": "check_stock", "parameters": {}}}]


@pytest.fixture(scope="module")
def exported(tiny_model, qwen_tokenizer, tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    info = export((tiny_model, qwen_tokenizer), out, fmt="qwen_xml")
    return out, info


def test_export_loads_back_with_mtp(exported, tiny_model):
    out, info = exported
    assert info["tool_parser"] == "qwen3_xml" and info["mtp_layers"] == 1
    assert any("head_dim 8" in p for p in info["cpu_problems"])
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert any(k.startswith("mtp.") for k in index["weight_map"])
    model, cfg = load_hf(out)
    assert cfg.mtp_num_hidden_layers == 1
    ids = np.arange(1, 9, dtype=np.int32)[None]
    pos = np.arange(8, dtype=np.int32)[None]
    want = tiny_model.logits(tiny_model.hidden_states(ids, pos)[0])
    got = model.logits(model.hidden_states(ids, pos)[0])
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5)


def test_transformers_reads_the_folder_and_template(exported):
    transformers = pytest.importorskip("transformers")
    out, _ = exported
    tok = transformers.AutoTokenizer.from_pretrained(out)
    for tools in (None, TOOLS):
        got = tok.apply_chat_template(
            MESSAGES, tools=tools, tokenize=False, add_generation_prompt=True
        )
        assert got == render_chat(MESSAGES, tools=tools, fmt="qwen_xml")
    pytest.importorskip("torch")
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    assert model.config.model_type == "qwen3"


def test_vllm_args(exported, tmp_path):
    out, info = exported
    args = vllm_args(out, port=8123, max_model_len=512)
    assert args[args.index("--tool-call-parser") + 1] == "qwen3_xml"
    assert "--enforce-eager" in args and args[args.index("--host") + 1] == "127.0.0.1"
    assert "--speculative-config" not in args
    with pytest.raises(ValueError, match="no MTP head vLLM can use"):
        vllm_args(out, mtp=2)  # vLLM has no MTP for dense qwen3
    hybrid = dict(info, model_type="qwen3_5_moe", mtp_method="mtp", hybrid=True)
    (tmp_path / "serving.json").write_text(json.dumps(hybrid))
    args = vllm_args(tmp_path, mtp=2)
    spec = json.loads(args[args.index("--speculative-config") + 1])
    assert spec == {"method": "mtp", "num_speculative_tokens": 2}
    assert "--no-enable-prefix-caching" in args


def test_vllm_args_gpu_graphs_and_extra_flags(exported):
    out, _ = exported
    assert "--enforce-eager" not in vllm_args(out, device="gpu")  # CUDA graphs
    extra = ["--max-num-seqs", "8", "--seed=3", "--model-impl", "vllm"]
    args = vllm_args(out, extra=extra)
    assert args[:5] == extra and args[5:] == vllm_args(out)  # ours last: they win
    # every spelling vLLM's parser reads as one of our flags: prefix, _ for -,
    # a dotted sub-key, the short alias, the shortcut flags, the socket
    bad = ["--host", "--host=0.0.0.0", "--hos", "--por=9", "--served_model_name"]
    bad += ["-sc", "--speculative-config.method", "--spec-tokens", "--uds"]
    bad += ["--dtype", "--max_model_len=9", "--model"]
    for flag in bad:
        with pytest.raises(ValueError, match="set by hat serve itself"):
            vllm_args(out, extra=[flag, "x"])


def test_hat_serve_passes_flags_after_double_dash(exported, capsys):
    from hat_jax.cli.main import main

    out, _ = exported
    argv = ["serve", str(out), "--print-args", "--", "--max-num-seqs", "8", "--mtp"]
    assert main(argv) == 0  # "--mtp" after -- is vLLM's, not ours: passed on
    printed = capsys.readouterr().out.split()
    i = printed.index("--max-num-seqs")
    assert printed[i : i + 3] == ["--max-num-seqs", "8", "--mtp"]
    assert "--speculative-config" not in printed
    assert main(["serve", str(out), "--print-args", "--", "--host", "0.0.0.0"]) == 1
    assert "set by hat serve itself" in capsys.readouterr().err
