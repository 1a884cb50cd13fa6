"""The room dynamics of `sim/room.py`, one room at a time, in plain Python and NumPy.

The throughput benchmark's baseline and an independent check of the vectorized
rooms: fed the same uint32 noise words (`noise_of` takes them from a JAX-drawn
`StepNoise`), `step` reproduces `room.step_with_noise` bit for bit, because every
float is float32 and goes through the same + - * / in the same order (see the
module docstring of `sim/room.py`). It shares the constants, not the code: the
queue is a deque, messages are generated one by one, categorical draws bisect.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import math

import numpy as np

from sim.room import (
    EMPTY,
    HALF,
    INTENT_HAS_ATTRIBUTE,
    MAX_SLOT_PROB,
    N_FIELDS,
    RoomParams,
    StepNoise,
    binomial_coefs,
)

f32 = np.float32


@dataclasses.dataclass
class Params:
    """One room's `RoomParams` as NumPy arrays and Python / float32 scalars."""

    live_price: np.ndarray  # [P] float32
    flash_start: np.ndarray
    flash_end: np.ndarray
    flash_price: np.ndarray
    stock: np.ndarray  # [P] int32
    n_links: int
    attribute_cdf: list[list[float]]  # per category: float32 running sums
    arrival_rate: np.float32
    intent_cdf: list[float]  # float32 running sums, as exact Python floats
    lang_cdf: list[float]
    intent_link_prob: list[float]
    featured_share: float
    purchase_rate: np.ndarray  # [2] float32: not featured, featured
    flash_boost: np.float32
    dt: np.float32
    campaign_time: float
    n_viewers: int
    category: list[int]  # [P]
    queue_size: int
    max_new: int
    slots: int
    max_units: int


def _cdf(weights: np.ndarray) -> list[float]:
    return [float(c) for c in np.cumsum(weights.astype(f32), dtype=f32)]


def room_params(params: RoomParams, room_index: int | None = None) -> Params:
    """Room `room_index` of a batch (None: an unbatched room) as plain `Params`."""

    def get(x):
        x = np.asarray(x)
        return x if room_index is None else x[room_index]

    return Params(
        live_price=get(params.live_price),
        flash_start=get(params.flash_start),
        flash_end=get(params.flash_end),
        flash_price=get(params.flash_price),
        stock=get(params.stock).astype(np.int32),
        n_links=int(get(params.n_links)),
        attribute_cdf=get(params.attribute_cdf).tolist(),
        arrival_rate=f32(get(params.arrival_rate)),
        intent_cdf=_cdf(get(params.intent_mix)),
        lang_cdf=_cdf(get(params.lang_mix)),
        intent_link_prob=get(params.intent_link_prob).tolist(),
        featured_share=float(get(params.featured_share)),
        purchase_rate=get(params.purchase_rate).astype(f32),
        flash_boost=f32(get(params.flash_boost)),
        dt=f32(get(params.dt)),
        campaign_time=float(get(params.campaign_time)),
        n_viewers=int(get(params.n_viewers)),
        category=get(params.category).tolist(),
        queue_size=params.queue_size,
        max_new=params.max_new,
        slots=params.slots,
        max_units=params.max_units,
    )


@dataclasses.dataclass
class State:
    clock: np.float32
    featured: int
    stock: np.ndarray  # [P] int32
    sold: np.ndarray  # [P] int32
    queue: collections.deque  # of message tuples, oldest first
    arrived: int = 0
    answered: int = 0
    dropped: int = 0
    harness_version: int = 0
    step: int = 0


@dataclasses.dataclass
class Noise:
    arrivals: int  # uint32; its top half is the arrival-count uniform
    purchases: np.ndarray  # [ceil(P / 2)] uint32
    messages: np.ndarray  # [C, 3] uint32


@dataclasses.dataclass
class Obs:
    messages: list[tuple[int, ...]]  # this step's new messages
    sold: np.ndarray  # [P] units sold this step
    price_now: np.ndarray  # [P]
    stock: np.ndarray  # [P]


def noise_of(noise: StepNoise, *index: int) -> Noise:
    """One room-step of JAX-drawn noise (index into its leading axes)."""
    return Noise(
        arrivals=int(np.asarray(noise.arrivals)[index]),
        purchases=np.asarray(noise.purchases)[index],
        messages=np.asarray(noise.messages)[index],
    )


def draw_noise(rng: np.random.Generator, p: Params) -> Noise:
    h = (len(p.stock) + 1) // 2
    words = rng.integers(0, 2**32, size=1 + h + 3 * p.max_new, dtype=np.uint32)
    return Noise(int(words[0]), words[1 : 1 + h], words[1 + h :].reshape(-1, 3))


