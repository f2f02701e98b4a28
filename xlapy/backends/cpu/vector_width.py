"""The vector width of the host target: the widest SIMD register, which LLVM's loop vectorizer uses too.

Left to its CPU tuning LLVM would not: on Intel's AVX-512 cores (skylake-avx512 .. emeraldrapids) it prefers 256-bit
vectors (`prefer-256-bit`: 512-bit instructions lower the clock), while AMD's znver4/znver5 vectorize with 512-bit
ones. llvm_jit.host_target turns that preference off where the host has AVX-512 (lstm/fwd -13%, gru/fwd -11%,
vit/fwd -7%, gpt2/train -4% of one-thread run time; unet/fwd and resnet50/fwd +2-6%), so one width serves what is
vectorized explicitly (dot_loops' register blocks, conv_simd's vectors) and what depends on LLVM's vectorized
loops (blocked_sum's leaf length: how many partial sums a vectorized sum keeps). tests/backends/cpu/
test_vector_width.py checks it against the registers of a compiled sum.
"""
from __future__ import annotations

import functools

from .llvm_jit import host_target


@functools.cache
def loop_vector_bytes() -> int:
    """64 with AVX-512, 32 with AVX, else 16: the host target's vector registers, in bytes."""
    features = set(host_target()[2].split(","))
    return 64 if "+avx512f" in features else 32 if "+avx" in features else 16
