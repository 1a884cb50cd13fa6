"""The oracle teacher: the gold behaviour for any (harness, room, message).

:class:`OraclePolicy` is a ``hat_jax.harness.Policy``: given a conversation it
writes the next correct assistant message, under the harness in force, through
the :class:`~sim.binding.Binding`. A turn goes:

1. the tool calls ``needed_roles(msg)`` asks for (``sim.binding.gold_calls``:
   canonical calls mapped forward, so renamed and re-shaped tools are called by
   their harness names and shapes), all in one message;
2. a call whose result is a fault (``error: ...`` or unreadable JSON) is called
   again once (a recovery trace); a second failure is given up;
3. ``load_skill`` of the reply skill, and the strategy skill when it applies
   (``sim.binding.gold_skills``); with ``skills_first`` they are loaded in
   step 1's message, before the calls (the strategy skill for every price or
   purchase message), so the tool results come last before the reply; with
   ``plan_first`` the reasoning of the turn's first message names the reply
   plan, next to the viewer's message, and the reply's plan repeats it;
4. the reply, built only from the tool results in the conversation (parsed from
   the tool messages), in the viewer's language. Candidate replies run from the
   fullest to the shortest; the oracle replays the harness's pre-reply and
   reply hooks on each and sends the first that passes, so a tighter
   ``max_chars`` or a new banned phrase is met up front; after hook feedback it
   sends the next untried candidate. Every candidate ends with the sign-off
   tag the harness asks for, if any (``hat_jax.harness.signoff``: the reply
   hook's or the reply skill's); under a campaign harness, candidates that
   state the Double 12 cross-shop discount come first. A given-up call makes
   the reply say the host is checking and ask the viewer to wait, with no
   invented facts. The templates are in ``sim.oracle_replies``.

When the harness's turn limit leaves too few model calls, the skill loads ride
along with the tool calls (one message instead of two).

How cases reach the policy. The policy is built with the cases of a batch (each
with its binding) and finds a conversation's case by its first two messages:
the system prompt (which renders the harness and the room context) and the
viewer message. :func:`gold_trajectories` splits cases whose pair would
collide into separate ``run_turns`` batches, so the lookup is always exact.
:func:`case_request` is the matching ``TurnRequest``; the room and binding go
to the tool backend in ``meta["sim"]`` (``sim.tools.sim_meta``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from hat_jax.harness import (
    LOAD_SKILL,
    Harness,
    HookContext,
    Mapping,
    OpenAIPolicy,
    PolicyOutput,
    Trajectory,
    TurnRequest,
    render_system_prompt,
    run_hooks,
    run_turns,
)
from hat_jax.harness.hooks import find_numbers
from hat_jax.harness.policy import first_user_message, formats
from hat_jax.harness.signoff import required_tags, sign
from hat_jax.text.chat import render_assistant
from hat_jax.text.toolcall import ToolCall
from sim.binding import (
    Binding,
    after_sales_topic,
    bind,
    canonical_calls,
    chat_kind,
    gold_skills,
    price_strategy_skill,
)
from sim.oracle_replies import Reply, candidates
from sim.oracle_slips import slip, slips_here
from sim.tools import SIM_META, FaultConfig, SimBackend, sim_meta
from sim.types import RoomSnapshot, ViewerMessage, needed_roles


@dataclasses.dataclass(frozen=True)
class Case:
    """One viewer message in one room.

    Attributes:
      case_id: unique within a dataset (also part of the fault seed).
      snapshot: the room when the message arrives.
      message: the viewer message.
      fault_plan: forced tool faults by call index (``sim.tools.SimContext``).
    """

    case_id: str
    snapshot: RoomSnapshot
    message: ViewerMessage
    fault_plan: tuple[str | None, ...] = ()


def case_request(case: Case, binding: Binding) -> TurnRequest:
    """The agent-loop request for ``case`` under ``binding``'s harness."""
    meta = sim_meta(
        case.snapshot, binding, case=case.case_id, fault_plan=case.fault_plan
    )
    return TurnRequest(
        case.message.text,
        room_context=case.snapshot.context(),
        meta=meta,
        harness=binding.harness,
    )


