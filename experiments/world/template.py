"""The world tokenizer's Jinja chat template: ChatML as ``render_chat`` writes it.

For the messages our trainers and the agent loop produce (system, user,
assistant with ``reasoning``/``content``/``tool_calls``, consecutive ``tool``
messages, an optional ``tools`` list, the qwen_xml call format, thinking left
open) it renders the same text as :func:`hat_jax.text.render_chat` with
``enable_thinking=None``; the tests compare the two. One difference: a string
argument that holds a call or turn tag is written raw here, where the renderer
writes it as a JSON string literal.
"""

from __future__ import annotations

import json

from hat_jax.text.chat import render_chat


def _lit(text: str) -> str:
    # A JSON string is also a valid Jinja string literal.
    return json.dumps(text)


# The renderer's own text around the tool lines, read off a one-tool render.
_ONE_TOOL = render_chat([], tools=[{"name": "t"}], add_generation_prompt=False)
_TOOLS_HEAD = _ONE_TOOL.removeprefix("<|im_start|>system\n").split("<tools>\n")[0]
_TOOLS_TAIL = "</tools>" + _ONE_TOOL.rpartition("</tools>")[2].removesuffix(
    "<|im_end|>\n"
)

CHAT_TEMPLATE = (
    """{%- set first_system = messages and messages[0].role == 'system' -%}
{%- if tools -%}
{{- '<|im_start|>system\\n' -}}
{%- if first_system -%}{{- messages[0].content ~ '\\n\\n' -}}{%- endif -%}
{{- """
    + _lit(_TOOLS_HEAD + "<tools>\n")
    + """ -}}
{%- for tool in tools -%}
{%- set fn = tool.function if tool.function is defined else tool -%}
{{- {'type': 'function', 'function': fn} | tojson ~ '\\n' -}}
{%- endfor -%}
{{- """
    + _lit(_TOOLS_TAIL)
    + """ ~ '<|im_end|>\\n' -}}
{%- elif first_system -%}
{{- '<|im_start|>system\\n' ~ messages[0].content ~ '<|im_end|>\\n' -}}
{%- endif -%}
{%- for message in messages -%}
{%- if loop.first and first_system -%}
{%- elif message.role == 'assistant' -%}
{{- '<|im_start|>assistant\\n' -}}
{%- set reasoning = message.reasoning if message.reasoning is defined
    else message.reasoning_content -%}
{%- if reasoning is defined and reasoning is not none -%}
{{- '<think>\\n' ~ reasoning | trim ~ '\\n</think>\\n\\n' -}}
{%- endif -%}
{%- set content = (message.content or '') | trim -%}
{{- content -}}
{%- if message.tool_calls -%}
{%- if content -%}{{- '\\n\\n' -}}{%- endif -%}
{%- for call in message.tool_calls -%}
{%- set fn = call.function if call.function is defined else call -%}
{%- if not loop.first -%}{{- '\\n' -}}{%- endif -%}
{{- '<tool_call>\\n<function=' ~ fn.name ~ '>\\n' -}}
{%- for key, value in fn.arguments.items() -%}
{{- '<parameter=' ~ key ~ '>\\n' -}}
{%- if value is string -%}{{- value -}}{%- else -%}{{- value | tojson -}}{%- endif -%}
{{- '\\n</parameter>\\n' -}}
{%- endfor -%}
{{- '</function>\\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}
{{- '<|im_start|>user' -}}
{%- endif -%}
{{- '\\n<tool_response>\\n' ~ message.content ~ '\\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}
{{- '<|im_end|>\\n' -}}
{%- endif -%}
{%- else -%}
{{- '<|im_start|>' ~ message.role ~ '\\n' ~ message.content ~ '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""
)
