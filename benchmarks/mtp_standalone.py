"""A standalone MTP head on SmolLM2-135M-Instruct: self-speculation where decode is
memory-bound.

At batch 1 a plain decode step re-reads every weight (~540 MB fp32), so a verify
step that checks k drafts costs about one plain step, and every accepted draft is a
step saved. The draft is the cost: one MTP decoder layer plus the LM head per draft
token, and the head is ~21 % of SmolLM2's weights, so drafts may be chosen from a
pruned vocabulary (`SpeculativeSampler(draft_vocab=...)`: the W tokens the model
emits most often in its own training generations).

Stages (each cached in `--workdir`, so a rerun only benchmarks):

1. data: the model's own greedy replies (`--gen-tokens` new tokens) to IFEval's
   prompts, in chat form, as trajectories; held-out prompts (the first
   `--held` of a seeded shuffle, each <= 64 tokens so one compile serves them)
   are decoded in step 3 and never trained on; the replies to the last
   `--eval-prompts` train prompts go to eval.jsonl, also untrained.
2. head: `hat train sft` in the standalone mode (`mtp_only=True`: the trunk frozen,
   a fresh one-layer MTP head trained on the MTP loss alone), `--steps` steps;
   its teacher-forced MTP accuracy on eval.jsonl six times (``head.heldout``).
3. bench: plain greedy decoding (`Sampler`) against `SpeculativeSampler` with the
   trained head for each k and draft vocabulary, on the same held-out prompts,
   at batch 1 (prompt by prompt) and batch 8. Decode time excludes the prefill:
   t(N new tokens) - t(1 new token) per prompt, best of `--reps` interleaved
   runs; the speed-up is paired per prompt (plain / speculative decode time)
   and reported as a geometric mean with a 95 % bootstrap interval over prompts.
   Beside it: acceptance per position and mean accepted length (vLLM's
   definitions), the B1 bandwidth roofline measured in the same run, and a
   bytes-per-step model of each verify + draft step (what the speed-up would be
   if every step cost its weight reads).

    python benchmarks/mtp_standalone.py --workdir runs/mtp_smollm2 \\
        [--train-prompts 440 --gen-tokens 128 --steps 150 --reps 2 \\
         --ks 1,2,3 --vocabs 0,4096 --new 128] \\
        [--out benchmarks/results/mtp_standalone.json]

Time on the 2-core CPU (AMD EPYC, docs/results/measurements.md): data ~6 min
at the defaults, 31.5 min for --train-prompts 525 --gen-tokens 384; the head
9.5-14 s a step (4 x 1,024 tokens; 150 steps 24-35 min); the bench ~25 min. The
results file records each stage's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
from limits import bandwidth_gbs, dots_gbs, matmul_gflops

from hat_jax import assets
from hat_jax.checkpoints.gguf import load_gguf
from hat_jax.cli.env_cmd import cpu_model
from hat_jax.jsonl import write_jsonl_atomic, write_text_atomic
from hat_jax.sampling import Sampler, SamplingParams, SpeculativeSampler
from hat_jax.text import render_chat

BASE = "smollm2-135m-instruct"
MAX_HELD_LEN = 64  # held-out prompts fit one 64-token bucket: one compile each


def _prompts(tok, seed: int, held: int, n_train: int):
    """IFEval's prompts in chat form, shuffled: (held-out ids, train messages)."""
    path = assets.path("ifeval-input-data")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    order = np.random.default_rng(seed).permutation(len(rows))
    chats = [[{"role": "user", "content": rows[i]["prompt"]}] for i in order]
    ids = [
        tok.encode(render_chat(c, tools=None, add_generation_prompt=True))
        for c in chats
    ]
    short = [i for i, x in enumerate(ids) if len(x) <= MAX_HELD_LEN][:held]
    rest = [i for i in range(len(chats)) if i not in set(short)][:n_train]
    return [ids[i] for i in short], [(chats[i], ids[i]) for i in rest]


