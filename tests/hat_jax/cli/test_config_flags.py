"""Tests for hat_jax.cli.config_flags."""

import argparse
import textwrap

import ml_collections
import pytest

from hat_jax.cli.config_flags import (
    ConfigError,
    add_config_args,
    apply_overrides,
    load_config,
    parse_arg_string,
    parse_value,
)

_CONFIG = textwrap.dedent(
    """
    import dataclasses

    import ml_collections
    from ml_collections import config_dict

    from hat_jax.cli.config_flags import parse_arg_string


    @dataclasses.dataclass
    class Marker:  # Needs the module registered in sys.modules.
        name: str = "m"


    def get_config(arg=None):
        args = parse_arg_string(arg, {"scale": "tiny", "hsa": True, "n": 3})
        cfg = ml_collections.ConfigDict()
        cfg.scale = args.scale
        cfg.hsa = args.hsa
        cfg.n = args.n
        cfg.marker = Marker().name
        cfg.layers = (4, 8)
        cfg.widths = [1.0]
        cfg.seed = None
        cfg.max_steps = config_dict.placeholder(int)
        cfg.train = ml_collections.ConfigDict({"lr": 1e-3, "steps": 10})
        cfg.model = ml_collections.ConfigDict(
            {"name": "qwen3", "dims": {"hidden": 64, "heads": 4}}
        )
        return cfg
    """
)


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "cfg.py"
    path.write_text(_CONFIG)
    return str(path)


def test_load_config_defaults(config_file):
    cfg = load_config(config_file, [])
    assert isinstance(cfg, ml_collections.ConfigDict)
    assert (cfg.scale, cfg.hsa, cfg.n, cfg.marker) == ("tiny", True, 3, "m")
    assert cfg.train.lr == 1e-3 and cfg.model.dims.hidden == 64


def test_load_config_arg(config_file):
    cfg = load_config(f"{config_file}:scale=small,hsa=False,n=5", [])
    assert (cfg.scale, cfg.hsa, cfg.n) == ("small", False, 5)


def test_overrides_are_typed(config_file):
    cfg = load_config(
        config_file,
        [
            "train.lr=3e-4",
            "train.steps=7",
            "model.name=llama",
            "model.dims.heads=2",
            "hsa=False",
            "layers=[1,2]",
            "widths=(2, 3.5)",
            "seed=7",
            "max_steps=100",
        ],
    )
    assert cfg.train.lr == 3e-4 and isinstance(cfg.train.lr, float)
    assert cfg.train.steps == 7 and isinstance(cfg.train.steps, int)
    assert cfg.model.name == "llama" and cfg.model.dims.heads == 2
    assert cfg.hsa is False
    assert cfg.layers == (1, 2) and isinstance(cfg.layers, tuple)
    assert cfg.widths == [2, 3.5] and isinstance(cfg.widths, list)
    assert cfg.seed == 7 and cfg.max_steps == 100


@pytest.mark.parametrize(
    ("text", "want"),
    [("true", True), ("True", True), ("1", True), ("false", False), ("0", False)],
)
def test_bool_values(text, want):
    assert parse_value(text, bool) is want


def test_value_parsing_edge_cases():
    assert parse_value("3", float) == 3.0 and isinstance(parse_value("3", float), float)
    assert parse_value("None", int) is None
    assert parse_value("None", str) == "None"
    assert parse_value("a=b,c", str) == "a=b,c"
    assert parse_value("[1, 2]", type(None)) == [1, 2]
    assert parse_value("[true, null]", list) == [True, None]
    assert parse_value("llama", type(None)) == "llama"
    assert parse_value("5", tuple) == (5,)


