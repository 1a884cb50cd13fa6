"""The live-stream simulator as an agent task (`hat_jax.train.agent_task`).

Cases are `sim.datasets.make_cases(split, seed, n)`; a case binds to a harness
through `sim.binding.bind` (an HSA variant from `augment.apply_spec`, bound
through `canonical_mapping(base).compose(mapping)` so the simulator knows which
renamed tool is which); tools run in `sim.tools.SimBackend`; the rewards are the
rule judges' (`sim.rewards.judge_all`: success, the headline, then accuracy,
effectiveness, tool rationality, skill selection). RL's training rewards may be
shaped (`SHAPINGS`); evaluation always reports the judges' raw rewards.
Declared as the `sim` entry point of `hat.tasks` (setup.py).
"""

from __future__ import annotations

from augment import apply_spec, sample_family_spec
from hat_jax.harness import Harness, Trajectory
from hat_jax.train.agent_task import TaskCase
from sim.binding import Binding, bind, canonical_mapping
from sim.datasets import fault_config, make_cases
from sim.oracle import Case, case_request
from sim.rewards import SUCCESS, judge_all
from sim.tools import SimBackend

__all__ = ["SHAPINGS", "SimTask"]

# Training-reward shaping by name (`rl.shaping`). name -> fn(reward dict).
SHAPINGS = {
    "none": lambda r: r,
    # An answer that answers nothing is not accurate: the rule judge's accuracy
    # (no wrong fact) pays a content-free reply, which RL finds and exploits.
    "gate_accuracy": lambda r: (
        r | {"accuracy": r["accuracy"] * (r["effectiveness"] > 0)}
    ),
    # Accuracy gated by success (sim/judge_success.py): a fact-free, off-skill
    # or unsigned reply earns no accuracy reward.
    "gate_success": lambda r: r | {"accuracy": r["accuracy"] * r["success"]},
}


class SimTask:
    """The simulator's cases, bindings, tool sandbox and judges (module docstring)."""

    headline = SUCCESS

    def cases(self, split: str, seed: int, n: int) -> list[Case]:
        return make_cases(split, seed, n)

    def bind(
        self, case: Case, harness: Harness, *, hsa_family: str | None = None, rng=None
    ) -> TaskCase:
        binding, spec = bind(harness), None
        if hsa_family is not None:
            spec = sample_family_spec(hsa_family, rng)
            try:
                h2, _, m = apply_spec(harness, None, spec, int(rng.integers(2**31)))
                binding = bind(h2, canonical_mapping(harness).compose(m))
            except ValueError:  # the spec does not apply: the base harness
                spec = None
        return self.bound(case, binding, spec)

    def bound(self, case: Case, binding: Binding, spec: str | None = None) -> TaskCase:
        """`case` under a binding made elsewhere (the suites' own variants)."""
        msg = case.message
        return TaskCase(
            case.case_id,
            request=case_request(case, binding),
            harness=binding.harness,
            payload=(case, binding),
            spec=spec,
            tags={"intent": msg.intent, "lang": msg.lang},
        )

    def backend(self, *, seed: int, fault_rate: float = 0.0, compact: bool = False):
        faults = fault_config(float(fault_rate))
        return SimBackend(faults, seed=int(seed), compact=bool(compact))

    def judge(self, case: TaskCase, trajectory: Trajectory) -> dict:
        c, binding = case.payload
        return judge_all(trajectory, c.snapshot, c.message, binding)

    def rewards(self, case: TaskCase, trajectory: Trajectory) -> dict[str, float]:
        return {k: float(s.value) for k, s in self.judge(case, trajectory).items()}

    def shape(self, rewards: dict[str, float], name: str) -> dict[str, float]:
        if name not in SHAPINGS:
            raise ValueError(
                f"rl.shaping must be one of {sorted(SHAPINGS)}, got {name!r}"
            )
        return SHAPINGS[name](dict(rewards))
