# ruff: noqa: E501, E741, B023  (tables of cases; lambdas bind their loop value)
"""Flags given nonsense, across commands."""

from hostile_common import BUILTIN, CANARY, FIX, ROOT  # noqa: F401

CASES = []


def c(surface, name, *argv, where=None, expect="error", **kw):
    CASES.append(
        dict(
            surface=surface,
            name=name,
            argv=list(argv),
            where=where,
            expect=expect,
            **kw,
        )
    )


SFT = f"--config={ROOT}/experiments/configs/sft_tiny.py"
HT = f"--config={ROOT}/experiments/configs/hat_tiny.py:scale=micro"
# chat
for flag, val in [
    ("--temperature", "nan"),
    ("--temperature", "-1"),
    ("--top-k", "-5"),
    ("--top-p", "2"),
    ("--top-p", "nan"),
    ("--max-new-tokens", "-1"),
    ("--max-new-tokens", "1e9"),
    ("--seed", "-1"),
]:
    c(
        "chat",
        f"chat{flag}={val}",
        "chat",
        "--prompt",
        "hi",
        *(["--max-new-tokens", "3"] if flag != "--max-new-tokens" else []),
        flag,
        val,
        where=flag,
    )
c(
    "chat",
    "chat --model /dev/null",
    "chat",
    "--model",
    "/dev/null",
    "--prompt",
    "hi",
    where="/dev/null",
)
c(
    "chat",
    "chat --model missing",
    "chat",
    "--model",
    "nope_model",
    "--prompt",
    "hi",
    where="nope_model",
)
# plan
PL = f"--config={ROOT}/experiments/configs/paper_35b.py"
for flag, val in [
    ("--devices", "0"),
    ("--devices", "-8"),
    ("--device-memory", "abc"),
    ("--device-memory", "-5GB"),
    ("--device-memory", "nanGB"),
    ("--mesh", "fsdp=0"),
    ("--mesh", "bogus=2"),
    ("--mesh", "fsdp="),
    ("--tokens-per-device", "0"),
    ("--kv-batch", "-1"),
    ("--kv-len", "1e30"),
    ("--hardware", "tpu9"),
]:
    c("plan", f"plan{flag}={val}", "plan", PL, flag, val, where=flag)
c("plan", "plan --config /dev/null", "plan", "--config=/dev/null", where="/dev/null")
c("plan", "plan --config dir", "plan", "--config=/tmp", where="/tmp")
c("plan", "plan --config bad arg", "plan", PL + ":zzz=1", where="zzz")
# train overrides
for key, val in [
    ("optim.lr", "nan"),
    ("optim.lr", "-1"),
    ("optim.lr", "inf"),
    ("train.steps", "0"),
    ("train.batch_size", "-1"),
    ("data.seq_len", "0"),
    ("model.hidden_size", "0"),
    ("model.num_attention_heads", "3"),
    ("optim.warmup_steps", "-3"),
    ("lora.rank", "-1"),
    ("nonexistent.key", "1"),
    ("optim.lr", "'abc'"),
    ("train.seed", "-1"),
    ("optim.b1", "2"),
]:
    c(
        "train",
        f"train {key}={val}",
        "train",
        "sft",
        SFT,
        "--workdir",
        "{d}/w",
        f"--config.data.train={FIX}/good.jsonl",
        "--no-progress",
        f"--config.{key}={val}",
        where=key.split(".")[-1],
        timeout=120,
    )
c(
    "train",
    "train workdir is a file",
    "train",
    "sft",
    SFT,
    f"--config.data.train={FIX}/good.jsonl",
    "--workdir",
    "/etc/hostname",
    where="/etc/hostname",
)
c(
    "train",
    "train data /dev/zero",
    "train",
    "sft",
    SFT,
    "--workdir",
    "{d}/w",
    "--config.data.train=/dev/zero",
    where="/dev/zero",
    timeout=120,
)
c(
    "train",
    "train data missing",
    "train",
    "sft",
    SFT,
    "--workdir",
    "{d}/w",
    "--config.data.train={d}/none.jsonl",
    where="none.jsonl",
    timeout=120,
)
# run / sweep
c(
    "sweep",
    "sweep --workers 0",
    "sweep",
    HT,
    "--root",
    "{d}/r",
    "--workers",
    "0",
    where="--workers",
)
c(
    "sweep",
    "sweep --workers -2",
    "sweep",
    HT,
    "--root",
    "{d}/r",
    "--workers",
    "-2",
    where="--workers",
)
c(
    "sweep",
    "sweep --only nosuch",
    "sweep",
    HT,
    "--root",
    "{d}/r",
    "--only",
    "nosuch",
    where="nosuch",
)
c(
    "sweep",
    "sweep --only ,",
    "sweep",
    HT,
    "--root",
    "{d}/r",
    "--only",
    ",",
    where="--only",
)
c(
    "sweep",
    "sweep --root file",
    "sweep",
    HT,
    "--root",
    "/etc/hostname",
    where="/etc/hostname",
)
c(
    "run",
    "run --run nosuch",
    "run",
    HT,
    "--run",
    "nosuch",
    "--root",
    "{d}/r",
    where="nosuch",
)
c(
    "run",
    "run bad scale",
    "run",
    f"--config={ROOT}/experiments/configs/hat_tiny.py:scale=huge",
    "--root",
    "{d}/r",
    where="scale",
)
# harness render
c(
    "harness",
    "render --format nope",
    "harness",
    "render",
    "taolive_v1",
    "--format",
    "nope",
    where="--format",
)
c(
    "harness",
    "render room-context not json",
    "harness",
    "render",
    "taolive_v1",
    "--room-context",
    "{",
    where="room",
)
c(
    "harness",
    "render room-context list",
    "harness",
    "render",
    "taolive_v1",
    "--room-context",
    "[1,2]",
    where="room",
)
c(
    "harness",
    "render room-context deep",
    "harness",
    "render",
    "taolive_v1",
    "--room-context",
    "[" * 50000 + "]" * 50000,
    where="room",
)
c("harness", "validate missing", "harness", "validate", "nope_dir", where="nope_dir")
c(
    "harness",
    "validate /dev/null",
    "harness",
    "validate",
    "/dev/null",
    where="/dev/null",
)
# eval run
for flag, val in [
    ("--timeout", "inf"),
    ("--timeout", "0"),
    ("--concurrency", "0"),
    ("--seed", "-1"),
    ("--limit", "-1"),
]:
    c(
        "eval",
        f"eval run {flag}={val}",
        "eval",
        "run",
        "--suite",
        "t1",
        "--policy",
        "oracle",
        "--out",
        "{d}/o",
        flag,
        val,
        where=flag,
    )
