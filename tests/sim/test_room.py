"""Vectorized live rooms: jit/vmap, determinism, bookkeeping, timelines, statistics,
bit-exact agreement with the per-room Python twin, and host snapshots."""

import dataclasses
from math import comb

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sim import room
from sim import room_python as rp
from sim.catalog import make_catalog
from sim.types import INTENTS, LANGS, FlashSale
from sim.viewers import DEFAULT_INTENT_MIX, DEFAULT_LANG_MIX, mix_vector

R = 8  # rooms in most tests


@pytest.fixture(scope="module")
def catalogs():
    return [make_catalog("train", s) for s in range(R)]


@pytest.fixture(scope="module")
def params(catalogs):
    return room.make_params(catalogs, campaign_time=30.0)


def _keys(seed, n=R):
    return jax.random.split(jax.random.key(seed), n)


def _repeat(action, n_steps):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n_steps, *x.shape)), action)


def _np(tree):
    return jax.tree.map(np.asarray, tree)


def _room(tree, r):
    return jax.tree.map(lambda x: x[r], tree)


def test_reset_and_step_are_jittable_and_vmappable(params):
    state = room.reset_batch(_keys(0), params)
    chex.assert_equal_shape([state.stock, params.stock])  # [R, P]
    chex.assert_shape(state.queue, (R, params.queue_size, room.N_FIELDS))
    action = room.RoomAction.keep(R, answer=1)
    batched, obs = room.step_batch(_keys(1), state, action, params)
    chex.assert_shape(obs.messages, (R, params.max_new, room.N_FIELDS))
    chex.assert_equal_shape([obs.price_now, params.stock])
    # vmap over rooms == one jitted room at a time
    one = jax.jit(room.step)
    for r in range(3):
        s0, a0, p0 = (_room(t, r) for t in (state, action, params))
        s, o = one(_keys(1)[r], s0, a0, p0)
        chex.assert_trees_all_equal((s, o), _room((batched, obs), r))


def test_same_key_same_bytes(params):
    state = room.reset_batch(_keys(0), params)
    actions = _repeat(room.RoomAction.keep(R, answer=1), 40)
    runs = [room.rollout(jax.random.key(k), state, actions, params) for k in (7, 7, 8)]
    a, b, c = ([np.asarray(x).tobytes() for x in jax.tree.leaves(r)] for r in runs)
    assert a == b
    assert a != c
    # rollout is the scan of step with its documented keys
    keys = jax.random.split(jax.random.key(7), (40, R))
    s = state
    for t in range(40):
        action = jax.tree.map(lambda x, t=t: x[t], actions)
        s, _ = room.step_batch(keys[t], s, action, params)
    chex.assert_trees_all_equal(s, runs[0][0])


def test_stock_never_negative_and_units_conserved(params):
    hot = params.replace(
        stock=jnp.minimum(params.stock, 5), purchase_rate=jnp.full((R, 2), 3.0)
    )
    state = room.reset_batch(_keys(0), hot)
    actions = _repeat(room.RoomAction.keep(R), 60)
    final, obs = room.rollout(jax.random.key(1), state, actions, hot)
    assert int(obs.stock.min()) >= 0 and int(final.stock.min()) >= 0
    np.testing.assert_array_equal(final.stock + final.sold, hot.stock)
    np.testing.assert_array_equal(obs.sold.sum(0), final.sold)
    n = np.asarray(hot.n_links)[:, None]
    on_shelf = np.arange(hot.stock.shape[1])[None] < n
    assert (np.asarray(final.stock)[on_shelf] == 0).mean() > 0.9  # sold out
    assert (np.asarray(final.sold)[~on_shelf] == 0).all()  # padding never sells


