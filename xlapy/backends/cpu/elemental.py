"""The elemental emitter: an instruction plus generators of its operands -> a generator of its elements.

A generator maps a multi-index (a list of i64 ir.Values, one per dimension of the instruction's shape) to the
element's ir.Value in the register type of types.py; tuple-shaped instructions (variadic reduce) yield a
tuple of values. Fusing is composing generators; loops.py wraps a generator in a loop nest.

TABLE maps each opcode to `make(em, inst, operand_generators) -> generator`. Shape ops are index remappings;
reduce and dot generators run their own inner loop per element. Semantics follow the interpreter.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ...errors import ExecutionError, UnimplementedError
from ...hlo import ELIDED, Computation, Instruction, elided_constant_error
from ...hlo.shape import primitive_type
from . import elemental_contract, f8, scalar_complex, scalar_ops
from .abi import ENTRY_NAME
from .indexing import delinearize, linear_index, major_to_minor, row_major_linear
from .irhelpers import I1, I64, alloca_once, dominates, i64, if_else_value, is_x86, loop_nest
from .types import is_narrow_float, load_element, round_value, value_type
from .math_approx import APPROXIMATIONS
from .elemental_gather import gather
from .elemental_precision import reduce_precision
from .elemental_window import reduce_window
from .elemental_reduce import special_reduce

Index = Sequence[ir.Value]
Generator = Callable[[Index], object]


class ElementalEmitter:
    """Builds generators. `constant_pointer(inst)` returns the i8* of a constant's global (set by the owner)."""

    def __init__(self, builder: ir.IRBuilder, constant_pointer: Callable[[Instruction], ir.Value]):
        self.b = builder
        self.constant_pointer = constant_pointer
        self.reassoc = False      # float add/multiply may be reassociated (inside reducers, as XLA allows)
        self.sum_groups: dict[int, int] = {}    # the fusion being emitted: elemental_reduce.sibling_sums
        self.sum_summers: dict = {}             # group -> the LeafSummer its first member made
        self.multiplies: dict[int, tuple] = {}  # id(multiply) -> (its generator, its operands' generators)

    def generator(self, inst: Instruction, operands: Sequence[Generator]) -> Generator:
        make = TABLE.get(inst.opcode)
        if make is None:
            raise unsupported(inst)
        for leaf in inst.shape.leaves():
            value_type(leaf.ptype)    # raises UnimplementedError for element types not supported yet
        operands = list(operands)
        gen = _memoized(self.b, make(self, inst, operands))
        if inst.opcode == "multiply":
            self.multiplies[id(inst)] = (gen, operands)   # for elemental_contract
        return gen

    def buffer_generator(self, pointer: ir.Value, shape) -> Generator:
        pt = shape.ptype
        invariant = _is_entry_parameter(self.b, pointer)
        return lambda index: load_element(self.b, pointer, pt, linear_index(self.b, index, shape), invariant)

    def emit_scalar(self, comp: Computation, args: Sequence[ir.Value], reassoc: bool = False):
        """Emit a scalar computation (a reducer, a map's function) inline; returns its value (or tuple)."""
        saved, self.reassoc = self.reassoc, reassoc
        try:
            values: dict[int, Generator] = {}
            for inst in comp.post_order():
                if inst.opcode == "parameter":
                    v = args[inst.parameter_number]
                    values[id(inst)] = lambda index, v=v: v
                else:
                    values[id(inst)] = self.generator(inst, [values[id(o)] for o in inst.operands])
            return values[id(comp.root)]([])
        finally:
            self.reassoc = saved


def _is_entry_parameter(b: ir.IRBuilder, pointer: ir.Value) -> bool:
    """Is `pointer` an entry parameter buffer, params[k] loaded in the entry function? Those are only read
    while the entry runs (results and temporaries live in other buffers). Without !invariant.load on their
    element loads LLVM cannot hoist them past the loop's stores, and its loop vectorizer ran for minutes on a
    loop recomputing a loop-invariant threefry hash from them (random.randint's key split fused into a
    broadcast)."""
    fn = b.function
    if fn.name != ENTRY_NAME or not isinstance(pointer, ir.LoadInstr):
        return False
    src = pointer.operands[0]
    return isinstance(src, ir.GEPInstr) and src.operands[0] is fn.args[0]


