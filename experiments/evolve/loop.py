"""The evolution loop: Diagnose -> Confirm -> Edit -> Evaluate -> Regression
check, round after round, with early stop.

Round 0 evaluates the start harness on dev, regression and test. Round k:

1. diagnose the dev records of the harness in force (``diagnose.py``);
2. confirm each class (reruns with another seed, sibling cases); keep those
   reproducing at ``threshold`` or more;
3. ask the editor for proposals (cached in the round's folder, so a resumed
   run never asks twice) and take them in order, at most ``max_candidates``;
4. each candidate: the answer parsed as JSON, checked against the edit schema,
   applied, written as a folder and read back the way ``hat harness validate``
   reads one, bound to the simulator's playbook, and the oracle's gold turns on
   ``replay_n`` dev cases replayed against it (the HSA validator); any failure
   rejects it with its reason;
5. evaluate: dev success must rise beyond its paired 95 % interval (lower
   bound > 0) over the same cases, and a one-sided exact sign test on the
   cases it fixed and broke must give p <= ``P_GAIN``;
6. regression check on the held-out regression split: rejected if success
   falls by more than ``tolerance`` overall or in any group (intent; traffic
   or tool fault) of ``min_group`` cases or more with a sign test p <=
   ``P_LOSS`` on the cases it broke, or if a class an earlier round fixed
   comes back in more cases than before;
7. the first candidate that passes is accepted (and scored on test); a round
   with no confirmed class or no accepted candidate ends the evolution.

Everything a round decides is written under ``OUT/round_NN/`` as it happens
(records through ``RecordWriter``, JSON atomically), and a rerun of the same
command continues from the first unfinished step.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from augment.validate import validate_augmented
from experiments.evolve.diagnose import ErrorClass, confirm_rate, diagnose, record_keys
from experiments.evolve.editors import (
    Editor,
    answer_object,
    checked_proposal,
    editor_settings,
)
from experiments.evolve.splits import (
    base_cases,
    case_id,
    eval_cases,
    norms_judge,
    signature,
)
from experiments.suites import SuiteOptions
from experiments.suites.simcases import binding_of, case_of, sim_rollout
from hat_jax.eval.records import RecordWriter
from hat_jax.eval.runner import EvalCase, PolicyFor, run_cases
from hat_jax.eval.stats import paired_difference, sign_p
from hat_jax.harness import Harness, HarnessError, dump_harness, load_harness
from hat_jax.harness import Mapping as NameMapping
from hat_jax.harness.dump import harness_texts
from hat_jax.harness.edits import EditError, apply_edits, harness_diff, parse_edits
from hat_jax.jsonl import read_json, write_text_atomic
from sim.adversaries import Memoriser
from sim.binding import bind
from sim.oracle import gold_trajectories
from sim.rewards import SUCCESS

GROUPS = ("intent", "kind")  # regression groups checked one by one
# one-sided exact sign tests on the cases an edit fixed and broke: a gain must
# also pass at 2.5 % (as the interval's lower bound), a group's loss counts at 5 %
P_GAIN, P_LOSS = 0.025, 0.05
EPS = 1e-9  # success differences are multiples of 1/n: -0.02 is not below -0.02


@dataclasses.dataclass(frozen=True)
class EvolveConfig:
    """What decides an evolution's results (``config.json``, checked on resume)."""

    rounds: int = 4
    dev_n: int = 150
    regression_n: int = 150
    test_n: int = 150
    confirm_n: int = 8  # reruns, and as many siblings, per class
    confirm_pool: int = 400
    max_classes: int = 8
    threshold: float = 0.5
    tolerance: float = 0.02
    min_group: int = 8
    max_candidates: int = 4
    replay_n: int = 16
    seed: int = 0
    batch_size: int = 32
    prompt_format: str | None = None
    compact_results: bool = False


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


