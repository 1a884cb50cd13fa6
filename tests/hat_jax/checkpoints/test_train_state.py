"""Tests for hat_jax.checkpoints.train_state."""

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.checkpoints.train_state import Checkpointer

# Written to tmp_path, run as a child process and imported by the parent, so both
# sides build the same state from the same code.
_HELPER = textwrap.dedent(
    '''
    import os
    import signal
    import sys
    from typing import Any

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax import nnx, struct

    from hat_jax.checkpoints.train_state import Checkpointer


    class Model(nnx.Module):
        def __init__(self, rngs):
            self.body = nnx.Linear(8, 16, rngs=rngs)
            self.head = nnx.Linear(
                16, 4, dtype=jnp.bfloat16, param_dtype=jnp.bfloat16, rngs=rngs
            )

        def __call__(self, x):
            return self.head(jax.nn.relu(self.body(x)))


    @struct.dataclass
    class TrainState:
        params: Any
        opt_state: Any
        step: int
        rng: jax.Array
        raw_rng: jax.Array


    def build_state(step):
        """The state after `step` deterministic AdamW steps."""
        graphdef, params = nnx.split(Model(nnx.Rngs(0)))
        tx = optax.adamw(1e-2)
        opt_state = tx.init(params)
        rng, raw_rng = jax.random.key(42), jax.random.PRNGKey(7)
        x = jnp.linspace(-1.0, 1.0, 3 * 8, dtype=jnp.float32).reshape(3, 8)

        def loss(p):
            y = nnx.merge(graphdef, p)(x).astype(jnp.float32)
            return jnp.mean(y**2)

        for s in range(step):
            grads = jax.grad(loss)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            rng, raw_rng = jax.random.fold_in(rng, s), jax.random.fold_in(raw_rng, s)
        return TrainState(params, opt_state, step, rng, raw_rng)


    def build_big(step):
        """A state large enough that an async save is still writing when killed."""
        return {f"w{i}": np.full((1024, 2048), step + i, np.float32) for i in range(8)}


    def hold_commit():
        """Later saves never reach orbax's final rename: the kill lands mid-save
        by the order of events, whatever the machine's load or disk speed."""
        import asyncio
        import threading

        from orbax.checkpoint._src.path import atomicity

        never = threading.Event()

        async def finalize(self):
            await asyncio.to_thread(never.wait)

        atomicity.AtomicRenameTemporaryPath.finalize = finalize


    def main(directory, mode, last):
        if mode == "sync":
            ckpt = Checkpointer(directory, save_every=2, keep=2)
            for step in range(1, last + 1):
                ckpt.maybe_save(step, build_state(step), extra={"pos": step})
        else:
            ckpt = Checkpointer(directory, save_every=2, keep=2, async_save=True)
            ckpt.maybe_save(2, build_big(2), extra={"pos": 2})
            ckpt.wait()
            hold_commit()
            ckpt.maybe_save(4, build_big(4), extra={"pos": 4})
        if mode == "sync":
            ckpt.wait()
        print("saved", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # No close(), no atexit: a hard crash.


    if __name__ == "__main__":
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    '''
)


