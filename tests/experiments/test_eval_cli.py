"""`hat eval run` (experiments.eval_run_cmd): outputs, resumption, backends."""

import json

import pytest

from experiments import eval_run_cmd
from hat_jax import assets
from hat_jax.cli.main import main as hat
from hat_jax.eval.records import read_records
from hat_jax.harness import dump_harness, load_harness
from sim.oracle import OraclePolicy

SIM_SUITES = ("t1", "t2", "t3", "edit")


def _summary(out):
    return json.loads((out / "summary.json").read_text())


def test_oracle_smoke_through_hat(tmp_path, capsys):
    out = tmp_path / "oracle"
    argv = ["eval", "run", "--suite", "t1,t2,t3,edit,ifeval", "--policy", "oracle"]
    assert hat([*argv, "--limit", "3", "--out", str(out), "--no-progress"]) == 0
    assert "ifeval: no oracle policy for this suite; skipped" in capsys.readouterr().out
    s = _summary(out)
    assert list(s["suites"]) == list(SIM_SUITES)
    for name in SIM_SUITES:
        suite = s["suites"][name]
        assert suite["metrics"]["accuracy"]["mean"] == 1.0
        assert len(read_records(out / name / "records.jsonl")) == suite["n"]
    assert s["suites"]["edit"]["n"] == 6  # 3 questions, before and after
    assert s["cases"]["full"] == 2000 + 1000 + 1200
    md = (out / "summary.md").read_text()
    assert "| T1 Live-Stream QA | 3 / 2000 | 100.0 [100.0, 100.0] |" in md
    # the oracle follows v1, which knows nothing of Double 12: one of the three
    # questions asks a price, an error that the Double 12 edit removes (one
    # question wrong: a reduction without an interval, stats.MIN_WRONG)
    assert "| error | 33.3 [0.0, 100.0] | 0.0 [0.0, 0.0] | 100.0 |" in md
    assert json.loads((out / "run.json").read_text())["policy"] == "oracle"


@pytest.mark.skipif(
    not assets.is_fetched("ifeval-input-data"), reason="hat assets fetch"
)
def test_fixed_sentence_through_bare_hat_eval(tmp_path):
    out = tmp_path / "fixed"
    argv = ["eval", "--suite", "t1,ifeval", "--policy", "fixed", "--limit", "3"]
    assert hat([*argv, "--out", str(out), "--no-progress"]) == 0
    s = _summary(out)["suites"]
    assert s["t1"]["metrics"]["accuracy"]["mean"] == 0.0
    assert s["ifeval"]["n"] == 3 and "prompt_level_strict" in s["ifeval"]["metrics"]
    rec = read_records(out / "ifeval" / "records.jsonl")[0]
    assert rec["harness"] == "chat" and "strict" in rec["trajectory"]["meta"]["ifeval"]


def test_any_harness_folder(tmp_path):
    folder = tmp_path / "my_harness"
    dump_harness(load_harness("taolive_v2"), folder)
    out = tmp_path / "out"
    argv = ["--suite", "t1,t3", "--policy", "oracle", "--limit", "5"]
    assert eval_run_cmd.main([*argv, "--harness", str(folder), "--out", str(out)]) == 0
    recs = read_records(out / "t1" / "records.jsonl")
    assert {r["harness"] for r in recs} == {"taolive@2.0"}
    assert _summary(out)["suites"]["t3"]["metrics"]["accuracy"]["mean"] == 1.0


def test_killed_eval_restarts_to_the_same_summary(tmp_path, monkeypatch):
    argv = ["--suite", "t1,t3", "--policy", "oracle", "--limit", "12"]
    argv += ["--batch-size", "4", "--no-progress"]
    assert eval_run_cmd.main([*argv, "--out", str(tmp_path / "whole")]) == 0
    calls = {"n": 0}
    generate = OraclePolicy.generate

    def dies(self, *a, **kw):  # the process "dies" on the 6th model call
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt
        return generate(self, *a, **kw)

    monkeypatch.setattr(OraclePolicy, "generate", dies)
    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        eval_run_cmd.main([*argv, "--out", str(part)])
    done = len(read_records(part / "t1" / "records.jsonl"))
    assert 0 < done < 12 and not (part / "summary.json").exists()
    monkeypatch.setattr(OraclePolicy, "generate", generate)
    assert eval_run_cmd.main([*argv, "--out", str(part)]) == 0
    assert _summary(part) == _summary(tmp_path / "whole")
    assert (part / "summary.md").read_text() == (
        tmp_path / "whole" / "summary.md"
    ).read_text()


def test_jax_backend_runs_a_tiny_model(tmp_path, tiny_hf):
    out = tmp_path / "jax"
    argv = ["--suite", "t1", "--model", str(tiny_hf), "--limit", "2"]
    argv += ["--max-new-tokens", "4", "--no-progress", "--out", str(out)]
    assert eval_run_cmd.main(argv) == 0
    recs = read_records(out / "t1" / "records.jsonl")
    assert len(recs) == 2
    meta = recs[0]["trajectory"]["meta"]
    assert meta["model_calls"] >= 1 and meta["generated_tokens"] >= 1
    assert "generations" not in meta
    assert recs[0]["trajectory"]["status"] in ("ok", "failed", "turn_limit")


