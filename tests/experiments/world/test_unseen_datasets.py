"""Every dataset the world_base config builds asks only for identifiers its own
context shows (``hat_jax.harness.unseen``), at every scale; the old tiny-world
drill (fixed tool names, no tool list) is what the scan exists to catch."""

import pytest

from experiments.configs import world_base
from experiments.world.base_data import base_examples
from hat_jax.harness.unseen import unseen_identifiers

N = 60  # rows of each dataset scanned (each row a fixed function of its index)


def _data_steps():
    out = set()
    for scale in world_base.SCALES:
        for step in world_base.get_config(f"scale={scale}").steps.values():
            if step["kind"] == "world_base":
                out.add((step["mix"], int(step["seed"])))
    return sorted(out)


def test_the_config_builds_only_base_world_data():
    steps = world_base.get_config("scale=full").steps
    kinds = {s["kind"] for s in steps.values()}
    assert "sim_data" not in kinds  # the base never sees taolive
    files = steps["tokenizer"]["files"]
    assert all(
        f.split("/")[0] in ("@base_data", "@drill_data", "@prompts") for f in files
    )
    assert _data_steps() == [("apps", 0), ("apps_drill", 0)]


@pytest.mark.parametrize("mix, seed", _data_steps())
def test_no_row_names_an_identifier_absent_from_its_context(mix, seed):
    bad = [
        (t.meta["index"], u)
        for t in base_examples(N, seed, mix)
        if (u := unseen_identifiers(t.messages))
    ]
    assert bad == []


def test_the_scan_catches_the_old_drill():
    rows = list(base_examples(20, 0, "drill"))
    assert all(unseen_identifiers(t.messages) for t in rows)


def test_training_episodes_never_share_a_seed_with_the_apps_suite():
    from experiments.suites import SuiteOptions
    from experiments.suites.apps import SEED_OFFSET
    from experiments.suites.base import dataset_seed
    from experiments.world.base_data import TRAIN_SEEDS

    rows = list(base_examples(200, 0, "apps")) + list(
        base_examples(50, 0, "apps_drill")
    )
    apps = [t for t in rows if t.meta["kind"] in ("app", "mini", "drill")]
    assert len(apps) > 100
    assert min(t.meta["app_seed"] for t in apps) >= TRAIN_SEEDS
    opts = SuiteOptions(harness=None, seed=999)
    assert dataset_seed(opts, SEED_OFFSET) < TRAIN_SEEDS  # eval seeds 0-999
