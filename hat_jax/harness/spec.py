"""The Harness as data: skills, tools, hooks and the prompt layout, versioned apart
from the weights.

Everything here is plain frozen data (no behaviour beyond lookups), so harnesses can
be loaded from folders, perturbed by augmentation ops and compared. Nothing in a
harness is ever executed: hooks are *named* checks from a registry with parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

SKILL_KINDS = ("reply", "strategy")
PROMPT_FORMATS = ("markdown", "xml", "plain", "compact")
# The sections a system prompt is assembled from; a manifest chooses order and titles.
SECTION_NAMES = (
    "persona",
    "room_context",
    "rules",
    "skill_index",
    "tool_list",
    "constraints",
)
LOAD_SKILL = "load_skill"  # the built-in tool that discloses a skill's body
# A harness on disk: the manifest, then each sub-folder with its files' suffix.
MANIFEST = "manifest.yaml"
FOLDERS = {"skills": ".md", "tools": ".json"}


@dataclasses.dataclass(frozen=True)
class Skill:
    """A Markdown module: its description is always in the prompt, its body only
    once the agent calls `load_skill(name)`."""

    name: str
    kind: str  # "reply" | "strategy"
    description: str  # one line
    body: str  # the full instructions


@dataclasses.dataclass(frozen=True)
class Tool:
    """A JSON-Schema function spec (OpenAI / Qwen `tools` entry, `function` part)."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # {"type": "object", "properties": {...}, ...}

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclasses.dataclass(frozen=True)
class HookSpec:
    """A named check from the hook registry, with its parameters."""

    name: str
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class PromptLayout:
    """How the system prompt is assembled: which sections, in what order, with what
    titles, in what format. The structure itself is a harness parameter."""

    order: tuple[str, ...] = SECTION_NAMES
    format: str = "markdown"  # one of PROMPT_FORMATS
    titles: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Harness:
    """Everything that shapes the agent at run time, apart from the weights."""

    name: str
    version: str
    persona: str
    rules: tuple[str, ...]
    constraints: tuple[str, ...]
    layout: PromptLayout
    turn_limit: int  # model calls per viewer message
    retry_limit: int  # re-asks after a failed hook
    skills: tuple[Skill, ...]
    tools: tuple[Tool, ...]
    hooks: tuple[HookSpec, ...]
    tool_call_format: str = "qwen_xml"

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def hook(self, name: str) -> HookSpec | None:
        return next((h for h in self.hooks if h.name == name), None)

    def replace(self, **kw) -> Harness:
        return dataclasses.replace(self, **kw)

    def in_format(self, fmt: str | None) -> Harness:
        """This harness with its prompt in ``fmt`` (None: unchanged)."""
        if fmt is None or fmt == self.layout.format:
            return self
        if fmt not in PROMPT_FORMATS:
            raise ValueError(f"unknown prompt format {fmt!r}; have {PROMPT_FORMATS}")
        return self.replace(layout=dataclasses.replace(self.layout, format=fmt))

    def tool_specs(self) -> list[dict[str, Any]]:
        """Tools as shown to the model, `load_skill` first."""
        return [load_skill_tool(self).spec()] + [t.spec() for t in self.tools]


def load_skill_tool(harness: Harness) -> Tool:
    """The built-in `load_skill(name)` tool; its enum lists the harness's skills."""
    return Tool(
        name=LOAD_SKILL,
        description="Load a skill's full instructions into the conversation.",
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [s.name for s in harness.skills]}
            },
            "required": ["name"],
        },
    )
