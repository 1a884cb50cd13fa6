"""HSA-RL: episodes and segments, advantages, the jitted step, sampler parity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.harness.trajectory import Trajectory
from hat_jax.losses.policy import segment_advantages
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.text.toolcall import ToolCall
from hat_jax.train.rl import compute_advantages, jit_rl_step
from hat_jax.train.rl_batch import (
    episode_from_tokens,
    episode_from_trajectory,
    episodes_to_batch,
)
from hat_jax.train.state import init_state, make_optimizer
from tests.rl_helpers import REWARDS, random_batch, rl_config, tiny_model


def _traj(tokenizer, *, reply_tokens=None) -> Trajectory:
    """A tool call, then a reply; generations = the rendered assistant runs."""
    messages = [
        {"role": "system", "content": "You are a host."},
        {"role": "user", "content": "How much is link 3?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning": "I need the price first.",
            "tool_calls": [ToolCall("get_price", {"link_id": 3})],
        },
        {"role": "tool", "name": "get_price", "content": '{"price": 99}'},
        {"role": "assistant", "content": "Link 3 is 99 yuan!"},
    ]
    traj = Trajectory("h@1", "How much is link 3?", messages)
    ids, mask = trajectory_to_tokens(traj, tokenizer)
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    runs = [ids[s:e].tolist() for s, e in zip(edges[::2], edges[1::2])]
    assert len(runs) == 2
    if reply_tokens is not None:
        runs[1] = reply_tokens
    traj.meta["generations"] = [
        {"tokens": r, "logprobs": [-0.5 - 0.01 * i for i in range(len(r))]}
        for r in runs
    ]
    return traj


def test_segments_cover_each_trained_token_once(tokenizer):
    traj = _traj(tokenizer)
    rewards = dict.fromkeys(REWARDS, 1.0)
    ep = episode_from_trajectory(traj, tokenizer, rewards=rewards, group=0)
    ids, mask = trajectory_to_tokens(traj, tokenizer)
    np.testing.assert_array_equal(ep.ids, ids)
    assert ep.mismatches == 0
    # every produced token in exactly one of the two segments, nothing else trained
    tool, reply = ep.segments == 1, ep.segments == 2
    assert not (tool & reply).any()
    np.testing.assert_array_equal(tool | reply, mask)
    assert set(np.unique(ep.segments)) == {0, 1, 2}
    # the tool run comes first, the reply run last
    assert np.flatnonzero(tool).max() < np.flatnonzero(reply).min()
    assert ep.reasoning[0] == len(tokenizer.encode("I need the price first."))
    assert ep.reasoning[1] == 0
    np.testing.assert_array_equal(ep.logprobs != 0, mask)
    # the batch shifts by one: position t is trained on target ids[t + 1]
    b = episodes_to_batch([ep], pad_to=len(ids) + 5)
    np.testing.assert_array_equal(b["targets"][0, : len(ids) - 1], ids[1:])
    np.testing.assert_array_equal(b["segments"][0, : len(ids) - 1], ep.segments[1:])
    assert b["segments"][0, len(ids) - 1 :].sum() == 0
    assert b["rewards"].shape == (1, 1, 4)


def test_mismatched_run_is_counted_then_skipped_or_spliced(tokenizer):
    sampled = tokenizer.encode("something else entirely<|im_end|>")
    traj = _traj(tokenizer, reply_tokens=sampled)
    rewards = dict.fromkeys(REWARDS, 0.0)
    skip = episode_from_trajectory(traj, tokenizer, rewards=rewards, group=0)
    assert skip.mismatches == 1
    assert (skip.segments == 2).sum() == 0 and (skip.segments == 1).sum() > 0
    splice = episode_from_trajectory(
        traj, tokenizer, rewards=rewards, group=0, on_mismatch="splice"
    )
    assert splice.mismatches == 1
    np.testing.assert_array_equal(splice.ids[-len(sampled) - 1 : -1], sampled)
    assert (splice.segments == 2).sum() == len(sampled)
    # the reply is the last run: splice_last trains it as splice does
    last = episode_from_trajectory(
        traj, tokenizer, rewards=rewards, group=0, on_mismatch="splice_last"
    )
    for key in ("ids", "segments", "logprobs", "loss_mask"):
        np.testing.assert_array_equal(getattr(last, key), getattr(splice, key))


def test_splice_last_leaves_an_earlier_mismatch_untrained(tokenizer):
    """A mismatched tool-call run is followed by the reply: splicing it would
    change the reply's context, so splice_last skips it and keeps the reply."""
    traj = _traj(tokenizer)
    sampled = tokenizer.encode("a call written some other way<|im_end|>")
    traj.meta["generations"][0] = {"tokens": sampled, "logprobs": [-1.0] * len(sampled)}
    rewards = dict.fromkeys(REWARDS, 0.0)
    ep = episode_from_trajectory(
        traj, tokenizer, rewards=rewards, group=0, on_mismatch="splice_last"
    )
    ids, _ = trajectory_to_tokens(traj, tokenizer)
    np.testing.assert_array_equal(ep.ids, ids)  # nothing spliced
    assert ep.mismatches == 1 and (ep.segments == 1).sum() == 0
    assert (ep.segments == 2).sum() > 0
    with pytest.raises(ValueError, match="on_mismatch"):
        episode_from_trajectory(
            traj, tokenizer, rewards=rewards, group=0, on_mismatch="x"
        )


