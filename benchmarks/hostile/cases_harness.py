# ruff: noqa: E501, E741, B023  (tables of cases; lambdas bind their loop value)
"""Hostile harness folders, HF folders and sweep roots."""

import json
import os
import shutil
from pathlib import Path

from hostile_common import BUILTIN, CANARY, FIX, ROOT, Cases  # noqa: F401

CASES = Cases()


c = CASES.add


def canary_seen(d, text):
    return "CANARY-SECRET-42" in text or any(
        "CANARY-SECRET-42" in p.read_text(errors="ignore")
        for p in d.rglob("*")
        if p.is_file() and not p.is_symlink() and p.stat().st_size < 10**7
    )


def harness(fn):
    def setup(d):
        shutil.copytree(BUILTIN, d / "h")
        fn(d / "h")

    return setup


def manifest_sub(old, new):
    def f(h):
        m = h / "manifest.yaml"
        t = m.read_text()
        assert old in t, old
        m.write_text(t.replace(old, new, 1))

    return f


def tool_edit(fn):
    def f(h):
        p = h / "tools" / "02_check_stock.json"
        d = json.loads(p.read_text())
        fn(d)
        p.write_text(json.dumps(d))

    return f


def skill_write(text, name="01_item_qa.md"):
    return lambda h: (h / "skills" / name).write_text(text)


