"""Tool-call rendering and parsing for Qwen-style assistant replies.

Two formats are registered, both wrapping each call in ``<tool_call>`` tags:
``"qwen_xml"`` (Qwen3.5/3.6 and Qwen3-Coder) and ``"hermes"`` (Qwen3's JSON).

qwen_xml values follow vLLM's ``qwen3_xml``/``qwen3_coder`` parser (vLLM 0.32:
``vllm/parser/qwen3.py`` ``_qwen3_arg_converter`` keeps each value as raw text,
then ``ParserEngine._fix_arg_types`` converts it with
``vllm/tool_parsers/utils.py`` ``coerce_to_schema_type``). The renderer writes
a string raw and any other value as JSON. The parser drops one newline on each
side of a value; then, given tool schemas, :func:`_coerce` decides by the
parameter's declared type exactly as vLLM does: a "string" parameter keeps the
text verbatim (``3`` stays ``"3"``), integer/number/boolean/null/object/array
are converted when the text reads as one, and an unknown tool or parameter, or
a parameter without type information, keeps the text. Without schemas the text
is ``json.loads``-ed when that gives finite JSON, else kept as text.

So with a schema, a string for a "string" parameter round-trips unless it
holds a tag (:func:`_needs_escape`: ``</parameter>`` and ``<parameter=`` in
vLLM's spacing variants, ``</function>``, ``<|im_start|>``/``<|im_end|>``, and
the call tags this parser splits on before vLLM would). vLLM cannot carry such
a string raw (it cuts the value at the first parameter tag, drops the call's
arguments at ``</function>``, strips the turn tokens), so it is written as a
JSON string literal with ``<`` escaped as
``\\u003c``; a string-typed parameter then reads back, in vLLM and here, as
that literal text, quotes included (without a schema: as the string). A string
for a parameter that also allows a non-string type reads back converted when
it looks like that type (``"3"`` for ``["integer", "string"]`` is ``3``), in
vLLM too. Whether a value matches its declared type (:func:`_check_schema`) is
`hat_jax.json_types`, the harness validator's rule too: ``3.0`` is an integer,
``true`` never a number.

``parse_reply`` never raises for a string: each problem becomes a
:class:`ParseError` (kinds in :data:`ERROR_KINDS`). Structurally broken calls
are dropped; calls with only schema problems or stray text are kept.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hat_jax.json_types import JSON_TYPES, has_type
from hat_jax.registry import Registry

ERROR_KINDS = frozenset(
    {
        "unclosed_think",  # <think> with no </think>
        "unclosed_tool_call",  # <tool_call> with no </tool_call> before the next
        "stray_close",  # </tool_call> outside any call
        "stray_text",  # non-space text inside a call outside its tags
        "missing_function",  # qwen_xml call without <function=...>
        "missing_name",  # empty/invalid function name, or JSON without "name"
        "unclosed_function",  # <function=...> with no </function>
        "bad_parameter",  # <parameter=...> header without a valid name
        "unclosed_parameter",  # <parameter=...> with no </parameter>
        "duplicate_parameter",  # the same argument twice (the last one wins)
        "bad_json",  # hermes body is not valid JSON
        "bad_arguments",  # hermes "arguments" missing or not an object
        "unknown_tool",  # name not among the given tools
        "unknown_parameter",  # argument not in the tool's properties
        "missing_parameter",  # a required argument is absent
        "schema_type",  # value does not match the declared type
    }
)
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_FUNC, _FUNC_END = "<function=", "</function>"
_PARAM, _PARAM_END = "<parameter=", "</parameter>"
_MARKERS = (_OPEN, _CLOSE, _FUNC, _FUNC_END, _PARAM, _PARAM_END)
# vLLM's qwen3 value regex also ends a value at these spacings of the tags, and
# its parser drops the ChatML turn tokens from the text.
_LOOSE_PARAM = re.compile(r"<\s*(?:/\s*parameter\s*>|parameter\s*=)")
_TURN = ("<|im_start|>", "<|im_end|>")
_NOT_JSON = object()
# vllm/tool_parsers/utils.py: _TYPE_ALIASES and coerce_to_schema_type's order.
_ALIASES = {"str": "string", "text": "string", "varchar": "string"}
_ALIASES |= {"char": "string", "enum": "string", "float": "number"}
_ALIASES |= dict.fromkeys(["float32", "float64", "double"], "number")
_ALIASES |= dict.fromkeys(["int", "int32", "int64", "uint", "uint32"], "integer")
_ALIASES |= dict.fromkeys(["uint64", "long", "short", "unsigned"], "integer")
_ALIASES |= {"bool": "boolean", "dict": "object", "arr": "array"}
_ALIASES |= {"list": "array", "sequence": "array"}
_PRIORITY = ("null", "integer", "number", "boolean", "object", "array", "string")


@dataclasses.dataclass(frozen=True)
class ToolCall:
    """One function call: its name and keyword arguments."""

    name: str
    arguments: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ParseError:
    """A problem found while parsing; ``span`` is ``(start, end)`` in the input."""

    kind: str
    message: str
    span: tuple[int, int]


@dataclasses.dataclass(frozen=True)
class ParsedReply:
    """An assistant reply split into content, reasoning and tool calls."""

    content: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    errors: list[ParseError]


def _loads(text: str, **kwargs: Any) -> Any:
    try:
        return json.loads(text, **kwargs)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _not_a_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _loads_finite(text: str) -> Any:
    """``json.loads``, or _NOT_JSON where that fails or gives inf/nan (vLLM's
    ``_is_json_finite``: such a value could not be written back as JSON)."""
    return _loads(text, parse_float=_finite_float, parse_constant=_not_a_constant)


def _needs_escape(text: str) -> bool:
    """Whether ``text`` holds a tag that would end or corrupt a qwen_xml value,
    here or in vLLM's parser (module docstring)."""
    if "<" not in text:
        return False
    tags = (*_MARKERS, *_TURN)
    return any(m in text for m in tags) or _LOOSE_PARAM.search(text) is not None


