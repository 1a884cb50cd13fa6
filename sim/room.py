"""Live-room dynamics over a batch of rooms: a stateless, gymnax-style environment.

`reset(key, params)` and `step(key, state, action, params)` are pure functions of
one room; `reset_batch` / `step_batch` / `rollout` jit and vmap them over rooms.
Text stays at the edge: a message is six int32 codes (`sim.viewers.MESSAGE_FIELDS`),
rendered by `render_message`; `snapshot` pulls one room back to a `RoomSnapshot`.

Randomness is drawn as raw uint32 words (`draw_noise`: 1 + ceil(P / 2) + 3C per
room-step, mostly split into 16-bit uniforms); everything after that
(`step_with_noise`) uses only integer ops, comparisons and float32 + - * / in a
fixed order, so the NumPy twin in `sim/room_python.py`, fed the same words,
reproduces a trajectory bit for bit (on CPU; XLA:GPU may fuse a * b + c into an
FMA, which can move a CDF's last bit and, rarely, a draw). For the same reason
counts are binomial: a step is cut into `slots` sub-slots that each hold an event
with probability rate * dt / slots (a discretized Poisson process: same mean,
variance smaller by the factor 1 - rate * dt / slots), sampled by inverse CDF
without exp or log, and capped (C messages, `max_units` units per link).

Shapes: R rooms, P links (padded; link id = index + 1), Q queue slots, C new
messages per step at most, W = 6 message fields, I intents, L languages,
K categories, A attributes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jaxtyping import Array, Bool, Float, Int, UInt32

from hat_jax.harness.builtin import BUILTIN
from sim.catalog import catalog_arrays
from sim.types import INTENTS, LANGS, Catalog, RoomSnapshot
from sim.viewers import (
    DEFAULT_INTENT_MIX,
    DEFAULT_LANG_MIX,
    INTENTS_WITH_ATTRIBUTE,
    MESSAGE_FIELDS,
    N_VIEWERS,
    code_tables,
    mix_vector,
)

N_FIELDS = len(MESSAGE_FIELDS)
EMPTY = -1  # queue slots and message rows that hold nothing; "no attribute"
INTENT_HAS_ATTRIBUTE = np.array([i in INTENTS_WITH_ATTRIBUTE for i in INTENTS])
MAX_SLOT_PROB = np.float32(0.5)  # rates above slots / (2 dt) saturate
HALF = np.float32(2.0**-16)  # 16-bit uniforms: the two halves of a word
f32 = np.float32
MAX_VIEWERS = min(N_VIEWERS, 2**16)  # viewer ids are 16-bit draws


@struct.dataclass
class RoomParams:
    """One room's world and rates (a leading [R] axis on every array for a batch)."""

    live_price: Float[Array, " P"]
    flash_start: Float[Array, " P"]  # inf where a link has no flash sale
    flash_end: Float[Array, " P"]
    flash_price: Float[Array, " P"]
    stock: Int[Array, " P"]  # initial units (0 on padding links)
    category: Int[Array, " P"]  # index into CATEGORIES
    n_links: Int[Array, ""]  # links 1..n_links are on the shelf
    attribute_cdf: Float[Array, "K A"]  # per category: running sums of attribute
    # weights, left to right (flat where the category lacks an attribute)
    arrival_rate: Float[Array, ""]  # viewer messages per second
    intent_mix: Float[Array, " I"]  # relative weights (need not sum to 1)
    lang_mix: Float[Array, " L"]
    intent_link_prob: Float[Array, " I"]  # P(a message of this intent names a link)
    featured_share: Float[Array, ""]  # P(a named link is the featured one)
    purchase_rate: Float[Array, " 2"]  # units / s per link: [not featured, featured]
    flash_boost: Float[Array, ""]  # purchase-rate multiplier during a flash sale
    dt: Float[Array, ""]  # seconds per step
    campaign_time: Float[Array, ""]  # harness version 0 -> 1 here; < 0 or inf: never
    n_viewers: Int[Array, ""]  # viewer ids are 0..n_viewers-1 (at most 2^16)
    queue_size: int = struct.field(pytree_node=False, default=64)  # Q
    max_new: int = struct.field(pytree_node=False, default=4)  # C; more are cut
    slots: int = struct.field(pytree_node=False, default=64)  # sub-slots per step
    max_units: int = struct.field(pytree_node=False, default=4)  # per link, per step