H = {
    "turn_limit 1e29": manifest_sub("turn_limit: 6", "turn_limit: 1e29"),
    "turn_limit 0": manifest_sub("turn_limit: 6", "turn_limit: 0"),
    "turn_limit bool": manifest_sub("turn_limit: 6", "turn_limit: true"),
    "turn_limit sexagesimal": manifest_sub("turn_limit: 6", "turn_limit: 1:30"),
    "retry_limit -1": manifest_sub("retry_limit: 2", "retry_limit: -1"),
    "max_chars huge": manifest_sub("max_chars: 120", "max_chars: 99999999999999"),
    "max_chars string": manifest_sub("max_chars: 120", "max_chars: lots"),
    "kinds empty": manifest_sub("kinds: [reply]", "kinds: []"),
    "kinds unknown": manifest_sub("kinds: [reply]", "kinds: [zzz]"),
    "banned blank": manifest_sub(
        "banned_phrases: [guaranteed cure", "banned_phrases: ['  ', guaranteed cure"
    ),
    "unknown hook": manifest_sub("- name: factual_risk", "- name: rm_rf"),
    "hook param unknown": manifest_sub(
        "  - name: tool_args", "  - name: tool_args\n    params: {evil: 1}"
    ),
    "alias bomb": manifest_sub("rules:\n", "x: &a [1,2,3]\ny: [*a,*a,*a]\nrules:\n"),
    "yaml python tag": manifest_sub(
        "name: taolive", "name: !!python/object/apply:os.system ['echo PWNED']"
    ),
    "yaml merge key": manifest_sub(
        "rules:\n", "base: &b {k: 1}\nother:\n  <<: *b\nrules:\n"
    ),
    "manifest not mapping": lambda h: (h / "manifest.yaml").write_text("- 1\n- 2\n"),
    "manifest empty": lambda h: (h / "manifest.yaml").write_text(""),
    "manifest binary": lambda h: (h / "manifest.yaml").write_bytes(b"\xff\xfe\x00\x01"),
    "manifest huge": lambda h: (h / "manifest.yaml").write_text(
        "rules:\n" + "  - x\n" * 400000
    ),
    "manifest surrogate": lambda h: (h / "manifest.yaml").write_bytes(
        (h / "manifest.yaml")
        .read_bytes()
        .replace(b"taolive", b"tao\xed\xa0\x80live", 1)
    ),
    "manifest control chars": manifest_sub("name: taolive", 'name: "tao\\x1b[31mlive"'),
    "order unknown section": manifest_sub("order: [persona,", "order: [zzz, persona,"),
    "order duplicate": manifest_sub("order: [persona,", "order: [persona, persona,"),
    "format unknown": manifest_sub("format: markdown", "format: html"),
    "tool_call_format unknown": manifest_sub(
        "tool_call_format: qwen_xml", "tool_call_format: pickle"
    ),
    "version number": manifest_sub('version: "1.0"', "version: 1.0"),
    "deep yaml": lambda h: (h / "manifest.yaml").write_text(
        (h / "manifest.yaml").read_text() + "deep: " + "[" * 10000 + "]" * 10000 + "\n"
    ),
    "tool minimum 1e400": tool_edit(
        lambda d: d["parameters"]["properties"]["link_id"].__setitem__("minimum", 1e400)
    ),
    "tool minimum > maximum": tool_edit(
        lambda d: d["parameters"]["properties"]["link_id"].update(minimum=5, maximum=1)
    ),
    "tool type unknown": tool_edit(
        lambda d: d["parameters"]["properties"]["link_id"].__setitem__("type", "bigint")
    ),
    "tool required unknown": tool_edit(
        lambda d: d["parameters"].__setitem__("required", ["zzz"])
    ),
    "tool required dup": tool_edit(
        lambda d: d["parameters"].__setitem__("required", ["link_id", "link_id"])
    ),
    "tool name bad": tool_edit(lambda d: d.__setitem__("name", "rm -rf /")),
    "tool name dup": lambda h: shutil.copy(
        h / "tools" / "02_check_stock.json", h / "tools" / "09_dup.json"
    ),
    "tool ref": tool_edit(
        lambda d: d["parameters"]["properties"]["link_id"].__setitem__(
            "$ref", "file:///etc/passwd"
        )
    ),
    "tool pattern catastrophic": tool_edit(
        lambda d: d["parameters"]["properties"]["sku"].__setitem__("pattern", "(a+)+$")
    ),
    "tool pattern invalid": tool_edit(
        lambda d: d["parameters"]["properties"]["sku"].__setitem__("pattern", "(")
    ),
    "tool enum 100k": tool_edit(
        lambda d: d["parameters"]["properties"]["sku"].__setitem__(
            "enum", [f"s{i}" for i in range(100000)]
        )
    ),
    "tool json nan": lambda h: (h / "tools" / "02_check_stock.json").write_text(
        (h / "tools" / "02_check_stock.json")
        .read_text()
        .replace('"minimum": 1', '"minimum": NaN')
    ),
    "tool json dup keys": lambda h: (h / "tools" / "02_check_stock.json").write_text(
        (h / "tools" / "02_check_stock.json")
        .read_text()
        .replace('"name": "check_stock",', '"name": "check_stock", "name": "other",')
    ),
    "skill no frontmatter": skill_write("just text\n"),
    "skill frontmatter unclosed": skill_write("---\nname: item_qa\nkind: reply\n"),
    "skill name mismatch dup": skill_write(
        "---\nname: chit_chat\nkind: reply\ndescription: x\n---\nbody\n"
    ),
    "skill kind unknown": skill_write(
        "---\nname: item_qa\nkind: zzz\ndescription: x\n---\nbody\n"
    ),
    "skill description blank": skill_write(
        "---\nname: item_qa\nkind: reply\ndescription: '   '\n---\nbody\n"
    ),
    "skill body empty": skill_write(
        "---\nname: item_qa\nkind: reply\ndescription: x\n---\n"
    ),
    "skill loads unknown": skill_write(
        '---\nname: item_qa\nkind: reply\ndescription: x\n---\nfollow load_skill("nosuch")\n'
    ),
    "skill name traversal": skill_write(
        "---\nname: ../../etc/passwd\nkind: reply\ndescription: x\n---\nbody\n"
    ),
    "skill link outside": lambda h: (
        (h / "skills" / "01_item_qa.md").unlink(),
        os.symlink(CANARY, h / "skills" / "01_item_qa.md"),
    ),
    "skills dir link": lambda h: (
        shutil.rmtree(h / "skills"),
        os.symlink("/etc", h / "skills"),
    ),
    "tools dir link": lambda h: (
        shutil.rmtree(h / "tools"),
        os.symlink("/tmp", h / "tools"),
    ),
    "manifest link": lambda h: (
        (h / "manifest.yaml").unlink(),
        os.symlink("/proc/self/environ", h / "manifest.yaml"),
    ),
    "hardlink outside": lambda h: (
        (
            (h / "skills" / "01_item_qa.md").unlink(),
            os.link(CANARY, h / "skills" / "01_item_qa.md"),
        )
        if os.stat(CANARY).st_dev == os.stat(h).st_dev
        else None
    ),
    "skill fifo": lambda h: os.mkfifo(h / "skills" / "09_fifo.md"),
    "skills subdir": lambda h: (h / "skills" / "sub").mkdir(),
    "skill file 2MB": skill_write(
        "---\nname: item_qa\nkind: reply\ndescription: x\n---\n" + "y" * 2_000_000
    ),
    "skill non-utf8": lambda h: (h / "skills" / "01_item_qa.md").write_bytes(
        b"---\nname: item_qa\n\xff\n---\n"
    ),
    "file name escape codes": lambda h: shutil.copy(
        h / "skills" / "02_chit_chat.md", h / "skills" / "\x1b[31mred.md"
    ),
    "no manifest": lambda h: (h / "manifest.yaml").unlink(),
    "no tools": lambda h: shutil.rmtree(h / "tools"),
}
for name, fn in H.items():
    # a hard link is a regular file of the folder (no archive from a stranger makes
    # one to a file of ours): its text being read is not an escape
    esc = canary_seen if ("link" in name and "hardlink" not in name) else None
    ex = "ok" if name in ("tool enum 100k",) else "error"
    c(
        "harness",
        f"validate: {name}",
        ["harness", "validate", "{d}/h"],
        harness(fn),
        where="/h",
        escape=esc,
        expect=ex,
    )
    if name in (
        "skill link outside",
        "hardlink outside",
        "alias bomb",
        "turn_limit 1e29",
        "tool minimum 1e400",
        "skill fifo",
    ):
        c(
            "harness",
            f"render: {name}",
            ["harness", "render", "{d}/h"],
            harness(fn),
            where="/h",
            escape=esc,
        )
        c(
            "augment",
            f"augment src: {name}",
            ["augment", "{d}/h", "--ops", "rename_tools", "--out", "{d}/o"],
            harness(fn),
            where="/h",
            escape=esc,
        )


