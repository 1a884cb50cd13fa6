"""The ``release`` step kind: a base model as a release folder (issue 56).

Writes ``release/`` into its step folder (``experiments.world.release``): the
``model`` train step's weights as a HF folder, the premise table of its
``evaluation`` step, the model card and sha256 sums. ``data`` names the data
steps whose counts the card gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments.driver.registry import register

RELEASE_CODE = (
    "hat_jax/*.py",
    "hat_jax/checkpoints",
    "hat_jax/text",
    "serving/export.py",
    "serving/chat_template.py",
    "experiments/world/release.py",
    "experiments/world/premise.py",
)


@register("release", code=RELEASE_CODE)
def release(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    from experiments.world.release import write_release

    info = write_release(
        model=Path(p["model"]),
        evaluation=Path(p["evaluation"]),
        data_steps={str(k): Path(v) for k, v in dict(p.get("data", {})).items()},
        out=out / "release",
        name=str(p.get("name", "world_base")),
    )
    return {"premise_holds": info["premise_holds"], "folder": str(out / "release")}
