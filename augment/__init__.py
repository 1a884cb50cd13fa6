"""Harness-State Augmentation (HSA): task-preserving perturbations of a harness.

Ops (``augment.ops`` registry) edit a harness along five dimensions — skill
identifiers, skill content, tool schemas, prompt structure, hook behaviour —
and carry a gold trajectory along, recording a :class:`Mapping` of names and
argument paths. Compose them with spec strings::

    h2, t2, m = apply_spec(h, traj, "rename_tools|reorder_sections|format(xml)", 0)
    assert validate_augmented(h, traj, h2, t2, m) == []

Named variant families (``TRAIN_FAMILIES`` / ``HELDOUT_FAMILIES``) sample specs.
"""

from augment import ops_hooks, ops_prompt, ops_skills, ops_tools  # noqa: F401
from augment.families import (
    FAMILIES,
    HELDOUT_FAMILIES,
    TRAIN_FAMILIES,
    sample_family_spec,
)
from augment.ops import DIMENSIONS, Op, all_ops, get_op, register_op
from augment.spec import apply_spec, format_spec, parse_spec
from augment.validate import validate_augmented
from hat_jax.harness.mapping import Mapping

__all__ = [
    "DIMENSIONS",
    "FAMILIES",
    "HELDOUT_FAMILIES",
    "Mapping",
    "Op",
    "TRAIN_FAMILIES",
    "all_ops",
    "apply_spec",
    "format_spec",
    "get_op",
    "parse_spec",
    "register_op",
    "sample_family_spec",
    "validate_augmented",
]
