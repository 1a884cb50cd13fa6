# ruff: noqa: E501, E741, B023  (tables of cases; lambdas bind their loop value)
"""Hostile files: data rows, IFEval rows, traces, harness folders, HF folders, sweep roots."""

import json
import os

from hostile_common import BUILTIN, CANARY, FIX, ROOT, Cases  # noqa: F401

CASES = Cases()
GOOD = [json.loads(l) for l in open(FIX / "good.jsonl")]
TRACE = open(FIX / "good_trace.jsonl").read().splitlines()


c = CASES.add


def rows_file(lines):
    def setup(d):
        (d / "data.jsonl").write_text(
            "".join(l + "\n" for l in lines), errors="surrogatepass"
        )

    return setup


def mut(fn):
    r = json.loads(json.dumps(GOOD[0]))
    fn(r)
    return json.dumps(r, ensure_ascii=False)


def setk(path, v):
    def f(r):
        o = r
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = v

    return f


ROWS = {
    "messages not list": mut(setk(["messages"], "hi")),
    "messages empty": mut(setk(["messages"], [])),
    "role number": mut(setk(["messages", 1, "role"], 7)),
    "role unknown": mut(setk(["messages", 1, "role"], "wizard")),
    "content dict": mut(setk(["messages", 1, "content"], {"a": 1})),
    "tool_calls str": mut(setk(["messages", 2, "tool_calls"], "call it")),
    "tool_call args list": mut(
        setk(["messages", 2, "tool_calls", 0, "arguments"], [1, 2])
    ),
    "tool_call name bad": mut(
        setk(["messages", 2, "tool_calls", 0, "name"], "bad<>name")
    ),
    "tool_call name empty": mut(setk(["messages", 2, "tool_calls", 0, "name"], "")),
    "reasoning int": mut(setk(["messages", 2, "reasoning"], 5)),
    "meta list": mut(setk(["meta"], [1])),
    "harness_id empty": mut(setk(["harness_id"], "")),
    "harness_id number": mut(setk(["harness_id"], 3)),
    "status weird": mut(setk(["status"], {"x": 1})),
    "duplicate keys": '{"harness_id": "a", "harness_id": "b", "messages": []}',
    "top-level list": "[1, 2, 3]",
    "top-level null": "null",
    "huge int": '{"harness_id": "x", "messages": [], "n": ' + "9" * 5000 + "}",
    "deep nesting": '{"a": ' + "[" * 100000 + "]" * 100000 + "}",
    "nan value": '{"harness_id": "x", "messages": [], "n": NaN}',
    "lone surrogate": '{"harness_id": "x\\ud800", "messages": []}',
    "raw surrogate bytes": None,  # filled below
    "not utf8": None,
    "truncated": json.dumps(GOOD[0])[:500],
    "bom": "\ufeff" + json.dumps(GOOD[0], ensure_ascii=False),
    "null bytes": json.dumps(GOOD[0])[:100] + "\x00" + json.dumps(GOOD[0])[100:],
    "very long line": '{"harness_id": "' + "x" * 50_000_000 + '", "messages": []}',
    "tool msg no name": mut(lambda r: r["messages"][3].pop("name")),
    "system not first": mut(lambda r: r["messages"].reverse()),
    "tool_calls null name": mut(setk(["messages", 2, "tool_calls", 0, "name"], None)),
    "arguments deep": mut(
        setk(
            ["messages", 2, "tool_calls", 0, "arguments"],
            json.loads("[" * 500 + "]" * 500),
        )
    ),
}


def file_setup(name, text):
    def setup(d):
        p = d / "data.jsonl"
        if name == "not utf8":
            p.write_bytes(b'{"harness_id": "\xff\xfe", "messages": []}\n')
        elif name == "raw surrogate bytes":
            p.write_bytes(b'{"harness_id": "\xed\xa0\x80", "messages": []}\n')
        else:
            p.write_text(json.dumps(GOOD[1], ensure_ascii=False) + "\n" + text + "\n")

    return setup


