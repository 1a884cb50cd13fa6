"""The pipeline driver: steps keyed by what they compute, runs, sweeps.

`hat run` (run_cmd) runs one pipeline, `hat sweep` (sweep_cmd) a config's
sweep; `pipeline` plans and executes steps, `registry` names their kinds,
`steps` holds the built-in kinds, `runs` writes each run's folder.
"""

from experiments.driver.pipeline import Step, execute, plan
from experiments.driver.registry import get, register
from experiments.driver.runs import Run, execute_run, load_runs

__all__ = ["Run", "Step", "execute", "execute_run", "get", "load_runs", "plan"]
__all__ += ["register"]
