"""MTP head: shapes, alignment against a step-by-step build, packing, grads, HF I/O."""

import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from safetensors import safe_open

from hat_jax.checkpoints.hf import load_hf, save_hf
from hat_jax.losses.sft import mtp_loss
from hat_jax.models import ModelConfig, build_model, mtp_logits
from hat_jax.models.layers import rope_tables

V = 61
TINY = dict(
    vocab_size=V,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    mtp_num_hidden_layers=1,
)
CONFIGS = {
    "llama": ModelConfig(model_type="llama", tie_word_embeddings=True, **TINY),
    "qwen3": ModelConfig(model_type="qwen3", **TINY),
    "qwen3_moe": ModelConfig(
        model_type="qwen3_moe",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=24,
        **TINY,
    ),
}
# The Qwen3.5 checkpoints' MTP tensors (dense MLP, q/k norms: the qwen3 family).
QWEN35_MTP_NAMES = {
    "mtp.fc.weight",
    "mtp.pre_fc_norm_embedding.weight",
    "mtp.pre_fc_norm_hidden.weight",
    "mtp.norm.weight",
    "mtp.layers.0.input_layernorm.weight",
    "mtp.layers.0.post_attention_layernorm.weight",
    "mtp.layers.0.self_attn.q_proj.weight",
    "mtp.layers.0.self_attn.k_proj.weight",
    "mtp.layers.0.self_attn.v_proj.weight",
    "mtp.layers.0.self_attn.o_proj.weight",
    "mtp.layers.0.self_attn.q_norm.weight",
    "mtp.layers.0.self_attn.k_norm.weight",
    "mtp.layers.0.mlp.gate_proj.weight",
    "mtp.layers.0.mlp.up_proj.weight",
    "mtp.layers.0.mlp.down_proj.weight",
}
TOKENS = np.random.default_rng(0).integers(1, V, size=(2, 7))


def _model(family="qwen3", seed=1):
    """A model whose MTP norms are random (ones would hide a skipped norm)."""
    model = build_model(CONFIGS[family], seed=seed)
    rng = np.random.default_rng(seed)
    for norm in (
        model.mtp.pre_fc_norm_embedding,
        model.mtp.pre_fc_norm_hidden,
        model.mtp.norm,
    ):
        norm.weight[...] = jnp.asarray(rng.uniform(0.5, 1.5, norm.weight.shape))
    return model


def _positions(tokens):
    b, t = tokens.shape
    return jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32), (b, t))


def _rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


@nnx.jit
def _layer(layer, x, cos, sin, causal, pos):
    return layer(x, cos, sin, causal, pos, None)[0]


def _by_hand(model, hidden, tokens, b, t, *, swap=False):
    """Logits at (b, t) from the MTP inputs of positions 0..t, built in NumPy."""
    m, eps = model.mtp, model.config.rms_norm_eps
    table = np.asarray(model.embed_tokens.embedding[...])
    e = _rms(
        table[tokens[b, 1 : t + 2]],
        np.asarray(m.pre_fc_norm_embedding.weight[...]),
        eps,
    )
    h = _rms(
        np.asarray(hidden[b, : t + 1]),
        np.asarray(m.pre_fc_norm_hidden.weight[...]),
        eps,
    )
    z = np.concatenate([h, e] if swap else [e, h], axis=-1)  # [t+1, 2D]
    x = z @ np.asarray(m.fc.kernel[...])  # [t+1, D]
    pos = jnp.arange(t + 1, dtype=jnp.int32)[None]
    cos, sin = rope_tables(pos, model.config)
    causal = jnp.tril(jnp.ones((1, t + 1, t + 1), bool))
    y = _layer(m.layers[0], jnp.asarray(x)[None], cos, sin, causal, pos)
    y = _rms(np.asarray(y[0, -1]), np.asarray(m.norm.weight[...]), eps)
    head = table.T if model.lm_head is None else np.asarray(model.lm_head.kernel[...])
    return y @ head  # [V]


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_mtp_logits_match_a_step_by_step_build(family):
    model = _model(family)
    tokens = jnp.asarray(TOKENS)
    out = model.forward(tokens)
    logits = mtp_logits(model, out.hidden, tokens, _positions(tokens))
    assert logits.shape == (2, 7, V) and logits.dtype == jnp.float32
    for b in range(2):
        for t in range(6):  # the last position has no next token
            want = _by_hand(model, out.hidden, TOKENS, b, t)
            np.testing.assert_allclose(logits[b, t], want, atol=2e-5, rtol=1e-4)
    # The check can fail: [hidden, embedding] order gives other logits.
    swapped = _by_hand(model, out.hidden, TOKENS, 0, 3, swap=True)
    assert np.abs(swapped - np.asarray(logits[0, 3])).max() > 1e-3


def test_mtp_loss_on_mtp_logits_scores_token_t_plus_2():
    model = _model()
    tokens = jnp.asarray(TOKENS)
    logits = mtp_logits(model, model.forward(tokens).hidden, tokens, _positions(tokens))
    loss, _ = mtp_loss(mtp_logits=logits, tokens=tokens, mask=jnp.ones_like(tokens))
    logp = jax.nn.log_softmax(np.asarray(logits, np.float64), axis=-1)
    want = -np.mean([logp[b, t, TOKENS[b, t + 2]] for b in range(2) for t in range(5)])
    np.testing.assert_allclose(loss, want, rtol=1e-5)


