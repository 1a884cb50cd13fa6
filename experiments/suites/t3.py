"""T3 Tool/Prompt Robustness: faults, distractors, schema edits, injections, and
the Prompt Robustness subset.

Case ``i`` is of kind ``KINDS[i % 5]`` and is the ``j = i // 5``-th case of
that kind, taken from the kind's own test-split rooms
(``make_cases("test", seed + k)``):

- ``tool_fault``: a message that needs tools, with the first tool call of the
  turn forced to fail (timeout, malformed output, permission denied in turn):
  retry once, or say you are checking, never invent the answer;
- ``distractor_tools``: the harness plus 2 to 4 plausible tools that serve
  nothing (``add_distractor_tools``);
- ``schema_edit``: renamed parameters or tools, nested arguments, reordered
  properties (``SCHEMA_SPECS`` in turn), bound through the HSA mapping;
- ``injection``: danmaku that try to override the host's instructions;
- ``prompt_robustness``: the same question under ``PROMPTS`` system prompts
  (the base one and rephrasings: persona, rules and constraints reworded by
  ``augment.paraphrase``, every section retitled), tagged with its question, so
  the summary reports the share of questions answered accurately under every
  prompt (``consistent``).

1,200 cases, 240 per kind (60 questions x 4 prompts).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from collections.abc import Sequence

import numpy as np

from augment import apply_spec
from augment.paraphrase import paraphrase
from experiments.suites.base import Suite, SuiteOptions, dataset_seed, register_suite
from experiments.suites.simcases import (
    GROUP_BY,
    METRICS,
    judge_sim,
    oracle_for,
    sim_case,
    sim_rollout,
    variant_binding,
)
from hat_jax.eval.runner import EvalCase
from hat_jax.eval.stats import mean_ci
from hat_jax.harness import Harness, render_system_prompt
from sim.binding import Binding, bind, canonical_mapping
from sim.datasets import make_cases
from sim.oracle import Case
from sim.types import FAULT_KINDS
from sim.viewers import DEFAULT_INTENT_MIX

KINDS = (
    "tool_fault",
    "distractor_tools",
    "schema_edit",
    "injection",
    "prompt_robustness",
)
SPLIT = "test"
SEED_OFFSET = 303  # kind k draws its rooms with dataset seed + k
STREAM = 29  # keeps T3's draws apart from other seeded uses
SIZE = 1200
PROMPTS = 4  # prompt variants per question (the first is the base prompt)
PARAPHRASE_P = 0.7
SCHEMA_SPECS = (
    "rename_params(frac=1.0)",
    "nest_args(frac=1.0)",
    "rename_tools(frac=1.0)",
    "reorder_properties",
    "rename_tools|rename_params",
    "nest_args|rename_params",
)
# Messages that need tool calls (faults and tool edits must have something to hit).
TOOL_MIX = {
    k: v for k, v in DEFAULT_INTENT_MIX.items() if k not in ("chit_chat", "injection")
}
INTENT_MIX = {
    "tool_fault": TOOL_MIX,
    "distractor_tools": TOOL_MIX,
    "schema_edit": TOOL_MIX,
    "injection": {"injection": 1.0},
    "prompt_robustness": None,  # the default live-room mix
}


def rephrase(base: Harness, rng: np.random.Generator) -> Harness:
    """``base`` with its prompt text reworded and its sections retitled."""
    h = base.replace(
        persona=paraphrase(base.persona, rng, PARAPHRASE_P),
        rules=tuple(paraphrase(r, rng, PARAPHRASE_P) for r in base.rules),
        constraints=tuple(paraphrase(c, rng, PARAPHRASE_P) for c in base.constraints),
    )
    h, _, _ = apply_spec(
        h, None, "retitle_sections(frac=1.0)", int(rng.integers(2**31))
    )
    tag = hashlib.sha1(render_system_prompt(h).encode()).hexdigest()[:8]
    return h.replace(version=f"{base.version}+prompt.{tag}")


def prompt_variants(base: Harness, seed: int, q: int) -> list[Harness]:
    """The ``PROMPTS`` harnesses of question ``q``: base first, then rephrasings
    whose prompts differ from every earlier one."""
    out, seen = [base], {render_system_prompt(base)}
    for v in range(1, PROMPTS):
        rng = np.random.default_rng([seed, q, v, STREAM])
        for _ in range(20):
            h = rephrase(base, rng)
            if render_system_prompt(h) not in seen:
                break
        seen.add(render_system_prompt(h))
        out.append(h)
    return out


def _variant(kind: str, j: int, base: Harness, seed: int) -> tuple[Binding, str]:
    """The binding and detail tag of the ``j``-th case of ``kind`` (not PR)."""
    rng = np.random.default_rng([seed, KINDS.index(kind), j, STREAM])
    if kind == "distractor_tools":
        n = 2 + j % 3
        binding, _ = variant_binding(
            base, lambda r: f"add_distractor_tools(n={n})", rng
        )
        return binding, f"distractors:{n}"
    if kind == "schema_edit":
        spec = SCHEMA_SPECS[j % len(SCHEMA_SPECS)]
        return variant_binding(base, lambda r: spec, rng)[0], f"schema:{spec}"
    return bind(base), kind


def _kind_case(
    kind: str, j: int, case: Case, opts: SuiteOptions, seed: int, prompts
) -> EvalCase:
    i = j * len(KINDS) + KINDS.index(kind)
    tags = {"kind": kind}
    if kind == "prompt_robustness":
        q, v = divmod(j, PROMPTS)
        h = prompts(q)[v]
        binding = bind(h, canonical_mapping(opts.harness))
        tags.update(detail=f"prompt:{v}", question=f"q{q:05d}")
    else:
        binding, detail = _variant(kind, j, opts.harness, seed)
        tags["detail"] = detail
        if kind == "tool_fault":
            fault = FAULT_KINDS[j % len(FAULT_KINDS)]
            case = dataclasses.replace(case, fault_plan=(fault,))
            tags["detail"] = f"fault:{fault}"
    return sim_case(f"t3-{i:05d}", case, binding, tags=tags, info={"t3": dict(tags)})


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    """The first ``n`` T3 cases."""
    seed = dataset_seed(opts, SEED_OFFSET)
    counts = {k: len(range(KINDS.index(k), n, len(KINDS))) for k in KINDS}
    pools = {}
    for k, kind in enumerate(KINDS):
        need = counts[kind]
        if kind == "prompt_robustness":
            need = -(-need // PROMPTS)  # questions
        pools[kind] = make_cases(SPLIT, seed + k, need, intent_mix=INTENT_MIX[kind])
    cache: dict[int, list[Harness]] = {}

    def prompts(q: int) -> list[Harness]:
        if q not in cache:
            cache[q] = prompt_variants(opts.harness, seed, q)
        return cache[q]

    out = []
    for i in range(n):
        kind, j = KINDS[i % len(KINDS)], i // len(KINDS)
        pool_j = j // PROMPTS if kind == "prompt_robustness" else j
        out.append(_kind_case(kind, j, pools[kind][pool_j], opts, seed, prompts))
    return out


def extra(records: Sequence[dict]) -> dict:
    """Prompt Robustness: the share of questions answered accurately under all
    ``PROMPTS`` prompts (complete questions only)."""
    groups = collections.defaultdict(list)
    for r in records:
        if r["tags"].get("kind") == "prompt_robustness":
            groups[r["tags"]["question"]].append(r["scores"]["accuracy"])
    full = [min(v) for _, v in sorted(groups.items()) if len(v) == PROMPTS]
    return {"prompt_robustness": {"consistent": mean_ci(full)}}


SUITE = register_suite(
    Suite(
        name="t3",
        title="T3 Tool/Prompt Robustness",
        size=SIZE,
        build=build,
        rollout=sim_rollout,
        judge=judge_sim,
        metrics=METRICS,
        group_by=("kind", "detail", *GROUP_BY),
        reference=oracle_for,
        extra=extra,
    )
)