@pytest.fixture
def helper(tmp_path):
    path = tmp_path / "ckpt_helper.py"
    path.write_text(_HELPER)
    spec = importlib.util.spec_from_file_location("ckpt_helper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def _run_and_kill(script: Path, directory: Path, mode: str, last: int) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, str(script), str(directory), mode, str(last)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert "saved" in proc.stdout


def _raw(leaf):
    if isinstance(leaf, jax.Array) and jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return str(leaf.dtype), np.asarray(jax.random.key_data(leaf))
    return str(getattr(leaf, "dtype", type(leaf))), np.asarray(leaf)


def _assert_bit_identical(got, want):
    assert jax.tree.structure(got) == jax.tree.structure(want)
    got_leaves = jax.tree.leaves_with_path(got)
    for (path, g), w in zip(got_leaves, jax.tree.leaves(want), strict=True):
        (g_kind, g_arr), (w_kind, w_arr) = _raw(g), _raw(w)
        name = jax.tree_util.keystr(path)
        assert g_kind == w_kind, name
        assert g_arr.dtype == w_arr.dtype and g_arr.shape == w_arr.shape, name
        assert g_arr.tobytes() == w_arr.tobytes(), name


def _small_state(step: int) -> dict:
    return {
        "w": jnp.full((3, 4), step, jnp.float32),
        "b": jnp.arange(4, dtype=jnp.bfloat16) * step,
        "rng": jax.random.fold_in(jax.random.key(0), step),
        "raw_rng": jax.random.PRNGKey(step),
        "count": np.array(step, np.int64),
        "step": step,
    }


def test_save_kill_restore_is_bit_identical(tmp_path, helper):
    script, module = helper
    directory = tmp_path / "ckpt"
    _run_and_kill(script, directory, "sync", last=6)

    want = module.build_state(6)
    leaf_dtypes = {str(x.dtype) for x in jax.tree.leaves(want.params)}
    assert leaf_dtypes == {"float32", "bfloat16"}
    template = module.build_state(0)
    with Checkpointer(directory, save_every=2, keep=2) as ckpt:
        assert ckpt.all_steps() == [4, 6]
        state, extra, step = ckpt.restore_latest(template)
    assert step == 6 and extra == {"pos": 6}
    assert type(state) is type(want) and state.step == 6
    _assert_bit_identical(state, want)


def test_kill_during_async_save_restores_a_complete_step(tmp_path, helper):
    script, module = helper
    directory = tmp_path / "ckpt"
    _run_and_kill(script, directory, "async", last=4)
    # step 4's save was held before its final rename (`hold_commit`)
    assert sorted(os.listdir(directory)) == ["2", "4.orbax-checkpoint-tmp"]

    with Checkpointer(directory, save_every=2, keep=2) as ckpt:
        assert ckpt.latest_step() == 2
        state, extra, step = ckpt.restore_latest(module.build_big(0))
        _assert_bit_identical(state, module.build_big(step))
        assert extra == {"pos": step}
        assert ckpt.maybe_save(6, module.build_big(6))
        assert ckpt.restore_latest(module.build_big(0))[2] == 6
    assert not [p for p in os.listdir(directory) if "tmp" in p]


def test_half_written_tmp_dir_is_ignored(tmp_path):
    directory = tmp_path / "ckpt"
    with Checkpointer(directory, save_every=2, keep=3) as ckpt:
        for step in (2, 4):
            ckpt.maybe_save(step, _small_state(step))
    # What a save of step 6 killed before orbax's final rename leaves behind.
    partial = directory / "6.orbax-checkpoint-tmp"
    (partial / "state").mkdir(parents=True)
    (partial / "state" / "_METADATA").write_text("{trunc")
    with Checkpointer(directory, save_every=2, keep=3) as ckpt:
        assert ckpt.latest_step() == 4
        state, _, step = ckpt.restore_latest(_small_state(0))
        assert step == 4
        _assert_bit_identical(state, _small_state(4))
        assert ckpt.maybe_save(6, _small_state(6))
        assert ckpt.all_steps() == [2, 4, 6]
    assert sorted(os.listdir(directory)) == ["2", "4", "6"]


def test_keep_prunes_oldest(tmp_path):
    with Checkpointer(tmp_path, save_every=1, keep=2) as ckpt:
        for step in range(1, 6):
            assert ckpt.maybe_save(step, _small_state(step))
        assert ckpt.all_steps() == [4, 5]
    assert sorted(os.listdir(tmp_path)) == ["4", "5"]


def test_save_interval_and_force(tmp_path):
    with Checkpointer(tmp_path, save_every=3, keep=10) as ckpt:
        saved = [ckpt.maybe_save(s, _small_state(s)) for s in range(1, 8)]
        assert saved == [False, False, True, False, False, True, False]
        assert ckpt.maybe_save(7, _small_state(7), force=True)
        assert not ckpt.maybe_save(7, _small_state(7), force=True)  # Already saved.
        assert ckpt.all_steps() == [3, 6, 7]
        assert ckpt.latest_step() == 7


def test_extra_round_trip(tmp_path):
    extra = {"loader": {"epoch": 1, "index": 123}, "lr": 3e-4, "tags": ["a", "b"]}
    with Checkpointer(tmp_path, save_every=1, keep=2) as ckpt:
        ckpt.maybe_save(1, _small_state(1))
        ckpt.maybe_save(2, _small_state(2), extra=extra)
    with Checkpointer(tmp_path, save_every=1, keep=2) as ckpt:
        state, got, step = ckpt.restore_latest(_small_state(0))
    assert step == 2 and got == extra
    _assert_bit_identical(state, _small_state(2))


def test_extra_defaults_to_empty_dict(tmp_path):
    with Checkpointer(tmp_path, save_every=1, keep=1) as ckpt:
        ckpt.maybe_save(1, _small_state(1))
        assert ckpt.restore_latest(_small_state(0))[1] == {}


def test_restore_when_empty_returns_none(tmp_path):
    with Checkpointer(tmp_path / "new", save_every=1, keep=1) as ckpt:
        assert ckpt.latest_step() is None
        assert ckpt.all_steps() == []
        assert ckpt.restore_latest(_small_state(0)) is None


def _unplaced_template():
    """`_small_state`'s structure, its arrays abstract and without a device."""
    return jax.tree.map(
        lambda x: (
            jax.ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, jax.Array) else x
        ),
        _small_state(0),
    )


