"""The adversarial pass of issue 17: hostile input through every `hat` command.

Each case (``cases_*.py``: flags, data files, harness and model folders, lying
servers) runs one `hat` command in a fresh temporary folder and is classified:
``clear`` (a non-zero exit whose message names the file or flag), ``vague`` (an
error without that), ``accepted`` (exit 0 on nonsense), ``traceback``, ``hang``
(past the case's timeout) or ``escape`` (a canary file outside the folder read or
written, an API key sent to another origin); ``ok`` is a legitimate input taken,
``ok-counted`` an endpoint failure recorded as a failed turn.

    python benchmarks/hostile/run.py            # ~370 cases, ~15 min on 2 cores
    HOSTILE_ONLY=trace python benchmarks/hostile/run.py   # names containing "trace"

Prints a line per case and the totals; writes benchmarks/results/hostile.json (a
filtered run writes hostile_subset.json in the temporary folder instead).
A robustness pass, not a timing: its seconds are only there to spot slow cases.
"""

import collections
import concurrent.futures as cf
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HAT = str(Path(sys.executable).parent / "hat")
TIMEOUT = float(os.environ.get("HOSTILE_TIMEOUT", 60))


def classify(case, rc, out, err, d, secs):
    text = out + err
    if rc is None:
        return "hang"
    if "Traceback (most recent call last)" in text or "panicked" in text or rc < 0:
        return "traceback"
    if case.get("escape") and case["escape"](d, text):
        return "escape"
    if rc == 0:
        return "ok" if case.get("expect", "error") == "ok" else "accepted"
    if case.get("expect") == "ok":
        return "refused-good"
    if "unrecognized arguments" in err or "arguments are required" in err:
        return "BADCASE"
    need = case.get("where")  # substring that makes the error located
    if need and need not in err:
        return "vague"
    return "clear"


def _sub(a, **kw):
    for k, v in kw.items():
        a = a.replace("{" + k + "}", str(v))
    return a


def run_case(case):
    d = Path(tempfile.mkdtemp(prefix="adv_"))
    subs = {}
    try:
        subs = (case["setup"](d) if case.get("setup") else None) or {}
        if not isinstance(subs, dict):
            subs = {}
        fmt = {k: v for k, v in subs.items() if not k.startswith("_")}
        argv = [
            _sub(a, d=str(d), **fmt) if isinstance(a, str) else a for a in case["argv"]
        ]
        env = dict(os.environ, **case.get("env", {}))
        env.setdefault("HAT_API_KEY", "sk-CANARY-KEY")
        import time

        t = time.time()
        try:
            p = subprocess.run(
                [HAT, *argv],
                cwd=d,
                capture_output=True,
                text=True,
                timeout=case.get("timeout", TIMEOUT),
                env=env,
                stdin=subprocess.DEVNULL,
                errors="replace",
            )
            rc, out, err = p.returncode, p.stdout, p.stderr
        except OSError as e:
            return dict(
                name=case["name"],
                surface=case["surface"],
                verdict="BADCASE",
                rc=None,
                secs=0,
                msg=str(e)[:200],
                argv="",
            )
        except subprocess.TimeoutExpired as e:
            rc, out, err = (
                None,
                (e.stdout or b"").decode(errors="replace")
                if isinstance(e.stdout, bytes)
                else (e.stdout or ""),
                "",
            )
        secs = time.time() - t
        verdict = (
            classify(case, rc, out, err, d, secs)
            if not case.get("judge")
            else case["judge"](rc, out, err, d, subs)
        )
        last = (err.strip().splitlines() or [""])[-1][:300]
        return dict(
            name=case["name"],
            surface=case["surface"],
            verdict=verdict,
            rc=rc,
            secs=round(secs, 1),
            msg=last,
            argv=" ".join(map(str, case["argv"]))[:200],
        )
    finally:
        if case.get("teardown"):
            case["teardown"](d, subs)
        shutil.rmtree(d, ignore_errors=True)


def _fixtures(folder: Path) -> None:
    """Good inputs the cases mutate: 3 trajectories, a 5-message trace, a tiny
    HF model folder, a canary."""
    (folder / "canary.txt").write_text("CANARY-SECRET-42\n")
    good = ["sim", "generate", "--harness", "taolive_v1", "--n", "3"]
    trace = ["trace", "make", "--n-messages", "5", "--rooms", "2", "--rate", "0.5"]
    for argv, out in ((good, "good.jsonl"), (trace, "good_trace.jsonl")):
        subprocess.run([HAT, *argv, "--out", str(folder / out)], check=True)
    subprocess.run([sys.executable, "-c", TINY_HF, str(folder / "tiny_hf")], check=True)


# A 1-layer Qwen3 saved as transformers writes it (config and weights, no
# tokenizer): the model folder the HF cases mutate.
TINY_HF = """
import sys
from hat_jax.checkpoints.hf import save_hf
from hat_jax.models import ModelConfig, build_model
cfg = dict(model_type="qwen3", vocab_size=64, hidden_size=16, intermediate_size=32,
           num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
           head_dim=8, max_position_embeddings=64, rms_norm_eps=1e-6,
           rope_theta=10000.0, tie_word_embeddings=True)
save_hf(build_model(ModelConfig.from_hf(cfg)), sys.argv[1])
"""


def main() -> None:
    fixtures = Path(tempfile.mkdtemp(prefix="hostile_fixtures_"))
    os.environ["HAT_HOSTILE_FIXTURES"] = str(fixtures)
    _fixtures(fixtures)
    sys.path.insert(0, str(HERE))
    cases = []
    for m in sorted(HERE.glob("cases_*.py")):
        spec = importlib.util.spec_from_file_location(m.stem, m)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        cases += mod.CASES
    only = os.environ.get("HOSTILE_ONLY")
    cases = [c for c in cases if not only or only in c["name"]]
    res = []
    with cf.ThreadPoolExecutor(int(os.environ.get("HOSTILE_JOBS", 2))) as ex:
        for r in ex.map(run_case, cases):
            res.append(r)
            line = f"{r['verdict']:12s} {r['surface']:10s} {r['name']:44s}"
            print(f"{line} {r['secs']:5.1f}s {r['msg'][:120]}", flush=True)
    shutil.rmtree(fixtures, ignore_errors=True)
    totals = dict(sorted(collections.Counter(r["verdict"] for r in res).items()))
    print("TOTAL", len(res), json.dumps(totals))
    # a filtered run is a probe: only the whole pass replaces the results file
    out = HERE.parent / "results" / "hostile.json"
    if only:
        out = Path(tempfile.gettempdir()) / "hostile_subset.json"
    record = {
        "cases": len(res),
        "totals": totals,
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "results": res,
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