def _memoized(builder: ir.IRBuilder, gen: Generator) -> Generator:
    """A generator that emits each element once per index (XLA's generated-value cache). Without it a value
    read twice in a fusion (y + y*y) is emitted twice, and a chain of such reuses grows exponentially. A cached
    value is reused wherever its block dominates the current one (irhelpers records the dominators of the
    blocks its branch and loop helpers create), so branches (pad, concatenate) do not defeat the cache."""
    cache: dict[tuple, list] = {}

    def cached(index: Index):
        key = tuple(id(v) for v in index)
        here = builder.block
        entries = cache.setdefault(key, [])
        for value, block, _ in entries:
            if dominates(builder, block, here):
                return value
        value = gen(index)
        # the index values are kept alive so their ids cannot be reused by other objects
        entries.append((value, builder.block, tuple(index)))   # the block the value ends up defined in
        return value
    return cached


def unsupported(inst: Instruction) -> UnimplementedError:
    return UnimplementedError(f"cpu backend: opcode {inst.opcode} not supported yet (instruction {inst.name})")


def _at(gen: Generator, operand: Instruction, index: Index) -> object:
    """Read an operand that may be a scalar broadcast implicitly (select/clamp with rank-0 operands)."""
    return gen([] if operand.shape.rank == 0 else index)


# -- elementwise ------------------------------------------------------------------------------------
def _rule(table: dict, inst: Instruction, pt) -> Callable:
    rule = table[inst.opcode].get(pt.kind)
    if rule is None:
        if pt.kind == "complex":
            raise UnimplementedError(f"cpu backend: {inst.opcode} on {pt.name} not supported yet "
                                     f"(instruction {inst.name})")
        raise ExecutionError(f"{inst.opcode} is not defined for element type {pt.name} (instruction {inst.name})")
    return rule


def _finish(em: ElementalEmitter, inst: Instruction, value: ir.Value) -> ir.Value:
    rt = inst.shape.ptype
    return round_value(em.b, rt, value) if is_narrow_float(rt) else value


# Float ops whose code does not see the MXCSR denormals-are-zero / flush-to-zero bits (C library calls, and
# compare+select max/min), so their operands and results are flushed explicitly, as the interpreter does.
FLUSH_EXPLICITLY = frozenset({"exponential", "log", "sine", "cosine", "tan", "tanh", "log-plus-one",
                              "exponential-minus-one", "cbrt", "erf", "atan2", "remainder", "maximum", "minimum"})


# Approximated ops that are pure arithmetic on x86, where the entry function's MXCSR FTZ/DAZ already flushes
# their denormal operands and results (their compares and selects never pass a denormal operand through).
HARDWARE_FLUSHED = frozenset({"exponential"})


def _flushing(em, inst, pt, rule):
    if pt.kind != "float" or inst.opcode not in FLUSH_EXPLICITLY:
        return rule
    if inst.opcode in HARDWARE_FLUSHED and is_x86(em.b.module) and pt.name in ("f32", "f64"):
        return rule
    flush = scalar_ops.flush_denormal
    if inst.opcode in PICKS_AN_OPERAND:
        return lambda b, pt, *xs: rule(b, pt, *(flush(b, pt, x) for x in xs))
    return lambda b, pt, *xs: flush(b, pt, rule(b, pt, *(flush(b, pt, x) for x in xs)))


# Ops whose result is one of their flushed operands (or the join of two equal ones), so never a denormal: their
# result needs no flush of its own.
PICKS_AN_OPERAND = frozenset({"maximum", "minimum"})


# Transcendentals use math_approx's branch-free polynomials, which LLVM vectorizes (XLA:CPU does the same), in
# place of C library calls. pow stays a libm call: it must see denormal operands unflushed, as XLA's does.
_NOT_APPROXIMATED = frozenset({"power"})


def _approximated(inst, pt, rule):
    if pt.kind != "float" or inst.opcode in _NOT_APPROXIMATED:
        return rule
    fn = APPROXIMATIONS.get((inst.opcode, "f64" if pt.name == "f64" else "f32"))   # f16/bf16 live in f32
    return rule if fn is None else (lambda b, pt, *xs: fn(b, *xs))


def _unary(em, inst, gens):
    pt = inst.operands[0].shape.ptype
    rule = _flushing(em, inst, pt, _approximated(inst, pt, _rule(scalar_ops.UNARY, inst, pt)))
    return lambda index: _finish(em, inst, rule(em.b, pt, gens[0](index)))