def _campaign_on(clock, p: Params) -> bool:
    return p.campaign_time >= 0 and clock >= p.campaign_time


def reset(p: Params) -> State:
    return State(
        clock=f32(0.0),
        featured=1,
        stock=p.stock.copy(),
        sold=np.zeros_like(p.stock),
        queue=collections.deque(),
        harness_version=int(_campaign_on(0.0, p)),
    )


def binomial(u, mean, slots: int, cap: int):
    """min(Binomial(slots, mean / slots), cap) by inverse CDF (scalar or array)."""
    p = np.minimum(mean / f32(slots), MAX_SLOT_PROB)
    q = f32(1.0) - p
    pmf = q
    for _ in range(int(math.log2(slots))):
        pmf = pmf * pmf
    ratio = p / q
    cdf = pmf
    count = (u >= cdf).astype(np.int32)
    for c in binomial_coefs(slots, cap):
        pmf = pmf * c * ratio
        cdf = cdf + pmf
        count = count + (u >= cdf)
    return count


def flash_active(clock, p: Params) -> np.ndarray:
    on_shelf = np.arange(len(p.stock)) < p.n_links
    return on_shelf & (p.flash_start <= clock) & (clock < p.flash_end)


def _pick(cdf: list[float], u16: int) -> int:
    """The categorical draw of `room._categorical`: bisect the float32 running sums."""
    return bisect.bisect_right(cdf, float(f32(u16 * HALF) * f32(cdf[-1])))


def _message(words: np.ndarray, featured: int, p: Params) -> tuple[int, ...]:
    w0, w1, w2 = (int(w) for w in words)
    intent = _pick(p.intent_cdf, w0 >> 16)
    lang = _pick(p.lang_cdf, w0 & 0xFFFF)
    v = w1 >> 16
    t_link = int(f32(p.intent_link_prob[intent]) * f32(2**16))
    t_featured = int(f32(p.featured_share) * f32(t_link))
    about = featured
    if t_featured <= v < t_link:
        about = (v - t_featured) % p.n_links + 1
    cdf = p.attribute_cdf[p.category[about - 1]]
    attribute = EMPTY
    if INTENT_HAS_ATTRIBUTE[intent] and cdf[-1] > 0:
        attribute = _pick(cdf, w1 & 0xFFFF)
    link = about if v < t_link else 0
    return (intent, link, attribute, lang, w2 >> 16, (w2 & 0xFFFF) % p.n_viewers)


def _purchases(noise: Noise, s: State, flash: np.ndarray, p: Params) -> np.ndarray:
    n = len(s.stock)
    w = noise.purchases
    u = np.concatenate([w >> 16, w & 0xFFFF])[:n].astype(f32) * HALF
    rate = np.full(n, p.purchase_rate[0], f32)
    rate[s.featured - 1] = p.purchase_rate[1]
    rate = np.where(flash, rate * p.flash_boost, rate)
    units = binomial(u, rate * p.dt, p.slots, p.max_units)
    units[p.n_links :] = 0
    return np.minimum(units, s.stock).astype(np.int32)


def step(
    noise: Noise, s: State, feature: int, answer: int, p: Params
) -> tuple[State, Obs]:
    """`room.step_with_noise` for one room; updates `s` in place and returns it."""
    if 1 <= feature <= p.n_links:
        s.featured = int(feature)
    popped = min(max(int(answer), 0), len(s.queue))
    for _ in range(popped):
        s.queue.popleft()
    s.answered += popped
    s.clock = f32(s.clock + p.dt)
    flash = flash_active(s.clock, p)
    sold = _purchases(noise, s, flash, p)
    s.stock = s.stock - sold
    s.sold = s.sold + sold

    u = f32((noise.arrivals >> 16) * HALF)
    n_new = int(binomial(u, p.arrival_rate * p.dt, p.slots, p.max_new))
    new = [_message(noise.messages[i], s.featured, p) for i in range(n_new)]
    s.queue.extend(new)
    s.arrived += n_new
    while len(s.queue) > p.queue_size:
        s.queue.popleft()
        s.dropped += 1
    if _campaign_on(s.clock, p):
        s.harness_version = 1
    s.step += 1
    prices = np.where(flash, p.flash_price, p.live_price)
    return s, Obs(new, sold, prices, s.stock)


def pending(s: State) -> np.ndarray:
    """The pending messages, oldest first: [n, W] int32 (as `room.pending_codes`)."""
    return np.asarray(list(s.queue), np.int32).reshape(-1, N_FIELDS)
