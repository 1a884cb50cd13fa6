"""Train-state checkpoints: a thin wrapper over orbax `CheckpointManager`.

Every trainer saves its state (any pytree of jax/numpy arrays, typed or raw PRNG keys
included) plus a small JSON `extra` dict (data-loader position, config) with::

    with Checkpointer(workdir / "ckpt", save_every=500, keep=3) as ckpt:
        if (restored := ckpt.restore_latest(state)) is not None:
            state, extra, step = restored
        for step in range(step + 1, num_steps + 1):
            state, metrics = train_step(state, batch, rng, cfg=cfg)
            ckpt.maybe_save(step, state, extra={"loader": loader.position})

Orbax writes each step into `<step>.orbax-checkpoint-tmp*` and renames it to `<step>`
when complete, so a run killed mid-save never leaves a step that looks finished; such
temporary folders are ignored and removed when a `Checkpointer` opens the directory.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

__all__ = ["Checkpointer", "abstract_like"]


def _abstract_leaf(leaf: Any) -> Any:
    """Returns the restore target for one template leaf."""
    if isinstance(leaf, jax.Array):
        # Keeps the template's sharding, so restored arrays land where it lives.
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=leaf.sharding)
    if isinstance(leaf, np.ndarray | np.generic):
        # A numpy leaf asks orbax for a numpy result with the same dtype and shape.
        return np.zeros(np.shape(leaf), leaf.dtype)
    if isinstance(leaf, jax.ShapeDtypeStruct) and leaf.sharding is None:
        # No placement asked: this process's default device, whatever device the
        # checkpoint was saved from (a GPU run's checkpoint read on a CPU machine).
        device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device)
    return leaf  # a placed ShapeDtypeStruct, Python scalar or None: as they are.


def _match_scalar(template_leaf: Any, restored_leaf: Any) -> Any:
    """Turns a restored 0-d numpy array back into the template's numpy scalar."""
    if isinstance(template_leaf, np.generic):
        return template_leaf.dtype.type(restored_leaf)
    return restored_leaf


def abstract_like(template: Any) -> Any:
    """Maps a state pytree to the abstract pytree orbax restores into.

    Args:
      template: a concrete or abstract state (jax arrays, numpy arrays,
        `jax.ShapeDtypeStruct`s, Python scalars).

    Returns:
      The same structure with jax arrays replaced by `jax.ShapeDtypeStruct`s that
      carry the template's shape, dtype and sharding.
    """
    return jax.tree.map(_abstract_leaf, template)


def _shapes(tree: Any) -> dict[tuple[str, ...], tuple[int, ...]]:
    """Leaf path (its names, however the tree spells keys) -> shape."""
    out = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            continue  # a typed key is saved as its raw uint32 data
        if shape is not None:
            key = tuple(re.findall(r"\w+", jax.tree_util.keystr(path)))
            out[key] = tuple(shape)
    return out


class Checkpointer:
    """Saves every `save_every` steps, keeps the `keep` newest, restores the latest.

    Attributes:
      directory: the root folder holding one subfolder per saved step.
      save_every: steps between saves (`step % save_every == 0`).
      keep: how many of the newest checkpoints survive.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        save_every: int,
        keep: int,
        async_save: bool = False,
    ) -> None:
        """Opens (creating if needed) a checkpoint directory.

        Args:
          directory: root folder; made absolute (orbax requires it).
          save_every: save when `step % save_every == 0`; must be >= 1.
          keep: number of newest checkpoints to keep; must be >= 1.
          async_save: write files in a background thread; device arrays are
            copied to host before `maybe_save` returns, so the state may be
            donated right after.
        """
        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.save_every = save_every
        self.keep = keep
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep,
            enable_async_checkpointing=async_save,
            # Leftovers of a killed save are never listed as steps; delete them too.
            cleanup_tmp_directories=True,
            create=True,
        )
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def maybe_save(
        self,
        step: int,
        state: Any,
        *,
        extra: dict[str, Any] | None = None,
        force: bool = False,
    ) -> bool:
        """Saves `state` and `extra` if `step % save_every == 0` or `force`.

        Args:
          step: the training step the state belongs to.
          state: any pytree of jax/numpy arrays and Python scalars.
          extra: JSON-serialisable dict stored beside the state.
          force: save regardless of `save_every`.

        Returns:
          Whether a save was started (False too when `step` is already saved).
        """
        step = int(step)
        if not (force or step % self.save_every == 0):
            return False
        if step in self._manager.all_steps():
            return False
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(state),
            extra=ocp.args.JsonSave(dict(extra or {})),
        )
        # Our own interval test decides; orbax's default policy would also save the
        # first step it sees, whatever its number.
        return bool(self._manager.save(step, args=args, force=True))

    def latest_step(self) -> int | None:
        """Returns the newest saved step, or None when there is none."""
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        """Returns the saved steps, oldest first."""
        return sorted(self._manager.all_steps())

    def restore_latest(
        self, template_state: Any
    ) -> tuple[Any, dict[str, Any], int] | None:
        """Restores the newest checkpoint into the template's structure.

        Args:
          template_state: a state (or abstract state) with the structure, dtypes,
            shapes and shardings to restore into; its values are not read.

        Returns:
          `(state, extra, step)`, or None when the directory holds no checkpoint.
        """
        self.wait()
        step = self._manager.latest_step()
        if step is None:
            return None
        abstract = abstract_like(template_state)
        self._check_shapes(step, abstract)
        args = ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract),
            extra=ocp.args.JsonRestore(),
        )
        restored = self._manager.restore(step, args=args)
        state = jax.tree.map(_match_scalar, template_state, restored.state)
        return state, dict(restored.extra or {}), step

    def _check_shapes(self, step: int, abstract: Any) -> None:
        """Names a checkpoint of other shapes before orbax tries to restore it
        (a failed orbax restore leaves its event loop half shut down)."""
        absl_log = logging.getLogger("absl")
        level = absl_log.level  # the step's own metadata file is not needed
        absl_log.setLevel(logging.ERROR)
        try:
            with ocp.StandardCheckpointer() as reader:
                saved = reader.metadata(
                    os.path.join(self.directory, str(step), "state")
                )
        finally:
            absl_log.setLevel(level)
        have, want = _shapes(getattr(saved, "item_metadata", saved)), _shapes(abstract)
        bad = [k for k in want if k in have and have[k] != want[k]]
        if bad:
            k = bad[0]
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise ValueError(
                f"step {step} holds {'.'.join(k)} of shape {have[k]}, the state "
                f"needs {want[k]}{more}"
            )

    def wait(self) -> None:
        """Blocks until any background save has been committed."""
        self._manager.wait_until_finished()

    def close(self) -> None:
        """Waits for pending saves and releases orbax's threads."""
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
