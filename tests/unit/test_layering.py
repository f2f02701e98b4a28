"""xlapy's layers, and the rule that imports point down: a module imports only from its own layer or below.

The layers, lowest first (docs: /work/shared/DESIGN.md, "Layers"):

  hlo            xlapy/hlo/, errors.py, debug.py (XLA_FLAGS), trace_events.py (the profiler's recorder): the IR
                 and what every layer may use
  interpreter    xlapy/backends/interpreter/: the reference semantics of the IR
  passes         xlapy/passes/: target-independent HLO -> HLO (constant folding runs the interpreter)
  backends       xlapy/backends/ but interpreter/: the registry (registry.py, builtin.py), soft placement
                 (placement.py), cpu/: compile a Module, whoever made it; devices.py, spmd.py (replicated runs)
                 and xlapy/distributed/ (MPI across processes)
  frontend core  xlapy/frontend/: tracing (tracer, dtypes, pytree, array, ops_mixin), eager execution, jit
                 (signature, warm_call), cost, autodiff/, batching/, transforms, lazy/ (the lazy eager mode) and
                 autojit (auto-clustering over it); the package __init__ exports these
  frontend ops   xlapy/frontend/: the lax implementation (lax_operands, lax_elementwise, lax_shapes, lax_dot_conv,
                 lax_special, lax_special_math, lax_reduce, lax_fft, lax_linalg, lax_more, control_flow) and numpy's operators and indexing over it (operators,
                 indexing), api_transforms (jacobians, eval_shape, make_jaxpr: over lax_shapes),
                 parallel/point_to_point (psend, precv, ragged_all_to_all: over lax and the collectives)
  libraries      xlapy/lax.py (the façade over frontend ops), numpy/, scipy/, nn.py, nn_more.py, nn_initializers.py, random*.py,
                 dlpack.py, ad_checkpoint.py, tree.py, sharding.py, experimental/, torch/ (the PyTorch front end),
                 ref.py (mutable array references), user_context.py (make_user_context):
                 the APIs users import
  top            xlapy/__init__.py, aot.py, profiler.py, tools/, testing.py, filecheck.py: entry points and test
                 support

Every import counts: module level, inside functions and under TYPE_CHECKING, relative and absolute. An import of a
package counts as an import of its __init__ (`from ..frontend import Array`), an import of a submodule as that
module (`from . import dtypes`); the parent packages Python runs implicitly do not count. Array and Tracer (frontend
core) get their numpy operators and methods attached from above (numpy/array_methods.py), never by importing up.

Deliberate exceptions go in ALLOWLIST with a reason; the test fails on a violation that is not listed AND on a
listed one that no longer happens, so the list cannot rot. The frontend core may not have exceptions at all.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "xlapy"

LAYERS = ["hlo", "interpreter", "passes", "backends", "frontend core", "frontend ops", "libraries", "top"]

# path under xlapy/ (a file, or a folder ending in "/") -> layer; the longest matching entry wins
PLACES = {
    "hlo/": "hlo", "errors.py": "hlo", "debug.py": "hlo", "trace_events.py": "hlo",
    "backends/interpreter/": "interpreter",
    "passes/": "passes",
    "backends/": "backends", "distributed/": "backends",
    "frontend/": "frontend core", "frontend/lazy/": "frontend core", "frontend/autojit.py": "frontend core",
    "frontend/lax_operands.py": "frontend ops", "frontend/lax_elementwise.py": "frontend ops",
    "frontend/lax_shapes.py": "frontend ops", "frontend/lax_dot_conv.py": "frontend ops",
    "frontend/lax_special.py": "frontend ops",
    "frontend/lax_special_math.py": "frontend ops", "frontend/lax_reduce.py": "frontend ops",
    "frontend/lax_fft.py": "frontend ops", "frontend/lax_more.py": "frontend ops", "frontend/lax_linalg.py": "frontend ops",
    "frontend/control_flow.py": "frontend ops", "frontend/operators.py": "frontend ops",
    "frontend/indexing.py": "frontend ops", "frontend/api_transforms.py": "frontend ops",
    "frontend/parallel/point_to_point.py": "frontend ops",
    "lax.py": "libraries", "numpy/": "libraries", "nn.py": "libraries", "random.py": "libraries",
    "random_numerics.py": "libraries", "random_threefry.py": "libraries", "random_distributions.py": "libraries",
    "dlpack.py": "libraries", "sharding.py": "libraries", "experimental/": "libraries",
    "torch/": "libraries",
    "nn_initializers.py": "libraries", "nn_more.py": "libraries", "scipy/": "libraries", "ad_checkpoint.py": "libraries", "tree.py": "libraries",
    "ref.py": "libraries", "user_context.py": "libraries",
    "__init__.py": "top", "aot.py": "top", "profiler.py": "top", "tools/": "top", "testing.py": "top",
    "filecheck.py": "top",
}

# (importing module, imported module) -> why this upward import is deliberate
ALLOWLIST: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


MODULES = _modules()


def _layer(module: str) -> str | None:
    path = MODULES[module].relative_to(ROOT).as_posix()
    matches = [key for key in PLACES if path == key or (key.endswith("/") and path.startswith(key))]
    return PLACES[max(matches, key=len)] if matches else None


def _imported(module: str, node: ast.AST) -> list[str]:
    """The xlapy modules an import statement in `module` loads by name (a submodule where one is named)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module or ""
    if base not in MODULES:
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _imports() -> set[tuple[str, str]]:
    """Every (importer, imported) pair of xlapy modules, from every import statement anywhere in a module."""
    edges = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            edges.update((module, target) for target in _imported(module, node) if target != module)
    return edges


