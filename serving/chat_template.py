"""The Jinja chat template an exported folder carries, per tool-call format.

It renders what ``hat_jax.text.render_chat`` renders (ChatML turns, tools in
the system turn with the format's instructions, consecutive tool results merged
into one user turn, reasoning as a ``<think>`` block), so vLLM's
``/v1/chat/completions`` prompts the model as training did. Tool calls are
written the way the vLLM tool parser in ``TOOL_PARSERS`` reads them back:
``qwen_xml`` → ``qwen3_xml`` (``<function=NAME><parameter=ARG>``; the
``qwen3_coder`` parser reads the same form) and ``hermes`` → ``hermes`` (JSON).

String arguments are written raw, as ``render_chat`` writes them. One
difference: a string that holds a call or turn tag (``</parameter>``,
``<|im_end|>``) is a JSON string literal in ``render_chat`` and raw here; vLLM
cannot read such a value back either way (``serving.toolcheck.NO_ROUND_TRIP``).
"""

from __future__ import annotations

import json

from hat_jax.text.chat import _TOOLS_INTRO
from hat_jax.text.toolcall import get_format

TOOL_PARSERS = {"qwen_xml": "qwen3_xml", "hermes": "hermes"}

_HEAD = """\
{%- set ns = namespace(first_system=(messages|length > 0 and \
messages[0].role == 'system')) -%}
{%- macro text(c) -%}{%- if c is none -%}{%- elif c is string -%}{{ c }}\
{%- else -%}{{ c | tojson }}{%- endif -%}{%- endmacro -%}
{%- if tools -%}
{{- '<|im_start|>system\\n' -}}
{%- if ns.first_system -%}{{- text(messages[0].content) + '\\n\\n' -}}{%- endif -%}
{{- INTRO + '<tools>\\n' -}}
{%- for tool in tools -%}
{%- if tool.function is defined -%}\
{%- set spec = {'type': 'function', 'function': tool.function} -%}\
{%- else -%}{%- set spec = {'type': 'function', 'function': tool} -%}{%- endif -%}
{{- spec | tojson + '\\n' -}}
{%- endfor -%}
{{- '</tools>\\n\\n' + INSTRUCTIONS + '<|im_end|>\\n' -}}
{%- elif ns.first_system -%}
{{- '<|im_start|>system\\n' + text(messages[0].content) + '<|im_end|>\\n' -}}
{%- endif -%}
"""

_CALL = {
    "qwen_xml": """\
{{- '<tool_call>\\n<function=' + call.name + '>\\n' -}}
{%- set args = call.arguments -%}{%- if args is string -%}\
{%- set args = args | fromjson -%}{%- endif -%}
{%- for key, value in args.items() -%}
{{- '<parameter=' + key + '>\\n' -}}
{%- if value is string -%}{{- value -}}{%- else -%}{{- value | tojson -}}{%- endif -%}
{{- '\\n</parameter>\\n' -}}
{%- endfor -%}
{{- '</function>\\n</tool_call>' -}}""",
    "hermes": """\
{%- set args = call.arguments -%}{%- if args is string -%}\
{%- set args = args | fromjson -%}{%- endif -%}
{{- '<tool_call>\\n' + {'name': call.name, 'arguments': args} | tojson + \
'\\n</tool_call>' -}}""",
}

_BODY = """\
{%- for m in messages -%}
{%- if not (loop.first and ns.first_system) -%}
{%- if m.role == 'assistant' -%}
{{- '<|im_start|>assistant\\n' -}}
{%- set r = m.reasoning if m.reasoning is defined else (m.reasoning_content \
if m.reasoning_content is defined else none) -%}
{%- if r is not none -%}{{- '<think>\\n' + r.strip() + '\\n</think>\\n\\n' -}}\
{%- endif -%}
{%- set content = text(m.content).strip() -%}
{{- content -}}
{%- if m.tool_calls -%}
{%- if content -%}{{- SEPARATOR -}}{%- endif -%}
{%- for tc in m.tool_calls -%}
{%- set call = tc.function if tc.function is defined else tc -%}
{%- if not loop.first -%}{{- '\\n' -}}{%- endif -%}
CALL
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}\
{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\\n<tool_response>\\n' + text(m.content) + '\\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}\
{{- '<|im_end|>\\n' -}}{%- endif -%}
{%- else -%}
{{- '<|im_start|>' + m.role + '\\n' + text(m.content) + '<|im_end|>\\n' -}}
{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}\
{{- '<think>\\n\\n</think>\\n\\n' -}}\
{%- elif enable_thinking is defined and enable_thinking is true -%}\
{{- '<think>\\n' -}}{%- endif -%}
{%- endif -%}
"""


def chat_template(fmt: str = "qwen_xml") -> str:
    """The Jinja chat template for tool-call format ``fmt`` (module docstring)."""
    if fmt not in TOOL_PARSERS:
        raise ValueError(
            f"no vLLM tool parser for {fmt!r}; have {sorted(TOOL_PARSERS)}"
        )
    form = get_format(fmt)
    consts = (
        f"{{%- set INTRO = {json.dumps(_TOOLS_INTRO)} -%}}\n"
        f"{{%- set INSTRUCTIONS = {json.dumps(form.instructions)} -%}}\n"
        f"{{%- set SEPARATOR = {json.dumps(form.content_separator)} -%}}\n"
    )
    return consts + _HEAD + _BODY.replace("CALL", _CALL[fmt])