class Evolution:
    """One evolution under ``out`` (module docstring).

    Args:
      start: the harness to evolve (already in ``cfg.prompt_format``).
      out: the run folder (created; resumed when it holds this evolution).
      editor: proposes edits (``editors.py``).
      policy_for: the agent: a policy per batch of cases (a model, an
        endpoint, or a reference policy built from the cases).
      cfg: sizes, thresholds and seeds.
      progress: show progress bars.
      log: where one line per decision goes.
      agent: what the agent is (model, endpoint, decoding), for the record and
        the resume check.
    """

    def __init__(
        self,
        start: Harness,
        out: str | Path,
        editor: Editor,
        policy_for: PolicyFor,
        cfg: EvolveConfig,
        *,
        progress: bool = False,
        log: Callable[[str], None] = print,
        agent: Mapping[str, Any] | None = None,
    ):
        self.start, self.out, self.editor = start, Path(out), editor
        self.agent = dict(agent or {"policy_for": getattr(policy_for, "__name__", "?")})
        self.judge = norms_judge(start)
        self.policy_for, self.cfg = policy_for, cfg
        self.progress, self.log = progress, log
        self._cases: dict[str, list] = {}
        self._replays: dict[str, list[list[str]]] = {}  # harness id -> replay

    # --- cases and runs ----------------------------------------------------
    def cases(self, split: str) -> list:
        n = {"dev": self.cfg.dev_n, "regression": self.cfg.regression_n}
        n |= {"test": self.cfg.test_n, "confirm": self.cfg.confirm_pool}
        if split not in self._cases:
            self._cases[split] = base_cases(split, self.cfg.seed, n[split])
        return self._cases[split]

    def run(
        self, folder: Path, harness: Harness, cases: Sequence[EvalCase], seed: int
    ) -> list[dict]:
        """Records of ``cases`` under ``harness`` in ``folder`` (resumed)."""
        opts = SuiteOptions(
            harness, seed=self.cfg.seed, compact_results=self.cfg.compact_results
        )
        with RecordWriter(folder / "records.jsonl") as w:
            run_cases(
                "evolve",
                cases,
                policy_for=self.policy_for,
                rollout=sim_rollout(opts),
                judge=self.judge,
                writer=w,
                batch_size=self.cfg.batch_size,
                seed=seed,
                progress=self.progress,
            )
            return [w.done[c.case_id] for c in cases]

    def split(self, folder: Path, harness: Harness, split: str) -> list[dict]:
        cases = eval_cases(split, self.cases(split), harness)
        return self.run(folder / split, harness, cases, self.cfg.seed)

    # --- the loop ----------------------------------------------------------
    def evolve(self) -> list[dict]:
        """Runs (or resumes) every round; the rounds' decisions, in order."""
        self._check_config()
        base = self.out / "round_00"
        if not (base / "harness" / "manifest.yaml").exists():
            dump_harness(self.start, base / "harness", overwrite=True)
        for split in ("dev", "regression", "test"):
            self.split(base, self.start, split)
        decisions: list[dict] = []
        for k in range(1, self.cfg.rounds + 1):
            path = self.out / f"round_{k:02d}" / "decision.json"
            d = read_json(path) if path.exists() else self.round(k, decisions)
            _write_json(path, d)
            decisions.append(d)
            self.log(f"round {k}: {d['summary']}")
            if not d.get("accepted"):
                break
        return decisions

    def _check_config(self) -> None:
        cfg = {**dataclasses.asdict(self.cfg), "agent": self.agent}
        cfg["editor"] = editor_settings(self.editor)
        texts = json.dumps(harness_texts(self.start), sort_keys=True).encode()
        cfg["start"] = {
            "id": self.start.id,
            "sha256": hashlib.sha256(texts).hexdigest(),
        }
        path = self.out / "config.json"
        if path.exists():
            old = read_json(path)
            if old != cfg:
                diff = sorted(
                    k for k in set(old) | set(cfg) if old.get(k) != cfg.get(k)
                )
                raise ValueError(
                    f"{path}: this folder holds an evolution with other settings "
                    f"({', '.join(diff)}); use another --out"
                )
        else:
            _write_json(path, cfg)

    def current(self, decisions: Sequence[dict]) -> tuple[Harness, Path]:
        """The harness in force and the folder holding its records."""
        folder = self.out / "round_00"
        for d in decisions:
            if d.get("accepted"):
                folder = self.out / d["accepted"]
        return load_harness(folder / "harness"), folder

    def round(self, k: int, decisions: Sequence[dict]) -> dict:
        rdir = self.out / f"round_{k:02d}"
        harness, cur = self.current(decisions)
        dev = self.split(cur, harness, "dev")
        classes = diagnose(dev)[: self.cfg.max_classes]
        confirmed = self.confirm(rdir, harness, classes)
        _write_json(rdir / "classes.json", [c.to_json() for c in classes])
        base = {"round": k, "harness": str(cur.relative_to(self.out))}
        base["classes"] = [c.key for c in classes]
        base["confirmed"] = [c.key for c in confirmed]
        if not confirmed:
            return base | {"accepted": None, "summary": "no confirmed error class"}
        ppath = rdir / "proposals.json"
        if ppath.exists():
            proposals = read_json(ppath)
        else:
            proposals = self.editor.propose(harness, confirmed, list(decisions))
            proposals = [checked_proposal(p) for p in proposals]
            _write_json(ppath, proposals)
        fixed = [key for d in decisions for key in d.get("fixed", [])]
        candidates = []
        for j, prop in enumerate(proposals[: self.cfg.max_candidates], 1):
            cdir = rdir / f"cand_{j}"
            dpath = cdir / "decision.json"
            if dpath.exists():
                d = read_json(dpath)
            else:
                d = self.candidate(cdir, k, harness, cur, dev, prop, fixed)
                _write_json(dpath, d)
            candidates.append(d | {"name": f"cand_{j}"})
            self.log(f"round {k} cand_{j}: {d['verdict']}")
            if d["accepted"]:
                name = str(cdir.relative_to(self.out))
                self.split(cdir, load_harness(cdir / "harness"), "test")
                # fixed: what the candidate's dev run shows, not what the
                # editor said (at most half the class's dev cases left)
                after = d.get("dev_counts", {})
                fixed_now = [
                    c.key for c in confirmed if 2 * after.get(c.key, 0) <= c.count
                ]
                return base | {
                    "accepted": name,
                    "candidates": candidates,
                    "fixed": fixed_now,
                    "summary": f"accepted {name}: {d['verdict']}",
                }
        return base | {
            "accepted": None,
            "candidates": candidates,
            "summary": f"no candidate accepted ({len(candidates)} tried)",
        }

    def confirm(
        self, rdir: Path, harness: Harness, classes: Sequence[ErrorClass]
    ) -> list[ErrorClass]:
        """The classes that reproduce (module docstring, step 2)."""
        n = self.cfg.confirm_n
        dev = {case_id("dev", i): c for i, c in enumerate(self.cases("dev"))}
        pool = self.cases("confirm")
        runs: dict[str, list[str]] = {}
        chosen: dict[str, Any] = {}
        for c in classes:
            ids = []
            for cid in c.cases[:n]:
                chosen[f"rerun-{cid}"] = dev[cid]
                ids.append(f"rerun-{cid}")
            sigs = {signature(dev[cid]) for cid in c.cases}
            sib = [i for i, case in enumerate(pool) if signature(case) in sigs][:n]
            for i in sib:
                chosen[case_id("confirm", i)] = pool[i]
            ids += [case_id("confirm", i) for i in sib]
            runs[c.key] = ids
        keys = list(chosen)
        cases = eval_cases("confirm", [chosen[k] for k in keys], harness)
        cases = [dataclasses.replace(c, case_id=k) for c, k in zip(cases, keys)]
        recs = dict(
            zip(keys, self.run(rdir / "confirm", harness, cases, self.cfg.seed + 1))
        )
        out = []
        for c in classes:
            c.confirm = confirm_rate(c, [recs[i] for i in runs[c.key]])
            c.confirm["confirmed"] = c.confirm["rate"] >= self.cfg.threshold
            if c.confirm["confirmed"]:
                out.append(c)
        return out

    def candidate(
        self,
        cdir: Path,
        k: int,
        harness: Harness,
        cur: Path,
        dev: Sequence[dict],
        prop: Mapping[str, Any],
        fixed: Sequence[str],
    ) -> dict:
        """One proposal built, validated, evaluated and checked (steps 4-6)."""
        d: dict[str, Any] = {"accepted": False, "rule": prop.get("rule")}
        if "error" in prop:
            return d | {"stage": "editor", "verdict": f"rejected: {prop['error']}"}
        try:
            obj = answer_object(prop.get("answer"))
            edits, why = parse_edits(obj)
            d |= {"edits": [e.to_json() for e in edits], "rationale": why}
            d["targets"] = [t for t in obj.get("targets", []) if isinstance(t, str)]
            cand = apply_edits(harness, edits)
        except (ValueError, EditError) as e:
            cut = prop.get("finish_reason") == "length"
            why = f"{e} (the answer hit the token limit)" if cut else str(e)
            return d | {"stage": "parse", "verdict": f"rejected: {why}"}
        if cand == harness:
            return d | {
                "stage": "parse",
                "verdict": "rejected: the edits change nothing",
            }
        cand = cand.replace(version=f"{self.start.version}+r{k}")
        problems = self.validate(cdir, harness, cand)
        if problems:
            why = "; ".join(problems[:3])
            return d | {
                "stage": "validate",
                "verdict": f"rejected: invalid harness: {why}",
            }
        cand = load_harness(cdir / "harness")
        cdev = self.split(cdir, cand, "dev")
        gain = _paired(dev, cdev)
        d |= {"dev": gain, "dev_counts": {c.key: c.count for c in diagnose(cdev)}}
        lo = gain["ci"][0] if gain["ci"] else None
        if lo is None or lo <= 0 or gain["p_gain"] > P_GAIN:
            verdict = (
                f"rejected: dev success {_fmt(gain)} does not rise beyond its "
                f"interval (sign test p {gain['p_gain']:.3f})"
            )
            return d | {"stage": "dev", "verdict": verdict}
        reg = self.split(cur, harness, "regression")
        creg = self.split(cdir, cand, "regression")
        problems, report = self.regressions(reg, creg, fixed)
        d["regression"] = report
        if problems:
            return d | {
                "stage": "regression",
                "verdict": "rejected: " + "; ".join(problems),
            }
        verdict = (
            f"accepted: dev success {_fmt(gain)}, regression {_fmt(report['overall'])}"
        )
        return d | {"accepted": True, "stage": "accepted", "verdict": verdict}

    def validate(self, cdir: Path, harness: Harness, cand: Harness) -> list[str]:
        """Why ``cand`` cannot be evaluated (empty: it can); writes its folder
        and its diff against ``harness``."""
        try:
            dump_harness(cand, cdir / "harness", overwrite=True)
            loaded = load_harness(cdir / "harness")
            bind(loaded)  # the simulator's playbook still has its tools and skills
        except (HarnessError, ValueError, OSError) as e:
            return [str(e)]
        write_text_atomic(
            cdir / "diff.patch", harness_diff(harness, loaded, ("current", "candidate"))
        )
        if harness.id not in self._replays:  # the harness in force: once a round
            self._replays[harness.id] = self.replay(harness)
        before, after = self._replays[harness.id], self.replay(loaded)
        return [
            f"gold dev-{i:05d}: {p}"
            for i, (old, new) in enumerate(zip(before, after))
            if new and not old  # what the edit broke, not what was broken
            for p in new[:2]
        ]

    def replay(self, harness: Harness) -> list[list[str]]:
        """Per dev case, the HSA validator's problems with the oracle's gold
        turn under ``harness`` (and a turn that does not end ok)."""
        golds = gold_trajectories(
            self.cases("dev")[: self.cfg.replay_n],
            harness,
            compact_results=self.cfg.compact_results,
        )
        ident = NameMapping.identity(harness)
        out = []
        for g in golds:
            problems = validate_augmented(harness, g, harness, g, ident)
            if g.status != "ok":
                problems.append(f"the oracle's turn ends {g.status}")
            out.append(problems)
        return out

    def regressions(
        self, reg: Sequence[dict], creg: Sequence[dict], fixed: Sequence[str]
    ) -> tuple[list[str], dict]:
        """Problems of the regression check and its figures (step 6)."""
        tol = self.cfg.tolerance
        overall = _paired(reg, creg)
        problems, groups = [], {}
        if overall["diff"] < -tol - EPS and overall["p_loss"] <= P_LOSS:
            problems.append(f"regression success {_fmt(overall)} falls beyond {tol:g}")
        for tag in GROUPS:
            for value in sorted({r["tags"].get(tag, "") for r in reg}):
                idx = [i for i, r in enumerate(reg) if r["tags"].get(tag) == value]
                if len(idx) < self.cfg.min_group:
                    continue
                g = _paired([reg[i] for i in idx], [creg[i] for i in idx])
                groups[f"{tag}={value}"] = g
                # more cases broken than fixed, beyond chance and the tolerance
                if g["diff"] < -tol - EPS and g["p_loss"] <= P_LOSS:
                    p = g["p_loss"]
                    problems.append(
                        f"{tag}={value} success {_fmt(g)} regresses (p {p:.3f})"
                    )
        back = {}
        for key in fixed:
            before = sum(key in record_keys(r) for r in reg)
            after = sum(key in record_keys(r) for r in creg)
            back[key] = {"before": before, "after": after}
            if after > before + max(1, round(tol * len(reg))):
                problems.append(
                    f"fixed class {key!r} is back ({before} -> {after} cases)"
                )
        return problems, {"overall": overall, "groups": groups, "fixed": back}