def _binary(em, inst, gens):
    pt = inst.operands[0].shape.ptype
    k = elemental_contract.contractible(inst, em.multiplies, gens) if inst.opcode in ("add", "subtract") else None
    if k is not None:
        factors, other = em.multiplies[id(inst.operands[k])][1], gens[1 - k]
        return lambda index: elemental_contract.emit(em.b, inst.opcode, k, factors[0](index), factors[1](index),
                                                     other(index))
    rule = _flushing(em, inst, pt, _approximated(inst, pt, _rule(scalar_ops.BINARY, inst, pt)))
    reassociable = inst.opcode in ("add", "multiply") and pt.kind == "float"

    def gen(index):
        v = rule(em.b, pt, gens[0](index), gens[1](index))
        if reassociable and em.reassoc and isinstance(v, ir.Instruction):
            v.flags.append("reassoc")
        return _finish(em, inst, v)
    return gen


def _compare(em, inst, gens):
    pt = inst.operands[0].shape.ptype
    direction, kind = inst.attrs.get("direction"), inst.attrs.get("type")
    return lambda index: scalar_ops.compare(em.b, pt, direction, kind, gens[0](index), gens[1](index))


def _convert(em, inst, gens):
    src, dst = inst.operands[0].shape.ptype, inst.shape.ptype
    return lambda index: scalar_ops.convert(em.b, src, dst, gens[0](index))


def _select(em, inst, gens):
    if inst.shape.is_tuple:
        raise unsupported(inst)
    p, t, f = inst.operands
    return lambda index: em.b.select(_at(gens[0], p, index), gens[1](index), gens[2](index))


def _clamp(em, inst, gens):
    lo_i, x_i, hi_i = inst.operands
    pt = x_i.shape.ptype
    b = em.b

    def gen(index):
        lo, x, hi = _at(gens[0], lo_i, index), gens[1](index), _at(gens[2], hi_i, index)
        if pt.kind == "float":
            out = scalar_ops.BINARY["minimum"]["float"](b, pt, hi, scalar_ops.BINARY["maximum"]["float"](b, pt, x, lo))
            bounds_known = scalar_ops.not_nan_constant(lo) and scalar_ops.not_nan_constant(hi)
            for v in (hi, x, lo):      # a literal bound is not NaN; with both such, out is already x when x is NaN
                if not (scalar_ops.not_nan_constant(v) or (v is x and bounds_known)):
                    out = b.select(b.fcmp_unordered("uno", v, v), v, out)
            return out
        if pt.kind not in ("int", "uint", "pred"):
            raise UnimplementedError(f"cpu backend: clamp on {pt.name} not supported yet (instruction {inst.name})")
        return scalar_ops._int_min(b, pt, hi, scalar_ops._int_max(b, pt, x, lo))
    return gen


def _map(em, inst, gens):
    comp = inst.attrs["to_apply"]
    return lambda index: em.emit_scalar(comp, [g(index) for g in gens])


def _bitcast_convert(em, inst, gens):
    from .types import storage_type, to_storage
    src, dst = inst.operands[0].shape.ptype, inst.shape.ptype
    b = em.b
    sty, dty = storage_type(src), storage_type(dst)
    sbits, dbits = _bits(sty), _bits(dty)

    def from_bits(bits: ir.Value) -> ir.Value:
        stored = b.bitcast(bits, dty) if not isinstance(dty, ir.IntType) else bits
        if dst.name == "pred":
            return b.icmp_unsigned("!=", stored, ir.Constant(dty, 0))
        if dst.name == "bf16":
            return b.bitcast(b.shl(b.zext(stored, ir.IntType(32)), ir.Constant(ir.IntType(32), 16)), value_type(dst))
        if dst.name == "f16":
            return b.fpext(stored, value_type(dst))
        if dst.name in f8.FORMATS:
            return f8.decode(b, dst.name, stored)
        return stored

    def bits_of(value: ir.Value) -> ir.Value:
        stored = to_storage(b, src, value)
        return stored if isinstance(stored.type, ir.IntType) else b.bitcast(stored, ir.IntType(sbits))

    if sbits == dbits:
        return lambda index: from_bits(bits_of(gens[0](index)))
    if sbits > dbits:       # one source element -> the last output dimension of ratio narrower elements
        def narrow(index):
            wide = bits_of(gens[0](index[:-1]))
            shift = b.mul(b.trunc(index[-1], wide.type) if wide.type.width < 64 else index[-1],
                          ir.Constant(wide.type, dbits))
            return from_bits(b.trunc(b.lshr(wide, shift), ir.IntType(dbits)))
        return narrow
    ratio = dbits // sbits

    def widen(index):
        acc = ir.Constant(ir.IntType(dbits), 0)
        for k in range(ratio):
            part = b.zext(bits_of(gens[0](list(index) + [i64(k)])), ir.IntType(dbits))
            acc = b.or_(acc, b.shl(part, ir.Constant(ir.IntType(dbits), k * sbits)))
        return from_bits(acc)
    return widen


