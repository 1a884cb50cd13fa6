"""The case sets harness evolution runs on: dev, regression, test and confirm.

Every set is simulator traffic during the Double 12 campaign
(``RoomSnapshot.campaign``, as in the harness-edit test): a price or order
answer must state the cross-shop discount, which a harness without the
campaign skill never gets from its tools. That is the error class the tiny
world's v1 harness causes and a harness edit can fix (``experiments/suites/
edit.py``).

- ``dev``: dev-catalog rooms, no forced faults: the traffic the loop diagnoses
  and the split a candidate must improve (paired, same cases).
- ``regression``: test-catalog rooms held out from dev; one case in
  ``FAULT_EVERY`` has its first tool call forced to fail (T3's faults in turn),
  so an edit that breaks recovery from tool failures is caught even though dev
  has no faults. Tagged ``kind`` (traffic / tool_fault) for the group checks.
- ``test``: built like regression from other rooms; reported, never decided on.
- ``confirm``: more dev-catalog rooms, searched for sibling cases (same intent,
  attribute and language) of a failure class's cases.

A case's id depends only on (split, index), never on the harness, so two
harnesses' records on a split pair up case by case. Every case is judged under
the start harness's norms (:func:`norms_harness`): the harness in force decides
which tools and skills exist, not how strictly a reply is judged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from experiments.suites.simcases import binding_of, case_of, sim_case
from hat_jax.eval.runner import EvalCase, Judge
from hat_jax.harness import Harness, Trajectory
from sim.binding import Binding, bind
from sim.datasets import make_cases
from sim.oracle import Case
from sim.rewards import judge_all
from sim.types import FAULT_KINDS

FAULT_EVERY = 4
# split -> (catalog split, dataset seed offset, forced faults)
SPLITS = {
    "dev": ("dev", 505, False),
    "regression": ("test", 606, True),
    "test": ("test", 707, True),
    "confirm": ("dev", 808, False),
}


def base_cases(split: str, seed: int, n: int) -> list[Case]:
    """The first ``n`` simulator cases of ``split`` (campaign rooms, faults)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; have {', '.join(SPLITS)}")
    catalogs, offset, faults = SPLITS[split]
    out = []
    for i, c in enumerate(make_cases(catalogs, 1000 * seed + offset, n)):
        snap = dataclasses.replace(c.snapshot, campaign=True)
        plan: tuple[str | None, ...] = ()
        if faults and i % FAULT_EVERY == FAULT_EVERY - 1:
            plan = (FAULT_KINDS[(i // FAULT_EVERY) % len(FAULT_KINDS)],)
        out.append(dataclasses.replace(c, snapshot=snap, fault_plan=plan))
    return out


def case_id(split: str, i: int) -> str:
    """The id of case ``i`` of ``split``, whatever the harness."""
    return f"{split}-{i:05d}"


def eval_cases(split: str, cases: list[Case], harness: Harness) -> list[EvalCase]:
    """``cases`` under ``harness`` as eval cases with ids ``SPLIT-INDEX``."""
    binding = bind(harness)
    out = []
    for i, c in enumerate(cases):
        snap = dataclasses.replace(c.snapshot, harness_version=harness.id)
        kind = "tool_fault" if c.fault_plan else "traffic"
        out.append(
            sim_case(
                case_id(split, i),
                dataclasses.replace(c, snapshot=snap),
                binding,
                tags={"split": split, "kind": kind},
                info={"evolve_split": split},
            )
        )
    return out


def signature(case: Case) -> tuple[str, str | None, str]:
    """What makes two cases siblings: intent, attribute, language."""
    m = case.message
    return (m.intent, m.attribute, m.lang)


def norms_harness(harness: Harness, start: Harness) -> Harness:
    """What the judges read of ``harness`` during an evolution: its playbook
    (tools and skills by name, kind and schema) under ``start``'s norms
    (persona, rules and constraints, whose text a reply may repeat; hooks, whose
    reply length, Markdown, banned-phrase, compliance and strictness settings
    the judges apply; tool descriptions; skill bodies, whose sign-off tags they
    require; a skill ``start`` lacks has none). An edit therefore changes what
    the agent does, never how it is judged: raising ``max_chars``, allowing a
    banned phrase or writing numbers into a rule earns nothing."""
    skills = []
    for s in harness.skills:
        old = start.skill(s.name)
        same = old is not None and old.kind == s.kind
        skills.append(old if same else dataclasses.replace(s, description="", body=""))
    tools = [
        dataclasses.replace(t, description=start.tool(t.name).description)
        if start.tool(t.name) is not None
        else t
        for t in harness.tools
    ]
    return harness.replace(
        persona=start.persona,
        rules=start.rules,
        constraints=start.constraints,
        hooks=start.hooks,
        skills=tuple(skills),
        tools=tuple(tools),
    )


def norms_judge(start: Harness) -> Judge:
    """The rule judges of each case, reading the case's harness through
    :func:`norms_harness` (``start``'s norms)."""
    cache: dict[int, tuple[Binding, Binding]] = {}  # id -> (binding, its norms)

    def judge(batch: Sequence[EvalCase], trajs: Sequence[Trajectory]) -> list:
        out = []
        for c, t in zip(batch, trajs, strict=True):
            b = binding_of(c)
            if id(b) not in cache:  # the binding is kept: its id stays its own
                norms = norms_harness(b.harness, start)
                cache[id(b)] = (b, dataclasses.replace(b, harness=norms))
            case = case_of(c)
            out.append(judge_all(t, case.snapshot, case.message, cache[id(b)][1]))
        return out

    return judge