# augment --out hostile
def out_link(d):
    (d / "victim").mkdir()
    (d / "victim" / "keep.txt").write_text("KEEP")
    os.symlink(d / "victim", d / "o")


def victim_touched(d, text):
    return (
        not (d / "victim" / "keep.txt").exists()
        or len(list((d / "victim").iterdir())) != 1
    )


c(
    "augment",
    "augment --out is a link",
    ["augment", "taolive_v1", "--ops", "rename_tools", "--out", "{d}/o", "--overwrite"],
    out_link,
    where="/o",
    escape=victim_touched,
)


def out_has_link(d):
    shutil.copytree(BUILTIN, d / "o")
    (d / "victim").mkdir()
    (d / "victim" / "keep.txt").write_text("KEEP")
    shutil.rmtree(d / "o" / "skills")
    os.symlink(d / "victim", d / "o" / "skills")


c(
    "augment",
    "augment --overwrite skills link",
    ["augment", "taolive_v1", "--ops", "rename_tools", "--out", "{d}/o", "--overwrite"],
    out_has_link,
    where="/o",
    escape=victim_touched,
)
c(
    "augment",
    "augment --out = builtin src",
    [
        "augment",
        str(BUILTIN),
        "--ops",
        "rename_tools",
        "--out",
        str(BUILTIN),
        "--overwrite",
    ],
    None,
    where="taolive_v1",
)
c(
    "augment",
    "augment --out inside src",
    ["augment", "{d}/h", "--ops", "rename_tools", "--out", "{d}/h/sub", "--overwrite"],
    harness(lambda h: None),
    where="/h",
)
c(
    "sim",
    "sim generate --out link",
    ["sim", "generate", "--harness", "taolive_v1", "--n", "1", "--out", "{d}/o.jsonl"],
    lambda d: os.symlink(CANARY, d / "o.jsonl"),
    escape=lambda d, t: Path(CANARY).read_text() != "CANARY-SECRET-42\n",
    expect="ok",
)

# HF folders


def _weights(folder, data: bytes) -> None:
    """Every weight file of the folder overwritten with ``data``."""
    for p in folder.glob("*.safetensors"):
        p.write_bytes(data)


def hf(fn):
    """A copy of run.py's tiny HF folder (config and weights, no tokenizer) with
    ``fn(config_dict, folder)`` applied: only the mutation can make it fail."""

    def setup(d):
        shutil.copytree(FIX / "tiny_hf", d / "m")
        path = d / "m" / "config.json"
        cfg = json.loads(path.read_text())
        path.unlink()
        fn(cfg, d / "m")
        if not path.exists():
            path.write_text(json.dumps(cfg))

    return setup


