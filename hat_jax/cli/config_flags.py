"""Config files and command-line overrides.

A config is a Python file defining `get_config(arg=None) -> ml_collections.ConfigDict`
(big_vision style). Runs pick one with `FILE[:ARG]` and override fields with dotted
`KEY=VALUE` strings, each value parsed to the type of the field it replaces::

    python -m experiments.run --config experiments/configs/sft.py:scale=tiny \\
        --config.train.lr=3e-4 --config.model.name=llama --config.layers=[1,2]

Values are parsed with `ast.literal_eval` or `json.loads`, never `eval`. The config
file itself is trusted code written by the researcher and is imported normally.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import importlib.util
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ml_collections

from hat_jax.registry import split_top

_OVERRIDE_PREFIX = "--config."
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


class ConfigError(ValueError):
    """A config file, key or value that cannot be used."""


def _literal(text: str) -> Any:
    """Parses a Python or JSON literal (`[1, 2]`, `(1,)`, `[true, null]`)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        return json.loads(text)  # Raises json.JSONDecodeError, a ValueError.
    except RecursionError:  # nested past Python's stack: no config holds that
        raise ValueError("nested too deeply") from None


def parse_value(text: str, expected: type, key: str = "value") -> Any:
    """Parses `text` to `expected`, the type of the field it will replace.

    Args:
      text: the raw string from the command line.
      expected: the field's type; `NoneType` means any literal, else the string.
      key: the field's name, for error messages.

    Returns:
      The parsed value; `None` for the text `None` unless the field is a string.

    Raises:
      ConfigError: naming the key, the expected type and the given text.
    """

    def bad(why: str = "") -> ConfigError:
        given = repr(text) if len(text) <= 80 else repr(text[:80]) + "..."
        return ConfigError(
            f"Config key {key!r} expects {expected.__name__}; got {given}{why}."
        )

    if expected is not str and text == "None":
        return None
    if expected is bool:
        if text.lower() in _BOOLS:
            return _BOOLS[text.lower()]
        raise bad(" (use true/false/1/0)")
    if expected in (int, float):
        try:
            value = expected(text)
        except ValueError:
            raise bad() from None
        if expected is float and not math.isfinite(value):
            raise bad(" (expected a finite number)")
        return value
    if expected is str:
        return text
    if expected is type(None):
        try:
            return _literal(text)
        except ValueError:
            return text  # A bare word such as `llama`.
    if expected in (tuple, list):
        try:
            value = _literal(text)
        except ValueError:
            raise bad(" (not a literal; quote strings: ['a','b'])") from None
        if not isinstance(value, tuple | list):
            value = (value,)
        return expected(value)
    if issubclass(expected, ml_collections.ConfigDict | dict):
        raise ConfigError(
            f"Config key {key!r} is a group; override its fields ({key}.NAME=VALUE)."
        )
    raise ConfigError(
        f"Config key {key!r} of type {expected.__name__} is not settable."
    )


def _all_keys(cfg: ml_collections.ConfigDict, prefix: str = "") -> list[str]:
    keys = []
    for name, value in cfg.items():
        keys.append(prefix + name)
        if isinstance(value, ml_collections.ConfigDict):
            keys.extend(_all_keys(value, f"{prefix}{name}."))
    return keys


def _unknown_key(key: str, known: list[str]) -> ConfigError:
    close = difflib.get_close_matches(key, known, n=5, cutoff=0.6)
    hint = (
        f" Did you mean: {', '.join(close)}?"
        if close
        else f" Known keys: {', '.join(sorted(known))}."
    )
    return ConfigError(f"Unknown config key {key!r}.{hint}")


def apply_overrides(
    cfg: ml_collections.ConfigDict, overrides: Iterable[str]
) -> ml_collections.ConfigDict:
    """Sets `KEY=VALUE` overrides (dotted keys) on `cfg` in place and returns it.

    Raises:
      ConfigError: for a malformed override, an unknown key or a bad value.
    """
    for override in overrides:
        key, sep, text = override.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"Override {override!r} is not KEY=VALUE.")
        *parents, name = key.split(".")
        node = cfg
        for i, part in enumerate(parents):
            if part not in node:
                raise _unknown_key(key, _all_keys(cfg))
            node = node[part]
            if not isinstance(node, ml_collections.ConfigDict):
                raise ConfigError(
                    f"Config key {'.'.join(parents[: i + 1])!r} is not a group; "
                    f"cannot set {key!r}."
                )
        if name not in node:
            raise _unknown_key(key, _all_keys(cfg))
        node[name] = parse_value(text, node.get_type(name), key)
    return cfg