def case_key(case: Case, binding: Binding) -> tuple[str, str]:
    """What identifies a case's conversation: (system prompt, viewer message)."""
    system = render_system_prompt(binding.harness, case.snapshot.context())
    return system, case.message.text


def annotate(traj: Trajectory, case: Case, binding: Binding) -> Trajectory:
    """Replaces the live objects in ``traj.meta`` by JSON-able records."""
    snap = case.snapshot
    traj.meta.pop(SIM_META, None)
    traj.meta.update(
        case=case.case_id,
        room_id=snap.room_id,
        catalog_id=snap.catalog.catalog_id,
        clock=snap.clock,
        harness_version=snap.harness_version,
        room_context=snap.context(),
        message=dataclasses.asdict(case.message),
        mapping=binding.mapping.to_dict(),
        fault_plan=list(case.fault_plan),
    )
    return traj


# --- Reading the conversation -----------------------------------------------------
def parse_result(text: str) -> dict[str, Any] | None:
    """A tool result's JSON object, or None for a fault or an error."""
    if not isinstance(text, str) or text.startswith("error:"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _leaves(value: Any, key: str | None, out: list[tuple[str, str]]) -> None:
    """(normalised number, the key holding it) for every number under ``value``:
    numeric leaves and numbers written inside strings; a list's items under the
    list's key, a text's languages (``zh``, ``en``) under the text's key."""
    if isinstance(value, dict):
        for k, v in value.items():
            _leaves(v, key if k in ("zh", "en") else str(k), out)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, key, out)
    elif key is None or isinstance(value, bool):
        return
    elif isinstance(value, int | float) and math.isfinite(value):
        out.append((format(Decimal(repr(value)).normalize(), "f"), key))
    elif isinstance(value, str):
        out.extend((norm, key) for _, norm, _ in find_numbers(value))


def named_numbers(reply: str, results: Sequence[str]) -> list[str]:
    """``"key value"`` for each number ``reply`` quotes, in its order, once each:
    the first key of the tool ``results`` (JSON texts) that holds the number.
    Numbers no result holds (a link number the viewer gave, a percentage of a
    fraction) are left out."""
    leaves: list[tuple[str, str]] = []
    for text in results:
        if (obj := parse_result(text)) is not None:
            _leaves(obj, None, leaves)
    out: list[str] = []
    for _, norm, _ in find_numbers(reply):
        key = next((k for v, k in leaves if v == norm), None)
        if key is not None and f"{key} {norm}" not in out:
            out.append(f"{key} {norm}")
    return out


def _why(text: str) -> str:
    if text.startswith("error: timeout"):
        return "timeout"
    if text.startswith("error: permission"):
        return "permission denied"
    return "an error" if text.startswith("error:") else "malformed output"


@dataclasses.dataclass
class _Seen:
    exchanges: list[tuple[ToolCall, str]]  # every call so far and its result
    replies: list[str]  # final replies already sent (and so rejected)
    steps: int  # assistant messages so far


def _read(messages: Sequence[dict[str, Any]]) -> _Seen:
    seen, pending = _Seen([], [], 0), []
    for m in messages[1:]:
        role = m.get("role")
        if role == "assistant":
            seen.steps += 1
            calls = [
                ToolCall(c["name"], dict(c["arguments"]))
                for c in m.get("tool_calls") or ()
            ]
            if calls:
                pending = calls
            else:
                seen.replies.append(str(m.get("content") or "").strip())
        elif role == "tool" and pending:
            seen.exchanges.append((pending.pop(0), str(m.get("content") or "")))
    return seen


# --- The policy -------------------------------------------------------------------
LANGUAGES = {"zh": "Chinese", "en": "English"}


def language_name(code: str) -> str:
    """The reasoning's name of a viewer language ("en" -> "English")."""
    return LANGUAGES.get(code, code)


_TOPICS = {
    "damaged": "point to customer service",
    "refund": "the refund time",
    "return": "the return time",
}