def _bits(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]


# -- constants and iota ------------------------------------------------------------------------------
def immediate(pt, value) -> ir.Constant:
    ty = value_type(pt)
    if pt.kind == "pred":
        return ir.Constant(ty, int(bool(value)))
    if pt.kind == "complex":
        return scalar_complex.constant(pt, value)
    if pt.kind in ("int", "uint"):
        v = int(value)
        if v >= 1 << (pt.bits - 1):
            v -= 1 << pt.bits
        return ir.Constant(ty, v)
    return ir.Constant(ty, float(np.float64(np.asarray(value).astype(np.float64))))


def _constant(em, inst, gens):
    lit = inst.literal
    if lit is ELIDED or lit is None:
        raise elided_constant_error(inst)
    if inst.shape.is_tuple:
        raise unsupported(inst)
    arr = np.asarray(lit, dtype=inst.shape.dtype).reshape(inst.shape.dims)
    pt = inst.shape.ptype
    flat = arr.reshape(-1)
    if flat.size and (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
        value = immediate(pt, flat[0])
        return lambda index: value
    return em.buffer_generator(em.constant_pointer(inst), inst.shape)


def _iota(em, inst, gens):
    d = int(inst.attrs["iota_dimension"])
    s64 = primitive_type("s64")
    return lambda index: scalar_ops.convert(em.b, s64, inst.shape.ptype, index[d])


# -- shape ops as index remappings -------------------------------------------------------------------
def _broadcast(em, inst, gens):
    dims = tuple(inst.attrs.get("dimensions", ()))
    return lambda index: gens[0]([index[d] for d in dims])


def _reshape(em, inst, gens):
    in_dims, out_dims = inst.operands[0].shape.dims, inst.shape.dims
    squeezed_in = [d for d in in_dims if d != 1]
    if squeezed_in == [d for d in out_dims if d != 1]:     # only unit dimensions added or removed
        def gen(index):
            nonunit = iter([i for i, n in zip(index, out_dims) if n != 1])
            return gens[0]([i64(0) if n == 1 else next(nonunit) for n in in_dims])
        return gen

    groups = common_factors(in_dims, out_dims)

    def general(index):
        # each group of output dims maps to its group of input dims alone (XLA's CommonFactors): a dimension both
        # shapes share passes through untouched, so the minor-most loop index reaches the operand as it is and
        # LLVM vectorizes the row (a division by the row length per element would stop it)
        src: list = []
        for (a0, a1), (b0, b1) in groups:
            a_dims = [k for k in range(a0, a1) if in_dims[k] != 1]
            b_dims = [k for k in range(b0, b1) if out_dims[k] != 1]
            if len(a_dims) <= 1 and len(b_dims) <= 1:      # one dim (and unit dims): it passes through
                src += [index[b_dims[0]] if a_dims == [k] else i64(0) for k in range(a0, a1)]
                continue
            linear = row_major_linear(em.b, index[b0:b1], out_dims[b0:b1])
            src += delinearize(em.b, linear, in_dims[a0:a1], list(range(a1 - a0)))
        return gens[0](src)
    return general


def common_factors(a: Sequence[int], b: Sequence[int]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The finest split of dims `a` and `b` (same element count) into consecutive groups of equal products, in
    order: ((a_start, a_end), (b_start, b_end)) per group; a unit dim joins the group before it (or starts one of
    its own); one group for everything when a dim is 0."""
    if 0 in a or 0 in b:
        return [((0, len(a)), (0, len(b)))]
    groups, i, j, start = [], 0, 0, (0, 0)
    pa = pb = 1
    while i < len(a) or j < len(b):
        if i < len(a) and (j == len(b) or pa < pb or (pa == pb and a[i] == 1)):
            pa, i = pa * a[i], i + 1
        elif j < len(b) and (i == len(a) or pb < pa or (pa == pb and b[j] == 1)):
            pb, j = pb * b[j], j + 1
        else:
            pa, pb, i, j = pa * a[i], pb * b[j], i + 1, j + 1
        if pa == pb and not (i < len(a) and a[i] == 1) and not (j < len(b) and b[j] == 1):
            groups.append(((start[0], i), (start[1], j)))
            start = (i, j)
    if start != (len(a), len(b)) or not groups:
        groups.append(((start[0], len(a)), (start[1], len(b))))
    return groups


def _bitcast(em, inst, gens):
    operand = inst.operands[0].shape
    if operand.ptype.name != inst.shape.ptype.name:
        raise unsupported(inst)

    def gen(index):
        linear = linear_index(em.b, index, inst.shape)
        return gens[0](delinearize(em.b, linear, operand.dims, major_to_minor(operand)))
    return gen


def _transpose(em, inst, gens):
    perm = tuple(inst.attrs["dimensions"])

    def gen(index):
        src = [None] * len(perm)
        for i, p in enumerate(perm):
            src[p] = index[i]
        return gens[0](src)
    return gen


def _slice(em, inst, gens):
    ranges = inst.attrs["slice"]
    b = em.b

    def gen(index):
        src = []
        for i, r in zip(index, ranges):
            j = i if (r.stride or 1) == 1 else b.mul(i, i64(r.stride), flags=["nsw", "nuw"])
            src.append(j if r.start == 0 else b.add(j, i64(r.start), flags=["nsw", "nuw"]))
        return gens[0](src)
    return gen


def _reverse(em, inst, gens):
    rev = set(inst.attrs["dimensions"])
    dims = inst.shape.dims
    return lambda index: gens[0]([em.b.sub(i64(dims[d] - 1), i) if d in rev else i for d, i in enumerate(index)])


def _concatenate(em, inst, gens):
    dim = int(inst.attrs["dimensions"][0])
    sizes = [o.shape.dims[dim] for o in inst.operands]
    b = em.b

    def pick(index, k: int, offset: int):
        def read():
            local = list(index)
            if offset:
                local[dim] = b.sub(index[dim], i64(offset))
            return gens[k](local)
        if k == len(gens) - 1:
            return read()
        inside = b.icmp_signed("<", index[dim], i64(offset + sizes[k]))
        return if_else_value(b, inside, read, lambda: pick(index, k + 1, offset + sizes[k]), name="concat")
    return lambda index: pick(index, 0, 0)


def _pad(em, inst, gens):
    pads = inst.attrs["padding"]
    in_dims = inst.operands[0].shape.dims
    b = em.b

    def gen(index):
        src, ok = [], ir.Constant(I1, 1)
        for i, p, n in zip(index, pads, in_dims):
            o = b.sub(i, i64(p.low)) if p.low else i
            if p.interior:
                step = i64(p.interior + 1)
                ok = b.and_(ok, b.icmp_signed(">=", o, i64(0)))
                ok = b.and_(ok, b.icmp_unsigned("==", b.urem(o, step), i64(0)))
                o = b.udiv(o, step)
            ok = b.and_(ok, b.icmp_unsigned("<", o, i64(n)))
            src.append(o)
        return if_else_value(b, ok, lambda: gens[0](src), lambda: gens[1]([]), name="pad")
    return gen


def _start_indices(em, inst, gens, first: int, sizes, operand_dims) -> list[ir.Value]:
    """Clamped i64 start indices of dynamic-slice / dynamic-update-slice (XLA clamps into bounds)."""
    b = em.b
    ops, starts = inst.operands[first:], []
    if len(ops) == 1 and ops[0].shape.rank == 1:      # the legacy single start vector
        raw = [(gens[first]([i64(k)]), ops[0].shape.ptype) for k in range(len(operand_dims))]
    else:
        raw = [(gens[first + k]([]), o.shape.ptype) for k, o in enumerate(ops)]
    for (v, pt), n, d in zip(raw, sizes, operand_dims):
        v = b.sext(v, I64) if (pt.kind == "int" and v.type.width < 64) else (
            b.zext(v, I64) if v.type.width < 64 else v)
        hi = i64(d - n)
        v = b.select(b.icmp_signed("<", v, i64(0)), i64(0), v)
        starts.append(b.select(b.icmp_signed(">", v, hi), hi, v))
    return starts


def _dynamic_slice(em, inst, gens):
    sizes = tuple(inst.attrs.get("dynamic_slice_sizes", inst.shape.dims))
    dims = inst.operands[0].shape.dims

    def gen(index):
        starts = _start_indices(em, inst, gens, 1, sizes, dims)
        return gens[0]([em.b.add(s, i) for s, i in zip(starts, index)])
    return gen


def _dynamic_update_slice(em, inst, gens):
    dims, udims = inst.operands[0].shape.dims, inst.operands[1].shape.dims
    b = em.b

    def gen(index):
        starts = _start_indices(em, inst, gens, 2, udims, dims)
        local, inside = [], ir.Constant(I1, 1)
        for i, s, n in zip(index, starts, udims):
            o = b.sub(i, s)
            inside = b.and_(inside, b.icmp_unsigned("<", o, i64(n)))
            local.append(o)
        return if_else_value(b, inside, lambda: gens[1](local), lambda: gens[0](index), name="dus")
    return gen


# -- reductions and dot: an inner loop per element ----------------------------------------------------
def accumulation(inst: Instruction):
    """What reduce and reduce-window share: (result leaf shapes, the reducer, and for a single bf16/f16 input with
    a simple reducer, the f32 rule to accumulate with — narrow floats are summed in f32 and rounded once)."""
    out_shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    reducer = inst.attrs["to_apply"]
    wide_rule = None
    if len(out_shapes) == 1 and is_narrow_float(out_shapes[0].ptype) and simple_reducer(reducer) is not None:
        wide_rule = scalar_ops.BINARY[simple_reducer(reducer)].get("float")
    return out_shapes, reducer, wide_rule


def start_accumulators(b: ir.IRBuilder, out_shapes, inits: Sequence[Generator], name: str) -> list:
    """One entry-block slot per result leaf of a reduction, holding its init value."""
    accs = [alloca_once(b, value_type(s.ptype), name=name) for s in out_shapes]
    for acc, init in zip(accs, inits):
        b.store(init([]), acc)
    return accs


def accumulated(b: ir.IRBuilder, inst: Instruction, accs: list, out_shapes, wide_rule):
    """The value of a reduction's accumulators: rounded once where it accumulated a narrow float in f32, a tuple
    for a variadic one."""
    out = tuple(b.load(a) for a in accs)
    if wide_rule is not None:
        return round_value(b, out_shapes[0].ptype, out[0])
    return out if inst.shape.is_tuple else out[0]


def _reduce(em, inst, gens):
    n = len(inst.operands) // 2
    inputs, inits = gens[:n], gens[n:]
    in_shape = inst.operands[0].shape
    reduced = set(int(d) for d in inst.attrs["dimensions"])
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    order = [d for d in major_to_minor(in_shape) if d in reduced]
    out_shapes, reducer, wide_rule = accumulation(inst)
    lanes = special_reduce(em, inst, gens, simple_reducer(reducer), wide_rule)
    if lanes is not None:
        return lanes
    b = em.b
    f32 = primitive_type("f32")

    def step(accs, full):
        values = [g(full) for g in inputs]
        if wide_rule is not None:   # a narrow-float add/max/...: accumulate in f32, round once at the end
            new = wide_rule(b, f32, b.load(accs[0]), values[0])
        else:
            new = em.emit_scalar(reducer, [b.load(a) for a in accs] + values, reassoc=True)
        for acc, v in zip(accs, new if isinstance(new, tuple) else (new,)):
            b.store(v, acc)

    part = (lambda: start_accumulators(b, out_shapes, inits, "acc"), step,
            lambda accs: accumulated(b, inst, accs, out_shapes, wide_rule))
    group = em.sum_groups.get(id(inst))
    loop = em.sum_summers.get(("plain", group)) if group is not None else None
    if loop is None:
        loop = _ReduceLoop(b, in_shape, kept, order)
        if group is not None:          # siblings (elemental_reduce.sibling_sums) join this loop
            em.sum_summers[("plain", group)] = loop
    k = loop.join(part)
    return lambda index: loop.values(index)[k]


class _ReduceLoop:
    """The element loop of one reduce, or of sibling reduces over the same operand shape and dimensions, each with
    its own accumulators (elemental_reduce.sibling_sums): parts (start() -> accs, step(accs, full_index),
    finish(accs) -> value)."""

    def __init__(self, b, in_shape, kept, order):
        self.b, self.in_shape, self.kept, self.order = b, in_shape, kept, order
        self.parts: list = []
        self.values = _memoized(b, self._emit)

    def join(self, part) -> int:
        self.parts.append(part)
        return len(self.parts) - 1

    def _emit(self, index):
        accs = [start() for start, _, _ in self.parts]
        with loop_nest(self.b, [self.in_shape.dims[d] for d in self.order], name="r") as ivs:
            full: list = [None] * self.in_shape.rank
            for d, i in zip(self.kept, index):
                full[d] = i
            for d, i in zip(self.order, ivs):
                full[d] = i
            for (_, step, _), a in zip(self.parts, accs):
                step(a, full)
        return [finish(a) for (_, _, finish), a in zip(self.parts, accs)]


def simple_reducer(comp: Computation) -> str | None:
    """The opcode of a reducer that is one binary elementwise op of its two parameters, else None."""
    root = comp.root
    if root.opcode not in scalar_ops.BINARY or len(comp.instructions) != 3:
        return None
    return root.opcode if {o.opcode for o in root.operands} == {"parameter"} else None


def dot_dimensions(inst: Instruction):
    a = inst.attrs
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    lb, lc = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ()))
    rb, rc = tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lf = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    return lb, lc, lf, rb, rc, rf


def compute_type(pt):
    """Dots accumulate narrow floats in f32 (rounded once at the end), other types in their own type."""
    return primitive_type("f32") if is_narrow_float(pt) else pt


def _dot(em, inst, gens):
    lb, lc, lf, rb, rc, rf = dot_dimensions(inst)
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    rt = inst.shape.ptype
    ct = compute_type(rt)
    b = em.b
    add = scalar_ops.BINARY["add"][ct.kind if ct.kind != "pred" else "int"]
    mul = scalar_ops.BINARY["multiply"][ct.kind if ct.kind != "pred" else "int"]

    def gen(index):
        acc = alloca_once(b, value_type(ct), name="dot.acc")
        b.store(immediate(ct, 0), acc)
        nb, nlf = len(lb), len(lf)
        with loop_nest(b, [lhs.dims[d] for d in lc], name="k") as ks:
            li: list = [None] * lhs.rank
            ri: list = [None] * rhs.rank
            for j, (x, y) in enumerate(zip(lb, rb)):
                li[x] = ri[y] = index[j]
            for j, d in enumerate(lf):
                li[d] = index[nb + j]
            for j, d in enumerate(rf):
                ri[d] = index[nb + nlf + j]
            for k, x, y in zip(ks, lc, rc):
                li[x] = ri[y] = k
            x = scalar_ops.convert(b, lhs.ptype, ct, gens[0](li), flush=False)
            y = scalar_ops.convert(b, rhs.ptype, ct, gens[1](ri), flush=False)
            b.store(add(b, ct, b.load(acc), mul(b, ct, x, y)), acc)
        return scalar_ops.convert(b, ct, rt, b.load(acc), flush=False)
    return gen


def _copy(em, inst, gens):
    if inst.shape.is_tuple:
        raise unsupported(inst)
    return gens[0]


def _get_tuple_element(em, inst, gens):
    k = int(inst.attrs["index"])
    return lambda index: gens[0](index)[k]


def _tuple(em, inst, gens):
    return lambda index: tuple(g(index) for g in gens)


TABLE: dict[str, Callable] = {
    **{op: _unary for op in scalar_ops.UNARY},
    **{op: _binary for op in scalar_ops.BINARY},
    "compare": _compare, "convert": _convert, "select": _select, "clamp": _clamp, "map": _map,
    "bitcast-convert": _bitcast_convert,
    "constant": _constant, "iota": _iota,
    "broadcast": _broadcast, "reshape": _reshape, "bitcast": _bitcast, "transpose": _transpose,
    "slice": _slice, "reverse": _reverse, "concatenate": _concatenate, "pad": _pad,
    "dynamic-slice": _dynamic_slice, "dynamic-update-slice": _dynamic_update_slice,
    "reduce": _reduce, "dot": _dot, "copy": _copy,
    "get-tuple-element": _get_tuple_element, "tuple": _tuple,
    "gather": gather, "reduce-window": reduce_window, "reduce-precision": reduce_precision,
}