def test_queue_pops_answered_and_counts_overflow(catalogs):
    p = room.make_params(catalogs[:2], arrival_rate=3.0, queue_size=6)
    state = room.reset_batch(_keys(0, 2), p)
    prev = [room.pending_codes(state, r) for r in range(2)]
    for t in range(40):
        answer = jnp.array([t % 3, 0], jnp.int32)  # room 1 never answers
        action = room.RoomAction(jnp.full((2,), -1, jnp.int32), answer)
        state, obs = room.step_batch(_keys(t, 2), state, action, p)
        o, s = _np(obs), _np(state)
        for r in range(2):
            popped = min(int(answer[r]), len(prev[r]))
            new = o.messages[r, : o.n_new[r]]
            assert (o.messages[r, o.n_new[r] :] == room.EMPTY).all()
            expect = np.concatenate([prev[r][popped:], new])[-6:]
            now = room.pending_codes(state, r)
            np.testing.assert_array_equal(now, expect)
            prev[r] = now
            assert s.arrived[r] == s.answered[r] + s.dropped[r] + s.count[r]
    assert s.dropped[1] > 0 and s.count[1] == 6  # full, and overflow counted
    assert s.answered[1] == 0 and s.answered[0] > 0
    # answering more than is pending pops what there is; negative pops nothing
    action = room.RoomAction(jnp.full((2,), -1, jnp.int32), jnp.array([99, -5]))
    after, _ = room.step_batch(_keys(99, 2), state, action, p)
    assert int(after.answered[0]) == s.answered[0] + s.count[0]
    assert int(after.answered[1]) == s.answered[1]


def test_flash_prices_and_campaign_switch_at_their_times(params):
    p = params.replace(
        flash_start=jnp.full_like(params.flash_start, 5.0),
        flash_end=jnp.full_like(params.flash_end, 8.0),
        flash_price=params.live_price * 0.5,
        campaign_time=jnp.array([30.0, -1.0, 0.0, np.inf, 3.0, 3.0, 3.0, 3.0]),
    )
    state = room.reset_batch(_keys(0), p)
    assert list(np.asarray(state.harness_version)[:4]) == [0, 0, 1, 0]
    n = np.asarray(p.n_links)[:, None]
    on_shelf = np.arange(p.stock.shape[1])[None] < n
    for t in range(1, 36):
        state, obs = room.step_batch(_keys(t), state, room.RoomAction.keep(R), p)
        clock = float(state.clock[0])
        assert clock == t
        sale = 5.0 <= clock < 8.0
        want = np.where(sale & on_shelf, p.flash_price, p.live_price)
        np.testing.assert_array_equal(obs.price_now, want)
        np.testing.assert_array_equal(room.price_now(state, p), want)
        version = np.asarray(state.harness_version)
        assert version[0] == (clock >= 30.0) and version[4] == (clock >= 3.0)
        assert version[1] == 0 and version[2] == 1 and version[3] == 0


def test_featuring_links(params):
    state = room.reset_batch(_keys(0), params)
    assert (np.asarray(state.featured) == 1).all()
    n = np.asarray(params.n_links)
    feature = jnp.array([2, -1, 0, int(n[3]) + 1, int(n[4]), 3, 3, 3], jnp.int32)
    state, _ = room.step_batch(
        _keys(1), state, room.RoomAction(feature, jnp.zeros(R, jnp.int32)), params
    )
    assert list(np.asarray(state.featured)[:5]) == [2, 1, 1, 1, n[4]]


def test_binomial_sampler_is_exact_inverse_cdf():
    u = jnp.arange(2**16, dtype=jnp.float32) * room.HALF  # every 16-bit uniform
    for mean, cap in ((0.5, 4), (3.0, 8)):
        counts = np.asarray(room._binomial(u, jnp.float32(mean), 64, cap))
        freq = np.bincount(counts, minlength=cap + 1) / 2**16
        p = mean / 64
        pmf = np.array([comb(64, i) * p**i * (1 - p) ** (64 - i) for i in range(cap)])
        np.testing.assert_allclose(freq[:cap], pmf, atol=2e-5)
        assert abs(freq[cap] - (1 - pmf.sum())) < 2e-5  # the capped tail


