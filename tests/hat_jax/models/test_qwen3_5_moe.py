"""Qwen3.5-MoE hybrid: logits parity with transformers' `qwen3_5_moe` (fp32, <= 1e-4),
cached decoding against the full forward, greedy sampling against HF generate, and
HF import/export including the MTP tensors vLLM loads.
"""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers
from flax import nnx
from safetensors.numpy import save_file

from hat_jax.checkpoints.hf import TensorSource, load_hf, save_hf
from hat_jax.models import ModelConfig, build_model, mtp_logits
from hat_jax.models.gated_deltanet import GDNState
from hat_jax.models.layers import rope_tables
from hat_jax.models.norms import ZeroCenteredRMSNorm
from hat_jax.sampling import Sampler

V = 97
HF_TINY = dict(
    vocab_size=V,
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    linear_conv_kernel_dim=4,
    linear_key_head_dim=8,
    linear_value_head_dim=8,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    moe_intermediate_size=24,
    shared_expert_intermediate_size=40,
    num_experts=4,
    num_experts_per_tok=2,
    max_position_embeddings=512,
    layer_types=["linear_attention", "full_attention", "linear_attention"],
)
CASES = {
    # untied, RoPE on half of each head, 2 value heads per key head
    "a": dict(partial=0.5, tie=False, t=11),
    # tied, default partial RoPE (0.25), 1:1 heads, no GQA, two DeltaNet chunks
    "b": dict(
        partial=0.25,
        tie=True,
        t=75,
        linear_num_value_heads=2,
        num_key_value_heads=4,
        layer_types=["full_attention", "linear_attention", "linear_attention"],
    ),
}


def make_hf(partial, tie, seed=0, **kw):
    """A tiny random `Qwen3_5MoeForCausalLM` (every weight random, norms included)."""
    args = {**HF_TINY, **kw, "tie_word_embeddings": tie}
    args["rope_parameters"] = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "partial_rotary_factor": partial,
    }
    cfg = transformers.Qwen3_5MoeTextConfig(**args)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.2)
    return model.eval()


def hf_logits(model, tokens, mask=None):
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(tokens),
            attention_mask=None if mask is None else torch.tensor(mask),
        )
    return out.logits.numpy()


