"""vLLM's own parsers on given texts, as ``/v1/chat/completions`` runs them.

Runs in the serve virtualenv (``.venv-serve/bin/python serving/vllm_toolparse.py``)
and imports nothing from this project: ``serving.toolcheck`` feeds it texts our
renderer wrote and compares what comes back with our parser.

stdin, one JSON object::

    {"tokenizer": FOLDER, "reasoning_parser": "qwen3" | null,
     "cases": [{"id": ..., "tool_parser": "qwen3_xml", "text": ...,
                "tools": [OpenAI tool specs], "enable_thinking": true | false | null}]}

stdout, one JSON list: per case ``{"id", "tool_calls": [{"name", "arguments"}],
"content", "reasoning", "error"}`` (``arguments`` the JSON string vLLM returns;
``error`` a message when vLLM raised, else null).

Per case, as vLLM's non-streaming chat handler does: the Parser class that
``ParserManager.get_parser`` composes from the server's flags
(``--tool-call-parser``, ``--reasoning-parser``, ``--enable-auto-tool-choice``),
built with the request's tools and ``chat_template_kwargs``, then
``parse(text, request, enable_auto_tools=True, model_output_token_ids=...)``,
the ids being the text encoded by the served tokenizer.
"""

from __future__ import annotations

import json
import sys


def parse_cases(spec: dict) -> list[dict]:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser import ParserManager
    from vllm.tokenizers import get_tokenizer

    tokenizer = get_tokenizer(spec["tokenizer"])
    reasoning = spec.get("reasoning_parser")
    classes: dict[str, type] = {}
    out = []
    for case in spec["cases"]:
        row = {"id": case["id"], "tool_calls": [], "content": None, "reasoning": None}
        try:
            name = case["tool_parser"]
            if name not in classes:
                classes[name] = ParserManager.get_parser(
                    tool_parser_name=name,
                    reasoning_parser_name=reasoning,
                    enable_auto_tools=True,
                    tokenizer=tokenizer,
                )
            kwargs = {}
            if case.get("enable_thinking") is not None:
                kwargs = {"enable_thinking": bool(case["enable_thinking"])}
            request = ChatCompletionRequest(
                model="hat",
                messages=[{"role": "user", "content": "-"}],
                tools=case["tools"],
                tool_choice="auto",
                chat_template_kwargs=kwargs or None,
            )
            parser = classes[name](
                tokenizer, request.tools, chat_template_kwargs=kwargs
            )
            ids = tokenizer.encode(case["text"], add_special_tokens=False)
            r, content, calls = parser.parse(
                case["text"], request, enable_auto_tools=True,
                model_output_token_ids=ids,
            )  # fmt: skip
            row["reasoning"], row["content"] = r, content
            row["tool_calls"] = [
                {"name": c.name, "arguments": c.arguments} for c in calls or ()
            ]
            row["error"] = None
        except Exception as e:  # one bad case must not hide the others
            row["error"] = f"{type(e).__name__}: {e}"
        out.append(row)
    return out


def main() -> int:
    json.dump(parse_cases(json.load(sys.stdin)), sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
