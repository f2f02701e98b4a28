"""A native call path for executables whose parameters and results are plain row-major arrays.

ctypes costs microseconds per call (`arr.ctypes.data` alone is 1-5 µs). Instead, one small native function,
compiled once per process with llvmlite, is registered as a Python builtin (`PyCFunction_NewEx`, METH_FASTCALL):

    PyObject* trampoline(PyObject* self, PyObject* const* args, Py_ssize_t nargs)

`self` is a Python int: the address of a `CallSpec` (below) describing one executable. The trampoline checks each
argument cheaply — exact `numpy.ndarray`, the parameter's dtype object (identity), rank, dims, C-contiguous — and
reads its data pointer from the PyArrayObject; allocates each result with numpy's `PyArray_Empty` (from the
`_ARRAY_API` capsule); releases the GIL around the entry call as ctypes does; and returns the array, or a tuple of
them. Anything else (wrong count, dtype, shape, layout, a list or scalar, a subclass) goes to the executable's Python
path, `CallSpec.fallback`, which coerces or raises the usual XlapyError.

The scratch buffer is shared by calls of one executable: a `busy` word (read and set with the GIL held) marks it
taken; a call that finds it taken (another thread is inside this executable) runs with its own malloc'd scratch.

Everything here relies on CPython's and numpy's stable ABIs (PyArrayObject's field layout, API table slot 184); a
self-check at first use compares the layout against numpy's own answers and disables the fast path on mismatch.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from .abi import ENTRY_TYPE
from .llvm_jit import init_llvm

_PyArray_Empty_SLOT = 184          # numpy/__multiarray_api.h: PyArray_API[184] is PyArray_Empty (numpy 1.x and 2.x)
_METH_FASTCALL = 0x0080
_C_CONTIGUOUS = 0x0001
# PyArrayObject_fields: ob_refcnt, ob_type, data @16, nd @24 (int), dimensions @32, strides @40, base @48,
# descr @56, flags @64 (int)
_OFF_DATA, _OFF_ND, _OFF_DIMS, _OFF_DESCR, _OFF_FLAGS = 16, 24, 32, 56, 64
_ALIGN = 64


class Leaf(ctypes.Structure):
    _fields_ = [("descr", ctypes.c_void_p), ("nd", ctypes.c_int64), ("dims", ctypes.POINTER(ctypes.c_int64))]


class CallSpec(ctypes.Structure):
    _fields_ = [("entry", ctypes.c_void_p), ("scratch", ctypes.c_void_p), ("scratch_alloc", ctypes.c_int64),
                ("busy", ctypes.c_int64), ("fallback", ctypes.c_void_p), ("ndarray_type", ctypes.c_void_p),
                ("n_params", ctypes.c_int64), ("n_results", ctypes.c_int64), ("tuple_result", ctypes.c_int64),
                ("params", ctypes.POINTER(Leaf)), ("results", ctypes.POINTER(Leaf))]


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_state: dict[str, Any] = {}       # engine, method def, PyCFunction_NewEx: built once, kept alive for the process


def _capi(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


def _numpy_api_table() -> int:
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:                       # numpy 1.x
        from numpy.core import _multiarray_umath as mu
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(mu._ARRAY_API, None)


def _layout_ok() -> bool:
    """PyArrayObject fields where this module expects them, checked against numpy's own view of an array."""
    a = np.empty((3, 5), np.float32)
    base = id(a)
    read = lambda off, t: t.from_address(base + off).value
    dims = ctypes.cast(read(_OFF_DIMS, ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64))
    return (read(_OFF_DATA, ctypes.c_void_p) == a.ctypes.data and read(_OFF_ND, ctypes.c_int32) == 2
            and (dims[0], dims[1]) == (3, 5) and read(_OFF_DESCR, ctypes.c_void_p) == id(a.dtype)
            and read(_OFF_FLAGS, ctypes.c_int32) & _C_CONTIGUOUS == _C_CONTIGUOUS
            and read(8, ctypes.c_void_p) == id(np.ndarray))