def _dumps(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c") if _needs_escape(text) else text


def _valid_name(name: str) -> bool:
    bad = "<" in name or ">" in name
    return bool(name) and name == name.strip() and name.isprintable() and not bad


def _declared_types(schema: Any) -> list[str]:
    """Types a JSON-schema property declares (``type``, ``anyOf``, ``oneOf``),
    for the schema check; [] when it declares none."""
    if not isinstance(schema, Mapping):
        return []
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    types += declared if isinstance(declared, list) else []
    for key in ("anyOf", "oneOf"):
        subs = schema.get(key)
        for sub in subs if isinstance(subs, list) else ():
            types += _declared_types(sub)
    return [t for t in dict.fromkeys(types) if isinstance(t, str) and t in JSON_TYPES]


def _value_types(schema: Any) -> set[str]:
    """The types vLLM converts a value to (``extract_types_from_schema``:
    ``type``, ``enum`` values, ``anyOf``/``oneOf``/``allOf``; "string" if none)."""
    if not isinstance(schema, Mapping):
        return {"string"}
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set()
    if isinstance(declared, list):
        types |= {t for t in declared if isinstance(t, str)}
    enum = schema.get("enum")
    for value in enum if isinstance(enum, list) else ():
        names = (type(None), "null"), (bool, "boolean"), (int, "integer")
        names += (float, "number"), (str, "string"), (list, "array"), (dict, "object")
        types.update(next(([n] for t, n in names if isinstance(value, t)), []))
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        for sub in subs if isinstance(subs, list) else ():
            types |= _value_types(sub)
    return types or {"string"}


def _coerce(text: str, types: set[str]) -> Any:
    """One value converted as vLLM's ``coerce_to_schema_type`` does: the first
    type in _PRIORITY that ``types`` allows and the text reads as; a string
    type keeps the text; with none, finite JSON or else the text."""
    allowed = {_ALIASES.get(t.strip().lower(), t.strip().lower()) for t in types}
    for kind in (k for k in _PRIORITY if k in allowed):
        if kind == "string":
            return text
        if kind == "null" and text.lower() == "null":
            return None
        if kind == "boolean" and text.lower().strip() in ("true", "1", "false", "0"):
            return text.lower().strip() in ("true", "1")
        if kind in ("integer", "number"):
            try:
                number = int(text) if kind == "integer" else float(text)
            except (ValueError, TypeError):
                continue
            if kind == "integer":
                return number
            if math.isfinite(number):
                return number if number != int(number) else int(number)
        if kind in ("object", "array"):
            value = _loads_finite(text)
            if value is not _NOT_JSON:
                return value
    value = _loads_finite(text)
    return text if value is _NOT_JSON else value


def tool_function(tool: Mapping[str, Any]) -> dict[str, Any]:
    """Returns ``{name, description, parameters}`` from a tool spec in either form."""
    inner = tool.get("function")
    return dict(inner) if isinstance(inner, Mapping) else dict(tool)


def as_tool_call(obj: ToolCall | Mapping[str, Any]) -> ToolCall:
    """Converts a ToolCall, ``{"name", "arguments"}`` or OpenAI-style dict."""
    if isinstance(obj, ToolCall):
        return obj
    if isinstance(obj, Mapping):
        fn = tool_function(obj)
        args = fn.get("arguments", {})
        args = json.loads(args) if isinstance(args, str) else args
        if isinstance(fn.get("name"), str) and isinstance(args, Mapping):
            return ToolCall(fn["name"], dict(args))
    raise ValueError(f"not a tool call: {obj!r}")


class _Ctx:
    """Parse state: the input, the collected errors and the tool schemas."""

    def __init__(self, text: str, tools: Iterable[Any] | None):
        self.text = text
        self.errors: list[ParseError] = []
        self.schemas: dict[str, Mapping[str, Any]] | None = None
        if tools is not None:
            self.schemas = {}
            for tool in tools:
                fn = tool_function(tool) if isinstance(tool, Mapping) else {}
                params = fn.get("parameters")
                if isinstance(fn.get("name"), str):  # the first one wins (vLLM)
                    ok = isinstance(params, Mapping)
                    self.schemas.setdefault(fn["name"], params if ok else {})

    def error(self, kind: str, message: str, start: int, end: int) -> None:
        self.errors.append(ParseError(kind, message, (start, end)))

    def stray(self, start: int, end: int) -> None:
        if self.text[start:end].strip():
            self.error("stray_text", "unexpected text inside a tool call", start, end)

    def properties(self, name: str) -> Mapping[str, Any] | None:
        params = (self.schemas or {}).get(name, {})
        props = params.get("properties")
        return props if isinstance(props, Mapping) else None

    def types(self, name: str, key: str) -> list[str]:
        return _declared_types((self.properties(name) or {}).get(key))

    def decode(self, name: str, key: str, text: str) -> Any:
        """One qwen_xml value: converted by its schema as vLLM's
        ``_fix_arg_types`` does (an unknown tool or parameter keeps the text),
        or, without tool schemas, finite JSON or else the text."""
        if self.schemas is None:
            value = _loads_finite(text)
            return text if value is _NOT_JSON else value
        prop = (self.properties(name) or {}).get(key)
        return _coerce(text, _value_types(prop)) if isinstance(prop, Mapping) else text


class ToolCallFormat:
    """How one call is written inside ``<tool_call>`` tags, and read back."""

    content_separator = "\n"  # between the reply text and its first call
    instructions = ""  # the system-prompt paragraph that teaches the format
    compact_instructions = ""  # the same in a few lines (the compact prompt format)

    def render(self, call: ToolCall) -> str:
        raise NotImplementedError

    def parse(self, ctx: _Ctx, start: int, end: int, span: tuple[int, int]):
        """Parses the block body ``ctx.text[start:end]``; None if unusable."""
        raise NotImplementedError


_FORMATS: Registry[ToolCallFormat] = Registry("tool-call format")


def register_format(name: str) -> Callable[[type], type]:
    """Class decorator that registers a ToolCallFormat under ``name``."""

    def register(cls: type) -> type:
        _FORMATS.add(name, cls())
        return cls

    return register


def get_format(name: str) -> ToolCallFormat:
    """Returns the registered format called ``name``."""
    return _FORMATS.lookup(name)


@register_format("qwen_xml")
class QwenXmlFormat(ToolCallFormat):
    """``<function=NAME>`` with one ``<parameter=ARG>`` block per argument."""

    content_separator = "\n\n"
    instructions = (
        "To call a function, reply with a block in exactly this form:\n"
        "<tool_call>\n<function=FUNCTION_NAME>\n<parameter=PARAMETER_NAME>\n"
        "VALUE\n</parameter>\n</function>\n</tool_call>\n\n"
        "Guidelines:\n"
        "- Give every argument its own <parameter=...> block and always include "
        "the required ones.\n"
        "- Write text values as they are; write numbers, booleans, null, arrays "
        "and objects as JSON.\n"
        "- For several calls, write several <tool_call> blocks one after another.\n"
        "- Any explanation goes before the first call; nothing follows the last "
        "</tool_call>."
    )
    compact_instructions = (
        "Call a function with:\n<tool_call>\n<function=NAME>\n<parameter=ARG>\n"
        "VALUE\n</parameter>\n</function>\n</tool_call>\n"
        "One parameter block per argument (numbers, arrays and objects as JSON), "
        "one block per call, nothing after the last."
    )

    def render(self, call: ToolCall) -> str:
        if not _valid_name(call.name):
            raise ValueError(f"function name {call.name!r} cannot be written as XML")
        lines = [_OPEN, f"{_FUNC}{call.name}>"]
        for key, value in call.arguments.items():
            if not isinstance(key, str) or not _valid_name(key):
                raise ValueError(f"parameter name {key!r} cannot be written as XML")
            # Strings raw, as vLLM reads them; one with a tag as a JSON literal.
            ok = isinstance(value, str) and not _needs_escape(value)
            text = value if ok else _dumps(value)
            lines += [f"{_PARAM}{key}>", text, _PARAM_END]
        return "\n".join([*lines, _FUNC_END, _CLOSE])

    def parse(self, ctx: _Ctx, start: int, end: int, span: tuple[int, int]):
        text = ctx.text
        fn = text.find(_FUNC, start, end)
        if fn == -1:
            return ctx.error("missing_function", "no <function=...> in call", *span)
        ctx.stray(start, fn)
        name_end = text.find(">", fn + len(_FUNC), end)
        name = text[fn + len(_FUNC) : name_end].strip() if name_end != -1 else ""
        if not _valid_name(name):
            return ctx.error("missing_name", "missing or invalid function name", *span)
        fn_end = text.find(_FUNC_END, name_end, end)
        if fn_end == -1:
            return ctx.error("unclosed_function", "<function=...> is not closed", *span)
        ctx.stray(fn_end + len(_FUNC_END), end)
        args: dict[str, Any] = {}
        pos = name_end + 1
        while (p := text.find(_PARAM, pos, fn_end)) != -1:
            ctx.stray(pos, p)
            key_end = text.find(">", p + len(_PARAM), fn_end)
            key = text[p + len(_PARAM) : key_end].strip() if key_end != -1 else ""
            if not _valid_name(key):
                stop = fn_end if key_end == -1 else key_end + 1
                return ctx.error("bad_parameter", "invalid parameter header", p, stop)
            v_end = text.find(_PARAM_END, key_end, fn_end)
            value = text[key_end + 1 : v_end]
            if v_end == -1 or _PARAM in value or _FUNC in value:
                stop = fn_end if v_end == -1 else v_end + len(_PARAM_END)
                return ctx.error(
                    "unclosed_parameter", f"{key!r} is not closed", p, stop
                )
            pos = v_end + len(_PARAM_END)
            if key in args:
                ctx.error("duplicate_parameter", f"{key!r} given twice", p, pos)
            value = value[1:] if value.startswith("\n") else value
            value = value[:-1] if value.endswith("\n") else value
            args[key] = ctx.decode(name, key, value)
        ctx.stray(pos, fn_end)
        return ToolCall(name, args)


@register_format("hermes")
class HermesFormat(ToolCallFormat):
    """``{"name": NAME, "arguments": {...}}`` as one JSON object (Qwen3)."""

    instructions = (
        "To call a function, reply with a JSON object holding the function name "
        "and its arguments inside <tool_call></tool_call> tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": '
        "<arguments-json-object>}\n</tool_call>\n\n"
        "For several calls, write several <tool_call> blocks one after another."
    )
    compact_instructions = (
        'Call a function with:\n<tool_call>\n{"name": NAME, "arguments": {...}}\n'
        "</tool_call>\nOne block per call, nothing after the last."
    )

    def render(self, call: ToolCall) -> str:
        if not isinstance(call.name, str) or not call.name.strip():
            raise ValueError(f"invalid function name {call.name!r}")
        body = _dumps({"name": call.name, "arguments": call.arguments})
        return f"{_OPEN}\n{body}\n{_CLOSE}"

    def parse(self, ctx: _Ctx, start: int, end: int, span: tuple[int, int]):
        dupes: list[str] = []

        def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            obj = dict(pairs)
            if len(obj) < len(pairs):
                dupes.append("key")
            return obj

        obj = _loads(ctx.text[start:end], object_pairs_hook=pairs_hook)
        if obj is _NOT_JSON:
            return ctx.error("bad_json", "tool call is not valid JSON", *span)
        name = obj.get("name") if isinstance(obj, dict) else None
        if not isinstance(name, str) or not name.strip():
            return ctx.error("missing_name", 'no string "name" in tool call', *span)
        args = obj.get("arguments")
        args = _loads(args) if isinstance(args, str) else args
        if not isinstance(args, dict):
            return ctx.error("bad_arguments", '"arguments" is not an object', *span)
        if dupes:
            ctx.error("duplicate_parameter", "a JSON key is repeated", *span)
        return ToolCall(name, args)


def render_tool_calls(
    calls: Iterable[ToolCall | Mapping[str, Any]], fmt: str = "qwen_xml"
) -> str:
    """Renders calls as ``<tool_call>`` blocks separated by newlines."""
    form = get_format(fmt)
    return "\n".join(form.render(as_tool_call(c)) for c in calls)


def _check_schema(ctx: _Ctx, call: ToolCall, span: tuple[int, int]) -> None:
    if ctx.schemas is None:
        return
    if call.name not in ctx.schemas:
        return ctx.error("unknown_tool", f"no tool named {call.name!r}", *span)
    props = ctx.properties(call.name)
    for key, value in call.arguments.items():
        if props is not None and key not in props:
            ctx.error("unknown_parameter", f"{call.name} has no {key!r}", *span)
        types = ctx.types(call.name, key)
        if types and not any(has_type(value, t) for t in types):
            ctx.error("schema_type", f"{key!r} is not of type {types}", *span)
    required = ctx.schemas[call.name].get("required")
    for key in required if isinstance(required, list) else ():
        if isinstance(key, str) and key not in call.arguments:
            ctx.error("missing_parameter", f"{call.name} needs {key!r}", *span)


def _split_think(ctx: _Ctx) -> tuple[str | None, int]:
    """Returns the reasoning (None if absent) and where the rest begins."""
    text = ctx.text
    lead = len(text) - len(text.lstrip())
    if text.startswith(_THINK_OPEN, lead):
        body = lead + len(_THINK_OPEN)
        close = text.find(_THINK_CLOSE, body)
        if close == -1:
            ctx.error("unclosed_think", "<think> is not closed", lead, len(text))
            return text[body:].strip(), len(text)
        return text[body:close].strip(), close + len(_THINK_CLOSE)
    # Qwen3.5 prompts end in "<think>\n", so a reply may start inside reasoning.
    close = text.find(_THINK_CLOSE)
    if close == -1 or text.find(_OPEN, 0, close) != -1:
        return None, 0
    return text[:close].strip(), close + len(_THINK_CLOSE)


def parse_reply(
    text: str, fmt: str = "qwen_xml", tools: Iterable[Any] | None = None
) -> ParsedReply:
    """Splits an assistant reply into content, reasoning and tool calls.

    Args:
      text: the decoded assistant body (without ``<|im_end|>``).
      fmt: a registered tool-call format name.
      tools: optional tool specs; when given, names and argument types are
        checked and qwen_xml values are coerced to the declared types.

    Returns:
      A ParsedReply; never raises for a string input.
    """
    form, ctx = get_format(fmt), _Ctx(text, tools)
    reasoning, pos = _split_think(ctx)
    pieces: list[str] = []
    calls: list[ToolCall] = []
    next_open, next_close = text.find(_OPEN, pos), text.find(_CLOSE, pos)
    start = None  # the open tag of the block being read
    while True:
        # Cached next-tag positions only move forward: linear time overall.
        if next_open != -1 and next_open < pos:
            next_open = text.find(_OPEN, pos)
        if next_close != -1 and next_close < pos:
            next_close = text.find(_CLOSE, pos)
        close_first = next_close != -1 and (next_open == -1 or next_close < next_open)
        if start is None and close_first:
            end = next_close + len(_CLOSE)
            ctx.error(
                "stray_close", "</tool_call> without <tool_call>", next_close, end
            )
            pieces.append(text[pos:end])
            pos = end
        elif start is None:
            pieces.append(text[pos:] if next_open == -1 else text[pos:next_open])
            if next_open == -1:
                break
            start, pos = next_open, next_open + len(_OPEN)
        elif not close_first:
            stop = len(text) if next_open == -1 else next_open
            ctx.error("unclosed_tool_call", "<tool_call> is not closed", start, stop)
            if next_open == -1:
                break
            start, pos = next_open, next_open + len(_OPEN)
        else:
            span = (start, next_close + len(_CLOSE))
            call = form.parse(ctx, pos, next_close, span)
            if call is not None:
                _check_schema(ctx, call, span)
                calls.append(call)
            start, pos = None, span[1]
    return ParsedReply("".join(pieces).strip(), reasoning, calls, ctx.errors)
