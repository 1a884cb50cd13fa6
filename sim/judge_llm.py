"""A pluggable LLM judge over OpenAI-compatible endpoints, with 3-way voting.

``LLMJudge(["http://host:8000", ...])`` scores a turn like the rule judge
(``judge(traj, snapshot, msg, binding) -> {reward: Score}``) by asking judge
models (``POST {base}/v1/chat/completions`` through
``hat_jax.endpoint.EndpointClient``: no redirects, a deadline per request, a
reply-size cap) with the prompt of ``sim/judge_prompt.py``. Votes: one per
endpoint over up to three endpoints, or three samples (temperature
``sample_temperature``, distinct seeds) from fewer. Per reward: majority for
binary accuracy (a tie -> 0), the lower median for the others (effectiveness
snapped to 0 / 0.5 / 1). ``success``, the headline, is derived from the voted
rewards (``success_from_votes``) as the rule judge defines it
(``sim/judge_success.py``). A request that gets HTTP 429 or 5xx or a refused
connection is retried by the client (up to ``retries`` times, with back-off);
a verdict without usable scores is asked again up to ``retries`` times. Every
failed attempt is recorded in ``Verdict.errors`` (a timeout or a malformed
reply ends the vote); a reward with no valid vote scores NaN.
Nothing here raises on a bad reply.

The API key of an endpoint is ``Endpoint.api_key``, or else read from the
environment variable ``Endpoint.api_key_env`` (``HAT_JUDGE_API_KEY`` by
default, which may be unset: no key).

``agreement(a, b)`` compares two judges (or a judge and labels) per reward.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hat_jax.endpoint import EndpointClient, PolicyError, api_key_from_env, parse_chat
from hat_jax.harness import Trajectory
from sim.binding import Binding
from sim.judge_prompt import extract_json, judge_messages, parse_verdict
from sim.rewards import BINARY, GRADED, REWARDS, SUCCESS, Score
from sim.types import RoomSnapshot, ViewerMessage

VOTES = 3
JUDGE_API_KEY_ENV = "HAT_JUDGE_API_KEY"


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server: ``base_url`` with or without ``/v1``.

    ``api_key`` (never shown in a repr), or else the environment variable
    ``api_key_env`` (None: ``HAT_JUDGE_API_KEY``, which may be unset).
    """

    base_url: str
    model: str = "judge"
    api_key: str | None = dataclasses.field(default=None, repr=False)
    api_key_env: str | None = None

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base + ("" if base.endswith("/v1") else "/v1") + "/chat/completions"

    def key(self) -> str | None:
        """The API key to send (ValueError if a named variable is unset)."""
        if self.api_key:
            return self.api_key
        return api_key_from_env(self.api_key_env, default=JUDGE_API_KEY_ENV)


@dataclasses.dataclass
class Verdict:
    """The voted scores, every vote's parsed scores (None: failed) and errors."""

    scores: dict[str, Score]
    votes: list[dict[str, tuple[float, str]] | None]
    errors: list[str]


def chat(client: EndpointClient, model: str, messages: list[dict], **params) -> str:
    """One chat completion's text; raises PolicyError on any failure."""
    body = {"model": model, "messages": messages, **params}
    path = "chat/completions"
    return parse_chat(client.post_json(path, body), f"POST {client.url(path)}")


def vote(values: Sequence[float], name: str) -> float:
    """Majority for binary rewards (tie -> 0), else the lower median; NaN if none."""
    if not values:
        return math.nan
    if name in BINARY:
        ones = sum(v >= 0.5 for v in values)
        return 1.0 if ones * 2 > len(values) else 0.0
    x = statistics.median_low(values)
    return round(x * 2) / 2 if name in GRADED else x