def test_a_spliced_run_keeps_the_prefill_the_sampler_was_given(tokenizer):
    """The sampler saw the pre-fill ids before its first sampled token: a
    spliced run keeps them as untrained context."""
    traj = _traj(tokenizer)
    head = tokenizer.encode("<think>")
    sampled = tokenizer.encode("\nno</think>\n\nother words<|im_end|>")
    traj.meta["generations"][1] = {"tokens": sampled, "logprobs": [-1.0] * len(sampled)}
    rewards = dict.fromkeys(REWARDS, 0.0)
    ep = episode_from_trajectory(
        traj,
        tokenizer,
        rewards=rewards,
        group=0,
        on_mismatch="splice_last",
        prefill_ids=head,
    )
    tail = np.r_[head, sampled]
    np.testing.assert_array_equal(ep.ids[-len(tail) - 1 : -1], tail)
    np.testing.assert_array_equal(
        ep.segments[-len(tail) - 1 : -1] == 2,
        np.r_[np.zeros(len(head), bool), np.ones(len(sampled), bool)],
    )
    np.testing.assert_array_equal(ep.logprobs[-len(sampled) - 1 : -1], -1.0)


def test_tokens_the_render_adds_before_the_sampled_ones_are_a_mismatch(tokenizer):
    """An output that closes a think block it never opened is re-rendered with a
    ``<think>`` in front: a context the sampler never saw, so not trained; the
    same ids as the policy's pre-fill are the prompt's and align."""
    traj = _traj(tokenizer)
    run = traj.meta["generations"][0]["tokens"]
    head = tokenizer.encode("<think>")
    assert run[: len(head)] == head
    traj.meta["generations"][0] = {
        "tokens": run[len(head) :],
        "logprobs": [-0.5] * (len(run) - len(head)),
    }
    rewards = dict.fromkeys(REWARDS, 0.0)
    ep = episode_from_trajectory(traj, tokenizer, rewards=rewards, group=0)
    assert ep.mismatches == 1 and (ep.segments == 1).sum() == 0
    assert (ep.segments == 2).sum() > 0  # the reply run still aligns
    ep = episode_from_trajectory(
        traj, tokenizer, rewards=rewards, group=0, prefill_ids=head
    )
    assert (ep.segments == 1).sum() == len(run) - len(head)
    # the pre-fill applies to every call: the reply run, rendered without it,
    # is now the mismatch
    assert ep.mismatches == 1 and (ep.segments == 2).sum() == 0
    first = np.flatnonzero(ep.loss_mask)[0]
    assert (ep.segments[first : first + len(head)] == 0).all()  # the pre-fill


# ---------------------------------------------------------------- advantages
def _np_gdpo(r, w, eps=1e-6):
    z = (r - r.mean(1, keepdims=True)) / (r.std(1, keepdims=True) + eps)
    a = (z * w).sum(-1)
    return (a - a.mean()) / (a.std() + eps)


