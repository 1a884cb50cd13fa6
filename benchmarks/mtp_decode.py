"""MTP self-speculative decoding: acceptance and speed, untrained vs trained head.

A tiny qwen3 model (hidden 64, `--layers` 4) with one MTP layer is trained for a few
hundred steps on character-level templated sentences ("the cat sat on the mat. ...")
with next-token CE plus `hat_jax.losses.sft.mtp_loss`. The same trained trunk is then
decoded greedily with its trained MTP head and with the head reset to its initial
(untrained) weights. Reported per setting: acceptance rate (accepted drafts /
proposed), mean accepted length (tokens per row per trunk forward, the bonus token
included), trunk forwards, decode tokens/s and the speed-up over the plain
`Sampler`. Every speculative run is checked to give the plain greedy tokens.

Runs are interleaved (plain, then each speculative setting, repeat) after a warm-up
call each; tokens/s = tokens emitted / the best wall time of `generate` over the reps
(prefill included; on a shared 2-core CPU other jobs only ever add time, so the best
run is the least disturbed one, but ratios still drift, so compare within a run).
Each verify step runs the trunk on k + 1 tokens plus the MTP layer on k + 1 tokens
and k - 1 recursive single-token steps, i.e. about (L + k) layer passes against L
for a plain step (L trunk layers; tiny models on CPU are overhead-bound, so a pass
costs about the same at 1 or k + 1 tokens). The speed-up is therefore roughly
mean accepted length * L / (L + k): the drafter is cheap only for deep trunks,
which is why the default trunk has 4 layers and not 2 (a 2-layer trunk pays a
third of its cost again per draft).

    python benchmarks/mtp_decode.py [--steps 200] [--layers 4] [--new 64] [--batch 8]
        [--reps 3] [--out benchmarks/results/mtp_decode.json]

On the tiny world instead (`--workdir`: a trained model with an MTP head, e.g. the
hybrid sweep's standalone `mtp` step or its co-trained HAT model; `--data`: the
simulator trajectories whose agent prompts are decoded, each cut before its first
assistant token): the trained head against the same model with the head reset to
a fresh initialisation (`build_model`'s, seed 0, as the standalone mode starts).

    python benchmarks/mtp_decode.py --workdir runs/hat_tiny/_steps/mtp-... \
        --data runs/hat_tiny/_steps/sim_hsa-.../data.jsonl \
        --out benchmarks/results/mtp_decode_world.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from hat_jax.losses.sft import cross_entropy, mtp_loss
from hat_jax.models import ModelConfig, build_model, mtp_logits
from hat_jax.sampling import Sampler, SamplingParams, SpeculativeSampler

CHARS = " .abcdefghijklmnopqrstuvwxyz"
SUBJECTS = ["the cat", "the dog", "a bird", "my friend", "the old man", "she"]
VERBS = ["sat on", "ran to", "looked at", "jumped over", "walked past", "found"]
OBJECTS = ["the mat", "the park", "a tree", "the red house", "the river", "it"]


def encode(text: str) -> list[int]:
    return [CHARS.index(c) + 1 for c in text]  # 0 is padding


def corpus(rng: np.random.Generator, n_sentences: int) -> str:
    return "".join(
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}. "
        for _ in range(n_sentences)
    )


def config(layers: int) -> ModelConfig:
    return ModelConfig(
        model_type="qwen3",
        vocab_size=32,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        mtp_num_hidden_layers=1,
    )


def train(model, ids: np.ndarray, *, steps: int, batch: int, seq: int, seed: int):
    opt = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)

    def loss_fn(m, tokens):
        out = m.forward(tokens)
        mask = jnp.ones(tokens.shape, bool)
        ce, _ = cross_entropy(
            logits=out.logits[:, :-1], targets=tokens[:, 1:], mask=mask[:, 1:]
        )
        pos = jnp.broadcast_to(jnp.arange(tokens.shape[1]), tokens.shape)
        mtp, metrics = mtp_loss(
            mtp_logits=mtp_logits(m, out.hidden, tokens, pos), tokens=tokens, mask=mask
        )
        return ce + mtp, (ce, metrics["mtp/accuracy"])

    @nnx.jit
    def step(m, o, tokens):
        (loss, aux), grads = nnx.value_and_grad(loss_fn, has_aux=True)(m, tokens)
        o.update(m, grads)
        return loss, aux

    rng = np.random.default_rng(seed)
    for i in range(steps):
        starts = rng.integers(0, len(ids) - seq, size=batch)
        tokens = jnp.asarray(np.stack([ids[s : s + seq] for s in starts]))
        loss, (ce, acc) = step(model, opt, tokens)
        if i % 100 == 0 or i == steps - 1:
            print(
                f"step {i:4d}  loss {float(loss):.3f}  ce {float(ce):.3f}  "
                f"mtp acc {float(acc):.3f}"
            )


def char_world(args):
    """(trained model, untrained-head copy, prompts, train seconds, sample decoder)."""
    rng = np.random.default_rng(0)
    ids = np.asarray(encode(corpus(rng, 4000)), np.int32)
    model = build_model(config(args.layers), seed=0)
    init_head = jax.tree.map(jnp.copy, nnx.state(model.mtp))
    t0 = time.perf_counter()
    train(model, ids, steps=args.steps, batch=32, seq=96, seed=1)
    train_s = time.perf_counter() - t0
    untrained = nnx.clone(model)
    nnx.update(untrained.mtp, init_head)
    held_out = corpus(np.random.default_rng(123), 4 * args.batch)
    prompts = [encode(held_out[i * 20 : i * 20 + 8 + 3 * i]) for i in range(args.batch)]
    show = lambda t: "".join(CHARS[i - 1] for i in t)  # noqa: E731
    return model, untrained, prompts, train_s, show, ()  # no stop token


def tiny_world(args):
    """The same from a trained tiny-world model and its simulator trajectories."""
    from hat_jax.eval.backends import load_jax_model
    from hat_jax.harness.tokens import read_jsonl, trajectory_to_tokens

    model, tokenizer = load_jax_model(args.workdir)
    if getattr(model, "mtp", None) is None:
        raise SystemExit(f"{args.workdir}: the model has no MTP head")
    untrained = nnx.clone(model)
    fresh = build_model(model.config, seed=0)
    nnx.update(untrained.mtp, nnx.state(fresh.mtp))
    prompts = []
    for traj in read_jsonl(args.data):
        ids, mask = trajectory_to_tokens(traj, tokenizer, fmt="qwen_xml")
        if mask.any():  # the prompt: everything before the first assistant token
            prompts.append([int(t) for t in ids[: int(np.argmax(mask))]])
        if len(prompts) == args.batch:
            break
    # each row stops at its turn's end, as in the agent loop (past it a trained
    # head would only be "predicting" more end tokens)
    return model, untrained, prompts, 0.0, tokenizer.decode, tuple(tokenizer.stop_ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--layers", type=int, default=4, help="trunk layers")
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/mtp_decode.json")
    ap.add_argument("--workdir", help="a tiny-world model with an MTP head")
    ap.add_argument("--data", help="with --workdir: trajectory JSONL (prompts)")
    args = ap.parse_args()
    if bool(args.workdir) != bool(args.data):
        ap.error("--workdir and --data go together")

    world = tiny_world if args.workdir else char_world
    model, untrained, prompts, train_s, show, stop = world(args)
    sp = SamplingParams(max_new_tokens=args.new, stop_ids=stop)
    runs = {"plain": Sampler(model)}
    for k in (1, 2, 3):
        runs[f"untrained head, k={k}"] = SpeculativeSampler(untrained, k=k)
        runs[f"trained head, k={k}"] = SpeculativeSampler(model, k=k)
    want = [c.tokens for c in runs["plain"].generate(prompts, sp)]
    print("sample:", repr(show(want[0][:48])))
    times = {name: [] for name in runs}
    for name, s in runs.items():  # warm-up (compile) and greedy-equality check
        got = [c.tokens for c in s.generate(prompts, sp)]
        assert got == want, f"{name}: not the plain greedy tokens"
    for _ in range(args.reps):
        for name, s in runs.items():
            t = time.perf_counter()
            s.generate(prompts, sp)
            times[name].append(time.perf_counter() - t)

    n_tok = sum(len(t) for t in want)  # tokens emitted (rows may stop early)
    steps = max(len(t) for t in want)  # plain decoding: one trunk forward each
    plain_tps = n_tok / min(times["plain"])
    rows = []
    for name, s in runs.items():
        tps = n_tok / min(times[name])
        st = getattr(s, "stats", None)
        rows.append(
            {
                "setting": name,
                "acceptance_rate": None if st is None else st.acceptance_rate,
                "mean_accepted_length": 1.0 if st is None else st.mean_accepted_length,
                "trunk_forwards": steps if st is None else st.trunk_forwards,
                "tok_s": tps,
                "speedup": tps / plain_tps,
            }
        )
    what = (
        f"{args.workdir} ({model.config.num_hidden_layers}-layer trunk, "
        f"prompts {min(map(len, prompts))}-{max(map(len, prompts))} tokens)"
        if args.workdir
        else f"{args.layers}-layer trunk trained {args.steps} steps in {train_s:.0f} s"
    )
    print(
        f"\n{what}, batch {len(prompts)}, {args.new} new tokens, {args.reps} reps; "
        "greedy tokens identical"
    )
    print(
        f"{'setting':24s} {'accept':>7s} {'mean len':>9s} {'fwds':>5s} "
        f"{'tok/s':>8s} {'speed-up':>9s}"
    )
    for r in rows:
        acc = "-" if r["acceptance_rate"] is None else f"{r['acceptance_rate']:.3f}"
        print(
            f"{r['setting']:24s} {acc:>7s} {r['mean_accepted_length']:9.2f} "
            f"{r['trunk_forwards']:5d} {r['tok_s']:8.0f} {r['speedup']:8.2f}x"
        )
    out = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": f"{platform.machine()}, {jax.device_count()} "
            f"{jax.default_backend()} device(s)",
            "args": vars(args),
            "train_seconds": train_s,
            "note": "shared CPU: timings drift; compare speed-ups within this run",
        },
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
