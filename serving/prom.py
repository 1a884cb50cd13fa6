"""vLLM's ``/metrics`` (Prometheus text): speculative-decoding counters.

vLLM (V1 engine) counts drafts, draft tokens and accepted tokens in
``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens`` and
``vllm:spec_decode_num_accepted_tokens`` (``_total`` counters, one series per
engine/model label set, summed here). A replay reads them before and after and
reports the difference: acceptance rate = accepted / draft tokens, mean
accepted length = 1 + accepted / drafts (the bonus token included).

The page is read through ``hat_jax.endpoint.EndpointClient`` (no redirects, one
deadline, a size cap): a server that fails, lies or stalls gives a
:class:`~hat_jax.endpoint.PolicyError` naming what was wrong, and counters
that are not finite, go negative or run backwards are refused too.
"""

from __future__ import annotations

import math

from hat_jax.endpoint import EndpointClient, PolicyError

SPEC_COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
}
MAX_BYTES = 8 << 20  # a metrics page; vLLM's is tens of KB


def parse_metrics(text: str) -> dict[str, float]:
    """Sums of every sample per metric name (labels dropped; comments and lines
    that are not ``name[{labels}] value [timestamp]`` skipped)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "}" in line:
            name_labels, _, rest = line.rpartition("}")
            name, fields = name_labels.split("{", 1)[0], rest.split()
        else:
            name, *fields = line.split()
        if not name or not fields:
            continue
        try:
            out[name] = out.get(name, 0.0) + float(fields[0])
        except ValueError:
            continue
    return out


def spec_counters(metrics: dict[str, float]) -> dict[str, float] | None:
    """The spec-decode counters, or None when the server exposes none.

    Raises:
      ValueError: a counter that is not a finite number >= 0.
    """
    got = {}
    for key, name in SPEC_COUNTERS.items():
        value = metrics.get(name + "_total", metrics.get(name))
        if value is None:
            return None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} is {value}, not a finite count >= 0")
        got[key] = value
    return got


def read_spec(base_url: str, timeout_s: float = 10.0) -> dict[str, float] | None:
    """The server's spec-decode counters now (None: the page has none).

    Raises:
      PolicyError: the page could not be read (unreachable, HTTP error,
        redirect, over the cap, past the deadline, not UTF-8) or holds
        counters that are not counts.
    """
    with EndpointClient(
        base_url, timeout_s=timeout_s, retries=0, max_bytes=MAX_BYTES
    ) as client:
        text = client.get_text("metrics", root=True)
        try:
            return spec_counters(parse_metrics(text))
        except ValueError as e:
            raise PolicyError(f"GET {client.url('metrics', root=True)}: {e}") from None


def spec_delta(before: dict | None, after: dict | None) -> dict[str, float] | None:
    """after - before, when both were read.

    Raises:
      ValueError: a counter ran backwards (the server restarted, or lies) or
        more tokens were accepted than drafted.
    """
    if before is None or after is None:
        return None
    delta = {k: after[k] - before[k] for k in SPEC_COUNTERS}
    backwards = sorted(k for k, v in delta.items() if v < 0)
    if backwards:
        raise ValueError(f"spec-decode counters ran backwards: {backwards}")
    if delta["accepted_tokens"] > delta["draft_tokens"]:
        raise ValueError(
            f"spec-decode counters: {delta['accepted_tokens']:g} tokens accepted "
            f"of {delta['draft_tokens']:g} drafted"
        )
    return delta
