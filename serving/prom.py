"""vLLM's ``/metrics`` (Prometheus text): speculative-decoding counters.

vLLM (V1 engine) counts drafts, draft tokens and accepted tokens in
``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens`` and
``vllm:spec_decode_num_accepted_tokens`` (``_total`` counters, one series per
engine/model label set, summed here). A replay reads them before and after and
reports the difference: acceptance rate = accepted / draft tokens, mean
accepted length = 1 + accepted / drafts (the bonus token included).
"""

from __future__ import annotations

import urllib.request

SPEC_COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
}


def parse_metrics(text: str) -> dict[str, float]:
    """Sums of every sample per metric name (labels dropped, comments skipped)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name_labels, _, rest = line.rpartition("}") if "}" in line else ("", "", line)
        if name_labels:
            name = name_labels.split("{", 1)[0]
            value = rest.split()[0]
        else:
            name, value = rest.split()[:2]
        try:
            out[name] = out.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return out


def spec_counters(metrics: dict[str, float]) -> dict[str, float] | None:
    """The spec-decode counters, or None when the server exposes none."""
    got = {}
    for key, name in SPEC_COUNTERS.items():
        value = metrics.get(name + "_total", metrics.get(name))
        if value is None:
            return None
        got[key] = value
    return got


def read_spec(base_url: str, timeout_s: float = 10.0) -> dict[str, float] | None:
    """The server's spec-decode counters now (None: no counters or unreachable)."""
    url = base_url.rstrip("/").removesuffix("/v1") + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return spec_counters(parse_metrics(resp.read().decode(errors="replace")))
    except OSError:
        return None


def spec_delta(before: dict | None, after: dict | None) -> dict[str, float] | None:
    """after - before, when both were read."""
    if before is None or after is None:
        return None
    return {k: after[k] - before[k] for k in SPEC_COUNTERS}
