"""graft_head: a model drafting with another model's MTP head (the base-head row)."""

import chex
import jax
import numpy as np
import pytest
from flax import nnx

from hat_jax.models import build_model
from hat_jax.models.mtp import graft_head
from tests.tiny_configs import tiny_hybrid


def _state(module):
    return nnx.state(module, nnx.Param)


def _params(module):
    return jax.tree.leaves(_state(module))


def test_with_head_takes_the_donors_head_and_keeps_the_trunk():
    cfg = tiny_hybrid(mtp_num_hidden_layers=1)
    model, donor = build_model(cfg, seed=0), build_model(cfg, seed=1)
    before = jax.tree.map(np.asarray, _state(model))
    grafted = graft_head(model, donor)
    chex.assert_trees_all_equal(_state(grafted.mtp), _state(donor.mtp))
    chex.assert_trees_all_equal(_state(grafted.layers), _state(model.layers))
    # the heads differ (different seeds), and the model itself is left alone
    assert any(
        not np.array_equal(a, b)
        for a, b in zip(_params(grafted.mtp), _params(model.mtp), strict=True)
    )
    chex.assert_trees_all_equal(_state(model), before)
    assert grafted.mtp is not donor.mtp  # a copy: the donor stays usable


def test_with_head_refuses_a_head_of_other_shapes_or_none():
    model = build_model(tiny_hybrid(mtp_num_hidden_layers=1))
    donor = build_model(tiny_hybrid(mtp_num_hidden_layers=1, hidden_size=48))
    with pytest.raises(ValueError, match="does not fit"):
        graft_head(model, donor)
    with pytest.raises(ValueError, match="no MTP head"):
        graft_head(model, build_model(tiny_hybrid()))


def test_a_model_without_a_head_takes_one_that_fits_and_counts_it():
    model = build_model(tiny_hybrid())  # no head (e.g. an RL model of a dense run)
    donor = build_model(tiny_hybrid(mtp_num_hidden_layers=1), seed=1)
    grafted = graft_head(model, donor)
    assert grafted.config.mtp_num_hidden_layers == 1 and model.mtp is None
    assert model.config.mtp_num_hidden_layers == 0
    wide = build_model(tiny_hybrid(mtp_num_hidden_layers=1, hidden_size=48))
    with pytest.raises(ValueError, match="does not fit"):
        graft_head(model, wide)
