"""Random op compositions over both builtin harnesses preserve every gold task."""

from hypothesis import given, settings
from hypothesis import strategies as st

from augment import Mapping, all_ops, apply_spec, format_spec, validate_augmented
from augment.gold import gold_trajectories
from augment.ops import gold_calls
from hat_jax.harness.builtin import BUILTIN
from hat_jax.harness.loader import load_harness

CASES = sorted(gold_trajectories(load_harness(BUILTIN[0])))
WRAPPERS = ("", "args", "query", "payload")


def _param(op, key):
    default = op.defaults[key]
    if key in op.choices:
        return st.sampled_from(op.choices[key])
    if isinstance(default, bool):
        return st.booleans()
    lo, hi = op.ranges.get(key, (0, 4))
    if isinstance(default, int):
        return st.integers(int(lo), int(min(hi, 4)))
    if isinstance(default, float):
        return st.floats(lo, hi, allow_nan=False)
    return st.sampled_from(WRAPPERS)


@st.composite
def op_specs(draw):
    op = all_ops()[draw(st.sampled_from(sorted(all_ops())))]
    keys = []
    if op.defaults:
        keys = draw(st.lists(st.sampled_from(sorted(op.defaults)), unique=True))
    return op.name, {k: draw(_param(op, k)) for k in keys}


@settings(max_examples=300, deadline=None)
@given(
    harness=st.sampled_from(BUILTIN),
    case=st.sampled_from(CASES),
    ops=st.lists(op_specs(), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_compositions_preserve_the_task(
    harnesses, golds, harness, case, ops, seed
):
    h, t = harnesses[harness], golds[harness][case]
    spec = format_spec(ops)
    h2, t2, m = apply_spec(h, t, spec, seed)
    assert validate_augmented(h, t, h2, t2, m) == [], spec
    # The inverse mapping recovers every original call, in order, also after
    # a JSON round trip of the mapping.
    back = Mapping.from_json(m.to_json())
    assert [back.inverse_call(c) for c in gold_calls(t2)] == gold_calls(t), spec
    assert [back.forward_call(c) for c in gold_calls(t)] == gold_calls(t2), spec