@struct.dataclass
class RoomState:
    clock: Float[Array, ""]  # seconds since the stream started
    featured: Int[Array, ""]  # link id on screen
    stock: Int[Array, " P"]
    sold: Int[Array, " P"]  # units sold so far
    queue: Int[Array, "Q W"]  # ring buffer: slots head .. head+count-1 (mod Q) pend
    head: Int[Array, ""]  # slot of the oldest pending message
    count: Int[Array, ""]
    arrived: Int[Array, ""]  # messages that entered the queue so far
    answered: Int[Array, ""]  # popped by actions
    dropped: Int[Array, ""]  # pushed out by overflow (oldest first)
    harness_version: Int[Array, ""]  # 0 before the campaign switch, 1 after
    step: Int[Array, ""]


@struct.dataclass
class RoomAction:
    feature: Int[Array, ""]  # link id to put on screen; -1 (or invalid) keeps
    answer: Int[Array, ""]  # pending messages answered: popped from the front

    @classmethod
    def keep(cls, n_rooms: int | None = None, answer: int = 0) -> RoomAction:
        shape = () if n_rooms is None else (n_rooms,)
        return cls(
            feature=jnp.full(shape, -1, jnp.int32),
            answer=jnp.full(shape, answer, jnp.int32),
        )


@struct.dataclass
class StepNoise:
    """All the randomness of one step of one room, as raw uint32 words; a|b names
    what a word's high | low 16-bit halves decide."""

    arrivals: UInt32[Array, ""]  # arrival count | (unused)
    purchases: UInt32[Array, " H"]  # H = ceil(P / 2): units of link l | link H + l
    messages: UInt32[Array, "C 3"]  # intent|lang, link|attribute, variant|viewer


@struct.dataclass
class RoomObs:
    messages: Int[Array, "C W"]  # this step's new messages; EMPTY past n_new
    n_new: Int[Array, ""]
    sold: Int[Array, " P"]  # units sold this step
    price_now: Float[Array, " P"]
    stock: Int[Array, " P"]


# --- derived quantities -------------------------------------------------------------


def flash_active(clock: Float[Array, ""], params: RoomParams) -> Bool[Array, " P"]:
    """Links on a flash sale at `clock` (one room, or a batch: [R] -> [R, P])."""
    on_shelf = jnp.arange(params.stock.shape[-1]) < params.n_links[..., None]
    clock = jnp.asarray(clock)[..., None]
    return on_shelf & (params.flash_start <= clock) & (clock < params.flash_end)


def price_now(state: RoomState, params: RoomParams) -> Float[Array, " P"]:
    """Flash price where a sale is live, else the live-room price ([P] or [R, P])."""
    return jnp.where(
        flash_active(state.clock, params), params.flash_price, params.live_price
    )


def _campaign_on(clock, params: RoomParams) -> Bool[Array, ""]:
    return (params.campaign_time >= 0) & (clock >= params.campaign_time)


# --- sampling primitives (mirrored op for op in sim/room_python.py) -----------------


def _hi(w: Array) -> Array:
    return (w >> 16).astype(jnp.int32)


def _lo(w: Array) -> Array:
    return (w & 0xFFFF).astype(jnp.int32)


def binomial_coefs(slots: int, cap: int) -> list[np.float32]:
    """pmf(k) / pmf(k - 1) / (p / q) = (slots - k + 1) / k for k = 1..cap-1."""
    assert slots & (slots - 1) == 0, "slots must be a power of two"
    return [np.float32((slots - k + 1) / k) for k in range(1, cap)]


def _binomial(u: Array, mean: Array, slots: int, cap: int) -> Array:
    """min(Binomial(slots, mean / slots), cap) by inverse CDF of uniforms u."""
    p = jnp.minimum(mean / np.float32(slots), MAX_SLOT_PROB)
    q = np.float32(1.0) - p
    pmf = q
    for _ in range(int(math.log2(slots))):  # q ** slots by squaring
        pmf = pmf * pmf
    ratio = p / q
    cdf = pmf
    count = (u >= cdf).astype(jnp.int32)
    for c in binomial_coefs(slots, cap):
        pmf = pmf * c * ratio
        cdf = cdf + pmf
        count = count + (u >= cdf).astype(jnp.int32)
    return count


def _categorical(u: Array, weights: Float[Array, " N"]) -> Int[Array, ""]:
    """Index i with cdf[i-1] <= u * total < cdf[i], the cdf summed strictly left to
    right (jnp.cumsum may reassociate). u < 1 on a 2^-16 grid, so u * total < total
    and a zero-weight index is never chosen."""
    cdf = [weights[0]]
    for i in range(1, weights.shape[-1]):
        cdf.append(cdf[-1] + weights[i])
    return (jnp.stack(cdf) <= u * cdf[-1]).sum()


