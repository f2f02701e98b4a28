"""Measures xlapy's coverage of JAX's public API, module by module, and writes docs/api_coverage.md.

Run with the environment that has real JAX (tools/setup_models_env.sh), which imports both jax and xlapy:

    .venv-models/bin/python tools/api_coverage.py            # writes docs/api_coverage.md, prints the table
    .venv-models/bin/python tools/api_coverage.py --check    # prints only; exits 1 if the file is stale

It also writes tests/unit/api_names.json: JAX's public names per module and the share xlapy had, which
tests/unit/test_api_coverage.py (no JAX needed) checks xlapy never drops below.

A module's public names are `dir(module)` without the names these rules exclude (they are not API an xlapy
user calls, or they are a module of their own, measured separately or not at all):

1. private names: a leading underscore;
2. submodules and namespaces: module objects and `types.SimpleNamespace` values (`jax.numpy.linalg` is a row
   of its own; `jax.ad`, `jax.checkpoint_policies` are namespaces);
3. primitives: names ending in `_p` and `jax.extend.core.Primitive` instances (`random_gamma_p`);
4. dtype scalars: jax's scalar types (`jnp.float32`, `jnp.bfloat16`: instances of its `_ScalarMeta`) and
   numpy's scalar type classes (subclasses of `np.generic`: `jnp.integer`, `jnp.floating`, ...);
5. config flags: `jax.config` and its flag objects (`jax.enable_x64`, `jax.debug_nans`: `State` instances);
6. `__future__` feature objects (`annotations`) left by `from __future__ import`.

xlapy has a name when `getattr(xlapy_module, name)` succeeds; the module map is `MODULES`. The check is by
name only: semantics are the business of the tests that compare against JAX's outputs.
"""
from __future__ import annotations

import __future__
import argparse
import importlib
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "api_coverage.md"
NAMES = ROOT / "tests" / "unit" / "api_names.json"

# JAX module -> the xlapy module that mirrors it
MODULES = [
    ("jax", "xlapy"),
    ("jax.numpy", "xlapy.numpy"),
    ("jax.numpy.linalg", "xlapy.numpy.linalg"),
    ("jax.numpy.fft", "xlapy.numpy.fft"),
    ("jax.lax", "xlapy.lax"),
    ("jax.nn", "xlapy.nn"),
    ("jax.nn.initializers", "xlapy.nn.initializers"),
    ("jax.random", "xlapy.random"),
    ("jax.scipy.special", "xlapy.scipy.special"),
    ("jax.scipy.linalg", "xlapy.scipy.linalg"),
    ("jax.tree_util", "xlapy.tree_util"),
    ("jax.sharding", "xlapy.sharding"),
]


def _excluded(name: str, value) -> str | None:
    """The rule (see the module docstring) that excludes `name`, or None for a public API name."""
    from jax._src import config as jax_config
    from jax.extend.core import Primitive
    if name.startswith("_"):
        return "private"
    if isinstance(value, (types.ModuleType, types.SimpleNamespace)):
        return "submodule"
    if name.endswith("_p") or isinstance(value, Primitive):
        return "primitive"
    if type(value).__name__ == "_ScalarMeta" or (isinstance(value, type) and issubclass(value, np.generic)):
        return "dtype scalar"
    if isinstance(value, (jax_config.Config, jax_config.State)) or type(value).__name__ in ("State", "Config"):
        return "config flag"
    if isinstance(value, __future__._Feature):
        return "__future__"
    return None


def public_names(module) -> list[str]:
    names = []
    for name in dir(module):
        try:
            value = getattr(module, name)
        except AttributeError:
            continue
        if _excluded(name, value) is None:
            names.append(name)
    return sorted(names)


def _resolve(path: str):
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, attr = path.rpartition(".")
        try:
            return getattr(importlib.import_module(parent), attr)
        except (ImportError, AttributeError):
            return None


def measure() -> list[tuple[str, str, int, list[str], list[str]]]:
    """(jax module, xlapy module, number of JAX names, names xlapy lacks, JAX's names) per row of MODULES."""
    rows = []
    for jax_path, xlapy_path in MODULES:
        names = public_names(importlib.import_module(jax_path))
        mine = _resolve(xlapy_path)
        missing = [n for n in names if mine is None or not hasattr(mine, n)]
        rows.append((jax_path, xlapy_path, len(names), missing, names))
    return rows


def names_json(rows) -> str:
    """tests/unit/api_names.json: per JAX module, its xlapy module, JAX's names and the share xlapy has."""
    import json

    import jax
    data = {"jax_version": jax.__version__, "modules": {
        jax_path: {"xlapy": xlapy_path, "names": names, "share": round((n - len(missing)) / max(n, 1), 4)}
        for jax_path, xlapy_path, n, missing, names in rows}}
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def render(rows) -> str:
    import jax
    lines = [
        "# xlapy's coverage of JAX's public API",
        "",
        f"Generated by `tools/api_coverage.py` against JAX {jax.__version__} (do not edit by hand: run "
        "`.venv-models/bin/python tools/api_coverage.py`). A module's public names are `dir(module)` less "
        "private names, submodules, primitives (`*_p`), dtype scalars (`jnp.float32`, `jnp.integer`), config "
        "flags and `__future__` features (the rules are in the script's docstring). The check is by name; "
        "semantics are checked by the tests against JAX's outputs.",
        "",
        "| JAX module | xlapy module | names | xlapy has | share | missing |",
        "|---|---|---:|---:|---:|---|",
    ]
    total = have_total = 0
    for jax_path, xlapy_path, n, missing, _ in rows:
        have = n - len(missing)
        total, have_total = total + n, have_total + have
        share = f"{100 * have / n:.0f}%" if n else "-"
        miss = ", ".join(f"`{m}`" for m in missing) if missing else "(none)"
        lines.append(f"| `{jax_path}` | `{xlapy_path}` | {n} | {have} | {share} | {miss} |")
    lines.append(f"| **all** | | {total} | {have_total} | {100 * have_total / max(total, 1):.0f}% | |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print only; exit 1 if docs/api_coverage.md is stale")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    rows = measure()
    for jax_path, _, n, missing, _ in rows:
        print(f"{jax_path:22s} {n - len(missing):4d}/{n:<4d} {100 * (n - len(missing)) / max(n, 1):5.1f}%  "
              f"missing {len(missing)}")
    text, names = render(rows), names_json(rows)
    if args.check:
        fresh = OUT.exists() and OUT.read_text() == text and NAMES.exists() and NAMES.read_text() == names
        return 0 if fresh else 1
    OUT.write_text(text)
    NAMES.write_text(names)
    print(f"wrote {OUT.relative_to(ROOT)} and {NAMES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
