"""malloc_tuning.py: a call's new result arrays reuse the memory the previous call's results gave back, instead of
being faulted in from the kernel page by page every call (counted with getrusage, never timed)."""
import os
import subprocess
import sys

import pytest

from xlapy.backends.cpu import malloc_tuning

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")

_PROBE = r"""
import resource, sys
import numpy as np
import xlapy
text = '''HloModule m
ENTRY e {
  p = f32[1024,1024] parameter(0)
  a = f32[1024,1024] add(p, p)
  n = f32[1024,1024] negate(p)
  ROOT t = (f32[1024,1024], f32[1024,1024]) tuple(a, n)
}'''
exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", num_threads=1)
x = np.ones((1024, 1024), np.float32)
out = exe(x)
out = exe(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    out = exe(x)
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
assert float(out[0][3, 5]) == 2.0 and float(out[1][0, 0]) == -1.0
print((after - before) // 4)
"""


def _faults_per_call(tuning: str) -> int:
    env = dict(os.environ, XLAPY_MALLOC_TUNING=tuning)
    r = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return int(r.stdout.split()[-1])


def test_results_memory_stays_in_the_process():
    if not malloc_tuning.apply_once():
        pytest.skip("not glibc")
    pages = 2 * 4 * 1024 * 1024 // 4096            # two 4 MiB results per call
    tuned, untuned = _faults_per_call("1"), _faults_per_call("0")
    assert tuned < pages // 8, f"{tuned} page faults per call with the tuning (a call's results: {pages} pages)"
    assert untuned > tuned                          # XLAPY_MALLOC_TUNING=0 leaves glibc's defaults


def test_apply_once_is_idempotent():
    first = malloc_tuning.apply_once()
    assert malloc_tuning.apply_once() is first