def test_prefix_reuse_leaves_the_records_as_a_fresh_prefill_gives_them(
    tmp_path, tiny_hf, monkeypatch
):
    """Each call after a case batch's first reuses the cache of the previous one
    (the turn's earlier calls, the system prompt of other cases): the records
    must be those of prefilling every prompt whole."""
    from hat_jax.sampling.sampler import Sampler

    reused, generate = [], Sampler.generate

    def counting(self, *a, **kw):
        out = generate(self, *a, **kw)
        reused.append(self.last_call.reused_tokens)
        return out

    monkeypatch.setattr(Sampler, "generate", counting)
    trajectories, counts = [], []
    for flag in ([], ["--no-prefix-reuse"]):
        out = tmp_path / ("off" if flag else "on")
        argv = ["--suite", "t1", "--model", str(tiny_hf), "--limit", "4"]
        argv += ["--batch-size", "2", "--max-new-tokens", "24", "--no-progress"]
        assert eval_run_cmd.main([*argv, *flag, "--out", str(out)]) == 0
        recs = read_records(out / "t1" / "records.jsonl")
        trajectories.append([r["trajectory"]["messages"] for r in recs])
        counts.append(sum(reused))
        reused.clear()
    assert trajectories[0] == trajectories[1]
    assert counts[0] > 0 and counts[1] == 0  # on by default, off with the flag
    calls = sum(
        len([m for m in t if m["role"] == "assistant"]) for t in trajectories[0]
    )
    assert calls > 4  # later calls exist, so something was reused


def test_limits_per_suite_and_the_world_presentation(tmp_path):
    import argparse

    assert eval_run_cmd.parse_limits("7") == 7
    assert eval_run_cmd.parse_limits("t1=300,edit=150") == {"t1": 300, "edit": 150}
    for bad in ("0", "t1=0", "t1=x", "=", "-3"):
        with pytest.raises(argparse.ArgumentTypeError):
            eval_run_cmd.parse_limits(bad)
    assert eval_run_cmd.suite_limit({"t1": 300}, "t1", 2000) == 300
    assert eval_run_cmd.suite_limit({"t1": 300}, "t2", 1000) == 1000
    assert eval_run_cmd.suite_limit(5000, "t2", 1000) == 1000
    out = tmp_path / "compact"
    argv = ["eval", "run", "--suite", "t1,edit", "--policy", "oracle"]
    argv += ["--limit", "t1=4,edit=2", "--prompt-format", "compact"]
    argv += ["--compact-results", "--out", str(out), "--no-progress"]
    assert hat(argv) == 0
    t1 = read_records(out / "t1" / "records.jsonl")
    edit = read_records(out / "edit" / "records.jsonl")
    assert len(t1) == 4 and len(edit) == 4  # 2 questions, before and after
    results = []
    for r in t1 + edit:
        msgs = r["trajectory"]["messages"]
        assert (
            msgs[0]["content"].startswith("# ") and "<tools>" not in msgs[0]["content"]
        )
        results += [m["content"] for m in msgs if m["role"] == "tool"]
    products = [x for x in results if '"price_now"' in x]
    assert products and not any('"brand"' in x for x in products)  # compact results
    assert all(r["scores"]["success"] == 1.0 for r in t1)
    with pytest.raises(ValueError, match="suites not run"):
        eval_run_cmd.run(
            eval_cli_args(["--suite", "t1", "--policy", "oracle", "--limit", "t2=3"])
        )


def eval_cli_args(argv):
    import argparse

    p = argparse.ArgumentParser()
    eval_run_cmd.add_arguments(p)
    return p.parse_args([*argv, "--out", "/nonexistent/never-written"])


def test_endpoint_key_comes_from_the_named_variable(tmp_path, monkeypatch, capsys):
    import http.server
    import threading

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, obj):
            seen.append(self.headers.get("Authorization"))
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply({"data": [{"id": "tiny"}]})

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.reply({"choices": [{"text": "Thanks!", "finish_reason": "stop"}]})

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    argv = ["--suite", "t1", "--endpoint", url, "--limit", "1", "--no-progress"]
    monkeypatch.delenv("HAT_API_KEY", raising=False)
    monkeypatch.delenv("UNSET_KEY", raising=False)
    try:
        unset = [*argv, "--api-key-env", "UNSET_KEY", "--out", str(tmp_path / "x")]
        assert eval_run_cmd.main(unset) == 1
        assert "UNSET_KEY" in capsys.readouterr().err
        assert seen == []  # refused before any request
        monkeypatch.setenv("MY_KEY", "s3cret")
        out = tmp_path / "ep"
        assert (
            eval_run_cmd.main([*argv, "--api-key-env", "MY_KEY", "--out", str(out)])
            == 0
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert len(seen) >= 2 and set(seen) == {"Bearer s3cret"}  # models + completion
    assert not any("s3cret" in f.read_text() for f in out.rglob("*") if f.is_file())
