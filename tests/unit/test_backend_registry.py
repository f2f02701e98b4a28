"""The backend registry (xlapy/backends/registry.py): registering with priorities, the default backend, lookup
errors, and discovery through entry points, with a toy out-of-tree package (toy_backend/: the package and its
dist-info, put on sys.path as installing it would) and broken entry points (broken_backend/)."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.backends import BACKENDS, Backend, BackendPluginWarning, builtin, registry
from xlapy.errors import UnknownBackendError, XlapyError

HERE = Path(__file__).resolve().parent
TOY_DIR = HERE / "toy_backend"
BROKEN_DIR = HERE / "broken_backend"

NEGATE = """HloModule neg
ENTRY e {
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)
}
"""


@pytest.fixture
def clean_registry(monkeypatch):
    """The registry as it was, after the test: its backends, and discovery read again."""
    monkeypatch.delenv(registry.ENV_VAR, raising=False)
    saved = dict(registry._BACKENDS)
    yield
    with registry._LOCK:
        registry._BACKENDS.clear()
        registry._BACKENDS.update(saved)
    registry.rediscover()


@pytest.fixture
def toy(monkeypatch, clean_registry):
    """The toy package on sys.path, found by its entry point; its module, with COMPILED emptied."""
    monkeypatch.syspath_prepend(str(TOY_DIR))
    importlib.invalidate_caches()
    registry.rediscover()
    module = importlib.import_module("xlapy_toy_backend")
    module.COMPILED.clear()
    return module


def _interpreter_named(name):
    """A factory compiling on the interpreter, recording which backend was asked."""
    seen = []

    def factory(module, **options):
        seen.append(name)
        return builtin.compile_interpreter(module, **options)
    factory.seen = seen
    return factory


# -- the built-ins ------------------------------------------------------------------------------------------
def test_builtins_are_registered_by_priority(clean_registry):
    assert registry.names()[:2] == ("cpu", "interpreter")
    assert registry.get("cpu").priority == 100 and registry.get("interpreter").priority == 0
    assert registry.default_backend() == "cpu"
    assert registry.get("interpreter").factory is builtin.compile_interpreter


def test_backends_table_is_a_live_view(clean_registry):
    assert "cpu" in BACKENDS and "interpreter" in BACKENDS and "nope" not in BACKENDS
    assert list(BACKENDS) == list(registry.names())
    exe = BACKENDS["interpreter"](xlapy.hlo.parse(NEGATE))
    np.testing.assert_array_equal(exe(np.ones(3, np.float32)), -np.ones(3, np.float32))
    registry.register("extra", _interpreter_named("extra"), priority=5)
    assert list(BACKENDS) == ["cpu", "extra", "interpreter"]
    with pytest.raises(KeyError):
        BACKENDS["nope"]


def test_cpu_opcodes_are_what_op_coverage_says_it_compiles():
    """The CPU backend declares its emitters' opcodes, the driver's parameter, and what its pipeline expands away:
    exactly the opcodes tools/op_coverage.py gives a rule or an "expanded" reason."""
    from xlapy.tools import op_coverage as cov
    cpu = cov.layer("cpu")
    expanded = {op for op, r in cpu.no_rule.items() if r.kind == cov.EXPANDED}
    by_driver = {op for op, r in cpu.no_rule.items() if r.kind == cov.BY_DRIVER}
    assert registry.get("cpu").opcodes == frozenset(cpu.covered() | expanded | by_driver)
    interp = cov.layer("interpreter")
    by_driver = {op for op, r in interp.no_rule.items() if r.kind == cov.BY_DRIVER}
    assert registry.get("interpreter").opcodes == frozenset(interp.covered() | by_driver)


# -- registering ----------------------------------------------------------------------------------------------
def test_priority_picks_the_default_and_orders_the_names(clean_registry):
    registry.register("low", _interpreter_named("low"), priority=-5)
    registry.register("high", _interpreter_named("high"), priority=500)
    registry.register("tie-b", _interpreter_named("tie-b"), priority=100)
    assert registry.names() == ("high", "cpu", "tie-b", "interpreter", "low")
    assert registry.default_backend() == "high"
    registry.unregister("high")
    assert registry.default_backend() == "cpu"
    assert "high" not in registry.names()


def test_register_refuses_a_taken_name_unless_replace(clean_registry):
    factory = _interpreter_named("mine")
    with pytest.raises(XlapyError, match="'interpreter' is registered already"):
        registry.register("interpreter", factory)
    registry.register("mine", factory, priority=1)
    replaced = registry.register("mine", factory, priority=2, replace=True)
    assert registry.get("mine") is replaced and replaced.priority == 2


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="", factory=len), "non-empty string"),
    (dict(name="x", factory=3), "factory must be callable"),
    (dict(name="x", factory=len, priority="high"), "priority must be an int"),
    (dict(name="x", factory=len, priority=True), "priority must be an int"),
])
def test_register_checks_its_arguments(clean_registry, kwargs, message):
    with pytest.raises(XlapyError, match=message):
        registry.register(**kwargs)


def test_supported_opcodes_callable_is_called_once(clean_registry):
    calls = []

    def opcodes():
        calls.append(1)
        return ["parameter", "negate"]
    backend = registry.register("lazy", _interpreter_named("lazy"), supported_opcodes=opcodes)
    assert not calls
    assert backend.opcodes == frozenset({"parameter", "negate"}) and backend.opcodes is backend.opcodes
    assert backend.missing(["negate", "sine", "add"]) == ["add", "sine"]
    assert calls == [1]
    assert registry.register("all", len).opcodes is None and not registry.get("all").missing(["anything"])


def test_compile_on_a_registered_backend(clean_registry):
    factory = _interpreter_named("mine")
    registry.register("mine", factory, priority=1, supported_opcodes={"parameter", "negate"})
    exe = xlapy.compile(NEGATE, backend="mine")
    np.testing.assert_array_equal(exe(np.arange(3, dtype=np.float32)), -np.arange(3, dtype=np.float32))
    assert factory.seen == ["mine"]


# -- unknown names ---------------------------------------------------------------------------------------------
def test_unknown_names_are_errors_listing_the_backends(clean_registry):
    with pytest.raises(UnknownBackendError, match=r"unknown backend 'nope'; available: cpu, interpreter"):
        registry.get("nope")
    with pytest.raises(XlapyError, match=r"unknown backend 'nope'; available: cpu, interpreter"):
        xlapy.compile(NEGATE, backend="nope")
    with pytest.raises(XlapyError, match=r"unknown backend 'nope'"):
        xlapy.jit(lambda x: -x, backend="nope")(np.ones(3, np.float32))
    with pytest.raises(UnknownBackendError, match="unknown backend 'nope'"):
        registry.unregister("nope")


def test_an_unknown_backend_in_the_environment_names_the_variable(clean_registry, monkeypatch):
    monkeypatch.setenv("XLAPY_BACKEND", "nope")
    registry.rediscover()
    with pytest.raises(UnknownBackendError, match=r"unknown backend 'nope' \(\$XLAPY_BACKEND\); available: cpu"):
        registry.default_backend()


# -- the default -------------------------------------------------------------------------------------------------
def test_environment_chooses_the_registry_default(clean_registry, monkeypatch):
    monkeypatch.setenv("XLAPY_BACKEND", "interpreter")
    registry.rediscover()
    assert registry.default_backend() == "interpreter"
    exe = xlapy.compile(NEGATE, backend=None)
    assert exe.backend == "interpreter"


def test_front_end_default_is_config_then_registry(clean_registry, monkeypatch):
    monkeypatch.setattr(xlapy.config, "default_backend", None)
    assert xlapy.default_backend() == "cpu"
    monkeypatch.setattr(xlapy.config, "default_backend", "interpreter")
    assert xlapy.default_backend() == "interpreter"


def test_unnamed_jit_follows_the_registry_default_warm_path_included(clean_registry, monkeypatch):
    monkeypatch.setattr(xlapy.config, "default_backend", None)
    first, second = _interpreter_named("first"), _interpreter_named("second")
    registry.register("first", first, priority=1000)
    registry.register("second", second, priority=999)
    f = xlapy.jit(lambda x: x * 2.0)
    x = np.arange(3, dtype=np.float32)
    for _ in range(3):          # the later calls take the warm path
        np.testing.assert_array_equal(f(x), x * 2)
    assert first.seen == ["first"] and second.seen == []
    registry.unregister("first")
    np.testing.assert_array_equal(f(x), x * 2)
    assert second.seen == ["second"]


# -- entry points -----------------------------------------------------------------------------------------------
def test_entry_point_registers_the_toy_backend(toy):
    assert "toy" in registry.names()
    backend = registry.get("toy")
    assert backend is toy.BACKEND and backend.priority == -10
    assert registry.names()[-1] == "toy"            # the lowest priority comes last
    assert registry.default_backend() == "cpu"      # and does not win the default
    assert "sine" in backend.missing(["sine", "add"]) and "add" not in backend.missing(["sine", "add"])


def test_jit_runs_on_the_toy_backend(toy):
    f = xlapy.jit(lambda x, y: x * y + 1.0, backend="toy")
    x, y = np.arange(4, dtype=np.float32), np.full(4, 2.0, np.float32)
    np.testing.assert_array_equal(f(x, y), x * y + 1)
    assert toy.COMPILED == ["jit__lambda"]


def test_rediscover_drops_a_package_no_longer_on_the_path(toy, monkeypatch):
    assert "toy" in registry.names()
    sys.path.remove(str(TOY_DIR))              # monkeypatch restores sys.path afterwards
    importlib.invalidate_caches()
    registry.rediscover()
    assert "toy" not in registry.names()


def test_broken_entry_points_warn_naming_them(toy, monkeypatch):
    monkeypatch.syspath_prepend(str(BROKEN_DIR))
    importlib.invalidate_caches()
    registry.rediscover()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = registry.names()
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, BackendPluginWarning))
    assert len(messages) == 3, messages
    assert "entry point 'misnamed' (xlapy_toy_backend:BACKEND) skipped: its Backend is named 'toy'" in messages[0]
    assert ("entry point 'missing' (xlapy_no_such_module:BACKEND) skipped: loading it raised "
            "ModuleNotFoundError") in messages[1]
    assert "entry point 'not_a_backend' (xlapy_toy_backend:OPCODES) skipped: its object is a frozenset" in messages[2]
    assert set(names) == {"cpu", "interpreter", "toy"}


def test_an_entry_point_cannot_take_a_registered_name(toy):
    registry.rediscover()
    registry.register("toy", _interpreter_named("mine"))      # before discovery reads the group
    with pytest.warns(BackendPluginWarning, match="'toy' .* skipped: a backend named 'toy' is registered already"):
        registry.names()
    assert registry.get("toy") is not toy.BACKEND


def _run_python(code: str, **env) -> str:
    full = {k: v for k, v in os.environ.items() if k != "XLAPY_BACKEND"}
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_environment_variable_chooses_the_backend_in_a_new_process():
    code = ("import numpy as np, xlapy, xlapy_toy_backend as toy\n"
            "f = xlapy.jit(lambda x: x - 1.0)\n"
            "print(xlapy.config.default_backend, xlapy.default_backend(), f(np.ones(2, np.float32)), toy.COMPILED)")
    path = os.pathsep.join([str(TOY_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    assert _run_python(code, XLAPY_BACKEND="toy", PYTHONPATH=path) == "toy toy [0. 0.] ['jit__lambda']"
    plain = "import xlapy\nprint(xlapy.config.default_backend, xlapy.default_backend())"
    assert _run_python(plain) == "None cpu"
