"""Collectives on the CPU backend: the code between collectives is compiled as usual; each collective calls
back into the runtime (XLA:CPU calls its runtime's __xla_cpu_runtime_AllReduce & co. the same way).

The emitted code stores the operand and result buffer pointers in two stack arrays and calls

    void xlapy_collective(i8* spec, i8** operands, i8** results)

where `spec` points to a constant string describing the instruction (its opcode, name, group attributes,
dimension, reducer and leaf shapes, as JSON: the object code stays valid in the persistent compilation cache
and in another process). That symbol is a ctypes trampoline: it wraps the pointers as numpy arrays (no copies)
and runs the interpreter's semantics (interpreter/collectives.run) for the device this thread runs as
(interpreter/rendezvous.current(): backends/spmd.py sets it), writing the results straight into the result
buffers. Collectives between the devices of this process meet in shared memory; under MPI the communicator is
distributed/communicator.py's. An error cannot unwind through machine code: it is recorded for the thread,
later collectives of the call return at once, and the executable raises it when the call returns.

| opcode | emitted as |
|---|---|
| all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, collective-broadcast | one runtime call |
| all-reduce-start | one runtime call (the value is the result); all-reduce-done: its operand |
| all-gather-start, collective-permute-start | one runtime call into element 1 of the (operands, results, ...) tuple; -done: element 1 |
| replica-id, partition-id | one runtime call writing the u32 |
| async-start(ops), calls=c / async-update / async-done | c emitted in place at the start / its operand / element 1 |
"""
from __future__ import annotations

import ctypes
import json
from functools import lru_cache

import numpy as np
from llvmlite import ir

from ...errors import ExecutionError, UnimplementedError
from ...hlo import Instruction, Shape, parse
from ...hlo.printer import computation_to_text
from ..interpreter import collectives, rendezvous
from .buffers import ValueTree
from .indexing import major_to_minor
from . import trampolines
from .irhelpers import I8, I8P, VOID, alloca_once

SYMBOL = "xlapy_collective"
_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))
_PENDING = trampolines.PendingError("collective", passthrough=(ExecutionError,))
raise_pending = _PENDING.raise_pending      # the error a collective of this thread's last call raised, once


def _as_array(pointer: int, dims: tuple, dtype: np.dtype, nbytes: int, order: tuple | None) -> np.ndarray:
    """The buffer at `pointer` as the logical array (a transposed view where the layout is not row-major:
    `order` lists the dims major to minor)."""
    if nbytes == 0:
        return np.zeros(dims, dtype)
    flat = np.frombuffer((ctypes.c_char * nbytes).from_address(pointer), dtype=dtype)
    if order is None:
        return flat.reshape(dims)
    return flat.reshape([dims[i] for i in order]).transpose(np.argsort(order))


@lru_cache(maxsize=1024)
def _decode(text: bytes):
    d = json.loads(text)
    comp = parse(d["reducer_hlo"]).entry if d["reducer_hlo"] else None
    spec = collectives.Spec(d["opcode"], d["name"], tuple(tuple(a) for a in d["attrs"]), d["dimension"],
                            d["split_dimension"], d["reducer"], d["in_place"], comp)
    leaves = [[(tuple(dims), np.dtype(dtype), int(np.prod(dims, dtype=np.int64)) * np.dtype(dtype).itemsize,
                None if order is None else tuple(order)) for dtype, dims, order in d[k]] for k in ("operands", "results")]
    return spec, leaves[0], leaves[1]


def _trampoline(spec_text, operands, results):
    if _PENDING.error is not None:
        return
    try:
        spec, op_leaves, res_leaves = _decode(spec_text)
        outs = [_as_array(results[i], *leaf) for i, leaf in enumerate(res_leaves)]
        if spec.opcode in ("replica-id", "partition-id"):
            ctx = rendezvous.current()
            outs[0][...] = ctx.replica if spec.opcode == "replica-id" else ctx.partition
            return
        args = [_as_array(operands[i], *leaf) for i, leaf in enumerate(op_leaves)]
        collectives.run(spec, args, outs)
    except BaseException as e:          # noqa: BLE001 -- nothing may unwind into machine code
        _PENDING.record(e)


def ensure_symbol() -> None:
    """Register the trampoline's address under SYMBOL (once per process)."""
    trampolines.register(SYMBOL, _PROTO, _trampoline)


def attach(exe) -> None:
    """Make `exe` (code that calls SYMBOL) call through ctypes and raise a collective's error after the call."""
    exe.check_after_calls(raise_pending)


# -- emission --------------------------------------------------------------------------------------------
def _leaves(tree) -> list:
    if isinstance(tree, tuple):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [] if tree is None else [tree]


def _physical_order(shape: Shape) -> list | None:
    """The dims major to minor where the layout is not row-major (the runtime views such buffers transposed)."""
    order = list(major_to_minor(shape))
    return None if order == list(range(shape.rank)) else order