def _build_trampoline(addresses: dict[str, int]) -> ir.Module:
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    p8 = i8.as_pointer()
    pp8 = p8.as_pointer()
    leaf_t = ir.LiteralStructType([p8, i64, i64.as_pointer()])
    spec_t = ir.LiteralStructType([p8, p8, i64, i64, p8, p8, i64, i64, i64, leaf_t.as_pointer(), leaf_t.as_pointer()])
    mod = ir.Module("xlapy_fastcall")
    fn = ir.Function(mod, ir.FunctionType(p8, [p8, pp8, i64]), "xlapy_fastcall")
    self_obj, args, nargs = fn.args

    def extern(name: str, ret, params):
        return lambda b, *xs: b.call(b.inttoptr(i64(addresses[name]), ir.FunctionType(ret, params).as_pointer()),
                                     list(xs))
    as_void_ptr = extern("PyLong_AsVoidPtr", p8, [p8])
    incref, decref = extern("Py_IncRef", ir.VoidType(), [p8]), extern("Py_DecRef", ir.VoidType(), [p8])
    empty = extern("PyArray_Empty", p8, [i32, i64.as_pointer(), p8, i32])
    save, restore = extern("PyEval_SaveThread", p8, []), extern("PyEval_RestoreThread", ir.VoidType(), [p8])
    malloc, free = extern("PyMem_RawMalloc", p8, [i64]), extern("PyMem_RawFree", ir.VoidType(), [p8])
    no_memory = extern("PyErr_NoMemory", p8, [])
    vectorcall = extern("PyObject_Vectorcall", p8, [p8, pp8, i64, p8])
    tuple_new = extern("PyTuple_New", p8, [i64])
    tuple_set = extern("PyTuple_SetItem", i32, [p8, i64, p8])

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    blocks = {n: fn.append_basic_block(n) for n in ("fallback", "fail")}

    def field(obj, offset, ty):
        return b.load(b.bitcast(b.gep(obj, [i64(offset)]), ty.as_pointer()))

    spec = b.bitcast(as_void_ptr(b, self_obj), spec_t.as_pointer())
    get = lambda k: b.load(b.gep(spec, [i32(0), i32(k)]))
    n_params, n_results = get(6), get(7)
    param_leaves, result_leaves = get(9), get(10)
    pbuf = b.alloca(p8, b.add(n_params, i64(1)))
    rbuf = b.alloca(p8, b.add(n_results, i64(1)))
    objs = b.alloca(p8, b.add(n_results, i64(1)))
    ok = fn.append_basic_block("count_ok")
    b.cbranch(b.icmp_signed("==", nargs, n_params), ok, blocks["fallback"])
    b.position_at_end(ok)

    def counted_loop(n, body):
        """for (i = 0; i < n; ++i) body(i); returns with the builder after the loop."""
        pre = b.block
        head, inner, done = (fn.append_basic_block(x) for x in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(i64)
        i.add_incoming(i64(0), pre)
        b.cbranch(b.icmp_signed("<", i, n), inner, done)
        b.position_at_end(inner)
        body(i)
        i.add_incoming(b.add(i, i64(1)), b.block)
        b.branch(head)
        b.position_at_end(done)

    def leave_if(cond, emit_exit):
        """if (cond) { emit_exit(): ends in a return } and go on after it."""
        out, rest = fn.append_basic_block("leave"), fn.append_basic_block("go_on")
        b.cbranch(cond, out, rest)
        b.position_at_end(out)
        emit_exit()
        b.position_at_end(rest)

    def check_param(i):
        arr = b.load(b.gep(args, [i]))
        leaf = b.gep(param_leaves, [i])
        leaf_descr = b.load(b.gep(leaf, [i32(0), i32(0)]))
        nd = b.load(b.gep(leaf, [i32(0), i32(1)]))
        dims = b.load(b.gep(leaf, [i32(0), i32(2)]))
        good = b.and_(b.icmp_unsigned("==", field(arr, 8, p8), get(5)),
                      b.icmp_unsigned("==", field(arr, _OFF_DESCR, p8), leaf_descr))
        header_ok = fn.append_basic_block("header_ok")
        b.cbranch(good, header_ok, blocks["fallback"])
        b.position_at_end(header_ok)
        flags = field(arr, _OFF_FLAGS, i32)
        good = b.and_(b.icmp_signed("==", b.sext(field(arr, _OFF_ND, i32), i64), nd),
                      b.icmp_unsigned("!=", b.and_(flags, i32(_C_CONTIGUOUS)), i32(0)))
        rank_ok = fn.append_basic_block("rank_ok")
        b.cbranch(good, rank_ok, blocks["fallback"])
        b.position_at_end(rank_ok)
        arr_dims = field(arr, _OFF_DIMS, i64.as_pointer())

        def check_dim(d):
            same = b.icmp_signed("==", b.load(b.gep(arr_dims, [d])), b.load(b.gep(dims, [d])))
            next_block = fn.append_basic_block("dim_ok")
            b.cbranch(same, next_block, blocks["fallback"])
            b.position_at_end(next_block)
        counted_loop(nd, check_dim)
        b.store(field(arr, _OFF_DATA, p8), b.gep(pbuf, [i]))
    counted_loop(n_params, check_param)

    def alloc_result(j):
        leaf = b.gep(result_leaves, [j])
        descr = b.load(b.gep(leaf, [i32(0), i32(0)]))
        incref(b, descr)                                  # PyArray_Empty steals a reference to descr
        out = empty(b, b.trunc(b.load(b.gep(leaf, [i32(0), i32(1)])), i32), b.load(b.gep(leaf, [i32(0), i32(2)])),
                    descr, i32(0))
        b.store(out, b.gep(objs, [j]))

        def drop_made_so_far():          # then report numpy's error
            counted_loop(j, lambda k: decref(b, b.load(b.gep(objs, [k]))))
            b.ret(ir.Constant(p8, None))
        leave_if(b.icmp_unsigned("==", out, ir.Constant(p8, None)), drop_made_so_far)
        b.store(field(out, _OFF_DATA, p8), b.gep(rbuf, [j]))
    counted_loop(n_results, alloc_result)

    busy_ptr = b.gep(spec, [i32(0), i32(3)])
    was_busy = b.icmp_signed("!=", b.load(busy_ptr), i64(0))
    shared, own = fn.append_basic_block("shared_scratch"), fn.append_basic_block("own_scratch")
    run = fn.append_basic_block("run")
    b.cbranch(was_busy, own, shared)
    b.position_at_end(shared)
    b.store(i64(1), busy_ptr)
    shared_scratch = get(1)
    b.branch(run)
    b.position_at_end(own)
    raw = malloc(b, get(2))
    own_ok = fn.append_basic_block("own_ok")
    b.cbranch(b.icmp_unsigned("==", raw, ir.Constant(p8, None)), blocks["fail"], own_ok)
    b.position_at_end(own_ok)
    addr = b.ptrtoint(raw, i64)
    aligned = b.inttoptr(b.and_(b.add(addr, i64(_ALIGN - 1)), i64(-_ALIGN)), p8)
    b.branch(run)
    b.position_at_end(run)
    scratch = b.phi(p8)
    scratch.add_incoming(shared_scratch, shared)
    scratch.add_incoming(aligned, own_ok)
    owned = b.phi(p8)
    owned.add_incoming(ir.Constant(p8, None), shared)
    owned.add_incoming(raw, own_ok)
    thread = save(b)
    b.call(b.bitcast(get(0), ENTRY_TYPE.as_pointer()), [pbuf, rbuf, scratch])
    restore(b, thread)
    with b.if_else(b.icmp_unsigned("==", owned, ir.Constant(p8, None))) as (then, otherwise):
        with then:
            b.store(i64(0), busy_ptr)
        with otherwise:
            free(b, owned)
    leave_if(b.icmp_signed("==", get(8), i64(0)), lambda: b.ret(b.load(objs)))
    result = tuple_new(b, n_results)

    def drop_all():
        counted_loop(n_results, lambda k: decref(b, b.load(b.gep(objs, [k]))))
        b.ret(ir.Constant(p8, None))
    leave_if(b.icmp_unsigned("==", result, ir.Constant(p8, None)), drop_all)
    counted_loop(n_results, lambda k: tuple_set(b, result, k, b.load(b.gep(objs, [k]))))
    b.ret(result)

    b.position_at_end(blocks["fail"])                    # no scratch memory: drop the results
    counted_loop(n_results, lambda k: decref(b, b.load(b.gep(objs, [k]))))
    b.ret(no_memory(b))
    b.position_at_end(blocks["fallback"])
    b.ret(vectorcall(b, get(4), args, nargs, ir.Constant(p8, None)))
    return mod


def _init() -> bool:
    if "ok" in _state:
        return _state["ok"]
    _state["ok"] = False
    try:
        if not _layout_ok():
            return False
        addresses = {n: _capi(n) for n in ("PyLong_AsVoidPtr", "Py_IncRef", "Py_DecRef", "PyEval_SaveThread",
                                           "PyEval_RestoreThread", "PyMem_RawMalloc", "PyMem_RawFree",
                                           "PyErr_NoMemory", "PyObject_Vectorcall", "PyTuple_New",
                                           "PyTuple_SetItem")}
        addresses["PyArray_Empty"] = ctypes.c_void_p.from_address(_numpy_api_table() + 8 * _PyArray_Empty_SLOT).value
        init_llvm()
        target = llvm.Target.from_default_triple().create_target_machine(opt=2)
        parsed = llvm.parse_assembly(str(_build_trampoline(addresses)))
        parsed.verify()
        engine = llvm.create_mcjit_compiler(parsed, target)
        engine.finalize_object()
        method = _MethodDef(b"xlapy_fastcall", engine.get_function_address("xlapy_fastcall"), _METH_FASTCALL,
                            None)
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]
        _state.update(engine=engine, method=method, new=new, ok=True)
    except (AttributeError, ImportError, RuntimeError, ValueError, OSError):
        return False        # an unusual Python or numpy: every call takes the ctypes path
    return True