LEGIT = {"tool msg no name"}  # qwen_xml tool responses carry no name
for name, text in ROWS.items():
    ex = "ok" if name in LEGIT else "error"
    c(
        "sim-report",
        f"sim report: {name}",
        ["sim", "report", "{d}/data.jsonl"],
        file_setup(name, text),
        where="data.jsonl:",
        expect=ex,
    )
    c(
        "tokenizer",
        f"world tokenizer: {name}",
        [
            "world",
            "tokenizer",
            "{d}/data.jsonl",
            "--vocab-size",
            "300",
            "--out",
            "{d}/tok",
        ],
        file_setup(name, text),
        where="data.jsonl:",
        expect=ex,
    )
for name in [
    "role unknown",
    "tool_calls str",
    "duplicate keys",
    "messages empty",
    "lone surrogate",
    "tool_call name bad",
]:
    c(
        "train-data",
        f"train sft data: {name}",
        [
            "train",
            "sft",
            f"--config={ROOT}/experiments/configs/sft_tiny.py:steps=1",
            "--workdir",
            "{d}/w",
            "--config.data.train={d}/data.jsonl",
            "--no-progress",
        ],
        file_setup(name, ROWS[name]),
        where="data.jsonl:",
        timeout=180,
    )
c(
    "sim-report",
    "sim report: empty file",
    ["sim", "report", "{d}/data.jsonl"],
    rows_file([]),
    where="data.jsonl",
)
c(
    "sim-report",
    "sim report: fifo",
    ["sim", "report", "{d}/f"],
    lambda d: os.mkfifo(d / "f"),
    where="/f",
)
c("sim-report", "sim report: dir", ["sim", "report", "{d}"], None, where="adv_")


# ---- IFEval rows
def ife(row):
    return rows_file([json.dumps(row)])


IFR = {"prompt": "Write", "response": "hello world"}
IF_CASES = {
    "unknown instruction": dict(IFR, instruction_id_list=["nope:nope"], kwargs=[{}]),
    "kwargs length": dict(
        IFR, instruction_id_list=["punctuation:no_comma"], kwargs=[{}, {}]
    ),
    "kwargs not list": dict(
        IFR, instruction_id_list=["punctuation:no_comma"], kwargs={}
    ),
    "empty id list": dict(IFR, instruction_id_list=[], kwargs=[]),
    "num_words negative": dict(
        IFR,
        instruction_id_list=["length_constraints:number_words"],
        kwargs=[{"relation": "at least", "num_words": -3}],
    ),
    "num_words bool": dict(
        IFR,
        instruction_id_list=["length_constraints:number_words"],
        kwargs=[{"relation": "at least", "num_words": True}],
    ),
    "num_words 1e308": dict(
        IFR,
        instruction_id_list=["length_constraints:number_words"],
        kwargs=[{"relation": "at least", "num_words": 1e308}],
    ),
    "relation bad": dict(
        IFR,
        instruction_id_list=["length_constraints:number_words"],
        kwargs=[{"relation": "around", "num_words": 3}],
    ),
    "language bad": dict(
        IFR,
        instruction_id_list=["language:response_language"],
        kwargs=[{"language": "klingon"}],
    ),
    "keywords blank": dict(
        IFR, instruction_id_list=["keywords:existence"], kwargs=[{"keywords": [""]}]
    ),
    "keywords not list": dict(
        IFR, instruction_id_list=["keywords:existence"], kwargs=[{"keywords": "abc"}]
    ),
    "keyword regex": dict(
        IFR,
        instruction_id_list=["keywords:frequency"],
        kwargs=[{"keyword": "(", "frequency": 1, "relation": "at least"}],
    ),
    "unknown kwarg": dict(
        IFR, instruction_id_list=["punctuation:no_comma"], kwargs=[{"zzz": 1}]
    ),
    "response number": dict(
        prompt="x",
        response=5,
        instruction_id_list=["punctuation:no_comma"],
        kwargs=[{}],
    ),
    "response null": dict(prompt="x", response=None),
    "prompt unknown": dict(prompt="not an ifeval prompt", response="x"),
    "many slow": dict(
        IFR,
        response="a" * 30 + "!",
        instruction_id_list=["keywords:existence"] * 200,
        kwargs=[{"keywords": ["(a+)+$"]}] * 200,
    ),
    "huge repeat": dict(
        IFR,
        instruction_id_list=["keywords:existence"],
        kwargs=[{"keywords": ["a{1000000000}"]}],
    ),
    "nested repeat": dict(
        IFR,
        instruction_id_list=["keywords:existence"],
        kwargs=[{"keywords": ["((a{1000}){1000}){1000}"]}],
    ),
    "end_phrase huge": dict(
        IFR,
        instruction_id_list=["startend:end_checker"],
        kwargs=[{"end_phrase": "x" * 10_000_000}],
    ),
    "postscript marker blank": dict(
        IFR,
        instruction_id_list=["detectable_content:postscript"],
        kwargs=[{"postscript_marker": ""}],
    ),
    "num_bullets float": dict(
        IFR,
        instruction_id_list=["detectable_format:number_bullet_lists"],
        kwargs=[{"num_bullets": 2.5}],
    ),
    "section_spliter regex": dict(
        IFR,
        instruction_id_list=["detectable_format:multiple_sections"],
        kwargs=[{"section_spliter": "[", "num_sections": 2}],
    ),
}
for name, row in IF_CASES.items():
    c(
        "ifeval",
        f"ifeval: {name}",
        ["eval", "ifeval-score", "--responses", "{d}/data.jsonl", "--out", "{d}/o"],
        ife(row),
        where="data.jsonl:",
        timeout=90,
    )