def padded(rng, lengths, t):
    tokens = rng.integers(1, V, size=(len(lengths), t))
    mask = (np.arange(t)[None] < np.asarray(lengths)[:, None]).astype(np.int64)
    return np.where(mask == 1, tokens, 0), mask


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(HF model, our model loaded from its folder) for case "a"."""
    hf = make_hf(**{k: v for k, v in CASES["a"].items() if k != "t"})
    folder = tmp_path_factory.mktemp("q35")
    hf.save_pretrained(folder)
    model, _ = load_hf(folder)
    return hf, model


_forward = nnx.jit(lambda m, t, pos, mask, cache: m.forward(t, pos, mask, cache))
_full = nnx.jit(lambda m, t: m(t))
_masked = nnx.jit(lambda m, t, mask: m(t, mask=mask))
_hidden = nnx.jit(lambda m, t: m.forward(t).hidden)


@pytest.mark.parametrize("case", sorted(CASES))
def test_logits_match_transformers(tmp_path, case):
    kw = dict(CASES[case])
    t = kw.pop("t")
    hf = make_hf(**kw)
    hf.save_pretrained(tmp_path)
    model, cfg = load_hf(tmp_path)
    assert cfg.model_type == "qwen3_5_moe_text"
    assert cfg.partial_rotary_factor == kw["partial"]
    assert cfg.tie_word_embeddings == kw["tie"]
    tokens, mask = padded(np.random.default_rng(0), [t, t - 4, 3], t)
    ref = hf_logits(hf, tokens, mask)
    ours = np.asarray(_masked(model, jnp.asarray(tokens), jnp.asarray(mask, bool)))
    real = mask.astype(bool)
    assert np.abs(ours - ref)[real].max() <= 1e-4
    # unpadded, no mask
    ref = hf_logits(hf, tokens[:1])
    assert np.abs(np.asarray(_full(model, jnp.asarray(tokens[:1]))) - ref).max() <= 1e-4


def test_cached_decoding_equals_full_forward(pair):
    """A right-padded prefill, then 64 single-token steps through the hybrid cache."""
    _, model = pair
    rng = np.random.default_rng(1)
    lengths, plen, steps = [9, 5, 2], 12, 64
    tokens, mask = padded(rng, lengths, plen)
    cache = model.init_cache(3, 96)
    kinds = [type(c).__name__ for c in cache]
    assert kinds == ["GDNState", "tuple", "GDNState"]
    positions = jnp.broadcast_to(jnp.arange(plen), (3, plen))
    out = _forward(
        model, jnp.asarray(tokens), positions, jnp.asarray(mask, bool), cache
    )
    seqs = [list(tokens[i, :n]) for i, n in enumerate(lengths)]
    steps_logits = [[] for _ in seqs]
    for i, n in enumerate(lengths):
        steps_logits[i].append(np.asarray(out.logits[i, :n]))
    cache, pos = out.cache, np.asarray(lengths)
    for _ in range(steps):
        nxt = rng.integers(1, V, size=3)
        out = _forward(
            model, jnp.asarray(nxt[:, None]), jnp.asarray(pos[:, None]), None, cache
        )
        cache, pos = out.cache, pos + 1
        for i in range(3):
            seqs[i].append(int(nxt[i]))
            steps_logits[i].append(np.asarray(out.logits[i]))
    assert isinstance(cache[0], GDNState) and cache[0].recurrent.dtype == jnp.float32
    for i in range(3):
        want = np.asarray(_full(model, jnp.asarray([seqs[i]])))[0]
        got = np.concatenate(steps_logits[i])
        assert got.shape == want.shape == (lengths[i] + steps, V)
        assert np.abs(got - want).max() <= 1e-4, i


def test_greedy_sampler_matches_transformers_generate(pair):
    hf, model = pair
    prompts = [[5, 17, 3, 9, 44, 2, 71], [8], [60, 61, 62, 63]]
    out = Sampler(model, chunk=4).generate(prompts, max_new_tokens=8, stop_ids=())
    for p, got in zip(prompts, out):
        with torch.no_grad():
            ref = hf.generate(
                torch.tensor([p]),
                max_new_tokens=8,
                do_sample=False,
                pad_token_id=0,
                eos_token_id=None,
            )
        assert got.tokens == ref[0, len(p) :].tolist()


def _tiny_config(**kw) -> ModelConfig:
    hf = {**HF_TINY, "model_type": "qwen3_5_moe_text", "mtp_num_hidden_layers": 1}
    hf["rope_parameters"] = {"rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    return ModelConfig.from_hf({**hf, **kw})


def _random_model(cfg, seed=3):
    model = build_model(cfg, seed=seed)
    state = nnx.state(model, nnx.Param)
    leaves, tree = jax.tree.flatten(state)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    new = [jax.random.normal(k, x.shape, x.dtype) * 0.2 for k, x in zip(keys, leaves)]
    nnx.update(model, jax.tree.unflatten(tree, new))
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = _random_model(_tiny_config())
    folder = tmp_path_factory.mktemp("q35_export")
    save_hf(model, folder)
    return model, folder


def _params(model):
    return {
        p: np.asarray(v[...]) for p, v in nnx.to_flat_state(nnx.state(model, nnx.Param))
    }


def test_export_loads_in_transformers_and_back(exported):
    model, folder = exported
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5MoeForCausalLM"]
    assert config["model_type"] == "qwen3_5_moe_text"
    assert config["mtp_num_hidden_layers"] == 1  # fields vLLM reads
    assert config["layer_types"] == HF_TINY["layer_types"]
    assert config["rope_parameters"]["partial_rotary_factor"] == 0.5
    for k in ("linear_num_value_heads", "shared_expert_intermediate_size"):
        assert config[k] == HF_TINY[k]
    tokens, mask = padded(np.random.default_rng(2), [10, 6], 10)
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert type(hf).__name__ == "Qwen3_5MoeForCausalLM"
    ours = np.asarray(_masked(model, jnp.asarray(tokens), jnp.asarray(mask, bool)))
    ref = hf_logits(hf.eval(), tokens, mask)
    assert np.abs(ours - ref)[mask.astype(bool)].max() <= 1e-4
    again, cfg = load_hf(folder)
    assert cfg == model.config
    want, got = _params(model), _params(again)
    assert want.keys() == got.keys()
    for path in want:
        np.testing.assert_array_equal(got[path], want[path], err_msg=str(path))


# What vLLM's loader builds for a Qwen3.5-MoE MTP layer, read from
# vllm-project/vllm vllm/model_executor/models/qwen3_5_mtp.py (commit 01d99805d1ef):
# `Qwen3_5MultiTokenPredictor` has fc (2D -> D, no bias), pre_fc_norm_embedding,
# pre_fc_norm_hidden, norm (Qwen3_5RMSNorm) and layers.{i} = Qwen3_5DecoderLayer
# (layer_type "full_attention"; for model_type qwen3_5_moe_text its mlp is
# qwen3_next's Qwen3NextSparseMoeBlock: gate, experts, shared_expert,
# shared_expert_gate); `Qwen3_5MTP.load_weights` maps "mtp." to "model.", and the
# expert mapping reads per-expert experts.{e}.{gate,up,down}_proj tensors.
D, N, K, H, E, F, FS = 32, 4, 2, 16, 4, 24, 40
VLLM_MTP_TENSORS = {
    "mtp.fc.weight": (D, 2 * D),
    "mtp.pre_fc_norm_embedding.weight": (D,),
    "mtp.pre_fc_norm_hidden.weight": (D,),
    "mtp.norm.weight": (D,),
    "mtp.layers.0.input_layernorm.weight": (D,),
    "mtp.layers.0.post_attention_layernorm.weight": (D,),
    "mtp.layers.0.self_attn.q_proj.weight": (2 * N * H, D),  # queries and gates
    "mtp.layers.0.self_attn.k_proj.weight": (K * H, D),
    "mtp.layers.0.self_attn.v_proj.weight": (K * H, D),
    "mtp.layers.0.self_attn.o_proj.weight": (D, N * H),
    "mtp.layers.0.self_attn.q_norm.weight": (H,),
    "mtp.layers.0.self_attn.k_norm.weight": (H,),
    "mtp.layers.0.mlp.gate.weight": (E, D),
    "mtp.layers.0.mlp.shared_expert.gate_proj.weight": (FS, D),
    "mtp.layers.0.mlp.shared_expert.up_proj.weight": (FS, D),
    "mtp.layers.0.mlp.shared_expert.down_proj.weight": (D, FS),
    "mtp.layers.0.mlp.shared_expert_gate.weight": (1, D),
    **{
        f"mtp.layers.0.mlp.experts.{e}.{p}.weight": (D, F)
        if p == "down_proj"
        else (F, D)
        for e in range(E)
        for p in ("gate_proj", "up_proj", "down_proj")
    },
}


def test_exported_mtp_tensors_are_what_vllm_loads(exported):
    _, folder = exported
    src = TensorSource.from_folder(folder)
    names = {n for n in src.names() if n.startswith("mtp.")}
    assert names == set(VLLM_MTP_TENSORS)
    for name, shape in VLLM_MTP_TENSORS.items():
        assert src.get(name).shape == shape, name
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return  # vLLM is not installed here: the list above is the reference
    code = (
        Path(spec.origin).parent / "model_executor/models/qwen3_5_mtp.py"
    ).read_text()
    for attr in ("fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm", "layers"):
        assert f"self.{attr} = " in code, attr
    assert 'name.replace("mtp.", "model.")' in code


def test_mtp_head_uses_zero_centred_norms_and_partial_rope(exported):
    model, _ = exported
    mtp = model.mtp
    for norm in (mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden, mtp.norm):
        assert isinstance(norm, ZeroCenteredRMSNorm)
    assert mtp.layers[0].layer_type == "full_attention"
    tokens = jnp.asarray(np.random.default_rng(4).integers(1, V, size=(1, 6)))
    pos = jnp.arange(6)[None]
    hidden = _hidden(model, tokens)
    got = nnx.jit(mtp_logits)(model, hidden, tokens, pos)

    def zc(x, w):  # the zero-centred norm, by hand
        x = np.asarray(x, np.float64)
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * (1 + w)

    w = lambda m: np.asarray(m.weight[...], np.float64)
    nxt = jnp.concatenate([tokens[:, 1:], jnp.zeros((1, 1), tokens.dtype)], axis=1)
    e = zc(model.embed_tokens(nxt), w(mtp.pre_fc_norm_embedding))
    h = zc(hidden, w(mtp.pre_fc_norm_hidden))
    x = np.concatenate([e, h], -1) @ np.asarray(mtp.fc.kernel[...], np.float64)
    cos, sin = rope_tables(pos, model.config, 8)  # 16 * 0.5 dims rotate
    causal = jnp.tril(jnp.ones((1, 6, 6), bool))
    y, _, _ = mtp.layers[0](jnp.asarray(x, jnp.float32), cos, sin, causal, pos)
    want = zc(y, w(mtp.norm)) @ np.asarray(model.lm_head.kernel[...], np.float64)
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-4, rtol=1e-4)


def test_multimodal_checkpoint_layout_loads(exported, tmp_path):
    """HF's Qwen3.5 release layout: a `qwen3_5_moe` config with `text_config`,
    `model.language_model.*` names, fused experts and a vision tower to skip."""
    model, folder = exported
    src = TensorSource.from_folder(folder)
    tensors = {}
    for name in src.names():
        if ".experts." in name:
            continue
        new = name.replace("model.", "model.language_model.", 1)
        tensors[new if name.startswith("model.") else name] = src.get(name)
    for prefix in ["model.language_model.layers.0", "model.language_model.layers.1"]:
        ours = prefix.replace("model.language_model.", "model.") + ".mlp.experts"
        gate_up = [
            np.concatenate(
                [src.get(f"{ours}.{e}.{p}_proj.weight") for p in ("gate", "up")]
            )
            for e in range(E)
        ]
        tensors[f"{prefix}.mlp.experts.gate_up_proj"] = np.stack(gate_up)  # [E, 2F, D]
        tensors[f"{prefix}.mlp.experts.down_proj"] = np.stack(
            [src.get(f"{ours}.{e}.down_proj.weight") for e in range(E)]
        )  # [E, D, F]
    for name in src.names():  # the rest stay per expert (layer 2 and the MTP)
        if ".experts." in name and not name.startswith(
            ("model.layers.0.", "model.layers.1.")
        ):
            new = name.replace("model.", "model.language_model.", 1)
            tensors[new if name.startswith("model.") else name] = src.get(name)
    tensors["model.visual.patch_embed.proj.weight"] = np.zeros((4, 3), np.float32)
    save_file(tensors, tmp_path / "model.safetensors")
    text = json.loads((folder / "config.json").read_text())
    top = {
        "model_type": "qwen3_5_moe",
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "text_config": {k: v for k, v in text.items() if k != "architectures"},
        "vision_config": {"depth": 1},
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(top))
    again, cfg = load_hf(tmp_path)
    assert cfg == model.config
    want, got = _params(model), _params(again)
    for path in want:
        np.testing.assert_array_equal(got[path], want[path], err_msg=str(path))


def test_config_defaults_and_round_trip():
    cfg = _tiny_config()
    assert ModelConfig.from_hf(cfg.to_hf()) == cfg
    assert cfg.rotary_dim == 8 and cfg.family == "qwen3_5_moe"
    # transformers' defaults when a file leaves them out
    bare = {**HF_TINY, "model_type": "qwen3_5_moe_text", "num_hidden_layers": 8}
    del bare["layer_types"]
    d = ModelConfig.from_hf(bare)
    assert d.partial_rotary_factor == 0.25
    assert d.layer_types == ("linear_attention",) * 3 + ("full_attention",) + (
        "linear_attention",
    ) * 3 + ("full_attention",)
    # plain families keep their config.json free of hybrid fields
    plain = ModelConfig(
        model_type="qwen3",
        vocab_size=V,
        hidden_size=32,
        intermediate_size=40,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
    ).to_hf()
    assert not {"layer_types", "partial_rotary_factor", "linear_num_key_heads"} & set(
        plain
    )


def test_packed_documents_match_each_alone(pair):
    """The packed forward keeps DeltaNet states (and partial RoPE) per document."""
    _, model = pair
    docs = [[5, 17, 3, 9], [8, 1, 44, 2, 71, 6], [60, 61]]
    tokens = jnp.asarray([sum(docs, [])])
    seg = jnp.asarray([sum([[i + 1] * len(d) for i, d in enumerate(docs)], [])])
    pos = jnp.asarray([sum([list(range(len(d))) for d in docs], [])])

    def packed_fn(m, t, p, s, remat):
        return m.hidden_states(t, p, segment_ids=s, remat=remat)[0]

    packed = np.asarray(
        nnx.jit(packed_fn, static_argnums=4)(model, tokens, pos, seg, False)
    )[0]
    rematted = nnx.jit(packed_fn, static_argnums=4)(model, tokens, pos, seg, True)
    np.testing.assert_allclose(np.asarray(rematted)[0], packed, atol=1e-6)
    start = 0
    for d in docs:
        alone = np.asarray(_hidden(model, jnp.asarray([d])))[0]
        np.testing.assert_allclose(packed[start : start + len(d)], alone, atol=1e-5)
        start += len(d)


def test_gradients_reach_every_trunk_weight(exported):
    model, _ = exported
    tokens = jnp.asarray(np.random.default_rng(5).integers(1, V, size=(2, 70)))

    def loss(m):  # next-token CE over 70 positions (two DeltaNet chunks)
        logp = jax.nn.log_softmax(m(tokens[:, :-1]))
        return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], -1))

    grads = nnx.to_flat_state(nnx.jit(nnx.grad(loss))(model))
    trunk = [(p, g[...]) for p, g in grads if p[0] != "mtp"]
    assert len(trunk) == sum(p[0] != "mtp" for p in _params(model)) == 57
    for path, g in trunk:
        a = float(jnp.abs(g).max())
        assert np.isfinite(a) and a > 0, path
