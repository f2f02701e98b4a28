"""folding_builder.py: integer arithmetic on constants done in Python, integer instructions reused within a block;
and KernelCache (kernels.py) sharing kernels equal as printed."""
import numpy as np
import pytest
from llvmlite import ir

import xlapy
from xlapy.backends.cpu import kernel_replay
from xlapy.backends.cpu.folding_builder import FoldingBuilder, adopt, fold
from xlapy.testing import assert_same

I64, I32, I1 = ir.IntType(64), ir.IntType(32), ir.IntType(1)


def _builder():
    module = ir.Module(name="t")
    fn = ir.Function(module, ir.FunctionType(I64, [I64, I64]), "f")
    return adopt(ir.IRBuilder(fn.append_basic_block("entry"))), fn


def _c(v, ty=I64):
    return ir.Constant(ty, v)


# (op, a, b, width, folded value or None when it must not fold)
CONSTANT_CASES = [
    ("add", 5, 7, 64, 12), ("add", 2**63 - 1, 1, 64, -2**63), ("sub", 3, 10, 64, -7), ("mul", -4, 6, 64, -24),
    ("mul", 2**32, 2**32, 64, 0), ("and", 12, 10, 64, 8), ("or", 12, 10, 64, 14), ("xor", 12, 10, 64, 6),
    ("udiv", -1, 2, 64, 2**63 - 1), ("urem", 17, 5, 64, 2), ("udiv", 7, 0, 64, None), ("urem", 7, 0, 64, None),
    ("shl", 1, 63, 64, -2**63), ("shl", 1, 64, 64, None), ("lshr", -1, 60, 64, 15), ("lshr", 8, 70, 64, None),
    ("add", 200, 100, 8, 44), ("mul", 3, 100, 8, 44), ("add", 1, 1, 1, 0),
]


@pytest.mark.parametrize("op,a,b,width,want", CONSTANT_CASES)
def test_constants_fold_to_the_wrapped_value(op, a, b, width, want):
    ty = ir.IntType(width)
    got = fold(op, ir.Constant(ty, a), ir.Constant(ty, b))
    if want is None:
        assert got is None
    else:
        assert isinstance(got, ir.Constant) and got.type == ty
        assert (got.constant - want) % (1 << width) == 0


def test_identities_and_absorbing_operands():
    b, fn = _builder()
    x, y = fn.args
    assert b.add(x, _c(0)) is x and b.add(_c(0), x) is x and b.sub(x, _c(0)) is x
    assert b.mul(x, _c(1)) is x and b.mul(_c(1), x) is x and b.udiv(x, _c(1)) is x
    assert b.shl(x, _c(0)) is x and b.or_(x, _c(0)) is x and b.and_(x, _c(-1)) is x
    assert b.mul(x, _c(0)).constant == 0 and b.and_(_c(0), x).constant == 0 and b.urem(x, _c(1)).constant == 0
    assert b.icmp_signed("<", _c(-1), _c(3)).constant == 1 and b.icmp_unsigned("<", _c(-1), _c(3)).constant == 0
    assert b.select(ir.Constant(I1, 1), x, y) is x and b.select(ir.Constant(I1, 0), x, y) is y
    assert not b.block.instructions          # nothing was emitted
    # these must stay: 0 - x, x / 0 and a float x + 0.0 (-0.0 + 0.0 is +0.0)
    assert isinstance(b.sub(_c(0), x), ir.Instruction) and isinstance(b.udiv(x, _c(0)), ir.Instruction)
    f = ir.Constant(ir.FloatType(), 0.0)
    assert isinstance(b.fadd(f, f), ir.Instruction)


def test_integer_instructions_are_reused_only_within_a_block_at_its_end():
    b, fn = _builder()
    x, y = fn.args
    m = b.mul(x, _c(65), flags=["nsw", "nuw"])
    assert b.mul(x, _c(65), flags=["nsw", "nuw"]) is m
    assert b.mul(x, _c(65)) is not m                     # other flags: another instruction
    s = b.add(m, y)
    assert b.add(m, y) is s and b.add(y, m) is not s     # operands in order
    first = b.block
    nxt = fn.append_basic_block("next")
    b.branch(nxt)
    b.position_at_end(nxt)
    assert b.mul(x, _c(65), flags=["nsw", "nuw"]) is not m      # another block: the first may not dominate
    b.position_before(b.block.instructions[0])
    k = b.add(x, y)
    assert b.add(x, y) is not k                          # not appending at the end: never reused
    with b.goto_block(first):                            # a terminated block: reused before its terminator
        assert b.mul(x, _c(65), flags=["nsw", "nuw"]) is m