def test_restore_into_abstract_template_keeps_dtypes(tmp_path):
    template = _unplaced_template()
    with Checkpointer(tmp_path, save_every=1, keep=1) as ckpt:
        ckpt.maybe_save(5, _small_state(5))
        state, _, _ = ckpt.restore_latest(template)
    assert isinstance(state["count"], np.ndarray) and state["step"] == 5
    assert jnp.issubdtype(state["rng"].dtype, jax.dtypes.prng_key)
    _assert_bit_identical(state, _small_state(5))


def test_a_checkpoint_saved_on_another_device_restores_here(tmp_path):
    """A run trained on a GPU is read on a CPU: orbax records each array's
    device ("cuda:0"); a template without placement restores onto this process's
    default device instead of refusing the saved topology."""
    template = _unplaced_template()
    with Checkpointer(tmp_path, save_every=1, keep=1) as ckpt:
        ckpt.maybe_save(5, _small_state(5))
    files = list(tmp_path.glob("5/state/_sharding"))
    assert files, "orbax no longer writes state/_sharding: update this test"
    text = files[0].read_text()
    assert '\\"cpu:0\\"' in text
    files[0].write_text(text.replace('\\"cpu:0\\"', '\\"cuda:0\\"'))
    with Checkpointer(tmp_path, save_every=1, keep=1) as ckpt:
        state, _, step = ckpt.restore_latest(template)
    assert step == 5 and state["w"].devices() == {jax.devices()[0]}
    _assert_bit_identical(state, _small_state(5))


def test_async_save_then_wait(tmp_path):
    with Checkpointer(tmp_path, save_every=1, keep=2, async_save=True) as ckpt:
        for step in (1, 2, 3):
            state = _small_state(step)
            assert ckpt.maybe_save(step, state)
            state["w"].delete()  # As a donating train step would.
        ckpt.wait()
        assert ckpt.all_steps() == [2, 3]
        state, _, step = ckpt.restore_latest(_small_state(0))
    assert step == 3
    _assert_bit_identical(state, _small_state(3))


@pytest.mark.parametrize(
    "kwargs", [{"save_every": 0, "keep": 1}, {"save_every": 1, "keep": 0}]
)
def test_rejects_bad_options(tmp_path, kwargs):
    with pytest.raises(ValueError):
        Checkpointer(tmp_path, **kwargs)