# ---- traces
def trace_with(fn):
    def setup(d):
        lines = [json.loads(l) for l in TRACE]
        fn(lines)
        (d / "t.jsonl").write_text(
            "\n".join(json.dumps(l) if not isinstance(l, str) else l for l in lines)
            + "\n"
        )

    return setup


def tset(i, k, v):
    return lambda L: L[i].__setitem__(k, v)


TR = {
    "t huge": tset(3, "t", 10**400),
    "t negative": tset(3, "t", -5),
    "t string": tset(3, "t", "soon"),
    "t nan": lambda L: L.__setitem__(
        3,
        '{"kind": "message", "session": "s0", "case": "c", "t": NaN, "text": "x", "intent": "x", "lang": "en"}',
    ),
    "rate negative": tset(0, "rate", -1),
    "rooms zero": tset(0, "rooms", 0),
    "split traversal": tset(0, "split", "../../etc"),
    "harness abs": tset(1, "harness", "/etc"),
    "harness traversal": tset(1, "harness", "../../../etc"),
    "duplicate case": tset(4, "case", "test-0-0-0"),
    "unknown session": tset(3, "session", "s9"),
    "unknown kind": tset(3, "kind", "zzz"),
    "no header": lambda L: L.pop(0),
    "version 99": tset(0, "version", 99),
    "text number": tset(3, "text", 5),
    "t out of order": tset(5, "t", 0.1),
    "n_messages wrong": tset(0, "n_messages", 500),
    "room_index huge": tset(1, "room_index", 10**30),
}
for name, fn in TR.items():
    c(
        "trace",
        f"trace check: {name}",
        ["trace", "check", "{d}/t.jsonl"],
        trace_with(fn),
        where="t.jsonl:",
    )
    if name in (
        "t huge",
        "harness abs",
        "split traversal",
        "duplicate case",
        "unknown session",
    ):
        c(
            "replay",
            f"replay trace: {name}",
            [
                "replay",
                "--trace",
                "{d}/t.jsonl",
                "--endpoint",
                "http://127.0.0.1:9/v1",
                "--out",
                "{d}/o",
            ],
            trace_with(fn),
            where="t.jsonl:",
        )