class LLMJudge:
    """Scores turns by voting over LLM judges (see the module docstring).

    Args:
      endpoints: ``Endpoint``s or base URLs; the first ``votes`` are used, or
        cycled when there are fewer.
      votes: votes per turn (3).
      timeout: the deadline of one request (its retries included), seconds.
      retries: extra requests after HTTP 429/5xx or a refused connection, and
        extra requests after a verdict without usable scores.
      backoff: seconds before the first HTTP retry, doubled each time.
      temperature: sampling temperature when each vote has its own endpoint.
      sample_temperature: when an endpoint gives several votes.
      max_tokens: per answer.
      json_mode: send ``response_format={"type": "json_object"}``.
    """

    def __init__(
        self,
        endpoints: Sequence[Endpoint | str],
        *,
        votes: int = VOTES,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 1.0,
        temperature: float = 0.0,
        sample_temperature: float = 0.7,
        max_tokens: int = 1024,
        json_mode: bool = False,
    ):
        if not endpoints:
            raise ValueError("LLMJudge needs at least one endpoint")
        eps = [e if isinstance(e, Endpoint) else Endpoint(e) for e in endpoints]
        self.plan = [eps[i % len(eps)] for i in range(votes)]
        self.temperature = temperature if len(eps) >= votes else sample_temperature
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.max_tokens, self.json_mode = max_tokens, json_mode
        self.clients = {
            ep: EndpointClient(
                ep.base_url,
                api_key=ep.key(),
                timeout_s=timeout,
                retries=retries,
                backoff_s=backoff,
            )
            for ep in dict.fromkeys(eps)
        }

    def _params(self, k: int) -> dict[str, Any]:
        params = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": k,
        }
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    def _vote(self, k: int, messages: list[dict], errors: list[str]):
        """One vote, retried; None (and its errors recorded) when all fail."""
        ep = self.plan[k]
        for attempt in range(self.retries + 1):
            where = f"vote {k} ({ep.base_url}) attempt {attempt}"
            try:
                text = chat(self.clients[ep], ep.model, messages, **self._params(k))
            except PolicyError as e:  # the client already retried what can be
                errors.append(f"{where}: {e}")
                return None
            scores, problems = parse_verdict(extract_json(text))
            if not problems:
                return scores
            errors.append(f"{where}: " + "; ".join(problems) + f" in {text[:200]!r}")
        return None

    def judge(
        self,
        traj: Trajectory,
        snapshot: RoomSnapshot,
        msg: ViewerMessage,
        binding: Binding,
    ) -> Verdict:
        """All votes for one turn and the voted scores."""
        messages = judge_messages(traj, snapshot, msg, binding)
        logs: list[list[str]] = [[] for _ in self.plan]
        with ThreadPoolExecutor(max_workers=len(self.plan)) as pool:
            futures = [
                pool.submit(self._vote, k, messages, logs[k])
                for k in range(len(self.plan))
            ]
            votes = [f.result() for f in futures]
        scores = {}
        for name in REWARDS:
            got = [v[name] for v in votes if v and name in v]
            value = vote([x for x, _ in got], name)
            why = next((w for x, w in got if x == value), "")
            tally = [x for x, _ in got]
            if math.isnan(value):
                why = "no valid vote"
            scores[name] = Score(value, f"votes {tally}: {why}")
        scores[SUCCESS] = success_from_votes(scores)
        return Verdict(scores, votes, [e for log in logs for e in log])

    def __call__(self, traj, snapshot, msg, binding) -> dict[str, Score]:
        return self.judge(traj, snapshot, msg, binding).scores


def success_from_votes(scores: dict[str, Score]) -> Score:
    """Success from an LLM judge's voted rewards: accuracy 1, effectiveness 1,
    skill selection 1 and tool rationality above 0.5 (the rule judge's missing
    lookup or hallucinated tool costs 0.5; here two minor offences also fail,
    since the verdict does not say which offences it saw). NaN when any of
    them has no valid vote."""
    values = {k: scores[k].value for k in REWARDS}
    if any(math.isnan(v) for v in values.values()):
        return Score(math.nan, "no valid vote for every reward")
    ok = (
        values["accuracy"] == 1.0
        and values["effectiveness"] == 1.0
        and values["skill_selection"] == 1.0
        and values["tool_rationality"] > 0.5
    )
    return Score(float(ok), f"from the voted rewards {values}")


# --- Agreement -----------------------------------------------------------------
def cohen_kappa(a: Sequence[float], b: Sequence[float]) -> float:
    """Cohen's kappa of two raters over categories; 1.0 when both are constant
    and equal (chance agreement 1), NaN on no data."""
    n = len(a)
    if n == 0:
        return math.nan
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    cats = set(a) | set(b)
    pe = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    if pe >= 1.0:
        return 1.0 if po == 1.0 else 0.0
    return (po - pe) / (1.0 - pe)


def _value(s: Any) -> float:
    return float(s.value if isinstance(s, Score) else s)


def agreement(
    first: Sequence[dict[str, Any]],
    second: Sequence[dict[str, Any]],
    rewards: Sequence[str] = REWARDS,
) -> dict[str, Any]:
    """Per-reward agreement between two score lists (same turns, same order).

    Values (``Score`` or numbers) are compared on the 0.25 grid; pairs with a
    missing or NaN side are skipped. Per reward: ``n``, ``agreement`` (exact
    rate), ``mean_abs_diff``, and ``kappa`` (Cohen's) for the categorical ones
    (binary accuracy, 3-level effectiveness). ``overall``: the mean agreement.
    """
    if len(first) != len(second):
        raise ValueError(f"{len(first)} vs {len(second)} scored turns")
    out: dict[str, Any] = {}
    for name in rewards:
        pairs = []
        for x, y in zip(first, second, strict=True):
            if name in x and name in y:
                a, b = _value(x[name]), _value(y[name])
                if math.isfinite(a) and math.isfinite(b):
                    pairs.append((round(a * 4) / 4, round(b * 4) / 4))
        n = len(pairs)
        row = {
            "n": n,
            "agreement": sum(a == b for a, b in pairs) / n if n else math.nan,
            "mean_abs_diff": sum(abs(a - b) for a, b in pairs) / n if n else math.nan,
        }
        if name in BINARY + GRADED:
            row["kappa"] = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
        out[name] = row
    rates = [out[r]["agreement"] for r in rewards if out[r]["n"]]
    out["overall"] = sum(rates) / len(rates) if rates else math.nan
    return out
