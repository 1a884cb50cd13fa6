"""The tiny world's own byte-level BPE tokenizer, trained on the text the model sees.

:func:`train_tokenizer` renders every input line with our chat renderer
(trajectories as ``hat sim generate`` and :mod:`experiments.world.base_data`
write them; prompts as ``hat train opd`` reads them) and trains a byte-level
BPE on the result with the ``tokenizers`` library. Pre-tokenisation is Qwen's
split pattern then ByteLevel (no normaliser, so decoding gives back the exact
text): it never joins a newline to the letters after it, so a trajectory's
segment-wise ids equal its whole-text ids (``trajectory_to_tokens(...,
check=True)``). The chat control strings are single added tokens: ChatML's
turn tokens as special tokens, the reasoning, tool-list, tool-call and
tool-response tags (including qwen_xml's ``<function=``/``<parameter=``
markers) as plain added tokens, as the Qwen tokenizer declares them. The
trainer never sees those strings, so no merge is spent on them.

Its size and cost, measured: docs/results/measurements.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import tokenizers
from tokenizers import decoders, models, pre_tokenizers, trainers

from hat_jax.harness.trajectory import Trajectory, check_messages
from hat_jax.jsonl import iter_jsonl
from hat_jax.text.chat import render_chat
from hat_jax.text.qwen_tokenizer import SPLIT_PATTERN
from hat_jax.text.tokenizer import Tokenizer

# ChatML control tokens, TURN_END_TOKENS among them (special: dropped by
# decode(skip_special_tokens=True)).
CONTROL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Tags the renderer writes and the tool-call parser reads, kept as text.
MARKUP_TOKENS = (
    "<think>",
    "</think>",
    "<tools>",
    "</tools>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
)
ADDED_TOKENS = CONTROL_TOKENS + MARKUP_TOKENS
BOS, EOS, PAD = "<|endoftext|>", "<|im_end|>", "<|endoftext|>"
MIN_VOCAB = 256 + len(ADDED_TOKENS) + 1  # the byte alphabet, the added tokens, a merge
# The BPE trainer reserves ~66 bytes per requested entry before it starts (2**31
# asks for 141 GB and aborts the process); no world corpus fills 2**20.
MAX_VOCAB = 1 << 20
_ADDED = re.compile("|".join(re.escape(t) for t in ADDED_TOKENS))


def _render_line(obj: object, where: str) -> str:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "harness_id" in obj:
        traj = Trajectory.from_dict(obj, where)  # a located DataError if not
        return render_chat(traj.messages, add_generation_prompt=False)
    if isinstance(obj.get("prompt"), str):
        return render_chat([{"role": "user", "content": obj["prompt"]}])
    msgs = obj.get("messages")
    if isinstance(msgs, list) and msgs:
        check_messages(msgs, where)
        return render_chat(msgs)
    raise ValueError(
        f"{where}: expected a trajectory (with 'harness_id' and 'messages') or a "
        "prompt ('messages': a non-empty list of objects with a 'role', or "
        "'prompt': a string)"
    )


def world_texts(files: Sequence[str | Path]) -> Iterator[str]:
    """The rendered chat text of every line of each JSONL file, in order.

    Raises:
      ValueError: ``file:line: what was expected`` for a bad line, or a file
        with no lines.
    """
    for path in files:
        n = 0
        for where, obj in iter_jsonl(path):
            n += 1
            yield _render_line(obj, where)
        if n == 0:
            raise ValueError(f"{path}: no lines (expected JSONL trajectories/prompts)")


def _pieces(files: Sequence[str | Path]) -> Iterator[str]:
    # The added tokens are matched before the model runs: train only on the
    # text between them.
    for text in world_texts(files):
        yield from (p for p in _ADDED.split(text) if p)


# How numbers are cut. ``single``: one token a digit (Qwen's pattern).
# ``groups``: runs of up to three digits from the left, every such group one
# token (the 1,110 strings of 1-3 digits join the vocabulary, as in Llama 3's
# and cl100k's vocabularies): a price is one or two tokens, so quoting it from
# a tool result is one copy instead of one per digit.
DIGITS = ("single", "groups")
_ONE_DIGIT = r"|\p{N}|"
NUMBER_GROUPS = tuple(
    f"{i:0{w}d}" for w in (1, 2, 3) for i in range(10**w)
)  # "0".."9", "00".."99", "000".."999"


_GROUPS_PATTERN = SPLIT_PATTERN.replace(_ONE_DIGIT, r"|\p{N}{1,3}|", 1)
if _GROUPS_PATTERN == SPLIT_PATTERN:  # pragma: no cover - a changed Qwen pattern
    raise RuntimeError(f"no {_ONE_DIGIT!r} in Qwen's split pattern")


# How a run of letters meets the character before it. ``qwen``: it takes any one
# non-letter (`` name``, ``"name``, ``(name``, ``_name``), so a name is cut one
# way in a tool list (after a newline or a quote) and another in prose (after a
# space): copying it from the prompt is then a translation, not a copy.
# ``bare``: a letter run takes only a space or a joiner (``_ . -``) before it,
# and an identifier (an ASCII run with a digit, a joiner or a lower-upper hump
# in it: ``tally_loan``, ``op7k2``, ``lockerSync``) takes nothing, so a name has
# one tokenisation wherever it stands. Measured on 600 rows of the base world
# (2,048-token BPEs): names cut the same at every occurrence 7 % (qwen) vs 93 %
# (bare), 99 % with the apps teacher's names in backticks (the rest: one-word
# names after a space); rows +1 % longer (docs/results/world_base.md).
IDENTS = ("qwen", "bare")
_LETTERS = r"[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+"
_IDENT_HEAD = r"[A-Za-z]*[a-z][A-Z]|(?>[A-Za-z]+)(?:\p{N}|[_.\-][A-Za-z0-9])"
_BARE_LETTERS = (
    rf"[_.\-][\p{{L}}\p{{M}}]+| (?!{_IDENT_HEAD})[\p{{L}}\p{{M}}]+|[\p{{L}}\p{{M}}]+"
)
if _LETTERS not in SPLIT_PATTERN:  # pragma: no cover - a changed Qwen pattern
    raise RuntimeError(f"no {_LETTERS!r} in Qwen's split pattern")


def split_pattern(digits: str = "single", idents: str = "qwen") -> str:
    """The pre-tokeniser's regex for a :data:`DIGITS` and :data:`IDENTS` choice."""
    if digits not in DIGITS:
        raise ValueError(f"digits must be one of {DIGITS}, got {digits!r}")
    if idents not in IDENTS:
        raise ValueError(f"idents must be one of {IDENTS}, got {idents!r}")
    pat = SPLIT_PATTERN if digits == "single" else _GROUPS_PATTERN
    return pat if idents == "qwen" else pat.replace(_LETTERS, _BARE_LETTERS, 1)