# --- the environment ----------------------------------------------------------------


def reset(key: jax.Array, params: RoomParams) -> RoomState:
    """A stream at second 0: link 1 on screen, full stock, no messages. (`key` is
    unused: the start is deterministic; it keeps the gymnax signature.)"""
    del key
    zero = jnp.zeros((), jnp.int32)
    clock = jnp.zeros((), jnp.float32)
    return RoomState(
        clock=clock,
        featured=jnp.ones((), jnp.int32),
        stock=params.stock.astype(jnp.int32),
        sold=jnp.zeros_like(params.stock, jnp.int32),
        queue=jnp.full((params.queue_size, N_FIELDS), EMPTY, jnp.int32),  # [Q, W]
        head=zero,
        count=zero,
        arrived=zero,
        answered=zero,
        dropped=zero,
        harness_version=_campaign_on(clock, params).astype(jnp.int32),
        step=zero,
    )


def draw_noise(key: jax.Array, params: RoomParams) -> StepNoise:
    h, c = (params.stock.shape[-1] + 1) // 2, params.max_new
    words = jax.random.bits(key, (1 + h + 3 * c,), jnp.uint32)
    return StepNoise(
        arrivals=words[0],
        purchases=words[1 : 1 + h],
        messages=words[1 + h :].reshape(c, 3),  # [C, 3]
    )


def _uniform(halves: Array) -> Float[Array, "..."]:
    return halves.astype(jnp.float32) * HALF


def _purchases(noise, featured, stock, flash, params: RoomParams) -> Int[Array, " P"]:
    """Units sold per link: binomial at the link's rate, at most its stock."""
    links = jnp.arange(stock.shape[-1])  # [P]
    w = noise.purchases
    u = _uniform(jnp.concatenate([_hi(w), _lo(w)])[: links.shape[0]])  # [P]
    rate = jnp.where(
        links == featured - 1, params.purchase_rate[1], params.purchase_rate[0]
    )
    rate = jnp.where(flash, rate * params.flash_boost, rate)
    units = _binomial(u, rate * params.dt, params.slots, params.max_units)
    return jnp.where(links < params.n_links, jnp.minimum(units, stock), 0)


def _messages(noise, featured, params: RoomParams) -> Int[Array, "C W"]:
    m = noise.messages  # [C, 3]
    each = jax.vmap(_categorical, (0, None))
    intent = each(_uniform(_hi(m[:, 0])), params.intent_mix)  # [C]
    lang = each(_uniform(_lo(m[:, 0])), params.lang_mix)
    # One 16-bit draw v names a link (v < t_link), the featured one (v < t_featured)
    # or link (v - t_featured) % n + 1; thresholds are exact float32 -> int.
    v = _hi(m[:, 1])
    t_link = (params.intent_link_prob[intent] * np.float32(2**16)).astype(jnp.int32)
    t_featured = (params.featured_share * t_link.astype(jnp.float32)).astype(jnp.int32)
    other = (v - t_featured) % params.n_links + 1
    about = jnp.where((v < t_featured) | (v >= t_link), featured, other)
    cdf = params.attribute_cdf[params.category[about - 1]]  # [C, A]
    total = cdf[:, -1]  # [C]
    attribute = (cdf <= (_uniform(_lo(m[:, 1])) * total)[:, None]).sum(-1)
    asks = jnp.asarray(INTENT_HAS_ATTRIBUTE)[intent] & (total > 0)
    attribute = jnp.where(asks, attribute, EMPTY)
    link = jnp.where(v < t_link, about, 0)
    viewer = _lo(m[:, 2]) % params.n_viewers
    fields = (intent, link, attribute, lang, _hi(m[:, 2]), viewer)
    # Materialize the fields first: fused into the stack, XLA would compute every
    # field for every element of it.
    fields = jax.lax.optimization_barrier([f.astype(jnp.int32) for f in fields])
    return jnp.stack(fields, axis=-1)  # [C, W]


def _push_pop(queue, head, count, popped, new, n_new):
    """Ring buffer: pop `popped` from the front, then append new[:n_new], pushing
    out the oldest on overflow. Only the new rows are written (needs C <= Q)."""
    q, c = queue.shape[0], new.shape[0]
    head = (head + popped) % q
    count = count - popped
    pos = (head + count + jnp.arange(c)) % q  # [C]
    pos = jnp.where(jnp.arange(c) < n_new, pos, q)  # q is out of range: no write
    queue = queue.at[pos].set(new, mode="drop")
    over = jnp.maximum(count + n_new - q, 0)
    return queue, (head + over) % q, count + n_new - over, over


