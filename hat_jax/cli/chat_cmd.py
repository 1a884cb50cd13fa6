"""Chat with a model through our JAX model and sampler.

Examples:
  hat chat                                   # SmolLM2-135M-Instruct, interactive
  hat chat --prompt "What is the capital of France?"
  hat chat --model path/to/hf_folder --temperature 0.7 --top-p 0.9
Commands inside the chat: /reset clears the history, /quit (or Ctrl-D) exits.
"""

from __future__ import annotations

import sys
import time

from hat_jax.cli.argtypes import count, finite, seed
from hat_jax.loading import load_model
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.text.chat import render_chat

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def add_arguments(p) -> None:
    p.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="asset name, .gguf file or HF folder",
    )
    p.add_argument(
        "--system", default=DEFAULT_SYSTEM, help="system prompt ('' for none)"
    )
    p.add_argument("--prompt", action="append", help="ask this and exit (repeatable)")
    p.add_argument("--max-new-tokens", type=count(1, 2**20), default=256)
    p.add_argument("--temperature", type=finite(0), default=0.0, help="0: greedy")
    p.add_argument("--top-k", type=count(0), default=0, help="0: off")
    p.add_argument("--top-p", type=finite(0, 1, open_low=True), default=1.0)
    p.add_argument("--seed", type=seed, default=0)


class _Printer:
    """Streams the new part of the decoded text after each decode chunk."""

    def __init__(self, tokenizer, stop_ids):
        self.tok, self.stop, self.shown = tokenizer, set(stop_ids), ""

    def __call__(self, rows):
        ids = [t for t in rows[0] if t not in self.stop]
        text = self.tok.decode(ids)
        if text.endswith("\ufffd"):  # half a UTF-8 character: wait for the rest
            return
        sys.stdout.write(text[len(self.shown) :])
        sys.stdout.flush()
        self.shown = text


def run(args) -> int:
    t0 = time.time()
    model, cfg, tok = load_model(args.model)
    if tok is None:
        print(f"hat chat: error: {args.model} has no tokenizer.json", file=sys.stderr)
        return 1
    sampler = Sampler(model, tok, prefix_reuse=True)  # each turn extends the last
    sp = SamplingParams(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
        stop_ids=tok.stop_ids,
    )
    print(
        f"[loaded {args.model}: {cfg.model_type}, {cfg.num_hidden_layers} layers, "
        f"{time.time() - t0:.1f}s]",
        file=sys.stderr,
    )
    system = [{"role": "system", "content": args.system}] if args.system else []
    history: list[dict] = []
    questions = iter(args.prompt) if args.prompt else None
    interactive = questions is None and sys.stdin.isatty()
    while True:
        if questions is not None:
            q = next(questions, None)
            if q is None:
                return 0
            print(f"> {q}")
        else:
            try:
                q = input("> ") if interactive else sys.stdin.readline()
            except EOFError:
                return 0
            if not q:
                return 0
            q = q.strip()
            if not interactive and q:
                print(f"> {q}")
            if q in ("/quit", "/exit"):
                return 0
            if q == "/reset":
                history.clear()
                continue
            if not q:
                continue
        history.append({"role": "user", "content": q})
        prompt = tok.encode(render_chat(system + history, add_generation_prompt=True))
        t = time.time()
        (out,) = sampler.generate([prompt], sp, on_chunk=_Printer(tok, sp.stop_ids))
        printer_text = out.text or ""
        history.append({"role": "assistant", "content": printer_text.strip()})
        dt = time.time() - t
        print(
            f"\n[{len(out.tokens)} tokens, {len(out.tokens) / dt:.1f} tok/s]",
            file=sys.stderr,
        )