def reply_plan(msg: ViewerMessage) -> str:
    """What the reply must say ("decline the claim, give selling points"), named
    in the reasoning right before it: the reply follows a plan a few tokens back
    instead of the message a thousand tokens back."""
    if msg.intent != "multi_intent":
        return _part_plan(msg, msg.intent, msg.attribute)
    # a product question, then a second intent (as Reply._slots answers it)
    first = _part_plan(msg, "product_question", msg.attribute)
    return f"{first} and {_part_plan(msg, msg.second_intent, msg.second_attribute)}"


def _part_plan(msg: ViewerMessage, intent: str | None, attr: str | None) -> str:
    if intent == "chit_chat":
        return f"small talk ({chat_kind(msg).replace('_', ' ')})"
    if intent == "injection":
        return "refuse the instruction"
    if intent == "forbidden_claim":
        return "decline the claim, give selling points"
    if intent == "product_question":
        return f"answer the {(attr or 'question').replace('_', ' ')}"
    if intent == "purchase_intent":
        return "how to buy, the price"
    if intent == "after_sales":
        if msg.region:
            return f"the extras for {msg.region}"
        return _TOPICS.get(after_sales_topic(msg) or "", "the dispatch time")
    return "thank the viewer"


def _assistant(calls=(), content: str = "", reasoning: str | None = None) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in calls]
    if reasoning:
        msg["reasoning"] = reasoning
    return msg


def _load(names: Sequence[str]) -> list[ToolCall]:
    return [ToolCall(LOAD_SKILL, {"name": n}) for n in names]


def hooks_accept(h: Harness, user: str, loaded, facts, reply: str) -> bool:
    """Whether the harness's pre-reply and reply hooks accept ``reply``."""
    for checkpoint in ("pre_reply", "reply"):
        ctx = HookContext(h, checkpoint, user, tuple(loaded), tuple(facts), reply=reply)
        if not all(res.passed for _, res in run_hooks(h, checkpoint, ctx)):
            return False
    return True


