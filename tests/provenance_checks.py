"""The provenance object's fields and types, checked where records are tested."""

from __future__ import annotations

from hat_jax import provenance


def check_provenance(p: dict, *, config: bool = False) -> None:
    """Asserts the fields and types `hat_jax.provenance` documents."""
    assert set(p) == {"git", "argv", "python", "packages", "devices"} | (
        {"config"} if config else set()
    )
    if p["git"] is not None:
        assert set(p["git"]) == {"sha", "dirty"}
        assert len(p["git"]["sha"]) == 40 and isinstance(p["git"]["dirty"], bool)
    assert p["argv"] and all(isinstance(a, str) for a in p["argv"])
    assert isinstance(p["python"], str)
    assert set(p["packages"]) == set(provenance.PACKAGES)
    assert isinstance(p["packages"]["jax"], str)  # installed here
    assert all(v is None or isinstance(v, str) for v in p["packages"].values())
    d = p["devices"]
    assert d["platform"] == "cpu" and isinstance(d["kind"], str)
    assert isinstance(d["count"], int) and d["count"] >= 1
    assert d["process_count"] == 1
