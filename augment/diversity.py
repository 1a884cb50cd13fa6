"""How varied augmented harnesses are: distinct names, schemas and layouts.

``measure(harness, n=1000)`` draws ``n`` specs (family chosen uniformly among all
families, train and held-out) and counts distinct tool names, tool-name sets,
tool schemas (canonical JSON of the whole tool list, order kept, since order is
what the model sees), prompt layouts (section order + format + titles), skill
name sets and full system prompts.

  python -m augment.diversity taolive_v1 --n 1000
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from augment.families import FAMILIES, sample_family_spec
from augment.spec import apply_spec
from hat_jax.cli.argtypes import count, nonblank, seed
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.spec import Harness
from hat_jax.printable import shown

MAX_N = 1_000_000  # specs one measurement draws at most


def _schema_key(h: Harness) -> str:
    return json.dumps([t.spec() for t in h.tools], ensure_ascii=False)


def _layout_key(h: Harness) -> str:
    titles = sorted(dict(h.layout.titles).items())
    return json.dumps(
        [list(h.layout.order), h.layout.format, titles], ensure_ascii=False
    )


def measure(harness: Harness, n: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Distinct-count statistics over ``n`` augmented copies of ``harness``."""
    rng = np.random.default_rng(seed)
    families = sorted(FAMILIES)
    names: set[str] = set()
    name_sets, schemas, layouts, skill_sets, prompts = set(), set(), set(), set(), set()
    for i in range(n):
        spec = sample_family_spec(families[int(rng.integers(len(families)))], rng)
        h, _, _ = apply_spec(harness, None, spec, seed=seed * 1_000_003 + i)
        tools = [t.name for t in h.tools]
        names.update(tools)
        name_sets.add(tuple(sorted(tools)))
        schemas.add(_schema_key(h))
        layouts.add(_layout_key(h))
        skill_sets.add(tuple(sorted(s.name for s in h.skills)))
        prompts.add(render_system_prompt(h, None))
    return {
        "n": n,
        "tool_names": len(names),
        "tool_name_sets": len(name_sets),
        "tool_schemas": len(schemas),
        "prompt_layouts": len(layouts),
        "skill_name_sets": len(skill_sets),
        "system_prompts": len(prompts),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m augment.diversity``: 0, or 1 after an error on stderr."""
    from hat_jax.harness.loader import load_harness  # noqa: PLC0415

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("harness", nargs="+", type=nonblank, help="builtin names or folders")
    p.add_argument("--n", type=count(1, MAX_N), default=1000)
    p.add_argument("--seed", type=seed, default=0)
    args = p.parse_args(argv)
    for name in args.harness:
        try:
            stats = measure(load_harness(name), n=args.n, seed=args.seed)
        except (OSError, ValueError) as e:
            print(f"augment.diversity: error: {shown(e)}", file=sys.stderr)
            return 1
        print(shown(name), json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