def test_arrivals_and_mixes_match_params_statistically(catalogs):
    rooms, steps = 64, 400
    cats = [catalogs[i % R] for i in range(rooms)]
    p = room.make_params(cats, arrival_rate=0.5, featured_share=0.4)
    state = room.reset_batch(_keys(0, rooms), p)
    actions = _repeat(room.RoomAction.keep(rooms, answer=4), steps)
    _, obs = room.rollout(jax.random.key(3), state, actions, p)
    n_new = np.asarray(obs.n_new)  # [T, R]
    assert abs(n_new.mean() - 0.5) < 0.02  # 25,600 room-steps: sd ~0.004
    assert abs(n_new.var() - 0.5 * (1 - 0.5 / 64)) < 0.03
    msgs = np.asarray(obs.messages)  # [T, R, C, W]
    real = msgs[..., 0] >= 0  # [T, R, C]
    rooms_of = np.broadcast_to(np.arange(rooms)[None, :, None], real.shape)[real]
    n_links = np.asarray(p.n_links)[rooms_of]
    msgs = msgs[real]  # [M, W], about 12,800 messages
    freq = np.bincount(msgs[:, 0], minlength=len(INTENTS)) / len(msgs)
    intent_p = mix_vector(DEFAULT_INTENT_MIX, INTENTS)
    np.testing.assert_allclose(freq, intent_p, atol=0.015)
    freq = np.bincount(msgs[:, 3], minlength=len(LANGS)) / len(msgs)
    np.testing.assert_allclose(freq, mix_vector(DEFAULT_LANG_MIX, LANGS), atol=0.015)
    link_p = np.asarray(p.intent_link_prob[0])
    for i in range(len(INTENTS)):
        named = (msgs[msgs[:, 0] == i, 1] > 0).mean()
        assert abs(named - link_p[i]) < 0.04, (INTENTS[i], named)
    has_attr = msgs[:, 2] >= 0
    np.testing.assert_array_equal(has_attr, room.INTENT_HAS_ATTRIBUTE[msgs[:, 0]])
    # a named link is the featured one (link 1 here) w.p. 0.4, else uniform
    linked = msgs[:, 1] > 0
    want = (0.4 + 0.6 / n_links[linked]).mean()
    assert abs((msgs[linked, 1] == 1).mean() - want) < 0.02
    assert (msgs[linked, 1] <= n_links[linked]).all()
    # attributes: valid for the link's category, at the viewer model's weights
    asked = (msgs[:, 2] >= 0) & (msgs[:, 1] > 0)
    cat = np.asarray(p.category)[rooms_of[asked], msgs[asked, 1] - 1]
    cdf = np.asarray(p.attribute_cdf)[0]  # [K, A], the same for every room
    weight = np.diff(cdf, prepend=0, axis=-1) / cdf[:, -1:]  # [K, A]
    assert (weight[cat, msgs[asked, 2]] > 0).all()
    freq = np.bincount(msgs[asked, 2], minlength=cdf.shape[1]) / asked.sum()
    np.testing.assert_allclose(freq, weight[cat].mean(0), atol=0.02)
    assert msgs[:, 5].max() < p.n_viewers[0] and msgs[:, 4].min() >= 0


def test_purchase_rates_follow_featured_and_flash(catalogs):
    rooms, steps = 32, 200
    cats = [catalogs[i % R] for i in range(rooms)]
    p = room.make_params(cats, purchase_rate=(0.05, 0.4), flash_boost=2.0)
    p = p.replace(
        stock=jnp.full_like(p.stock, 10**6),
        flash_start=jnp.where(jnp.arange(p.stock.shape[1]) == 1, 0.0, jnp.inf)
        + jnp.zeros_like(p.flash_start),
        flash_end=jnp.full_like(p.flash_end, 1e9),
    )
    state = room.reset_batch(_keys(0, rooms), p)
    final, _ = room.rollout(
        jax.random.key(5), state, _repeat(room.RoomAction.keep(rooms), steps), p
    )
    per_step = np.asarray(final.sold) / steps  # link 1 featured, link 2 on sale
    assert abs(per_step[:, 0].mean() - 0.4) < 0.03
    assert abs(per_step[:, 1].mean() - 0.1) < 0.015
    assert abs(per_step[:, 2].mean() - 0.05) < 0.01


def _same(state, obs, r, s: rp.State, o: rp.Obs):
    got = jax.tree.map(lambda x: np.asarray(x[r]), (state, obs))
    st, ob = got
    assert st.clock == s.clock and st.featured == s.featured
    np.testing.assert_array_equal(st.stock, s.stock)
    np.testing.assert_array_equal(st.sold, s.sold)
    np.testing.assert_array_equal(room.pending_codes(state, r), rp.pending(s))
    assert (st.arrived, st.answered, st.dropped) == (s.arrived, s.answered, s.dropped)
    assert st.harness_version == s.harness_version and st.step == s.step
    new = np.array(o.messages, np.int32).reshape(-1, room.N_FIELDS)
    np.testing.assert_array_equal(ob.messages[: ob.n_new], new)
    np.testing.assert_array_equal(ob.sold, o.sold)
    np.testing.assert_array_equal(ob.price_now, o.price_now)


