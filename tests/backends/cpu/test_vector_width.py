"""vector_width.loop_vector_bytes: the host target's vector width, which LLVM's loop vectorizer uses too (llvm_jit.
host_target turns prefer-256-bit off) and blocked_sum's leaf length follows. It must agree with the registers of a
real sum kernel compiled by the backend."""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np

import xlapy
from xlapy.backends.cpu import blocked_sum
from xlapy.backends.cpu.vector_width import loop_vector_bytes

SUM = """HloModule m
add { x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y) }
ENTRY e { p = f32[65536] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add }
"""


def test_width_agrees_with_a_compiled_sum(monkeypatch):
    monkeypatch.setenv("XLAPY_LLVM_LEVEL", "optimized")
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    exe = xlapy.compile(SUM, backend="cpu", pipeline="cpu")
    x = np.ones(65536, np.float32)
    assert float(np.asarray(exe(x))) == 65536.0
    asm = exe.assembly
    width = 64 if "zmm" in asm else 32 if "ymm" in asm else 16
    assert loop_vector_bytes() == width


def test_widths_and_leaves():
    features = llvm.get_host_cpu_features()
    assert loop_vector_bytes() in (16, 32, 64)
    if not features.get("avx512f", False):
        assert loop_vector_bytes() <= 32
    assert blocked_sum.long_leaf() == (blocked_sum.LONG_LEAF if loop_vector_bytes() == 64
                                       else blocked_sum.LONG_LEAF // 4)