def step_with_noise(
    noise: StepNoise, state: RoomState, action: RoomAction, params: RoomParams
) -> tuple[RoomState, RoomObs]:
    """One step of `params.dt` seconds, with its randomness given."""
    feature = action.feature
    valid = (feature >= 1) & (feature <= params.n_links)
    featured = jnp.where(valid, feature, state.featured).astype(jnp.int32)
    popped = jnp.clip(action.answer, 0, state.count).astype(jnp.int32)
    clock = state.clock + params.dt
    flash = flash_active(clock, params)
    sold = _purchases(noise, featured, state.stock, flash, params)
    mean = params.arrival_rate * params.dt
    n_new = _binomial(_uniform(_hi(noise.arrivals)), mean, params.slots, params.max_new)
    new = _messages(noise, featured, params)
    new = jnp.where((jnp.arange(params.max_new) < n_new)[:, None], new, EMPTY)
    queue, head, count, pushed_out = _push_pop(
        state.queue, state.head, state.count, popped, new, n_new
    )
    on = _campaign_on(clock, params)
    state = RoomState(
        clock=clock,
        featured=featured,
        stock=state.stock - sold,
        sold=state.sold + sold,
        queue=queue,
        head=head,
        count=count,
        arrived=state.arrived + n_new,
        answered=state.answered + popped,
        dropped=state.dropped + pushed_out,
        harness_version=jnp.where(on, 1, state.harness_version).astype(jnp.int32),
        step=state.step + 1,
    )
    prices = jnp.where(flash, params.flash_price, params.live_price)
    obs = RoomObs(new, n_new, sold, prices, state.stock)
    return state, obs


def step(
    key: jax.Array, state: RoomState, action: RoomAction, params: RoomParams
) -> tuple[RoomState, RoomObs]:
    """One step: advance the clock by dt, apply the action, sell, receive messages.

    Order within a step: the action (feature a link, pop answered messages), the
    clock, then purchases and arrivals under the new clock's flash sales and the
    new featured link, then the campaign switch.
    """
    return step_with_noise(draw_noise(key, params), state, action, params)


reset_batch = jax.jit(jax.vmap(reset))  # keys [R], params [R, ...] -> RoomState [R]
step_batch = jax.jit(jax.vmap(step))  # keys [R], states, actions [R], params [R]
step_batch_with_noise = jax.jit(jax.vmap(step_with_noise))


@jax.jit
def rollout(
    key: jax.Array, state: RoomState, actions: RoomAction, params: RoomParams
) -> tuple[RoomState, RoomObs]:
    """T steps of R rooms in one call: actions [T, R] -> final state, obs [T, R].

    Room r's step t gets key split(key, (T, R))[t, r] (split once, up front: one
    large threefry call is much cheaper on CPU than T small ones).
    """

    def body(state, xs):
        keys, action = xs  # [R], [R]
        return jax.vmap(step)(keys, state, action, params)

    keys = jax.random.split(key, actions.answer.shape)  # [T, R]
    return jax.lax.scan(body, state, (keys, actions))


# --- host side ----------------------------------------------------------------------


def _room(tree, room_index: int | None):
    """One room of a batch (or an unbatched room) as NumPy leaves."""
    if room_index is None:
        return jax.tree.map(np.asarray, tree)
    return jax.tree.map(lambda x: np.asarray(x[room_index]), tree)


def pending_codes(state: RoomState, room_index: int | None = None) -> np.ndarray:
    """The pending messages of one room (of a batch, or unbatched), oldest first:
    [n, W] int32."""
    s = _room(state, room_index)
    return s.queue[(int(s.head) + np.arange(int(s.count))) % len(s.queue)]