def test_the_entry_builder_folds_and_the_results_match_the_interpreter():
    """A broadcast into a transposed layout indexes through constant strides: the IR holds no integer instruction
    of two constants and the values are the interpreter's."""
    text = """HloModule fold
ENTRY e {
  p = f32[1,3,1,5]{3,2,1,0} parameter(0)
  q = f32[5,3]{0,1} parameter(1)
  r = f32[1,3,1,5]{3,2,1,0} reshape(q)
  ROOT a = f32[1,3,1,5]{1,3,2,0} add(p, r)
}
"""
    module = xlapy.hlo.parse(text)
    p = np.arange(15, dtype=np.float32).reshape(1, 3, 1, 5)
    q = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    exe = xlapy.compile(module, backend="cpu", cache=False, llvm_level="quick")
    assert_same(exe(p, q), xlapy.compile(module, backend="interpreter")(p, q))
    import re
    assert not re.search(r"= (add|sub|mul|udiv|urem|shl|and|or)( nsw| nuw)* i64 -?\d+, -?\d+\n", exe.llvm_ir)


SAME_TWICE = """HloModule twice
f1 {
  a = f32[6,7]{1,0} parameter(0)
  b = f32[6,7]{1,0} parameter(1)
  ROOT m = f32[6,7]{1,0} multiply(a, b)
}
f2 {
  c = f32[6,7]{1,0} parameter(0)
  d = f32[6,7]{1,0} parameter(1)
  ROOT n = f32[6,7]{1,0} multiply(c, d)
}
ENTRY e {
  x = f32[6,7]{1,0} parameter(0)
  y = f32[6,7]{1,0} parameter(1)
  u = f32[6,7]{1,0} fusion(x, y), kind=kLoop, calls=f1
  v = f32[6,7]{1,0} fusion(u, x), kind=kLoop, calls=f2
  ROOT t = (f32[6,7]{1,0}, f32[6,7]{1,0}) tuple(u, v)
}
"""


def test_kernel_cache_shares_kernels_equal_as_printed(monkeypatch):
    """With replay off, the two fusions (other names, other buffers) are emitted twice and KernelCache keeps
    one function."""
    monkeypatch.setattr(kernel_replay, "MODE", "0")
    module = xlapy.hlo.parse(SAME_TWICE)
    exe = xlapy.compile(module, backend="cpu", run_pipeline=False, cache=False, llvm_level="quick")
    kernels = [f for f in exe.llvm_ir.split("\ndefine ") if f.startswith('internal void @"xlapy_kernel.')]
    assert len(kernels) == 1
    x = np.arange(42, dtype=np.float32).reshape(6, 7) / 7
    y = np.cos(x)
    u, v = exe(x, y)
    assert_same(u, x * y)
    assert_same(v, x * y * x)


def test_ir_text_prints_each_function_as_llvmlite_does():
    """ir_text.function_text is llvmlite's str(function), character for character, on a real model's kernels,
    pool workers and entry (dots, reductions, selects, compares, phis, casts), and it fills llvmlite's cache."""
    from pathlib import Path
    from xlapy.backends.cpu import compiler, ir_text
    text = (Path(__file__).parents[3] / "benchmarks" / "models" / "gnn" / "fwd.hlo").read_text()
    _, llvm_module, _, _ = compiler.emit_llvm(xlapy.hlo.parse(text), compiler.llvm_jit.shared_target_machine(),
                                              compiler.llvm.get_process_triple(), None, True, False,
                                              compiler.debug.options(), 2)
    functions = [g for g in llvm_module.globals.values() if isinstance(g, ir.Function) and g.blocks]
    assert len(functions) > 20

    def forget(fn):
        for block in fn.blocks:
            for inst in block.instructions:
                inst.__dict__.pop(ir_text._CACHE, None)
    kinds = set()
    for fn in functions:
        forget(fn)
        ours = ir_text.function_text(fn)
        assert str(fn) == ours                       # llvmlite's print, from the cache ours filled
        forget(fn)
        assert str(fn) == ours, fn.name              # and printed afresh by llvmlite
        kinds |= {type(i) for b in fn.blocks for i in b.instructions}
    # the vector instructions and allocas with a count and an alignment, built by hand
    module = ir.Module(name="v")
    v4 = ir.VectorType(ir.FloatType(), 4)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [v4, ir.FloatType()]), "vec")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, s = fn.args
    y = b.insert_element(x, s, ir.Constant(I32, 1))
    z = b.shuffle_vector(y, ir.Constant(v4, None), ir.Constant(ir.VectorType(I32, 4), [0, 0, 1, 1]))
    b.extract_element(z, ir.Constant(I64, 3))
    b.alloca(v4, size=ir.Constant(I64, 2), name="buf").align = 32
    b.ret_void()
    ours = ir_text.function_text(fn)
    forget(fn)
    assert str(fn) == ours
    kinds |= {type(i) for i in fn.blocks[0].instructions}
    assert set(ir_text.RULES) <= kinds               # every rule was exercised
