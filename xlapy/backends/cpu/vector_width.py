"""The vectors LLVM's loop vectorizer really uses on this host, found by asking it once per process.

The CPU's features do not say: LLVM tunes Intel's AVX-512 cores (skylake-avx512 .. emeraldrapids) to prefer 256-bit
vectors (`prefer-256-bit`: 512-bit instructions lower the clock), while AMD's znver4/znver5 vectorize with 512-bit
ones. llvm_jit.host_target turns that preference off where the host has AVX-512 (lstm/fwd -13%, gru/fwd -11%,
vit/fwd -7%, gpt2/train -4% of one-thread run time; unet/fwd and resnet50/fwd +2-6%), but what depends on the
width (blocked_sum's leaf length: how many partial sums a vectorized sum keeps) asks here, of the target machine
the backend really uses: the probe vectorizes a float sum loop at O3 and looks for zmm registers in its assembly
(a few milliseconds, once).
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from .llvm_jit import init_llvm, new_target_machine

_PROBE = r"""
define float @probe(float* noalias %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %s = phi float [-0.0, %entry], [%sum, %loop]
  %q = getelementptr float, float* %p, i64 %i
  %x = load float, float* %q
  %sum = fadd reassoc float %s, %x
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret float %sum
}
"""


@functools.cache
def loop_vector_bytes() -> int:
    """64 where the loop vectorizer emits 512-bit vectors on this host, 32 for 256-bit (AVX), else 16."""
    init_llvm()
    features = llvm.get_host_cpu_features()
    if not features.get("avx512f", False):
        return 32 if features.get("avx", False) else 16
    tm = new_target_machine(3)
    mod = llvm.parse_assembly(_PROBE)
    mod.triple = llvm.get_process_triple()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return 64 if "zmm" in tm.emit_assembly(mod) else 32
