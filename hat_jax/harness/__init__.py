"""The Harness: skills, hooks, the system-prompt pipeline and tools, as data.

Load one with ``load_harness("taolive_v1")`` (a builtin name or a folder), render
its system prompt with ``render_system_prompt``, run its hooks with ``run_hooks``.
"""

from hat_jax.harness.backend import (
    FAULTS,
    StaticBackend,
    ToolBackend,
    ToolContext,
    ToolOutcome,
)
from hat_jax.harness.builtin import BUILTIN, builtin_path
from hat_jax.harness.dump import dump_harness
from hat_jax.harness.hooks import (
    HookDef,
    find_numbers,
    get_hook,
    hook_names,
    register_hook,
    resolve_params,
    run_hooks,
    unsupported_numbers,
    validate_hook_params,
)
from hat_jax.harness.json_schema import check_schema, validate_json
from hat_jax.harness.loader import (
    HarnessError,
    load_harness,
    skill_references,
    tool_references,
)
from hat_jax.harness.loop import (
    TurnRequest,
    feedback_message,
    note_message,
    run_turn,
    run_turns,
    strip_reasoning,
)
from hat_jax.harness.mapping import Mapping, schema_leaves
from hat_jax.harness.policy import (
    CallStats,
    OpenAIPolicy,
    Policy,
    PolicyError,
    PolicyOutput,
    ScriptedPolicy,
    render_prompt,
)
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.sampler_policy import SamplerPolicy
from hat_jax.harness.spec import (
    LOAD_SKILL,
    PROMPT_FORMATS,
    SECTION_NAMES,
    SKILL_KINDS,
    Harness,
    HookSpec,
    PromptLayout,
    Skill,
    Tool,
    load_skill_tool,
)
from hat_jax.harness.tokens import read_jsonl, trajectory_to_tokens, write_jsonl
from hat_jax.harness.trajectory import (
    CHECKPOINTS,
    STATUSES,
    HookContext,
    HookEvent,
    HookResult,
    ToolExchange,
    Trajectory,
)

__all__ = [
    # agent loop, policies, tool backends, training tokens
    "FAULTS",
    "Mapping",
    "schema_leaves",
    "OpenAIPolicy",
    "Policy",
    "PolicyError",
    "PolicyOutput",
    "CallStats",
    "SamplerPolicy",
    "ScriptedPolicy",
    "StaticBackend",
    "ToolBackend",
    "ToolContext",
    "ToolOutcome",
    "TurnRequest",
    "feedback_message",
    "note_message",
    "read_jsonl",
    "render_prompt",
    "run_turn",
    "run_turns",
    "strip_reasoning",
    "trajectory_to_tokens",
    "write_jsonl",
    # spec
    "LOAD_SKILL",
    "PROMPT_FORMATS",
    "SECTION_NAMES",
    "SKILL_KINDS",
    "Harness",
    "HookSpec",
    "PromptLayout",
    "Skill",
    "Tool",
    "load_skill_tool",
    # trajectory
    "CHECKPOINTS",
    "STATUSES",
    "HookContext",
    "HookEvent",
    "HookResult",
    "ToolExchange",
    "Trajectory",
    # loader
    "BUILTIN",
    "HarnessError",
    "builtin_path",
    "dump_harness",
    "load_harness",
    "skill_references",
    "tool_references",
    # hooks
    "HookDef",
    "check_schema",
    "find_numbers",
    "get_hook",
    "hook_names",
    "register_hook",
    "resolve_params",
    "run_hooks",
    "unsupported_numbers",
    "validate_hook_params",
    "validate_json",
    # prompt
    "render_system_prompt",
]
