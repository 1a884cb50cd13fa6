"""The family split: disjoint, single-dimension train, multi-dimension held-out."""

import numpy as np
import pytest

from augment import FAMILIES, HELDOUT_FAMILIES, TRAIN_FAMILIES, parse_spec
from augment.families import family_dimensions, sample_family_spec
from augment.ops import all_ops


def test_split_is_disjoint_and_complete():
    assert not set(TRAIN_FAMILIES) & set(HELDOUT_FAMILIES)
    assert set(FAMILIES) == set(TRAIN_FAMILIES) | set(HELDOUT_FAMILIES)
    used = {c for f in FAMILIES.values() for s in f for c, _ in s.choices}
    assert used <= set(all_ops())
    assert set(all_ops()) - used == {"call_format"}


def test_train_families_touch_one_dimension_heldout_several():
    for name in TRAIN_FAMILIES:
        assert len(set().union(*family_dimensions(name))) == 1, name
    for name in HELDOUT_FAMILIES:
        # Slots that always fire (p=1) already cover two or more dimensions.
        sure = [d for d, s in zip(family_dimensions(name), FAMILIES[name]) if s.p == 1]
        assert len(sure) >= 2 and all(len(d) == 1 for d in sure[:2]), name
        assert sure[0] != sure[1], name


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_samples_parse_and_stay_in_family(family):
    rng = np.random.default_rng(0)
    ops = all_ops()
    allowed = {c for s in FAMILIES[family] for c, _ in s.choices}
    dims = set()
    for _ in range(30):
        parsed = parse_spec(sample_family_spec(family, rng))
        assert parsed and {n for n, _ in parsed} <= allowed
        dims |= {ops[n].dimension for n, _ in parsed}
    assert (len(dims) == 1) == (family in TRAIN_FAMILIES)


def test_unknown_family():
    with pytest.raises(ValueError, match="unknown family"):
        sample_family_spec("nope", np.random.default_rng(0))