def _journal(path: Path, header: dict) -> dict[int, dict]:
    """The replies a killed data stage already wrote: {prompt index: entry}.

    Line 1 is ``header`` (the settings); a journal of other settings, or a cut
    last line, is ignored from there on (that batch is generated again).
    """
    done: dict[int, dict] = {}
    if not path.exists():
        return done
    lines = path.read_text().splitlines()
    try:
        if not lines or json.loads(lines[0]) != header:
            print(f"data: {path} holds other settings; starting over", flush=True)
            return done
        for line in lines[1:]:
            e = json.loads(line)
            done[int(e["i"])] = e
    except (ValueError, KeyError, TypeError):
        pass  # a line cut by the kill: what came before it stands
    return done


def make_data(
    wd: Path, model, tok, train, gen_tokens: int, batch: int, n_eval: int = 0
) -> dict:
    """Greedy replies to the train prompts -> wd/train.jsonl and token counts.

    The replies to the last ``n_eval`` prompts go to wd/eval.jsonl instead: the
    head's held-out teacher-forced MTP accuracy (its generalisation gap). Each
    batch's replies are appended to wd/data.partial.jsonl as it finishes, so a
    killed stage resumes with the next batch (greedy: the same replies).
    """
    out, counts_path = wd / "train.jsonl", wd / "token_counts.npy"
    ev, journal = wd / "eval.jsonl", wd / "data.partial.jsonl"
    if out.exists() and counts_path.exists() and (ev.exists() or not n_eval):
        return json.loads((wd / "data.json").read_text())
    header = {"prompts": len(train), "gen_tokens": gen_tokens, "batch": batch}
    done = _journal(journal, header)
    # rewritten whole: a line cut by a kill must not run into the next one
    kept = "".join(json.dumps(e) + "\n" for e in done.values())
    write_text_atomic(journal, json.dumps(header) + "\n" + kept)
    sampler = Sampler(model, tok)
    order = sorted(range(len(train)), key=lambda i: len(train[i][1]))
    t0 = time.perf_counter()
    with journal.open("a", encoding="utf-8") as f:
        for s in range(0, len(order), batch):
            idx = [i for i in order[s : s + batch] if i not in done]
            if not idx:
                continue
            gen = sampler.generate(
                [train[i][1] for i in idx], SamplingParams(max_new_tokens=gen_tokens)
            )
            for i, c in zip(idx, gen):
                done[i] = {"i": i, "tokens": [int(t) for t in c.tokens]}
                f.write(json.dumps(done[i]) + "\n")
            f.flush()
            el = time.perf_counter() - t0
            print(f"data: {len(done)}/{len(train)} replies, {el:.0f} s", flush=True)
    counts = np.zeros(model.config.vocab_size, np.int64)
    rows: list[tuple[bool, dict]] = []
    for i in order:
        chat, tokens = train[i][0], done[i]["tokens"]
        held = i >= len(train) - n_eval
        if not held:  # the draft vocabulary counts training tokens only
            np.add.at(counts, np.asarray(tokens, np.int64), 1)
        reply = tok.decode(tokens, skip_special_tokens=True)
        row = {
            "harness_id": "ifeval",
            "user_message": chat[0]["content"],
            "messages": [*chat, {"role": "assistant", "content": reply}],
        }
        rows.append((held, row))
    np.save(counts_path, counts)
    meta = {
        "prompts": len(rows) - n_eval,
        "eval_prompts": n_eval,
        "generated_tokens": int(counts.sum()),
        "seconds": time.perf_counter() - t0,  # this attempt's (a resumed one: less)
    }
    write_jsonl_atomic(ev, [r for held, r in rows if held])
    write_jsonl_atomic(out, [r for held, r in rows if not held])
    write_text_atomic(wd / "data.json", json.dumps(meta))
    return meta


