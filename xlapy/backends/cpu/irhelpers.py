"""Small llvmlite helpers (numba's cgutils in miniature): counted loops, loop nests, entry-block allocas, ifs.

They keep emitted code readable and in the shape LLVM's mem2reg, LICM and loop vectorizer expect: allocas
live in the entry block, loops have one preheader, one latch and an i64 induction variable.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator, Sequence

from llvmlite import ir
from llvmlite.ir import _utils

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
I8P = I8.as_pointer()
VOID = ir.VoidType()


X86_TRIPLES = ("x86_64", "i686", "i386")


def is_x86(module: ir.Module) -> bool:
    return module.triple.startswith(X86_TRIPLES)


def mark_ftz(fn: ir.Function) -> None:
    """Tell LLVM that `fn` runs under the FP environment the entry installs on x86 (FTZ/DAZ), so it does not
    fold a bitwise zero test into an fcmp the hardware answers differently. llvmlite's attribute set only
    lets through names it knows, hence set.add."""
    if is_x86(fn.module):
        set.add(fn.attributes, '"denormal-fp-math"="preserve-sign,preserve-sign"')


def i64(value: int) -> ir.Constant:
    """An i64 constant. Python ints share one object per value (a constant has no parent and is never changed),
    so llvmlite formats each value's text once instead of once per use."""
    return _shared_i64(value) if type(value) is int else ir.Constant(I64, value)


@lru_cache(maxsize=4096)
def _shared_i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


class _FastScope(_utils.NameScope):
    """llvmlite's NameScope with the same names in one call: every value an IRBuilder makes registers its name
    (unnamed ones are numbered `.1`, `.2`, ...), and llvmlite's register -> deduplicate -> is_used was ~4% of
    emission."""

    def register(self, name: str, deduplicate: bool = False) -> str:
        used = self._useset
        if name in used:
            if not deduplicate:
                raise _utils.DuplicatedNameError(name)
            counts, base = self._basenamemap, name
            while name in used:
                ident = counts[base] + 1
                counts[base] = ident
                name = f"{base}.{ident}"
        used.add(name)
        return name


def fast_names(fn: ir.Function) -> ir.Function:
    """fn, its local names registered by _FastScope from now on (the names are llvmlite's, character for
    character: the scope's state so far is kept). Call it before fn has blocks: they share its scope."""
    scope = _FastScope.__new__(_FastScope)
    scope.__dict__.update(fn.scope.__dict__)
    fn.scope = scope
    return fn


def const(ty: ir.Type, value) -> ir.Constant:
    return ir.Constant(ty, value)


def alloca_once(builder: ir.IRBuilder, ty: ir.Type, name: str = "") -> ir.AllocaInstr:
    """An alloca in the function's entry block, so mem2reg can promote it wherever it is used."""
    entry = builder.function.entry_basic_block
    with builder.goto_block(entry):
        if entry.instructions:
            builder.position_before(entry.instructions[0])
        return builder.alloca(ty, name=name)


# -- dominance -------------------------------------------------------------------------------------------
# The helpers below record each block they create with its immediate dominator, so the element generators'
# value cache can reuse a value emitted before a branch or loop after it (see elemental._memoized). Blocks
# made elsewhere have no entry: only values from the same block are reused there.
def _idom(builder: ir.IRBuilder) -> dict:
    table = getattr(builder, "_xlapy_idom", None)
    if table is None:
        table = builder._xlapy_idom = {}
    return table


def dominated_by(builder: ir.IRBuilder, block, *new_blocks) -> None:
    for nb in new_blocks:
        _idom(builder)[nb] = block


def dominates(builder: ir.IRBuilder, a, b) -> bool:
    """True when block `a` is known to dominate block `b` (a == b, or a is on b's recorded dominator chain)."""
    table = _idom(builder)
    while b is not None:
        if b is a:
            return True
        b = table.get(b)
    return False