class FastCall:
    """A builtin calling one executable natively; keeps alive everything its CallSpec points to."""

    def __init__(self, spec: CallSpec, keep: list):
        self.spec, self._keep = spec, keep
        handle = _Handle(ctypes.addressof(spec))
        handle.owner = self           # the builtin holds its `self`: so it keeps spec, fallback, machine code alive
        self.function = _state["new"](ctypes.addressof(_state["method"]), handle, None)


class _Handle(int):
    """The builtin's `self`: an int (the CallSpec's address, read by PyLong_AsVoidPtr) that owns its FastCall."""


def make(entry_address: int, scratch_address: int, scratch_alloc: int,
         params: Sequence[tuple[tuple[int, ...], np.dtype]], results: Sequence[tuple[tuple[int, ...], np.dtype]],
         tuple_result: bool, fallback: Callable) -> FastCall | None:
    """The native caller for an entry with array parameters `params` and results `results` ((dims, dtype) each,
    row-major), or None where this Python/numpy cannot have one. `fallback(*args)` handles every call the
    trampoline does not (it should hold what owns the entry's machine code); `scratch_alloc` is the byte count a contended call mallocs (size + alignment)."""
    if not _init():
        return None
    keep: list = [fallback]

    def leaves(items) -> ctypes.Array:
        arr = (Leaf * max(len(items), 1))()
        for leaf, (dims, dtype) in zip(arr, items):
            dtype = np.dtype(dtype)
            dims_arr = (ctypes.c_int64 * max(len(dims), 1))(*dims)
            keep.extend((dtype, dims_arr))
            leaf.descr, leaf.nd = id(dtype), len(dims)
            leaf.dims = ctypes.cast(dims_arr, ctypes.POINTER(ctypes.c_int64))
        keep.append(arr)
        return arr
    spec = CallSpec(entry=entry_address, scratch=scratch_address, scratch_alloc=max(scratch_alloc, 1) + _ALIGN,
                    busy=0, fallback=id(fallback), ndarray_type=id(np.ndarray), n_params=len(params),
                    n_results=len(results), tuple_result=int(tuple_result))
    spec.params = ctypes.cast(leaves(params), ctypes.POINTER(Leaf))
    spec.results = ctypes.cast(leaves(results), ctypes.POINTER(Leaf))
    return FastCall(spec, keep)


def available() -> bool:
    """Whether this process can build native callers (CPython with numpy's usual ABI)."""
    return _init()