c(
    "eval",
    "eval run --suite nope",
    "eval",
    "run",
    "--suite",
    "nope",
    "--policy",
    "oracle",
    "--out",
    "{d}/o",
    where="nope",
)
c(
    "eval",
    "ifeval-score missing",
    "eval",
    "ifeval-score",
    "--responses",
    "{d}/none.jsonl",
    "--out",
    "{d}/o",
    where="none.jsonl",
)
c(
    "eval",
    "ifeval-score out is file",
    "eval",
    "ifeval-score",
    "--responses",
    "/dev/null",
    "--out",
    "/etc/hostname",
    where="/",
)
# export / convert
c("export", "export missing", "export", "{d}/nope", "--out", "{d}/o", where="nope")
c(
    "export",
    "export out=/proc",
    "export",
    "smollm2-135m-instruct",
    "--out",
    "/proc/hat_out",
    where="/proc/hat_out",
    timeout=120,
)
c("convert", "convert dst=src", "convert", "{d}", "{d}", where="overlaps")
for v in ["inf", "0", "nan", "-1"]:
    c(
        "convert",
        f"convert --shard-gb {v}",
        "convert",
        "smollm2-135m-instruct",
        "{d}/o",
        "--shard-gb",
        v,
        where="--shard-gb",
    )
# trace / replay
for flag, val in [
    ("--rate", "nan"),
    ("--rate", "-1"),
    ("--rooms", "0"),
    ("--n-messages", "-1"),
    ("--seed", "-1"),
]:
    c(
        "trace",
        f"trace make {flag}={val}",
        "trace",
        "make",
        "--n-messages",
        "5",
        "--rooms",
        "1",
        "--arrivals",
        "poisson",
        "--rate",
        "0.5",
        flag,
        val,
        "--out",
        "{d}/t.jsonl",
        where=flag,
    )
for flag, val in [
    ("--time-scale", "0"),
    ("--time-scale", "-1"),
    ("--concurrency", ","),
    ("--concurrency", "0"),
    ("--limit", "-1"),
    ("--timeout", "-1"),
    ("--timeout", "inf"),
]:
    c(
        "replay",
        f"replay {flag}={val}",
        "replay",
        "--trace",
        str(FIX / "good_trace.jsonl"),
        "--endpoint",
        "http://127.0.0.1:9/v1",
        "--out",
        "{d}/o",
        flag,
        val,
        where=flag,
    )
# sim / augment / world
for flag, val in [
    ("--n", "-1"),
    ("--seed", "-1"),
    ("--fault-rate", "2"),
    ("--fault-rate", "nan"),
    ("--ops", "nope"),
    ("--ops", " "),
    ("--family", "nope"),
]:
    c(
        "sim",
        f"sim generate {flag}={val}",
        "sim",
        "generate",
        "--harness",
        "taolive_v1",
        "--n",
        "1",
        flag,
        val,
        "--out",
        "{d}/o.jsonl",
        where=flag if flag != "--ops" else None,
    )
for flag, val in [
    ("--seed", "-1"),
    ("--ops", " "),
    ("--ops", "keep(-5)"),
    ("--ops", "rename_tools("),
    ("--family", "nope"),
]:
    c(
        "augment",
        f"augment {flag}={val}",
        "augment",
        "taolive_v1",
        flag,
        val,
        "--out",
        "{d}/o",
    )
for flag, val in [("--n", "-1"), ("--seed", "-1"), ("--n", "1e9")]:
    c(
        "world",
        f"world base {flag}={val}",
        "world",
        "base",
        "--n",
        "2",
        flag,
        val,
        "--out",
        "{d}/o.jsonl",
        where=flag,
    )
for val in ["0", "1e20", "10", "-1", "99999999999"]:
    c(
        "world",
        f"world tokenizer --vocab-size {val}",
        "world",
        "tokenizer",
        str(FIX / "good.jsonl"),
        "--vocab-size",
        val,
        "--out",
        "{d}/tok",
        where="--vocab-size",
    )
# paper
c("paper", "paper root missing", "paper", "{d}/nope", "--out", "{d}/o", where="nope")
c(
    "paper",
    "paper --tables nope",
    "paper",
    "{d}",
    "--tables",
    "nope",
    "--out",
    "{d}/o",
    where="nope",
)
c("paper", "paper root=/", "paper", "/", "--out", "{d}/o", where="/")