HF = {
    "heads 0": lambda c, m: c.update(num_attention_heads=0),
    "hidden -16": lambda c, m: c.update(hidden_size=-16),
    "layers 1e9": lambda c, m: c.update(num_hidden_layers=10**9),
    "vocab 4294967400": lambda c, m: c.update(vocab_size=4294967400),
    "heads not divisible": lambda c, m: c.update(num_attention_heads=3),
    "eps nan": lambda c, m: (m / "config.json").write_text(
        json.dumps(c).replace('"rms_norm_eps": 1e-06', '"rms_norm_eps": NaN')
    ),
    "rope_parameters str": lambda c, m: c.update(rope_parameters="ab"),
    "rope_theta str": lambda c, m: c.update(rope_theta="big"),
    "model_type unknown": lambda c, m: c.update(model_type="gpt9"),
    "config list": lambda c, m: (m / "config.json").write_text("[1]"),
    "no weights": lambda c, m: [p.unlink() for p in m.glob("model*.safetensors*")],
    "safetensors garbage": lambda c, m: _weights(m, b"\xff" * 64),
    "safetensors huge header": lambda c, m: _weights(
        m, (2**62).to_bytes(8, "little") + b"{}"
    ),
    "index escapes": lambda c, m: (m / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "../../etc/passwd"}})
    ),
    "tokenizer garbage": lambda c, m: (m / "tokenizer.json").write_text("{not json"),
    "config is dir": lambda c, m: (m / "config.json").mkdir(),
}
# the text a clear error for the case must hold (its cause, not another one)
HF_WHY = {
    "heads 0": "num_attention_heads", "hidden -16": "hidden_size",
    "layers 1e9": "num_hidden_layers", "vocab 4294967400": "vocab_size",
    "heads not divisible": "do not fit config.json", "eps nan": "rms_norm_eps",
    "rope_parameters str": "rope_parameters", "rope_theta str": "rope_theta",
    "model_type unknown": "model_type", "config list": "config.json",
    "no weights": "no model.safetensors", "safetensors garbage": ".safetensors: not a readable",
    "safetensors huge header": ".safetensors: not a readable", "index escapes": "weight_map",
    "tokenizer garbage": "tokenizer.json", "config is dir": "config.json",
}  # fmt: skip
for name, fn in HF.items():
    c(
        "convert",
        f"convert hf: {name}",
        ["convert", "{d}/m", "{d}/o"],
        hf(fn),
        where=HF_WHY[name],
        timeout=120,
    )
    if name in (
        "heads 0",
        "vocab 4294967400",
        "safetensors huge header",
        "index escapes",
        "tokenizer garbage",
    ):
        c(
            "chat",
            f"chat hf: {name}",
            ["chat", "--model", "{d}/m", "--prompt", "hi", "--max-new-tokens", "2"],
            hf(fn),
            where=HF_WHY[name],
            timeout=120,
        )
        c(
            "export",
            f"export hf: {name}",
            ["export", "{d}/m", "--out", "{d}/o"],
            hf(fn),
            where=HF_WHY[name],
            timeout=120,
        )


# sweep roots for hat paper
def root(fn):
    def setup(d):
        r = d / "r"
        (r / "run1" / "eval").mkdir(parents=True)
        (r / "sweep.json").write_text(json.dumps({"runs": ["run1"], "scale": "micro"}))
        (r / "run1" / "run.json").write_text(json.dumps({"done": True}))
        (r / "run1" / "config.json").write_text(json.dumps({}))
        (r / "run1" / "eval" / "summary.json").write_text(json.dumps({}))
        fn(r)

    return setup


P = {
    "sweep.json list": lambda r: (r / "sweep.json").write_text("[1,2]"),
    "sweep.json number": lambda r: (r / "sweep.json").write_text("7"),
    "sweep.json runs str": lambda r: (r / "sweep.json").write_text('{"runs": "abc"}'),
    "sweep.json runs traversal": lambda r: (r / "sweep.json").write_text(
        '{"runs": ["../../etc"]}'
    ),
    "run.json list": lambda r: (r / "run1" / "run.json").write_text("[]"),
    "summary.json str": lambda r: (r / "run1" / "eval" / "summary.json").write_text(
        '"x"'
    ),
    "summary.json nan": lambda r: (r / "run1" / "eval" / "summary.json").write_text(
        '{"t1/success": NaN}'
    ),
    "config.json garbage": lambda r: (r / "run1" / "config.json").write_text("{"),
    "run dir link": lambda r: (
        shutil.rmtree(r / "run1"),
        os.symlink("/etc", r / "run1"),
    ),
}
for name, fn in P.items():
    ex = "ok" if name == "summary.json nan" else "error"  # NaN: our missing score
    c(
        "paper",
        f"paper: {name}",
        ["paper", "{d}/r", "--out", "{d}/o", "--no-figures"],
        root(fn),
        where="/r",
        expect=ex,
    )