def _upward() -> dict[tuple[str, str], tuple[str, str]]:
    """(importer, imported) -> (importer's layer, imported's layer), for imports that point up."""
    out = {}
    for src, dst in _imports():
        a, b = _layer(src), _layer(dst)
        if a is not None and b is not None and LAYERS.index(b) > LAYERS.index(a):
            out[(src, dst)] = (a, b)
    return out


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODULES if _layer(m) is None)
    assert not missing, f"place these modules in PLACES (and the docstring): {missing}"


def test_imports_point_down():
    upward = _upward()
    new = {edge: layers for edge, layers in upward.items() if edge not in ALLOWLIST}
    assert not new, "imports that point up a layer (fix them, or allowlist them with a reason):\n" + "\n".join(
        f"  {src} ({a}) imports {dst} ({b})" for (src, dst), (a, b) in sorted(new.items()))


def test_allowlist_has_no_stale_entries():
    stale = sorted(set(ALLOWLIST) - set(_upward()))
    assert not stale, f"these ALLOWLIST entries are no longer needed; remove them: {stale}"


def test_frontend_core_never_imports_ops_or_libraries():
    """Not even lazily, and not through the allowlist: the core (tracing, jit, autodiff) stands alone."""
    core = LAYERS.index("frontend core")
    up = sorted((src, dst) for src, dst in _imports()
                if _layer(src) == "frontend core" and LAYERS.index(_layer(dst) or "hlo") > core)
    assert not up, f"the frontend core imports the layers above it: {up}"


def test_lax_is_a_facade():
    """xlapy/lax.py holds a docstring, explicit re-exports (no star imports) and __all__; no logic."""
    tree = ast.parse((ROOT / "lax.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom):
            assert all(a.name != "*" for a in node.names), f"star import in lax.py (line {node.lineno})"
            continue
        is_all = isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]
        assert is_all, f"lax.py line {node.lineno}: a façade holds only imports and __all__"
    import xlapy.lax
    missing = [n for n in xlapy.lax.__all__ if not hasattr(xlapy.lax, n)]
    assert not missing and len(set(xlapy.lax.__all__)) == len(xlapy.lax.__all__), missing


def test_array_methods_are_all_attached():
    """xlapy.numpy attaches every operator and method ArrayOps declares (none is left raising 'not imported')."""
    import xlapy  # noqa: F401  (imports xlapy.numpy, which attaches them)
    from xlapy.frontend.ops_mixin import ARRAY_METHODS, ARRAY_PROPERTIES, ArrayOps
    left = [n for n in ARRAY_METHODS if getattr(ArrayOps, n).__module__ == "xlapy.frontend.ops_mixin"]
    left += [n for n in ARRAY_PROPERTIES if getattr(ArrayOps, n).fget.__module__ == "xlapy.frontend.ops_mixin"]
    assert not left, f"declared in ops_mixin but never attached by xlapy.numpy: {left}"


@pytest.mark.parametrize("name", ["__add__", "__getitem__", "sum"])
def test_an_unattached_method_says_what_to_import(name):
    from xlapy.errors import XlapyError
    from xlapy.frontend.array import Array
    from xlapy.frontend.ops_mixin import _not_attached
    with pytest.raises(XlapyError, match=r"Array\.%s is defined by xlapy\.numpy" % name):
        _not_attached(name)(Array(1.0))