def train_head(wd: Path, steps: int, batch: int, seq_len: int, lr: float) -> dict:
    """The standalone head: `hat train sft` with the trunk frozen; with
    wd/eval.jsonl non-empty, its held-out MTP accuracy six times in the run."""
    run = wd / "head"
    if (wd / "head.json").exists():
        return json.loads((wd / "head.json").read_text())
    cmd = [
        sys.executable,
        "-m",
        "hat_jax.cli.main",
        "train",
        "sft",
        f"--config=experiments/configs/sft_tiny.py:steps={steps},"
        f"batch_size={batch},seq_len={seq_len},lr={lr}",
        f"--workdir={run}",
        f"--config.data.train={wd / 'train.jsonl'}",
        f"--config.init_from={BASE}",
        "--config.mtp_only=True",
        "--config.model.mtp_num_hidden_layers=1",
        "--config.data.overlong=truncate",
    ]
    ev = wd / "eval.jsonl"
    if ev.exists() and ev.stat().st_size:
        every = max(steps // 6, 1)
        cmd += [f"--config.data.eval={ev}", f"--config.train.eval_every={every}"]
        cmd += ["--config.train.eval_batches=0"]
    print(" ".join(cmd), flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    logged = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    last = [m for m in logged if "train/loss" in m][-1]
    heldout = [
        {k: m[k] for k in ("step", "eval/mtp_accuracy", "eval/mtp_ce") if k in m}
        for m in logged
        if "eval/mtp_accuracy" in m
    ]
    meta = {"steps": steps, "seconds": time.perf_counter() - t0, "last": last}
    meta["heldout"] = heldout  # teacher-forced, on the eval prompts' replies
    write_text_atomic(wd / "head.json", json.dumps(meta))
    return meta


def _timed(sampler, prompts, params) -> tuple[float, list]:
    """(seconds, completions) of one `generate` call."""
    t = time.perf_counter()
    out = sampler.generate(prompts, params)
    return time.perf_counter() - t, out


def _geo_interval(ratios: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Geometric mean of per-prompt ratios and its 95 % bootstrap interval."""
    logs = np.log(ratios)
    rng = np.random.default_rng(seed)
    boot = logs[rng.integers(0, len(logs), (2000, len(logs)))].mean(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(np.exp(logs.mean())), float(np.exp(lo)), float(np.exp(hi))


def head_bytes(model) -> dict:
    """fp32 bytes a plain step reads (trunk), the MTP head's, and one head row's."""
    from flax import nnx

    def size(module):
        return sum(x.size * 4 for x in jax.tree.leaves(nnx.state(module, nnx.Param)))

    mtp = size(model.mtp)
    d = model.config.hidden_size
    return {
        "trunk": size(model) - mtp,
        "mtp_all": mtp,
        "mtp_layer": size(model.mtp.layers[0]),
        "head": model.config.vocab_size * d * 4,
        "row": d * 4,
    }


def bench(model, tok, held, counts, args) -> tuple[list[dict], dict]:
    """Plain vs speculative decode over the held-out prompts (module docstring)."""
    systems = {"plain": lambda: Sampler(model, tok)}
    for w in map(int, args.vocabs.split(",")):
        vocab = None
        if w:  # the W most frequent tokens of the model's own generations
            vocab = np.argsort(-counts, kind="stable")[:w]
        for k in map(int, args.ks.split(",")):
            name = f"mtp k={k}, draft vocab {w or 'full'}"
            systems[name] = lambda k=k, v=vocab: SpeculativeSampler(
                model, tok, k=k, draft_vocab=v
            )
    samplers = {name: make() for name, make in systems.items()}
    rows, outputs = [], {}
    for b in map(int, args.batches.split(",")):
        groups = [held[i : i + b] for i in range(0, len(held) - b + 1, b)]
        one = SamplingParams(max_new_tokens=1)
        full = SamplingParams(max_new_tokens=args.new)
        for s in samplers.values():  # compile both lengths once per batch size
            s.generate(groups[0], one)
            s.generate(groups[0], full)
        t1 = {n: np.full(len(groups), np.inf) for n in samplers}
        tn = {n: np.full(len(groups), np.inf) for n in samplers}
        stats = {n: np.zeros(3 + 8, np.int64) for n in samplers}
        emitted = np.zeros(len(groups), np.int64)
        for rep in range(args.reps):
            for g, group in enumerate(groups):
                for n, s in samplers.items():  # interleaved: drift hits all alike
                    t1[n][g] = min(t1[n][g], _timed(s, group, one)[0])
                    dt, res = _timed(s, group, full)
                    tn[n][g] = min(tn[n][g], dt)
                    toks = [c.tokens for c in res]
                    if n == "plain":
                        outputs[(b, g)] = toks
                        emitted[g] = sum(len(t) - 1 for t in toks)
                    elif toks != outputs[(b, g)]:
                        raise SystemExit(f"{n}: output differs from plain greedy")
                    if rep == 0 and n != "plain":
                        st = s.stats
                        pp = list(st.accepted_per_pos) + [0] * 8
                        stats[n] += [st.proposed, st.accepted, st.row_verifies, *pp[:8]]
            print(f"batch {b}: rep {rep + 1}/{args.reps} done", flush=True)
        plain = tn["plain"] - t1["plain"]
        for n in samplers:
            dec = tn[n] - t1[n]
            ratio, lo, hi = _geo_interval(plain / dec)
            row = {
                "system": n,
                "batch": b,
                "prompts": len(groups) * b,
                "decode_tok_s": float(emitted.sum() / dec.sum()),
                "prefill_s": float(np.median(t1[n])),
                "speedup": ratio,
                "speedup_ci95": [lo, hi],
            }
            if n != "plain":
                p, a, v = (int(x) for x in stats[n][:3])
                k = p // max(v, 1)
                row |= {
                    "k": k,
                    "acceptance_rate": a / max(p, 1),
                    "mean_accepted_length": 1 + a / max(v, 1),
                    "acceptance_per_position": [
                        int(x) / max(v, 1) for x in stats[n][3 : 3 + k]
                    ],
                }
            rows.append(row)
    held_toks = [t for toks in outputs.values() for row in toks for t in row]
    cover = {}
    for w in map(int, args.vocabs.split(",")):
        if w:  # the share of the held-out greedy tokens a pruned draft can guess
            top = set(np.argsort(-counts, kind="stable")[:w].tolist())
            cover[str(w)] = sum(t in top for t in held_toks) / max(len(held_toks), 1)
    return rows, {
        "decoded_tokens_per_batch_size": int(emitted.sum()),
        "draft_vocab_coverage": cover,
    }


def breakdown(model, ks, vocabs, counts, reps: int = 20) -> list[dict]:
    """Milliseconds of each part of a batch-1 step, each jitted alone, best of
    `reps`: the plain step (trunk on 1 token + head + log-softmax), the verify
    pass (trunk on k + 1 tokens + head + log-softmax) and the k drafts (the MTP
    layer over the k + 1 verified positions, then k - 1 recursive steps, each
    with its head rows). `predicted` = mean accepted length x plain / (verify +
    drafts) is the speed-up these parts allow; the end-to-end rows add the
    loop's bookkeeping and dispatch."""
    import jax.numpy as jnp
    from flax import nnx

    from hat_jax.sampling.speculative import _draft

    cfg, slots, at = model.config, 256, 100
    graphdef, params = nnx.split(model)

    def trunk(params, cache, tokens, positions):
        m = nnx.merge(graphdef, params)
        hidden, cache, _ = m.hidden_states(tokens, positions, cache=cache)
        logits = m.logits(hidden)
        g = jnp.argmax(logits, -1)
        return (
            hidden,
            g,
            jnp.take_along_axis(jax.nn.log_softmax(logits), g[..., None], -1),
        )

    def drafts(params, hidden, g, positions, mtp_cache, ids, *, k):
        m = nnx.merge(graphdef, params)
        at_ = jnp.zeros((1,), jnp.int32)
        return _draft(m, hidden, g, positions, at_, mtp_cache, k, ids)[0]

    def best(fn, *a, **kw):
        jax.block_until_ready(fn(*a, **kw))
        t = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*a, **kw))
            t = min(t, time.perf_counter() - t0)
        return t * 1e3

    jt, jd = jax.jit(trunk), jax.jit(drafts, static_argnames=("k",))
    cache = model.init_cache(1, slots, jnp.float32)
    kv = lambda: [  # noqa: E731
        tuple(
            jnp.zeros((1, slots, cfg.num_key_value_heads, cfg.head_dim)) for _ in "kv"
        )
    ]
    out = []
    ms_plain = None
    for t in [1, *(k + 1 for k in ks)]:
        toks = jnp.full((1, t), 100, jnp.int32)
        pos = at + jnp.arange(t, dtype=jnp.int32)[None]
        ms = best(jt, params, cache, toks, pos)
        if t == 1:
            ms_plain = ms
            out.append({"part": "plain step (trunk, 1 token)", "ms": ms})
            continue
        hidden = jnp.zeros((1, t, cfg.hidden_size), jnp.float32)
        out.append({"part": f"verify pass (trunk, {t} tokens)", "ms": ms, "k": t - 1})
        for w in vocabs:
            ids = (
                None
                if not w
                else jnp.asarray(
                    np.sort(np.argsort(-counts, kind="stable")[:w]), jnp.int32
                )
            )
            dms = best(jd, params, hidden, toks, pos, kv(), ids, k=t - 1)
            out.append(
                {
                    "part": f"{t - 1} drafts, vocab {w or 'full'}",
                    "ms": dms,
                    "k": t - 1,
                    "vocab": w,
                    "verify_ms": ms,
                }
            )
    for r in out:
        r["x_plain"] = r["ms"] / ms_plain
        if "vocab" in r:  # what these costs ask of the head (batch 1)
            cost = (r["verify_ms"] + r["ms"]) / ms_plain  # plain steps per verify
            k = r["k"]
            r["perfect_head_speedup"] = (k + 1) / cost  # every draft accepted
            r["length_for_1_4x"] = 1.4 * cost
            r["acceptance_for_1_4x"] = _acceptance_for(1.4 * cost, k)
    return out


def _acceptance_for(length: float, k: int) -> float | None:
    """The per-position acceptance `a` whose mean accepted length with `k`
    drafts, 1 + a + ... + a^k (each draft accepted with probability `a` once
    the ones before it were), equals `length`; None above k + 1 (out of reach)."""
    if length > k + 1:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):  # the length grows with `a`: bisection
        a = (lo + hi) / 2
        lo, hi = (a, hi) if sum(a**i for i in range(k + 1)) < length else (lo, a)
    return (lo + hi) / 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="runs/mtp_smollm2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--held", type=int, default=16, help="held-out prompts")
    ap.add_argument("--train-prompts", type=int, default=440)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--gen-batch", type=int, default=32)
    ap.add_argument(
        "--eval-prompts", type=int, default=32, help="train prompts held for eval"
    )
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--train-batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--ks", default="1,2,3")
    ap.add_argument("--vocabs", default="0,4096", help="draft vocab sizes, 0 = all")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--stop-after", choices=("data", "head"), default=None)
    ap.add_argument("--out", default="benchmarks/results/mtp_standalone.json")
    args = ap.parse_args()

    wd = Path(args.workdir)
    wd.mkdir(parents=True, exist_ok=True)
    base, _, tok = load_gguf(assets.path(BASE))
    held, train = _prompts(tok, args.seed, args.held, args.train_prompts)
    data = make_data(
        wd, base, tok, train, args.gen_tokens, args.gen_batch, args.eval_prompts
    )
    if args.stop_after == "data":
        return
    del base
    head = train_head(wd, args.steps, args.train_batch, args.seq_len, args.lr)
    if args.stop_after == "head":
        return
    from hat_jax.train.build import model_from_workdir

    model, _ = model_from_workdir(wd / "head")
    ks = [int(k) for k in args.ks.split(",")]
    vocabs = [int(w) for w in args.vocabs.split(",")]
    counts = np.load(wd / "token_counts.npy")
    parts = breakdown(model, ks, vocabs, counts)
    # XLA's dot kernels alone at the verify pass's M = k + 1 rows vs a step's 1:
    # what a verify costs before any of our code (the kernels' share of it)
    dots = {
        m: dots_gbs(model.config, rows=m) for m in sorted({1, *(k + 1 for k in ks)})
    }
    rows, extra = bench(model, tok, held, counts, args)
    bw = bandwidth_gbs()
    nbytes = head_bytes(model)
    limit = max(bw.values()) * 1e9 / nbytes["trunk"]
    mtp_all = nbytes["mtp_all"]
    for r in rows:
        if r["batch"] == 1 and r["system"] == "plain":
            r["roofline_frac"] = r["decode_tok_s"] / limit
        if "k" in r:  # every verify + draft step costing its weight reads
            w = r["system"].rsplit(" ", 1)[-1]
            rows_bytes = nbytes["head"] if w == "full" else int(w) * nbytes["row"]
            step = nbytes["trunk"] + r["k"] * (mtp_all + rows_bytes)
            r["bytes_model_speedup"] = (
                r["mean_accepted_length"] * nbytes["trunk"] / step
            )
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "bandwidth_gbs": bw,
        "fp32_matmul_gflops": matmul_gflops(),
        "weight_bytes": nbytes,
        "b1_decode_limit_tok_s": limit,
        "data": data,
        "head": head,
        "args": vars(args),
        "step_parts_b1": parts,
        "xla_dots_gbs_by_rows": dots,
        **extra,
    }
    draft_ms = {(p["k"], p["vocab"]): p for p in parts if "vocab" in p}
    for r in rows:
        if r["batch"] == 1 and "k" in r:
            w = r["system"].rsplit(" ", 1)[-1]
            p = draft_ms[(r["k"], 0 if w == "full" else int(w))]
            plain = parts[0]["ms"]
            r["parts_model_speedup"] = (
                r["mean_accepted_length"] * plain / (p["verify_ms"] + p["ms"])
            )
    print(
        f"\nSmolLM2-135M-Instruct + standalone MTP head ({head['steps']} steps, "
        f"{head['seconds']:.0f} s), {len(held)} held-out IFEval prompts, "
        f"{args.new} new tokens; {meta['cpu']}, {meta['cpus']} cpus; bandwidth "
        f"{max(bw.values()):.1f} GB/s -> B1 plain limit {limit:.1f} tok/s"
    )
    if head.get("heldout"):
        curve = ", ".join(
            f"{h['step']}: {h['eval/mtp_accuracy']:.3f}" for h in head["heldout"]
        )
        print(
            f"head MTP accuracy, train batch at the end "
            f"{head['last'].get('train/mtp_accuracy', float('nan')):.3f}; "
            f"held-out replies (teacher-forced) by step: {curve}"
        )
    print(
        f"{'system':30s} {'B':>2s} {'tok/s':>7s} {'speed-up [95% CI]':>20s} "
        f"{'accept':>6s} {'len':>5s} {'per position':>18s} {'bytes model':>11s}"
    )
    for r in rows:
        lo, hi = r["speedup_ci95"]
        ci = f"{r['speedup']:.2f} [{lo:.2f}, {hi:.2f}]"
        acc = f"{r['acceptance_rate']:.2f}" if "k" in r else "-"
        ln = f"{r['mean_accepted_length']:.2f}" if "k" in r else "1"
        pp = " ".join(f"{x:.2f}" for x in r.get("acceptance_per_position", []))
        bm = f"{r['bytes_model_speedup']:.2f}" if "k" in r else "-"
        print(
            f"{r['system']:30s} {r['batch']:2d} {r['decode_tok_s']:7.1f} {ci:>20s} "
            f"{acc:>6s} {ln:>5s} {pp:>18s} {bm:>11s}"
        )
    print("\nbatch-1 step parts, each jitted alone (best of 20):")
    for p in parts:
        print(f"  {p['part']:32s} {p['ms']:7.2f} ms  {p['x_plain']:5.2f} x plain")
    print("what the parts ask of the head at batch 1 (each verify + its drafts):")
    for p in parts:
        if "vocab" in p:
            a = p["acceptance_for_1_4x"]
            need = "out of reach" if a is None else f"acceptance >= {a:.2f}"
            print(
                f"  k={p['k']}, vocab {p['vocab'] or 'full':>5}: "
                f"{p['perfect_head_speedup']:.2f}x with every draft accepted; 1.4x "
                f"needs mean accepted length {p['length_for_1_4x']:.2f} ({need})"
            )
    print(
        "XLA's products alone (weights at their real shapes, nothing else), GB/s by "
        "rows: "
        + ", ".join(
            f"{m}: {g:.1f} ({dots[1] / g:.2f} x the 1-row time)"
            for m, g in dots.items()
        )
    )
    print(
        "speed-up the parts allow (len x plain / (verify + drafts)), B1: "
        + ", ".join(
            f"{r['system'].removeprefix('mtp ')} {r['parts_model_speedup']:.2f}"
            for r in rows
            if "parts_model_speedup" in r
        )
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