@contextmanager
def for_range(builder: ir.IRBuilder, stop: ir.Value | int, name: str = "i",
              start: ir.Value | int = 0) -> Iterator[ir.Value]:
    """`for i in range(start, stop)`: the one counted loop of this backend. The body is emitted inside the
    `with`, which yields i. The induction variable is an i64 phi in the header (`i.next` carries nsw/nuw), the
    loop has one preheader and one latch: the canonical form LLVM's loop vectorizer needs. Its blocks are
    recorded with their dominators, so a value cached in the body is never reused after the loop."""
    if isinstance(stop, int):
        stop = i64(stop)
    if isinstance(start, int):
        start = i64(start)
    pre = builder.block
    header = builder.append_basic_block(f"{name}.header")
    body = builder.append_basic_block(f"{name}.body")
    done = builder.append_basic_block(f"{name}.done")
    dominated_by(builder, pre, header)
    dominated_by(builder, header, body, done)
    builder.branch(header)
    builder.position_at_end(header)
    index = builder.phi(I64, name=name)
    index.add_incoming(start, pre)
    builder.cbranch(builder.icmp_signed("<", index, stop), body, done)
    builder.position_at_end(body)
    yield index
    latch = builder.block
    nxt = builder.add(index, i64(1), name=f"{name}.next", flags=["nsw", "nuw"])
    index.add_incoming(nxt, latch)
    builder.branch(header)
    builder.position_at_end(done)


@contextmanager
def loop_nest(builder: ir.IRBuilder, counts: Sequence[int], name: str = "i") -> Iterator[list[ir.Value]]:
    """Nested for_range loops, the first count outermost; yields the list of induction variables."""
    if not counts:
        yield []
        return
    with for_range(builder, counts[0], f"{name}{len(counts)}") as i:
        with loop_nest(builder, counts[1:], name) as rest:
            yield [i] + rest


@contextmanager
def if_then(builder: ir.IRBuilder, cond: ir.Value, name: str = "if") -> Iterator[None]:
    then = builder.append_basic_block(f"{name}.then")
    done = builder.append_basic_block(f"{name}.end")
    dominated_by(builder, builder.block, then, done)
    builder.cbranch(cond, then, done)
    builder.position_at_end(then)
    yield
    builder.branch(done)
    builder.position_at_end(done)


def if_else_value(builder: ir.IRBuilder, cond: ir.Value, then_fn, else_fn, name: str = "sel") -> ir.Value:
    """A value computed by `then_fn()` or `else_fn()` on separate control paths (so neither side may run when
    it would be unsafe, e.g. an out-of-bounds load), merged with a phi."""
    then = builder.append_basic_block(f"{name}.then")
    other = builder.append_basic_block(f"{name}.else")
    done = builder.append_basic_block(f"{name}.end")
    dominated_by(builder, builder.block, then, other, done)
    builder.cbranch(cond, then, other)
    builder.position_at_end(then)
    a = then_fn()
    a_block = builder.block
    builder.branch(done)
    builder.position_at_end(other)
    b = else_fn()
    b_block = builder.block
    builder.branch(done)
    builder.position_at_end(done)
    phi = builder.phi(a.type, name=name)
    phi.add_incoming(a, a_block)
    phi.add_incoming(b, b_block)
    return phi


def intrinsic(builder: ir.IRBuilder, name: str, ret: ir.Type, args: Sequence[ir.Value],
              arg_types: Sequence[ir.Type] | None = None) -> ir.Value:
    """Call an LLVM intrinsic or C library function by name, declaring it on first use."""
    module = builder.module
    fn = module.globals.get(name)
    if fn is None:
        fnty = ir.FunctionType(ret, list(arg_types or [a.type for a in args]))
        fn = ir.Function(module, fnty, name)
    return builder.call(fn, list(args))


def element_pointer(builder: ir.IRBuilder, base: ir.Value, elem: ir.Type, linear: ir.Value) -> ir.Value:
    """&((elem*)base)[linear]."""
    typed = builder.bitcast(base, elem.as_pointer())
    return builder.gep(typed, [linear], inbounds=True)


def memcpy(builder: ir.IRBuilder, dst: ir.Value, src: ir.Value, nbytes: int) -> None:
    if nbytes <= 0:
        return
    intrinsic(builder, "llvm.memcpy.p0.p0.i64", VOID,
              [dst, src, i64(nbytes), ir.Constant(I1, 0)], [I8P, I8P, I64, I1])