def _import_file(path: str) -> Any:
    """Imports a Python file as a module (registered so dataclasses work)."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ConfigError(f"Config file {path!r} does not exist.")
    stem = os.path.splitext(os.path.basename(path))[0]
    digest = hashlib.sha1(path.encode()).hexdigest()[:8]
    name = f"_hat_jax_config_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"Config file {path!r} cannot be imported as Python.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_config(spec: str, overrides: Iterable[str] = ()) -> ml_collections.ConfigDict:
    """Loads `FILE[:ARG]` with `get_config(ARG)` and applies `KEY=VALUE` overrides.

    Args:
      spec: path of a config file, optionally followed by `:ARG` for `get_config`.
      overrides: `KEY=VALUE` strings with dotted keys, e.g. `train.lr=3e-4`.

    Returns:
      The config, with overrides applied.

    Raises:
      ConfigError: no file or `get_config`, unknown key, value of the wrong type.
    """
    path, sep, arg = spec.partition(":")
    module = _import_file(path)
    get_config = getattr(module, "get_config", None)
    if not callable(get_config):
        raise ConfigError(f"Config file {path!r} defines no get_config(arg=None).")
    cfg = get_config(arg) if sep else get_config()
    if not isinstance(cfg, ml_collections.ConfigDict):
        raise ConfigError(
            f"{path}: get_config returned {type(cfg).__name__}, not a ConfigDict."
        )
    return apply_overrides(cfg, overrides)


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside brackets and quotes: `a=1,b=[1,2]` -> 2 parts."""
    return [p.strip() for p in split_top(text, ",", brackets=True) if p.strip()]


def parse_arg_string(
    arg: str | None, defaults: Mapping[str, Any]
) -> ml_collections.ConfigDict:
    """Parses `get_config`'s `arg` ("scale=tiny,hsa=False,n=3") over typed defaults.

    A bare name (`hsa`) sets a boolean default to True.

    Args:
      arg: comma-separated `KEY=VALUE` pairs, or None/"" for the defaults.
      defaults: every allowed key with its default value, which fixes its type.

    Returns:
      A ConfigDict of the defaults with the given values, typed as the defaults.
    """
    result = ml_collections.ConfigDict(dict(defaults))
    for item in _split_top_level(arg or ""):
        if "=" not in item and isinstance(defaults.get(item), bool):
            item += "=true"
        apply_overrides(result, [item])
    return result


def _take_overrides(extras: list[str]) -> tuple[list[str], list[str]]:
    """Splits argparse leftovers into `--config.KEY=VALUE` overrides and the rest."""
    overrides, rest, i = [], [], 0
    while i < len(extras):
        item = extras[i]
        if item.startswith(_OVERRIDE_PREFIX):
            body = item[len(_OVERRIDE_PREFIX) :]
            value_next = i + 1 < len(extras) and not extras[i + 1].startswith("--")
            if "=" not in body and value_next:  # The `--config.KEY VALUE` form.
                i += 1
                body = f"{body}={extras[i]}"
            overrides.append(body)
        else:
            rest.append(item)
        i += 1
    return overrides, rest


def add_config_args(
    parser: argparse.ArgumentParser, *, default: str | None = None
) -> Callable[[argparse.Namespace], ml_collections.ConfigDict]:
    """Adds `--config FILE[:ARG]` and any number of `--config.KEY=VALUE` to `parser`.

    The parser's `parse_known_args` (which `parse_args` calls) is wrapped so that
    `--config.` leftovers land in `namespace.config_overrides`; any other unknown
    argument still fails with argparse's usual error.

    Args:
      parser: the parser to extend.
      default: config spec used when `--config` is not given; None makes it
        required.

    Returns:
      A function from the parsed namespace to the final ConfigDict; config errors
      exit through `parser.error`.
    """
    parser.add_argument(
        "--config",
        default=default,
        required=default is None,
        metavar="FILE[:ARG]",
        help="config file defining get_config(arg); override fields with "
        "--config.KEY=VALUE",
    )
    parse_known = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        namespace, extras = parse_known(args, namespace)
        namespace.config_overrides, rest = _take_overrides(extras)
        return namespace, rest

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]

    def get_config(namespace: argparse.Namespace) -> ml_collections.ConfigDict:
        try:
            return load_config(
                namespace.config, getattr(namespace, "config_overrides", [])
            )
        except ConfigError as e:
            parser.error(str(e))

    return get_config