def _add_number_groups(backend: tokenizers.Tokenizer) -> tokenizers.Tokenizer:
    """``backend`` with every :data:`NUMBER_GROUPS` string one token.

    Appends the missing groups to the vocabulary and, for each, the merges
    that build it whichever pair the trained merges join first (``"32" + "9"``
    and ``"3" + "29"``), so a run of 1-3 digits always ends as one token.
    """
    state = json.loads(backend.to_str())
    vocab: dict[str, int] = state["model"]["vocab"]
    merges = [
        tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)
        for m in state["model"]["merges"]
    ]
    have = set(merges)
    for g in NUMBER_GROUPS:
        if g not in vocab:
            vocab[g] = len(vocab)
        for a, b in {(g[:1], g[1:]), (g[:-1], g[-1:])}:
            if len(g) > 1 and (a, b) not in have:
                have.add((a, b))
                merges.append((a, b))
    state["model"]["merges"] = [list(m) for m in merges]
    return tokenizers.Tokenizer.from_str(json.dumps(state))


def new_backend(digits: str = "single", idents: str = "qwen") -> tokenizers.Tokenizer:
    """An untrained BPE with our pre-tokeniser and decoder."""
    backend = tokenizers.Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(
                tokenizers.Regex(split_pattern(digits, idents)),
                behavior="isolated",
                invert=False,
            ),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    return backend


def chat_template() -> str:
    """The Jinja ChatML template (see :mod:`experiments.world.template`)."""
    from experiments.world.template import CHAT_TEMPLATE

    return CHAT_TEMPLATE


def train_tokenizer(
    files: Sequence[str | Path],
    *,
    vocab_size: int,
    out: str | Path,
    digits: str = "single",
    idents: str = "qwen",
) -> Tokenizer:
    """Trains the world tokenizer on ``files`` and saves it in folder ``out``.

    Args:
      files: JSONL files of trajectories or prompts.
      vocab_size: total vocabulary, added tokens included (at most: with
        ``digits="groups"`` the number groups the trainer also learned count
        once).
      digits: how numbers are cut (:data:`DIGITS`).
      idents: how letter runs meet the character before them (:data:`IDENTS`).
      out: the folder for ``tokenizer.json`` and ``tokenizer_config.json``.

    Returns:
      The tokenizer (also loadable with ``hat_jax.train.build.load_tokenizer``).
    """
    if not files:
        raise ValueError("no training files given")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise ValueError(f"vocab_size must be an integer, got {vocab_size!r}")
    if not MIN_VOCAB <= vocab_size <= MAX_VOCAB:
        raise ValueError(
            f"vocab_size must be {MIN_VOCAB}..{MAX_VOCAB} (above the bytes + added "
            f"tokens; the trainer allocates per entry up front), got {vocab_size}"
        )
    backend = new_backend(digits, idents)
    groups = len(NUMBER_GROUPS) - 10 if digits == "groups" else 0
    if vocab_size - groups < MIN_VOCAB:
        raise ValueError(
            f"vocab_size {vocab_size} leaves no room for the {groups} number "
            f"groups of digits='groups' (at least {MIN_VOCAB + groups})"
        )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(ADDED_TOKENS) - groups,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    backend.train_from_iterator(_pieces(files), trainer=trainer)
    if groups:
        backend = _add_number_groups(backend)
    backend.add_special_tokens(
        [
            tokenizers.AddedToken(t, special=True, normalized=False)
            for t in CONTROL_TOKENS
        ]
    )
    backend.add_tokens(
        [
            tokenizers.AddedToken(t, special=False, normalized=False)
            for t in MARKUP_TOKENS
        ]
    )
    tok = Tokenizer(
        backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        chat_template=chat_template(),
    )
    tok.save(out)
    return tok