def _spec_text(inst: Instruction, operands: list, results: list) -> str:
    spec = collectives.spec_of(inst) if inst.opcode not in ("replica-id", "partition-id") \
        else collectives.Spec(inst.opcode, inst.name, ())
    if spec.in_place:
        raise UnimplementedError(f"cpu backend: {inst.name}: the in-place (slice) form of collective-permute")
    reducer_hlo = None
    if spec.reducer_comp is not None:       # not one elementwise op: the runtime runs it (the interpreter's way)
        reducer_hlo = "HloModule reducer\n\nENTRY " + computation_to_text(spec.reducer_comp)
    return json.dumps({
        "opcode": spec.opcode, "name": spec.name, "attrs": [list(a) for a in spec.attrs],
        "dimension": spec.dimension, "split_dimension": spec.split_dimension, "reducer": spec.reducer,
        "in_place": spec.in_place, "reducer_hlo": reducer_hlo,
        "operands": [[str(r.shape.dtype), list(r.shape.dims), _physical_order(r.shape)] for r in operands],
        "results": [[str(r.shape.dtype), list(r.shape.dims), _physical_order(r.shape)] for r in results]},
        sort_keys=True)


def _call(em, inst: Instruction, operands: list, results: list) -> None:
    ensure_symbol()
    b = em.b
    data = bytearray(_spec_text(inst, operands, results).encode() + b"\0")
    ty = ir.ArrayType(I8, len(data))
    module = b.module
    g = ir.GlobalVariable(module, ty, name=module.get_unique_name(f"collective.{inst.name}"))
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ir.Constant(ty, data)
    ops_arr = alloca_once(b, ir.ArrayType(I8P, max(len(operands), 1)), "coll_operands")
    res_arr = alloca_once(b, ir.ArrayType(I8P, max(len(results), 1)), "coll_results")
    zero = ir.Constant(ir.IntType(32), 0)
    for arr, refs in ((ops_arr, operands), (res_arr, results)):
        for i, ref in enumerate(refs):
            slot = b.gep(arr, [zero, ir.Constant(ir.IntType(32), i)], inbounds=True)
            b.store(b.bitcast(ref.pointer, I8P), slot)
    callee = module.globals.get(SYMBOL)
    if callee is None:
        callee = ir.Function(module, ir.FunctionType(VOID, [I8P, I8P.as_pointer(), I8P.as_pointer()]), SYMBOL)
    b.call(callee, [b.bitcast(g, I8P), b.gep(ops_arr, [zero, zero], inbounds=True),
                    b.gep(res_arr, [zero, zero], inbounds=True)])


def collective(em, inst: Instruction, operands: list) -> ValueTree:
    """HANDLERS entry of the synchronous collectives and all-reduce-start."""
    out = em.new_tree(inst.shape, inst)
    _call(em, inst, _leaves(tuple(operands)), _leaves(out))
    return out


def collective_start(em, inst: Instruction, operands: list) -> ValueTree:
    """all-gather-start / collective-permute-start: (operand(s), result(s)[, u32 contexts]); done reads element 1."""
    out = em.new_tree(inst.shape, inst)
    for src, dst in zip(_leaves(tuple(operands)), _leaves(out[0])):
        em.copy_leaf(src, dst)
    _call(em, inst, _leaves(tuple(operands)), _leaves(out[1]))
    return out


def async_start(em, inst: Instruction, operands: list) -> ValueTree:
    """async-start(ops), calls=c: ((ops), c(ops), contexts...): c runs here, in order (the done reads it)."""
    value = em.emit_computation(inst.attrs["calls"], operands, timed=True)
    shape = inst.shape
    rest = tuple(em.new_tree(s, None) for s in shape.tuple_shapes[2:])
    return (tuple(operands), value) + rest


def device_id(em, inst: Instruction, operands: list) -> ValueTree:
    out = em.new_buffer(inst.shape, inst)
    _call(em, inst, [], [out])
    return out


HANDLERS = {
    **{op: collective for op in ("all-reduce", "all-reduce-start", "all-gather", "reduce-scatter", "all-to-all",
                                 "collective-permute", "collective-broadcast", "ragged-all-to-all")},
    "all-gather-start": collective_start, "collective-permute-start": collective_start,
    "all-reduce-done": lambda em, inst, ops: ops[0],
    "all-gather-done": lambda em, inst, ops: ops[0][1],
    "collective-permute-done": lambda em, inst, ops: ops[0][1],
    "replica-id": device_id, "partition-id": device_id,
    # the generic async wrappers (XLA's `X-start` sugar for ops without their own async form, e.g.
    # reduce-scatter-start, all-to-all-start): the wrapped computation runs at the start
    "async-start": async_start, "async-update": lambda em, inst, ops: ops[0],
    "async-done": lambda em, inst, ops: ops[0][1],
}

__all__ = ["HANDLERS", "SYMBOL", "attach", "ensure_symbol", "raise_pending"]
