"""What the real-model benchmarks share (run_models.py, model_accuracy.py, kernel_compare.py, compile_timeline.py,
llvm_functions.py): the corpus's helper modules, the benchmark processes' settings, the warm-ups before a timed
compile, and XLA:CPU's side of a comparison.

    import model_harness as mh           # benchmarks/ on sys.path (each script puts it there)
    mh.environment()                     # in main, not on import: the tests import the scripts
    entry = mh.corpus("inputs").load_entry("gpt2/train")
    exe, device = mh.xla_compile(text)
    call = mh.xla_call(exe, device, args, mh.donates(text))      # one run on device buffers, blocking

XLA's side compiles HLO text through jaxlib's client (tools/xla_check.py), so it needs an environment with jax
(.venv-models); importing this module does not.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = HERE / "models"


@functools.cache
def corpus(name: str):
    """benchmarks/models/<name>.py (inputs, outputs, hlo_stats) as a module: that folder is not a package."""
    spec = importlib.util.spec_from_file_location(f"model_corpus_{name}", MODELS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def environment() -> None:
    """The benchmark processes' settings, made by each script's main (so by its worker processes too, which
    inherit them): tools/ importable (xla_check), TensorFlow quiet, jax on the CPU, and the persistent compilation
    cache off, since compile times are cold compiles and every module is compiled afresh."""
    for path in (str(HERE), str(ROOT / "tools")):
        if path not in sys.path:
            sys.path.insert(0, path)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLAPY_CACHE_DIR"] = "off"


def module_path(module: str) -> Path:
    """A benchmarks/models id ("vit/fwd") or an .hlo file, as the file's path (which may not exist)."""
    return Path(module) if module.endswith(".hlo") else MODELS / f"{module}.hlo"


@contextlib.contextmanager
def cold_compiles():
    """The persistent compilation cache off while inside (a cold compile, as run_models times them), then the
    caller's setting back: for tools that run in a test's process (compile_timeline.py, llvm_functions.py)."""
    cache = os.environ.get("XLAPY_CACHE_DIR")
    os.environ["XLAPY_CACHE_DIR"] = "off"
    try:
        yield
    finally:
        if cache is None:
            os.environ.pop("XLAPY_CACHE_DIR", None)
        else:
            os.environ["XLAPY_CACHE_DIR"] = cache


_TINY = "HloModule warm_up\nENTRY e { p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p) }\n"


def warm_up_xlapy() -> None:
    """Compile and run a 2-instruction module with xlapy, so that a compile timed after it does not count importing
    the CPU backend and LLVM (about 0.2 s) or creating its runtime: the thread pool, whose code is an LLVM module
    compiled when it is first needed (about 0.1 s with the persistent cache off), and the BLAS it controls (a
    2-instruction module needs neither, so they are made here). xlapy compiles the tiny module without LLVM
    optimization (compile_plan's quick level), so it is compiled once more at the optimized level, which runs the one
    serial O3 compile xlapy makes before its first two-thread one (compiler._session, 10-20 ms)."""
    import numpy as np
    import xlapy
    from xlapy.backends.cpu import threadpool
    x = np.zeros(4, np.float32)
    xlapy.compile(xlapy.hlo.parse(_TINY), backend="cpu")(x)
    xlapy.compile(xlapy.hlo.parse(_TINY), backend="cpu", llvm_level="optimized")(x)
    threadpool.serial_blas_available()


def warm_up_xla() -> None:
    """The same for XLA:CPU: importing jax and jaxlib (about 0.9 s) and creating its client with its thread pools.
    XLA compiles even the tiny module with its whole LLVM pipeline."""
    import numpy as np
    exe, device = xla_compile(_TINY)
    xla_call(exe, device, [np.zeros(4, np.float32)], False)()


def donates(text: str) -> bool:
    """Whether the module aliases outputs to its inputs (TF's training steps): XLA then consumes the buffers."""
    return "input_output_alias" in text.split("\n", 1)[0]


def xla_compile(text: str):
    """HLO text compiled by XLA:CPU -> (LoadedExecutable, device)."""
    import xla_check
    return xla_check.compile_hlo_text(text)


def xla_call(exe, device, args, donating: bool):
    """One blocking run of XLA's executable on device buffers of `args`. A donating module gets fresh buffers for
    each call (a host copy of about 2 MB, about 1% of those modules' run time)."""
    import jax
    if donating:
        return lambda: [x.block_until_ready() for x in exe.execute([jax.device_put(a, device) for a in args])]
    buffers = [jax.device_put(a, device) for a in args]
    return lambda: [x.block_until_ready() for x in exe.execute(buffers)]


def xla_outputs(exe, device, args) -> list:
    """XLA's outputs of one run on `args`, as numpy arrays."""
    import jax
    import numpy as np
    return [np.asarray(x) for x in exe.execute([jax.device_put(np.asarray(a), device) for a in args])]
