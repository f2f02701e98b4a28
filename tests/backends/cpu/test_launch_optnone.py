"""Thread-pool launch code is not optimized (kernels._launch_only, parallel._outline_body): a kernel that only
fills its task records and calls xlapy_pool_run, and every pool worker, are `optnone`; the loop bodies they run,
and kernels with work of their own, are not. Results are those of one thread, bitwise."""
import re

import numpy as np

import xlapy

ROWS, COLS = 823, 547            # above the threshold for 2 threads

MODULE = f"""
HloModule m
ENTRY e {{
  x = f32[{ROWS},{COLS}] parameter(0)
  y = f32[{ROWS},{COLS}] parameter(1)
  m = f32[{ROWS},{COLS}] multiply(x, y)
  ROOT r = f32[{ROWS},{COLS}] add(m, x)
}}
"""


def _defines(text: str) -> dict[str, str]:
    """Each defined function's name -> its first line."""
    return {m.group(1): m.group(0) for m in re.finditer(r'^define [^@]*@"([^"]+)"\(.*$', text, re.M)}


def test_launch_kernel_and_workers_are_optnone_and_bodies_are_not():
    module = xlapy.hlo.parse(MODULE)
    two = xlapy.compile(module, backend="cpu", num_threads=2, cache=False, llvm_level="optimized")
    one = xlapy.compile(module, backend="cpu", num_threads=1, cache=False, llvm_level="optimized")
    defines = _defines(two.llvm_ir)
    workers = [n for n in defines if re.fullmatch(r"xlapy_task(\.\d+)?", n)]
    bodies = [n for n in defines if n.endswith(".body")]
    kernels = [n for n in defines if n.startswith("xlapy_kernel.")]
    assert workers and bodies and kernels
    assert all("optnone" in defines[n] for n in workers + kernels)
    assert not any("optnone" in defines[n] for n in bodies)
    assert "optnone" not in one.llvm_ir               # one thread: the kernel holds its loop
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((ROWS, COLS)).astype(np.float32) for _ in range(2))
    assert two(x, y).tobytes() == one(x, y).tobytes()