def test_unknown_key_suggests_close_matches(config_file):
    with pytest.raises(ConfigError, match="'train.lrr'.*Did you mean: train.lr"):
        load_config(config_file, ["train.lrr=1"])
    with pytest.raises(ConfigError, match="'modle.name'.*model.name"):
        load_config(config_file, ["modle.name=x"])
    with pytest.raises(ConfigError, match="Unknown config key 'zzz'. Known keys"):
        load_config(config_file, ["zzz=1"])


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("train.steps=1.5", r"'train.steps' expects int; got '1.5'"),
        ("train.lr=fast", r"'train.lr' expects float; got 'fast'"),
        ("hsa=maybe", r"'hsa' expects bool; got 'maybe'"),
        ("layers=[1,2", r"'layers' expects tuple; got '\[1,2'"),
        ("max_steps=ten", r"'max_steps' expects int; got 'ten'"),
        ("model={'a': 1}", r"'model' is a group"),
        ("n.x=1", r"'n' is not a group"),
        ("no_equals", r"not KEY=VALUE"),
    ],
)
def test_bad_overrides(config_file, override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(config_file, [override])


def test_never_evaluates_code():
    with pytest.raises(ConfigError):
        parse_value("__import__('os').getcwd()", tuple, "x")
    assert parse_value("__import__('os').getcwd()", type(None)) == (
        "__import__('os').getcwd()"
    )


def test_missing_file_and_get_config(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope.py"), [])
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    with pytest.raises(ConfigError, match="defines no get_config"):
        load_config(str(path), [])
    path.write_text("def get_config(arg=None):\n    return 3\n")
    with pytest.raises(ConfigError, match="not a ConfigDict"):
        load_config(str(path), [])


def test_apply_overrides_in_place():
    cfg = ml_collections.ConfigDict({"a": {"b": 1}})
    assert apply_overrides(cfg, ["a.b=2"]) is cfg and cfg.a.b == 2


def test_parse_arg_string():
    defaults = {"scale": "tiny", "hsa": False, "n": 3, "lr": 0.1, "ids": (1,)}
    args = parse_arg_string("scale=small, hsa, n=4,lr=1,ids=(2,3)", defaults)
    assert args.to_dict() == {
        "scale": "small",
        "hsa": True,
        "n": 4,
        "lr": 1.0,
        "ids": (2, 3),
    }
    assert parse_arg_string(None, defaults).to_dict() == defaults
    assert parse_arg_string("", defaults).n == 3
    with pytest.raises(ConfigError, match="'scal'.*scale"):
        parse_arg_string("scal=x", defaults)
    with pytest.raises(ConfigError, match="'n' expects int"):
        parse_arg_string("n=x", defaults)


def test_add_config_args(config_file):
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", default="/tmp/w")
    get_config = add_config_args(parser)
    ns = parser.parse_args(
        [
            "--config",
            f"{config_file}:n=9",
            "--config.train.lr=0.5",
            "--workdir=/x",
            "--config.model.name",
            "llama",
            "--config.hsa=0",
        ]
    )
    assert ns.workdir == "/x"
    assert ns.config_overrides == ["train.lr=0.5", "model.name=llama", "hsa=0"]
    cfg = get_config(ns)
    assert (cfg.n, cfg.train.lr, cfg.model.name, cfg.hsa) == (9, 0.5, "llama", False)


def test_add_config_args_errors(config_file, capsys):
    parser = argparse.ArgumentParser()
    get_config = add_config_args(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--config", config_file, "--other=1"])
    assert "unrecognized arguments: --other=1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --config is required without a default.
    ns = parser.parse_args(["--config", config_file, "--config.train.lrr=1"])
    with pytest.raises(SystemExit):
        get_config(ns)
    assert "Did you mean: train.lr" in capsys.readouterr().err


def test_add_config_args_default(config_file):
    parser = argparse.ArgumentParser()
    get_config = add_config_args(parser, default=config_file)
    ns, rest = parser.parse_known_args(["--config.n=2", "pos"])
    assert rest == ["pos"] and get_config(ns).n == 2


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("train.lr=nan", r"'train.lr' expects float; got 'nan' \(expected a finite"),
        ("train.lr=inf", r"'train.lr' expects float; got 'inf' \(expected a finite"),
        ("train.lr=-Infinity", r"'train.lr' expects float; got '-Infinity'"),
        ("layers=" + "[" * 100_000, r"'layers' expects tuple; got '\[\[\[.*'\.\.\. "),
        (
            "train.steps=" + "9" * 5000,
            r"'train.steps' expects int; got '999.*'\.\.\.\.$",
        ),
    ],
)
def test_hostile_override_values_are_config_errors(config_file, override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(config_file, [override])


def test_a_long_integer_is_kept_for_the_bound_checks(config_file):
    big = "9" * 4000  # below Python's 4300-digit limit; int -> float would overflow
    assert load_config(config_file, [f"train.steps={big}"]).train.steps == int(big)


def test_a_deep_literal_for_an_untyped_key_stays_text(config_file):
    text = "[" * 100_000  # json.loads recurses past the stack: no RecursionError out
    assert load_config(config_file, [f"seed={text}"]).seed == text


def test_hat_train_reports_a_nan_override_without_traceback(config_file, capsys):
    from hat_jax.cli.main import main as hat_main

    argv = ["train", "sft", f"--config={config_file}", "--workdir", "w"]
    assert hat_main([*argv, "--config.train.lr=nan"]) == 2
    err = capsys.readouterr().err
    assert "'train.lr' expects float; got 'nan'" in err and "Traceback" not in err
