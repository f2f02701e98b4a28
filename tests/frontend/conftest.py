"""Which backend the front-end tests run on: `--backend=interpreter|cpu|both` (or the environment variable
XLAPY_TEST_BACKEND with the same values). Without either, they run on both: the compiled default (cpu) and
the reference interpreter. With `both`, every test runs once per backend; the backend is a module-scoped
parameter, so each file runs through on one backend and then on the other (ids end in [interpreter] / [cpu]).

Every test sees `xlapy.config.default_backend` set to its backend (eager ops and jit both read it); the
`xlapy_backend` fixture gives its name. A test that only makes sense on some backends says so with
`@pytest.mark.backends("interpreter", reason=...)` and is skipped elsewhere.
"""
from __future__ import annotations

import os

import pytest

import xlapy

BACKENDS = ("interpreter", "cpu")
CHOICES = BACKENDS + ("both",)


def pytest_addoption(parser):
    # only registered when this conftest is loaded at startup (pytest tests/frontend/...); otherwise use the
    # environment variable
    try:
        parser.addoption("--backend", choices=CHOICES, default=None,
                         help="backend(s) for tests/frontend: interpreter, cpu or both (default: "
                              "$XLAPY_TEST_BACKEND, else both)")
    except ValueError:          # another conftest or plugin registered it already
        pass


def selected_backends(config) -> tuple[str, ...]:
    choice = config.getoption("--backend", default=None) or os.environ.get("XLAPY_TEST_BACKEND") or "both"
    if choice not in CHOICES:
        raise pytest.UsageError(f"--backend / XLAPY_TEST_BACKEND must be one of {', '.join(CHOICES)}, got {choice!r}")
    return BACKENDS if choice == "both" else (choice,)


def pytest_configure(config):
    config.addinivalue_line("markers", "backends(*names, reason=...): run the test only on these backends")


# Lazy mode (XLAPY_LAZY=1 pytest tests/frontend runs the suite with every op outside jit recorded lazily:
# xlapy/frontend/lazy/). These tests count the eager per-op executable cache itself, which lazy mode bypasses.
EAGER_CACHE_TESTS = ("test_array.py::test_eager_ops_are_cached",
                     "test_call_overhead.py::test_eager_cache_hit_prints_no_module",
                     "test_cache_bounds.py::test_clear_caches_drops_every_executable")


def pytest_collection_modifyitems(config, items):
    from xlapy.frontend.lazy import state
    if not state._PROCESS[0]:
        return
    skip = pytest.mark.skip(reason="counts eager mode's per-op executables (XLAPY_LAZY=1: ops are recorded lazily)")
    for item in items:
        if any(item.nodeid.split("[")[0].endswith(name) for name in EAGER_CACHE_TESTS):
            item.add_marker(skip)


def pytest_report_header(config):
    return f"xlapy front-end backends: {', '.join(selected_backends(config))}"


def pytest_generate_tests(metafunc):
    backends = selected_backends(metafunc.config)
    if "xlapy_backend" in metafunc.fixturenames and len(backends) > 1:
        metafunc.parametrize("xlapy_backend", backends, indirect=True, scope="module", ids=list(backends))


@pytest.fixture(scope="module")
def xlapy_backend(request) -> str:
    return getattr(request, "param", None) or selected_backends(request.config)[0]


@pytest.fixture(autouse=True)
def _run_on_backend(request, xlapy_backend):
    marker = request.node.get_closest_marker("backends")
    if marker is not None and xlapy_backend not in marker.args:
        pytest.skip(f"not run on the {xlapy_backend} backend: {marker.kwargs.get('reason', 'backend-specific')}")
    old = xlapy.config.default_backend
    xlapy.config.default_backend = xlapy_backend
    try:
        yield
    finally:
        xlapy.config.default_backend = old


@pytest.fixture
def x64():
    """jax_enable_x64 on for the test (as `with jax.experimental.enable_x64()`), restored afterwards."""
    old = xlapy.config.enable_x64
    xlapy.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        xlapy.config.update("jax_enable_x64", old)