class OraclePolicy:
    """The gold next message for each conversation (module docstring).

    Args:
      cases: the cases of this batch.
      bindings: one Binding for all cases, or one per case.
      reasoning: write a short ``<think>`` before each message.
      reply_plan: the reasoning before a reply names what it says first
        (:func:`reply_plan`: "Reply: decline the claim, give selling points.").
      slips: the share of cases whose first reply quotes wrong numbers, for the
        hooks to reject (``sim.oracle_slips``).
      skills_first: the turn's first message loads the skills before (in the
        same message as) the tool calls, so the results sit right before the
        reply instead of behind the skills' text: the reply skill, and for a
        price or purchase message the strategy skill whether or not a
        promotion turns out to be live (``sim.binding.price_strategy_skill``;
        loaded beyond need it is free).
      plan_first: with ``reply_plan``, the reasoning of the turn's first
        message names the plan too ("...: load after_sales, call
        get_shipping_policy. Plan: the extras for Tibet."): the message is
        read where it is a few tokens back, and an argument the plan names
        (a region) is written before the call that copies it.
    """

    def __init__(
        self,
        cases: Sequence[Case],
        bindings: Binding | Sequence[Binding],
        *,
        reasoning: bool = True,
        reply_plan: bool = False,
        slips: float = 0.0,
        skills_first: bool = False,
        plan_first: bool = False,
    ):
        if isinstance(bindings, Binding):
            bindings = [bindings] * len(cases)
        if len(bindings) != len(cases):
            raise ValueError(f"{len(bindings)} bindings for {len(cases)} cases")
        self.reasoning, self.reply_plan = reasoning, reply_plan
        if not 0.0 <= float(slips) <= 1.0:
            raise ValueError(f"slips must be a share in [0, 1], got {slips!r}")
        self.slips = float(slips)
        self.skills_first = bool(skills_first)
        if plan_first and not reply_plan:
            raise ValueError("plan_first needs reply_plan (it names the reply plan)")
        self.plan_first = bool(plan_first)
        self.table: dict[tuple[str, str], tuple[Case, Binding]] = {}
        for case, binding in zip(cases, bindings):
            key = case_key(case, binding)
            if key in self.table:
                raise ValueError(
                    f"cases {self.table[key][0].case_id!r} and {case.case_id!r} share "
                    "a system prompt and viewer message; put them in separate batches"
                )
            self.table[key] = (case, binding)

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, Any]]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]:
        out = []
        for conv, f in zip(conversations, formats(fmt, len(conversations))):
            key = (str(conv[0].get("content", "")), first_user_message(conv))
            if key not in self.table:
                raise KeyError(f"no case for viewer message {key[1]!r}")
            case, binding = self.table[key]
            message = self.next_message(conv, case, binding)
            out.append(PolicyOutput(render_assistant(message, f)))
        return out

    def next_message(
        self, messages: Sequence[dict[str, Any]], case: Case, binding: Binding
    ) -> dict[str, Any]:
        """The next assistant message (chat-message dict) of one conversation."""
        msg, snap, h = case.message, case.snapshot, binding.harness
        seen = _read(messages)
        roles = needed_roles(msg)
        calls = [binding.forward(c) for c in canonical_calls(msg, snap)]
        tries = [[text for c, text in seen.exchanges if c == call] for call in calls]
        results = {
            role: next((r for t in texts if (r := parse_result(t)) is not None), None)
            for role, texts in zip(roles, tries)
        }
        first = [c for c, t in zip(calls, tries) if not t]
        retry = [
            c
            for c, role, t in zip(calls, roles, tries)
            if t and results[role] is None and len(t) < 2
        ]
        loaded = [
            c.arguments.get("name")
            for c, text in seen.exchanges
            if c.name == LOAD_SKILL and not text.startswith("error:")
        ]
        skills = [s for s in gold_skills(binding, msg, snap) if s not in loaded]
        if first or retry:
            now = first or retry
            # Load the skills in the same message when the turn limit is tight.
            steps_left = h.turn_limit - seen.steps
            extra = skills if skills and steps_left < 3 else []
            lead = []  # skills_first: the skills, read before the calls run
            if self.skills_first and first and not extra and skills:
                ahead = (binding.reply_skill(msg), price_strategy_skill(binding, msg))
                lead = [s for s in dict.fromkeys(ahead) if s and s not in loaded]
            if first:
                names = ", ".join(c.name for c in now)
                why = f"{self._about(msg)}: call {names} first."
                if lead:
                    why = (
                        f"{self._about(msg)}: load {' and '.join(lead)}, call {names}."
                    )
                why += self._plan_ahead(msg)
            else:
                fails = [_why(t[-1]) for c, t in zip(calls, tries) if c in retry]
                why = f"The tool call failed ({', '.join(fails)}); try it once more."
            calls_now = _load(lead) + now + _load(extra)
            return _assistant(calls_now, reasoning=self._think(why))
        if skills:
            why = f"Load {' and '.join(skills)} before replying."
            if seen.steps == 0:  # the turn's first message reads the message first
                why = f"{self._about(msg)}: load {' and '.join(skills)} first."
                why += self._plan_ahead(msg)
            return _assistant(_load(skills), reasoning=self._think(why))
        facts = [
            text
            for c, text in seen.exchanges
            if c.name != LOAD_SKILL and parse_result(text) is not None
        ]
        reply_slots = Reply(msg, snap, binding, results)
        options = candidates(reply_slots.slots(), msg.lang)
        if reply_slots.musts:  # fullest first among those that say what they must
            options.sort(key=lambda r: not any(m in r for m in reply_slots.musts))
        for tag in required_tags(h, binding.reply_skill(msg)):
            options = [sign(r, tag) for r in options]
        fresh = [r for r in options if r not in seen.replies] or options[-1:]
        reply = next(
            (r for r in fresh if hooks_accept(h, msg.text, loaded, facts, r)), fresh[0]
        )
        gave_up = [role for role in roles if results[role] is None]
        named = named_numbers(reply, facts)
        if gave_up:
            why = "A tool failed twice; tell the viewer I am checking, no guesses."
        else:
            lang = language_name(msg.lang)  # named: the reply copies it from here
            # what it says, a few tokens back (a plan needs its own pilot first)
            plan = f"Reply: {reply_plan(msg)}. " if self.reply_plan else ""
            why = f"{plan}Answer from the tool results only; short, in {lang}."
            if named:  # the key then the value: where each quoted number comes from
                why = f"{plan}Quote {', '.join(named)}; short, in {lang}."
        if seen.replies:  # after feedback: look the facts up again
            why = f"The harness rejected my reply. {why}"
        elif self.slips and slips_here(case.case_id, self.slips) and not gave_up:
            bad = slip(case.case_id, reply, why, named, facts)
            if bad and not hooks_accept(h, msg.text, loaded, facts, bad[0]):
                return _assistant(content=bad[0], reasoning=self._think(bad[1]))
        return _assistant(content=reply, reasoning=self._think(why))

    def _plan_ahead(self, msg: ViewerMessage) -> str:
        """The plan named in the turn's first reasoning (``plan_first``), with
        the region a shipping call takes when the plan does not name it."""
        if not self.plan_first:
            return ""
        plan = reply_plan(msg)
        if msg.region and msg.region not in plan:
            plan += f", to {msg.region}"
        return f" Plan: {plan}."

    def _think(self, text: str) -> str | None:
        return text if self.reasoning else None

    @staticmethod
    def _about(msg: ViewerMessage) -> str:
        what = msg.intent.replace("_", " ")
        if msg.attribute:
            what += f" ({msg.attribute})"
        if msg.link_id is not None:
            what += f" about link {msg.link_id}"
        return f"The viewer's message is a {what}, in {language_name(msg.lang)}"


