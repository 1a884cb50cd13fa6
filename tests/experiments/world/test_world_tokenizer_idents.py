"""The world BPE's ``idents="bare"`` cut: one tokenisation per name anywhere."""

import pytest

from experiments.world.base_data import write_base_data
from experiments.world.tokenizer import split_pattern, train_tokenizer, world_texts
from hat_jax.harness import read_jsonl
from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.train.build import load_tokenizer

# Every house style of experiments/world/apps/idents.py, and taolive's.
NAMES = (
    "tally_overdue_loan",
    "lockerSync",
    "PebbleLantern",
    "cadence.wallet",
    "trace-pending-fare",
    "SPECIMEN_PROTOCOL",
    "op7k2",
    "t_9f3a2c",
    "Ep8dal",
    "get_product_info_by_link_id",
)
# Where a name stands in a rendered app: a tool list line, prose, JSON, the
# reasoning's backticks, a call, a compact signature, a skill index bullet.
CONTEXTS = (
    "x.\n{}(a: int)",
    "call {} first",
    '{{"name": "{}"}}',
    "Load `{}` before",
    "<function={}>\n",
    "load_skill({}",
    "\n- {} (reply)",
)


@pytest.fixture(scope="module")
def tokenizers_by_cut(tmp_path_factory):
    root = tmp_path_factory.mktemp("idents")
    files = [root / "drill.jsonl", root / "apps.jsonl"]
    write_base_data(files[0], n=200, seed=0, mix="apps_drill")
    write_base_data(files[1], n=200, seed=0, mix="apps")
    out = {}
    for cut in ("qwen", "bare"):
        train_tokenizer(files, vocab_size=1024, out=root / cut, idents=cut)
        out[cut] = load_tokenizer(str(root / cut))
    return files, out


def _cuts(tok, name: str) -> set:
    """The token ids covering ``name`` in every context (None: not on a boundary)."""
    seen = set()
    for ctx in CONTEXTS:
        text = ctx.format(name)
        start = text.index(name)
        enc = tok.backend.encode(text)
        idx = [
            i
            for i, (a, b) in enumerate(enc.offsets)
            if a < start + len(name) and b > start
        ]
        aligned = enc.offsets[idx[0]][0] == start and enc.offsets[idx[-1]][
            1
        ] == start + len(name)
        seen.add(tuple(enc.ids[i] for i in idx) if aligned else None)
    return seen


@pytest.mark.parametrize("name", NAMES)
def test_bare_cuts_a_name_one_way_in_every_context(tokenizers_by_cut, name):
    cuts = _cuts(tokenizers_by_cut[1]["bare"], name)
    assert len(cuts) == 1 and None not in cuts, cuts


def test_qwen_cut_differs_by_context(tokenizers_by_cut):
    # the reason for the option: Qwen's pattern joins the char before a name
    qwen = tokenizers_by_cut[1]["qwen"]
    split = [n for n in NAMES if len(_cuts(qwen, n)) > 1]
    assert len(split) >= len(NAMES) - 2, split  # unless no merge joins the char


def test_bare_keeps_prose_and_numbers(tokenizers_by_cut):
    files, toks = tokenizers_by_cut
    texts = list(world_texts(files))
    n = {cut: sum(len(t.encode(x)) for x in texts) for cut, t in toks.items()}
    assert n["bare"] <= 1.05 * n["qwen"]  # measured: +1 % on the base world
    bare = toks["bare"]
    pieces = [bare.backend.id_to_token(i) for i in bare.encode("book 1329, k_70b793")]
    assert [p for p in pieces if p.isdigit()] == list("1329") + list("70") + list("793")
    for text in texts[::7]:
        assert bare.decode(bare.encode(text)) == text
    for traj in read_jsonl(files[0])[:40] + read_jsonl(files[1])[:40]:
        trajectory_to_tokens(traj, bare, check=True)  # segment-wise == whole-text


def test_bad_cut_is_refused():
    assert split_pattern(idents="qwen") != split_pattern(idents="bare")
    with pytest.raises(ValueError, match="idents must be one of"):
        split_pattern(idents="words")
