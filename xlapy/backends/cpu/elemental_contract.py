"""Multiply-add contraction: an add or subtract of a fused multiply as one fused multiply-add (one rounding).

XLA:CPU builds its LLVM target with `AllowFPOpFusion = Fast` ("Always allow FMA fusion. This increases precision
instead of decreasing it", its CPU compiler's target options), so an f32/f64 multiply whose only user is an add or
subtract in the same kernel becomes one FMA instruction, fast math or not. xlapy contracts the same pairs, but
here, where the HLO is still visible, through `llvm.fmuladd`: fused where the target has a fast FMA, two
operations where it has none. Left to LLVM's `contract` flag the choice would depend on the kernel's tier (only
the optimizing instruction selector fuses) and on what LLVM's passes left in one basic block; this way the bits
are the same at every level.

| HLO, inside one fused computation                 | emitted                 |
|---------------------------------------------------|-------------------------|
| add(multiply(a, b), c), add(c, multiply(a, b))    | fmuladd(a, b, c)        |
| subtract(multiply(a, b), c)                       | fmuladd(a, b, -c)       |
| subtract(c, multiply(a, b))                       | fmuladd(-a, b, c)       |

Only when the multiply has that add or subtract as its one user (read once), and for f32 and f64: f16/bf16 round
to their own type after each operation, as XLA's do. When both operands are such multiplies the first is fused,
as LLVM's combiner does. Negation is exact, so NaN, infinities and signed zeros come out as from the unfused pair;
what changes is that a*b is not rounded (nor overflows or underflows) on its own. The interpreter evaluates op by
op and does not contract: the two differ by that one rounding. XLAPY_FP_CONTRACT=0 turns contraction off (a key
of the persistent cache).
"""
from __future__ import annotations

import os

from llvmlite import ir

from ...hlo import Instruction
from .types import call_math

# (opcode, operand position of the multiply) -> which of (a, b, c) is negated, or None
RULES: dict[tuple[str, int], str | None] = {
    ("add", 0): None, ("add", 1): None,
    ("subtract", 0): "c", ("subtract", 1): "a",
}
TYPES = frozenset({"f32", "f64"})


def fused_on_host() -> bool:
    """Does llvm.fmuladd become one fused multiply-add on this host (x86 with FMA3, every 64-bit ARM)? Elsewhere it is
    the two operations, rounded twice, as without contraction."""
    import llvmlite.binding as llvm
    from .llvm_jit import init_llvm
    init_llvm()
    return llvm.get_process_triple().startswith(("aarch64", "arm64")) or \
        bool(llvm.get_host_cpu_features().get("fma", False))


def enabled() -> bool:
    return os.environ.get("XLAPY_FP_CONTRACT", "1").strip().lower() not in ("0", "false", "off", "no")


def contractible(inst: Instruction, made: dict, gens) -> int | None:
    """The operand position of a multiply that `inst` (add/subtract) fuses with, or None. `made` maps id(multiply)
    to (its generator, its operands' generators) for multiplies emitted as generators in this emission; `gens`
    are inst's operand generators (a multiply read from a buffer is not fused)."""
    if inst.shape.ptype.name not in TYPES or not enabled():
        return None
    for k in (0, 1):
        if (inst.opcode, k) not in RULES:
            continue
        mul = inst.operands[k]
        if (mul.opcode == "multiply" and mul.users == [inst] and inst.operands.count(mul) == 1
                and mul.shape.ptype == inst.shape.ptype and id(mul) in made and made[id(mul)][0] is gens[k]):
            return k
    return None


def emit(b: ir.IRBuilder, opcode: str, k: int, a: ir.Value, x: ir.Value, c: ir.Value) -> ir.Value:
    """a * x + c with the rule's negation (a, x: the multiply's operands; c: the other operand)."""
    negate = RULES[(opcode, k)]
    if negate == "a":
        a = b.fneg(a)
    elif negate == "c":
        c = b.fneg(c)
    return call_math(b, "fmuladd", a, x, c)