def test_packed_documents_match_each_alone():
    model = _model()
    a, b = TOKENS[0, :4], TOKENS[1, :6]
    packed = jnp.asarray(np.concatenate([a, b, [0, 0]])[None])  # [1, 12], 2 pads
    seg = jnp.asarray([[1] * 4 + [2] * 6 + [0] * 2])
    pos = jnp.asarray([list(range(4)) + list(range(6)) + [0, 1]])
    hidden = jnp.concatenate(
        [
            model.forward(jnp.asarray(a[None])).hidden,
            model.forward(jnp.asarray(b[None])).hidden,
            jnp.zeros((1, 2, 32)),
        ],
        axis=1,
    )
    got = mtp_logits(model, hidden, packed, pos, seg)
    for doc, start in ((a, 0), (b, 4)):
        x = jnp.asarray(doc[None])
        alone = mtp_logits(model, model.forward(x).hidden, x, _positions(x))
        n = len(doc) - 1  # a document's last slot sees the next document's token
        np.testing.assert_allclose(
            got[0, start : start + n], alone[0, :n], atol=1e-5, rtol=1e-5
        )
    # An explicit mask is the same thing; both at once is an error.
    idx = jnp.arange(12)
    allowed = (idx[None, :] <= idx[:, None]) & (seg[0][:, None] == seg[0][None, :])
    again = mtp_logits(model, hidden, packed, pos, allowed=allowed[None])
    np.testing.assert_array_equal(again, got)
    with pytest.raises(ValueError, match="not both"):
        mtp_logits(model, hidden, packed, pos, seg, allowed=allowed[None])


def test_mtp_weights_get_gradients():
    model = _model()
    tokens = jnp.asarray(TOKENS)

    def loss_fn(m):
        hidden = m.forward(tokens).hidden
        logits = mtp_logits(m, hidden, tokens, _positions(tokens))
        return mtp_loss(mtp_logits=logits, tokens=tokens, mask=jnp.ones_like(tokens))[0]

    grads = nnx.jit(nnx.grad(loss_fn))(model)
    flat = dict(nnx.to_flat_state(grads))
    mtp = {p: g for p, g in flat.items() if p[0] == "mtp"}
    assert len(mtp) == 15  # every MTP tensor of a qwen3 layer
    for path, g in mtp.items():
        assert float(jnp.abs(g[...]).max()) > 0, path
    # The trunk learns from the MTP loss too (through the hidden states).
    assert (
        float(jnp.abs(flat[("layers", 1, "mlp", "down_proj", "kernel")][...]).max()) > 0
    )


def test_errors():
    tokens = jnp.asarray(TOKENS)
    plain = build_model(CONFIGS["qwen3"].replace(mtp_num_hidden_layers=0))
    assert plain.mtp is None
    with pytest.raises(ValueError, match="no MTP head"):
        mtp_logits(plain, plain.forward(tokens).hidden, tokens, _positions(tokens))
    model = _model()
    with pytest.raises(ValueError, match="share"):
        mtp_logits(model, jnp.zeros((2, 6, 32)), tokens, _positions(tokens))


def test_config_round_trip():
    cfg = CONFIGS["qwen3"]
    hf = cfg.to_hf()
    assert hf["mtp_num_hidden_layers"] == 1
    assert ModelConfig.from_hf(hf) == cfg
    assert "mtp_num_hidden_layers" not in cfg.replace(mtp_num_hidden_layers=0).to_hf()
    nextn = {**hf, "num_nextn_predict_layers": 2}
    del nextn["mtp_num_hidden_layers"]
    assert ModelConfig.from_hf(nextn).mtp_num_hidden_layers == 2


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_safetensors_round_trip(tmp_path, family):
    model = _model(family)
    save_hf(model, tmp_path)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    names = {n for n in index["weight_map"] if n.startswith("mtp.")}
    if family == "qwen3":
        assert names == QWEN35_MTP_NAMES
    assert json.loads((tmp_path / "config.json").read_text())["mtp_num_hidden_layers"]
    f = tmp_path / index["weight_map"]["mtp.fc.weight"]
    with safe_open(f, "np") as st:
        fc = st.get_tensor("mtp.fc.weight")  # HF Linear layout [out, in]
    np.testing.assert_array_equal(fc, np.asarray(model.mtp.fc.kernel[...]).T)
    again, cfg = load_hf(tmp_path)
    assert cfg.mtp_num_hidden_layers == 1
    chex.assert_trees_all_equal(
        nnx.state(again, nnx.Param), nnx.state(model, nnx.Param)
    )
    # A trunk-only load of the same folder ignores the head's tensors.
    trunk, _ = load_hf(tmp_path, mtp_num_hidden_layers=0)
    assert trunk.mtp is None
    tokens = jnp.asarray(TOKENS)
    np.testing.assert_array_equal(trunk(tokens), model(tokens))


def test_export_with_a_head_still_loads_in_transformers(tmp_path):
    import torch
    import transformers

    model = _model("qwen3")
    save_hf(model, tmp_path)
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, dtype=torch.float32
    )
    with torch.no_grad():
        theirs = hf.eval()(torch.tensor(TOKENS)).logits.numpy()
    assert np.abs(theirs - np.asarray(model(jnp.asarray(TOKENS)))).max() <= 1e-4