def memoriser_for(start: Harness) -> PolicyFor:
    """A memoriser of ``start`` as the agent (``sim.adversaries.Memoriser``):
    whatever the harness in force, it acts as the oracle of ``start`` would."""

    def policy_for(batch: Sequence[EvalCase]):
        cases = [case_of(c) for c in batch]
        return Memoriser(cases, [binding_of(c) for c in batch], harness=start)

    return policy_for


def _paired(a: Sequence[dict], b: Sequence[dict]) -> dict:
    """The paired difference of success (b - a) with its score interval (0/1),
    the cases it fixed and broke, and one-sided exact sign tests on them:
    ``p_gain`` that it fixed as many by chance, ``p_loss`` that it broke as many."""
    if [r["id"] for r in a] != [r["id"] for r in b]:
        raise ValueError("the two runs do not hold the same cases in the same order")
    xa = [r["scores"][SUCCESS] >= 1.0 for r in a]
    xb = [r["scores"][SUCCESS] >= 1.0 for r in b]
    out = paired_difference([float(x) for x in xa], [float(x) for x in xb])
    fixed = sum(y and not x for x, y in zip(xa, xb))
    broke = sum(x and not y for x, y in zip(xa, xb))
    out |= {"fixed": fixed, "broke": broke}
    return out | {"p_gain": sign_p(fixed, broke), "p_loss": sign_p(broke, fixed)}


def _fmt(p: Mapping[str, Any]) -> str:
    ci = p.get("ci")
    span = f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else ""
    return f"{100 * p['a']:.1f} -> {100 * p['b']:.1f} % ({100 * p['diff']:+.1f}{span})"
