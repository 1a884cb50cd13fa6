"""Stage configs that no run can use fail before any work, naming the key."""

import re

import pytest
import tokenizers

from hat_jax.cli.config_flags import load_config
from hat_jax.cli.main import main as hat_main
from hat_jax.text.tokenizer import Tokenizer
from hat_jax.train.build import check_vocab
from hat_jax.train.sft import run_sft
from hat_jax.train.workdir import RunConfigError, check_config
from tests.train_helpers import CONFIG, tiny_overrides

OPD = "experiments/configs/opd_tiny.py"
RL = "experiments/configs/rl_tiny.py"


@pytest.mark.parametrize("spec", [CONFIG, OPD, RL])
def test_shipped_stage_configs_pass(spec):
    check_config(load_config(spec))


@pytest.mark.parametrize(
    "spec, overrides, message",
    [
        (f"{CONFIG}:steps=-5", [], "train.steps=-5 (must be >= 1)"),
        (f"{CONFIG}:steps=0", [], "train.steps=0"),
        (f"{CONFIG}:batch_size=0", [], "batch_size=0 (must be >= 1)"),
        (f"{CONFIG}:seq_len=0", [], "seq_len=0"),
        (CONFIG, ["grad_accum=0"], "grad_accum=0"),
        (f"{CONFIG}:batch_size=4", ["grad_accum=3"], "not divisible by grad_accum=3"),
        (CONFIG, ["optim.total_steps=-1"], "optim.total_steps=-1"),
        (CONFIG, ["optim.warmup_steps=-2"], "optim.warmup_steps=-2"),
        (CONFIG, ["optim.lr=-0.001"], "optim.lr=-0.001"),
        (CONFIG, ["train.save_every=0"], "train.save_every=0"),
        (CONFIG, ["model.hidden_size=0"], "model.hidden_size=0"),
        (f"{OPD}:batch_size=0", [], "batch_size=0"),
        (f"{OPD}:max_new_tokens=0", [], "sampling.max_new_tokens=0"),
        (OPD, ["data.max_prompt_tokens=0"], "data.max_prompt_tokens=0"),
        (f"{RL}:group=0", [], "rollout.group=0"),
        (f"{RL}:tasks=-1", [], "rollout.tasks=-1"),
        (RL, ["rl.max_len=0"], "rl.max_len=0"),
        (RL, ["rollout.max_rows=-1"], "rollout.max_rows=-1 (must be >= 0)"),
    ],
)
def test_bad_sizes_name_the_key_and_value(spec, overrides, message):
    with pytest.raises(RunConfigError, match="config error: .*" + re.escape(message)):
        check_config(load_config(spec, overrides))


def test_every_bad_key_is_named_at_once():
    with pytest.raises(RunConfigError) as e:
        check_config(load_config(f"{CONFIG}:steps=-5,batch_size=0"))
    for part in ("train.steps=-5", "optim.total_steps=-5", "batch_size=0"):
        assert part in str(e.value)


def test_a_model_from_elsewhere_is_not_checked_against_cfg_model():
    cfg = load_config(CONFIG, ["model.hidden_size=0", "init_from=some/workdir"])
    check_config(cfg)  # cfg.model is unused when init_from is set


def test_cli_exits_2_before_any_work(tmp_path, capsys):
    workdir = tmp_path / "w"
    rc = hat_main(
        ["train", "sft", f"--config={CONFIG}:steps=-5", "--workdir", str(workdir)]
    )
    assert rc == 2
    assert "train.steps=-5" in capsys.readouterr().err
    assert not workdir.exists()


def test_model_vocab_smaller_than_the_tokenizer_is_named(
    memo_jsonl, memo_tokenizer, tmp_path
):
    folder, vocab = memo_tokenizer
    spec = f"{CONFIG}:steps=2,seq_len=64,batch_size=4"
    cfg = load_config(spec, tiny_overrides(memo_jsonl, folder, vocab - 7))
    want = f"model vocab_size {vocab - 7} is smaller than the tokenizer's {vocab}"
    with pytest.raises(ValueError, match=want):
        run_sft(cfg, tmp_path, progress=False)
    assert not (tmp_path / "ckpt").exists()
    assert not (tmp_path / "config.json").exists()


def test_check_vocab_counts_the_largest_id_too():
    vocab = {"[UNK]": 0, "a": 1, "b": 50}  # 3 tokens, ids up to 50
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, "[UNK]"))
    tok = Tokenizer(backend)
    check_vocab(tok, 51)
    with pytest.raises(ValueError, match="vocab_size 50 is smaller .* 51 tokens"):
        check_vocab(tok, 50)