@pytest.mark.parametrize("coef", [0.0, 0.05])
def test_advantages_match_numpy(coef):
    n, g, t = 3, 4, 7
    rng = np.random.default_rng(0)
    rewards = rng.integers(0, 3, (n, g, 4)).astype(np.float32) / 2
    reasoning = rng.integers(0, 12, (n * g, 2)).astype(np.float32)
    segments = rng.integers(0, 3, (n * g, t)).astype(np.int32)
    cfg = rl_config(length_penalty={"coef": coef, "tool_target": 4, "reply_target": 2})
    adv = compute_advantages(jnp.asarray(rewards), jnp.asarray(reasoning), cfg.rl)
    table = {"tool": [0, 0, 1.0, 0.5], "reply": [1.0, 2.0, 0, 0]}
    want = {}
    for i, seg in enumerate(("tool", "reply")):
        r, w = rewards, np.asarray(table[seg])
        if coef:
            pen = coef * np.maximum(reasoning[:, i] - (4, 2)[i], 0)
            r = np.concatenate([r, -pen.reshape(n, g, 1)], -1)
            w = np.r_[w, 1.0]
        want[seg] = _np_gdpo(r, w)
        np.testing.assert_allclose(adv[seg], want[seg], atol=1e-5)
    tokens = segment_advantages(
        tool_advantages=adv["tool"],
        reply_advantages=adv["reply"],
        segment_ids=jnp.asarray(segments),
    )
    ref = np.where(
        segments == 1,
        want["tool"].reshape(-1, 1),
        np.where(segments == 2, want["reply"].reshape(-1, 1), 0.0),
    )
    np.testing.assert_allclose(tokens, ref, atol=1e-5)


def test_fold_gives_tool_free_sequences_both_advantages():
    """Rows without tool-call tokens carry tool + reply advantage on their reply."""
    rng = np.random.default_rng(1)
    tool_adv = rng.normal(size=(2, 3)).astype(np.float32)
    reply_adv = rng.normal(size=(2, 3)).astype(np.float32)
    segments = np.array(
        [[0, 1, 1, 2, 2], [0, 2, 2, 2, 0], [0, 0, 0, 0, 0]]
        + [[1, 0, 2, 0, 2], [2, 2, 0, 0, 0], [0, 1, 0, 0, 0]],
        np.int32,
    )
    got = segment_advantages(
        tool_advantages=jnp.asarray(tool_adv),
        reply_advantages=jnp.asarray(reply_adv),
        segment_ids=jnp.asarray(segments),
        fold_missing_tool=True,
    )
    ta, ra = tool_adv.reshape(-1), reply_adv.reshape(-1)
    for b, row in enumerate(segments):  # brute force, token by token
        for t, sid in enumerate(row):
            has_tool = bool((row == 1).any())
            want = {0: 0.0, 1: ta[b], 2: ra[b] + (0.0 if has_tool else ta[b])}[sid]
            assert abs(float(got[b, t]) - want) < 1e-6, (b, t)


# ---------------------------------------------------------------- the step
@pytest.mark.parametrize(
    "rl",
    [
        {
            "ratio": "token",
            "kl_coef": 0.1,
            "kl_estimator": "k3",
            "inner_steps": 2,
            "old_logp": "trainer",
        },
        {
            "ratio": "sequence",
            "kl_coef": 0.1,
            "kl_estimator": "k1",
            "advantage": "grpo",
        },
    ],
)
def test_rl_step_runs_three_steps(rl):
    cfg = rl_config(**rl)
    model = tiny_model()
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    ref = jax.tree.map(jnp.copy, state.params)
    before = jax.tree.map(np.asarray, state.params)
    step = jit_rl_step(graphdef, cfg)
    for s in range(3):
        state, m = step(state, random_batch(64, seed=s), jax.random.key(s), ref)
        m = jax.device_get(m)
        assert all(np.isfinite(v) for v in m.values()), m
    assert int(state.step) == 3 * cfg.rl.inner_steps
    assert m["rl/tokens_tool"] > 0 and m["rl/tokens_reply"] > 0
    assert set(REWARDS) <= {k.split("/")[-1] for k in m if k.startswith("rl/reward/")}
    changed = jax.tree.map(lambda a, b: np.abs(a - b).max(), before, state.params)
    assert max(jax.tree.leaves(changed)) > 0