def snapshot(
    state: RoomState,
    params: RoomParams,
    room_index: int | None,
    catalog: Catalog,
    room_id: str,
    *,
    harness_names: tuple[str, str] = BUILTIN[:2],
) -> RoomSnapshot:
    """One room as plain Python, for tools and judges. Flash prices are taken from
    the catalog's `FlashSale` records (exact decimals) for the links the arrays
    say are on sale now."""
    s, p = _room(state, room_index), _room(params, room_index)
    n = int(p.n_links)
    assert n == len(catalog.products), (n, len(catalog.products))
    clock = float(s.clock)
    on = np.asarray(flash_active(s.clock, p))
    active = {}
    for link in np.flatnonzero(on[:n]) + 1:
        sales = [f for f in catalog.flash_sales if f.link_id == link]
        now = [f for f in sales if f.start <= clock < f.end] or sales
        active[int(link)] = now[0].price if now else float(p.flash_price[link - 1])
    return RoomSnapshot(
        room_id=room_id,
        catalog=catalog,
        clock=clock,
        featured_link=int(s.featured),
        stock={i + 1: int(s.stock[i]) for i in range(n)},
        active_flash=active,
        harness_version=harness_names[int(s.harness_version)],
    )


def _per_room(value, n_rooms: int, tail: tuple[int, ...], dtype) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype), (n_rooms, *tail)).copy()


def _weights(mix, names: tuple[str, ...]) -> np.ndarray:
    return mix_vector(mix, names) if isinstance(mix, Mapping) else np.asarray(mix)


def params_from_arrays(
    arrays: Sequence[Mapping[str, np.ndarray]],
    tables: Sequence[Mapping[str, np.ndarray]],
    *,
    max_links: int | None = None,
    arrival_rate=0.5,
    intent_mix=DEFAULT_INTENT_MIX,
    lang_mix=DEFAULT_LANG_MIX,
    intent_link_prob=None,
    featured_share=0.5,
    purchase_rate=(0.01, 0.1),
    flash_boost=3.0,
    dt=1.0,
    campaign_time=-1.0,
    n_viewers=MAX_VIEWERS,
    queue_size: int = 64,
    max_new: int = 4,
    slots: int = 64,
    max_units: int = 4,
) -> RoomParams:
    """Params for R rooms from per-room `catalog_arrays` and `code_tables` dicts.

    Links are padded to `max_links` (default: the largest catalog). Each rate is one
    value for all rooms or one per room ([R], or [R, I] for a mix); mixes may be
    dicts over INTENTS / LANGS. `intent_link_prob` defaults to the tables'.
    """
    assert max_new <= queue_size, (max_new, queue_size)
    assert np.all(np.asarray(n_viewers) <= 2**16), "viewer ids are 16-bit draws"
    r, n = len(arrays), [len(a["live_price"]) for a in arrays]
    width = max_links or max(n)
    assert width >= max(n) and len(tables) == r, (width, n, len(tables))
    pads = {"live_price": 0.0, "flash_start": np.inf, "flash_end": np.inf}
    pads |= {"flash_price": -1.0, "stock": 0, "category": 0}
    cols = {}
    for name, fill in pads.items():
        col = np.full((r, width), fill, np.int32 if isinstance(fill, int) else f32)
        for i, a in enumerate(arrays):
            col[i, : n[i]] = a[name]
        cols[name] = col
    attr = np.stack(
        [np.where(t["attr_valid"], np.exp(t["attr_logits"]), 0) for t in tables]
    ).astype(f32)  # [R, K, A]
    if intent_link_prob is None:
        intent_link_prob = np.stack([t["intent_link_prob"] for t in tables])
    n_i, n_l = (len(INTENTS),), (len(LANGS),)
    params = RoomParams(
        **cols,
        n_links=np.asarray(n, np.int32),
        attribute_cdf=np.cumsum(attr, axis=-1, dtype=f32),  # sequential: exact
        arrival_rate=_per_room(arrival_rate, r, (), f32),
        intent_mix=_per_room(_weights(intent_mix, INTENTS), r, n_i, f32),
        lang_mix=_per_room(_weights(lang_mix, LANGS), r, n_l, f32),
        intent_link_prob=_per_room(intent_link_prob, r, n_i, f32),
        featured_share=_per_room(featured_share, r, (), f32),
        purchase_rate=_per_room(purchase_rate, r, (2,), f32),
        flash_boost=_per_room(flash_boost, r, (), f32),
        dt=_per_room(dt, r, (), f32),
        campaign_time=_per_room(campaign_time, r, (), f32),
        n_viewers=_per_room(n_viewers, r, (), np.int32),
        queue_size=queue_size,
        max_new=max_new,
        slots=slots,
        max_units=max_units,
    )
    return jax.tree.map(jnp.asarray, params)


def make_params(catalogs: Sequence[Catalog], **rates) -> RoomParams:
    """Params for one room per catalog; `rates` as in `params_from_arrays`."""
    arrays = [catalog_arrays(c) for c in catalogs]
    return params_from_arrays(arrays, [code_tables(c) for c in catalogs], **rates)