def test_vectorized_and_python_rooms_agree_bit_for_bit(catalogs):
    rng = np.random.default_rng(0)
    p = room.make_params(
        catalogs,
        arrival_rate=rng.uniform(0.2, 5.0, R),
        intent_mix=rng.random((R, len(INTENTS))),
        lang_mix=rng.random((R, len(LANGS))),
        featured_share=rng.random(R),
        purchase_rate=(0.1, 0.8),
        dt=rng.uniform(0.5, 2.0, R),
        campaign_time=rng.uniform(-10, 100, R),
        n_viewers=rng.integers(1, 1000, R),
        queue_size=8,
    )
    width = p.stock.shape[1]
    p = p.replace(  # small stock sells out; every third link has a sale
        stock=jnp.minimum(p.stock, 25),
        flash_start=jnp.where(jnp.arange(width) % 3 == 0, 20.0, jnp.inf)
        + jnp.zeros_like(p.flash_start),
        flash_end=jnp.full_like(p.flash_end, 60.0),
    )
    state = room.reset_batch(_keys(0), p)
    twins = [rp.room_params(p, r) for r in range(R)]
    states = [rp.reset(t) for t in twins]
    draw = jax.jit(jax.vmap(room.draw_noise))
    for t in range(120):
        noise = draw(_keys(t), p)
        feature = rng.integers(-1, 18, R).astype(np.int32)
        answer = rng.integers(-1, 4, R).astype(np.int32)
        action = room.RoomAction(jnp.asarray(feature), jnp.asarray(answer))
        state, obs = room.step_batch_with_noise(noise, state, action, p)
        for r in range(R):
            twin_noise = rp.noise_of(noise, r)
            s, o = rp.step(twin_noise, states[r], feature[r], answer[r], twins[r])
            _same(state, obs, r, s, o)
    final = _np(state)
    assert final.dropped.sum() > 0 and final.harness_version.sum() > 0
    assert (final.stock == 0).any() and final.arrived.sum() > 500


def test_python_rooms_draw_their_own_noise(catalogs):
    twin = rp.room_params(room.make_params(catalogs[:1], arrival_rate=2.0), 0)
    s, rng = rp.reset(twin), np.random.default_rng(0)
    for _ in range(200):
        s, o = rp.step(rp.draw_noise(rng, twin), s, -1, 1, twin)
    assert s.arrived == s.answered + s.dropped + len(s.queue)
    assert 300 < s.arrived < 500 and (s.stock >= 0).all()


def test_snapshot_matches_the_arrays(catalogs):
    p = room.make_params(catalogs, campaign_time=50.0)
    # move every room's first sale (if any) to [10, 100) so snapshots see it live
    sale = np.isfinite(np.asarray(p.flash_start))
    p = p.replace(
        flash_start=jnp.where(sale, 10.0, jnp.inf).astype(jnp.float32),
        flash_end=jnp.where(sale, 100.0, jnp.inf).astype(jnp.float32),
    )
    cats = [
        dataclasses.replace(
            c,
            flash_sales=tuple(
                FlashSale(f.link_id, 10.0, 100.0, f.price) for f in c.flash_sales
            ),
        )
        for c in catalogs
    ]
    state = room.reset_batch(_keys(0), p)
    actions = _repeat(room.RoomAction(jnp.full((R,), 2), jnp.ones(R, jnp.int32)), 60)
    state, _ = room.rollout(jax.random.key(0), state, actions, p)
    prices = np.asarray(room.price_now(state, p))
    for r, c in enumerate(cats):
        snap = room.snapshot(state, p, r, c, f"room-{r}")
        assert snap.room_id == f"room-{r}" and snap.catalog is c
        assert snap.clock == 60.0 and snap.featured_link == 2
        assert snap.harness_version == "taolive_v2"
        assert snap.stock == {
            i + 1: int(x)
            for i, x in enumerate(np.asarray(state.stock[r])[: p.n_links[r]])
        }
        assert set(snap.active_flash) == {f.link_id for f in c.flash_sales}
        for link in range(1, len(c.products) + 1):
            assert np.float32(snap.price_now(link)) == prices[r, link - 1]
        assert snap.context()["stream_minute"] == 1
    early = room.reset_batch(_keys(0), p)
    snap = room.snapshot(early, p, 0, cats[0], "r")
    assert snap.active_flash == {} and snap.harness_version == "taolive_v1"
    codes = room.pending_codes(state, 0)
    assert codes.shape == (int(state.count[0]), room.N_FIELDS)