@pytest.fixture(scope="module")
def bandit():
    """A toy bandit on real Sampler generations from a random tiny model.

    Reward = the share of sampled tokens equal to TARGET. Two groups with prompts
    of different lengths (so rows are padded differently). Records per step the
    mean reward, the trainer-vs-sampler gap, the ratio and the trained tokens.
    """
    from flax import nnx

    vocab, target, g, steps = 16, 5, 8, 30
    prompts = [[1, 2, 3], [4, 6, 7, 8, 9, 10, 11]]
    model = tiny_model(vocab=vocab, seed=2)
    sampler = Sampler(model, chunk=8)
    cfg = rl_config(
        reward_names=("hit",),
        segment_rewards={"reply": {"hit": 1.0}},
        advantage="grpo",
        ratio="sequence",
    )
    cfg.optim.lr = 3e-3
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    ref = jax.tree.map(jnp.copy, state.params)
    step = jit_rl_step(graphdef, cfg)
    sp = SamplingParams(max_new_tokens=8, temperature=1.0, stop_ids=(0,))
    rows = [p for p in prompts for _ in range(g)]
    log = {"reward": [], "gap": [], "ratio": [], "tokens": [], "sampled": []}
    for s in range(steps):
        outs = sampler.generate(rows, sp, seed=s)
        eps = []
        for i, (p, o) in enumerate(zip(rows, outs)):
            hit = float(np.mean(np.asarray(o.tokens) == target))
            eps.append(
                episode_from_tokens(
                    p, o.tokens, o.logprobs, rewards={"hit": hit}, group=i // g
                )
            )
        batch = episodes_to_batch(eps, pad_to=16)
        state, m = step(state, batch, jax.random.key(s), ref)
        sampler.update_params(nnx.merge(graphdef, state.params, state.frozen))
        log["reward"].append(np.mean([e.rewards["hit"] for e in eps]))
        log["gap"].append(float(m["rl/logprob_gap_max"]))
        log["ratio"].append(float(m["rl/ratio_mean"]))
        log["tokens"].append(float(m["rl/tokens_reply"]))
        log["sampled"].append(sum(len(o.tokens) for o in outs))
    return log


def test_sampler_and_trainer_logprobs_agree(bandit):
    """fp32: the trainer's recomputed log-probs equal the sampler's (<= 1e-4)."""
    assert max(bandit["gap"]) <= 1e-4, bandit["gap"]
    assert bandit["tokens"] == bandit["sampled"]  # every sampled token trained
    assert abs(bandit["ratio"][0] - 1.0) < 1e-4  # old params = sampler params


def test_bandit_learns_to_emit_the_target_token(bandit):
    curve = bandit["reward"]
    first, last = np.mean(curve[:5]), np.mean(curve[-5:])
    assert last > first + 0.2, curve


def test_agent_loop_episode_context_matches_the_sampler_prompt(tokenizer):
    """Through run_turns: the rendered context before the first assistant run is
    exactly the sampler's prompt, so the trainer recomputes its log-probs."""
    from hat_jax.harness import SamplerPolicy
    from hat_jax.harness.backend import StaticBackend
    from hat_jax.harness.loop import TurnRequest, run_turns
    from hat_jax.harness.spec import Harness, PromptLayout, Skill, Tool
    from hat_jax.train.rl import rl_logprobs

    harness = Harness(
        name="tiny",
        version="0",
        persona="You are a host.",
        rules=(),
        constraints=(),
        layout=PromptLayout(),
        turn_limit=2,
        retry_limit=1,
        skills=(Skill("qa", "reply", "Answer questions.", "Be brief."),),
        tools=(Tool("ping", "Ping.", {"type": "object", "properties": {}}),),
        hooks=(),
    )
    model = tiny_model(vocab=tokenizer.vocab_size, seed=3)
    policy = SamplerPolicy(
        Sampler(model, tokenizer, chunk=8),
        tokenizer,
        SamplingParams(max_new_tokens=6, temperature=1.0),
    )
    requests = [TurnRequest(f"question {i}?") for i in range(2)]
    trajs = run_turns(harness, requests, policy, StaticBackend({"ping": "pong"}))
    eps = [
        episode_from_trajectory(
            t, tokenizer, rewards={"r": 0.0}, group=0, on_mismatch="splice"
        )
        for t in trajs
    ]
    batch = episodes_to_batch(eps, pad_to=max(len(e.ids) for e in eps))
    graphdef, state = init_state(model, make_optimizer(rl_config().optim), seed=0)
    logp = jax.jit(rl_logprobs, static_argnames="graphdef")(
        state.params, state.frozen, batch, graphdef=graphdef
    )
    for i, ep in enumerate(eps):
        first = np.flatnonzero(ep.loss_mask)
        first = first[: np.argmax(np.diff(np.r_[first, -1]) != 1) + 1]  # run 0
        trained = first[ep.segments[first] > 0] - 1  # target-aligned positions
        assert len(trained) > 0
        # logp is over the K gathered positions: row i's k-th is trained_pos[i, k]
        ks = np.flatnonzero(np.isin(batch["trained_pos"][i], trained))
        assert len(ks) == len(trained)
        gap = np.abs(np.asarray(logp[i, ks]) - batch["old_logp"][i, trained])
        assert gap.max() <= 1e-4, gap
