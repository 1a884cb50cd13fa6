"""Test-wide settings: CPU, float32 matmuls at full precision, deterministic."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# LLVM at -O0: the tests compile hundreds of small programs and run each a few
# times, so compilation is most of their time; -O0 keeps XLA's HLO passes (the
# same fusions and numerics checks) and skips LLVM's costly ones (a model test
# file took 40 % less time). Subprocesses inherit it; set the flag yourself to
# run the tests at another level.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
    os.environ["XLA_FLAGS"] = flags.strip()

import jax  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")

import pytest  # noqa: E402
from jax.experimental.compilation_cache import compilation_cache  # noqa: E402

# XLA's persistent cache settings. A test that runs a driver command turns the
# cache on in a tmp folder (ROOT/_jax_cache); JAX opens its cache once per
# process and keeps writing there after the folder is gone (a serial run
# segfaulted in put_executable_and_time two files later). `_xla_cache_per_test`
# gives every test the settings it started with and a cache opened afresh.
CACHE_FLAGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


@pytest.fixture(autouse=True)
def _xla_cache_per_test():
    saved = {k: getattr(jax.config, k) for k in CACHE_FLAGS}
    yield
    for k, v in saved.items():
        if getattr(jax.config, k) != v:
            jax.config.update(k, v)
    compilation_cache.reset_cache()  # cheap: the next compile reopens it


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """SmolLM2's tokenizer saved as tokenizer.json (loads faster than the GGUF)."""
    from hat_jax.train.build import load_tokenizer

    d = tmp_path_factory.mktemp("tokenizer")
    load_tokenizer("smollm2-135m-instruct").save(d)
    return d


@pytest.fixture(scope="session")
def tiny_hf(tmp_path_factory):
    """A 2-layer random Qwen3 with SmolLM2's tokenizer, as a HF folder."""
    from hat_jax.checkpoints.hf import save_hf
    from hat_jax.models import ModelConfig, build_model
    from hat_jax.train.build import load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    cfg = ModelConfig(
        model_type="qwen3",
        vocab_size=tok.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
    )
    d = tmp_path_factory.mktemp("tiny_hf")
    save_hf(build_model(cfg, seed=0), d, tokenizer=tok)
    return d