def make_teacher(kind: str = "oracle", **kwargs: Any):
    """A teacher Policy: ``"oracle"`` (kwargs of :class:`OraclePolicy`) or
    ``"openai"`` (kwargs of ``hat_jax.harness.OpenAIPolicy``: base_url, model...),
    an LLM behind an OpenAI-compatible endpoint."""
    if kind == "oracle":
        return OraclePolicy(**kwargs)
    if kind == "openai":
        return OpenAIPolicy(**kwargs)
    raise ValueError(f"unknown teacher kind {kind!r}; have 'oracle', 'openai'")


def _waves(cases: Sequence[Case], binding: Binding) -> list[list[int]]:
    """Case indices split so no batch holds two cases with the same key."""
    waves: list[tuple[set, list[int]]] = []
    for i, case in enumerate(cases):
        key = case_key(case, binding)
        wave = next((w for w in waves if key not in w[0]), None)
        if wave is None:
            wave = (set(), [])
            waves.append(wave)
        wave[0].add(key)
        wave[1].append(i)
    return [w[1] for w in waves]


def gold_trajectories(
    cases: Sequence[Case],
    harness: Harness,
    *,
    mapping: Mapping | None = None,
    faults: FaultConfig | None = None,
    seed: int = 0,
    reasoning: bool = True,
    compact_results: bool = False,
    reply_plan: bool = False,
    slips: float = 0.0,
    skills_first: bool = False,
    plan_first: bool = False,
) -> list[Trajectory]:
    """Oracle trajectories for ``cases`` under ``harness``, in order.

    Runs ``hat_jax.harness.run_turns`` with :class:`OraclePolicy` and
    :class:`~sim.tools.SimBackend` (faults at ``faults`` rates, seeded by
    ``seed``; ``compact_results``: only the fields a reply needs,
    ``sim.tools_compact``; ``reply_plan``, ``slips``, ``skills_first``,
    ``plan_first``: :class:`OraclePolicy`'s).
    ``mapping`` is taolive_v1 -> ``harness`` (default: the canonical mapping; for an
    augmented harness pass
    ``canonical_mapping(base).compose(hsa_mapping)``). Each trajectory's meta
    gets the case's JSON-able records (:func:`annotate`).
    """
    binding = bind(harness, mapping)
    backend = SimBackend(faults, seed=seed, compact=compact_results)
    out: list[Trajectory | None] = [None] * len(cases)
    for wave in _waves(cases, binding):
        batch = [cases[i] for i in wave]
        policy = OraclePolicy(
            batch,
            binding,
            reasoning=reasoning,
            reply_plan=reply_plan,
            slips=slips,
            skills_first=skills_first,
            plan_first=plan_first,
        )
        requests = [case_request(c, binding) for c in batch]
        trajs = run_turns(harness, requests, policy, backend, seed=seed)
        for i, case, traj in zip(wave, batch, trajs):
            out[i] = annotate(traj, case, binding)
    return out
