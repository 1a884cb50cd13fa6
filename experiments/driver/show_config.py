"""``--print-config`` of `hat run` / `hat sweep`: a run's resolved stage configs.

Each train step's ConfigDict as its stage will read it (the config file, its
argument string and the run's overrides, every ``@step`` reference replaced by
that step's folder), and every other step's spec, in the order they run.
Nothing is run and nothing is written.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from experiments.driver import pipeline
from experiments.driver.steps import stage_config


def print_config(run, out: TextIO | None = None) -> None:
    """Prints `run`'s steps (`runs.Run`): train stages in full, others' specs."""
    out = out or sys.stdout
    planned = {s.name: s for s in run.steps}
    print(f"# run {run.name}: {len(run.steps)} steps", file=out)
    for step in run.steps:
        spec = pipeline.resolved(step, planned)
        kind = spec.get("kind", "?")
        print(f"\n## {step.name} ({kind}) -> {step.path}", file=out)
        if kind == "train":
            head = f"# stage {spec['stage']}: {spec['config']}:{spec.get('arg', '')}"
            print(head, file=out)
            cfg = stage_config(spec).to_dict()
            print(json.dumps(cfg, indent=1, sort_keys=True, default=str), file=out)
        else:
            body = {k: v for k, v in spec.items() if k not in ("kind", "est_s")}
            print(json.dumps(body, indent=1, sort_keys=True, default=str), file=out)
