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
import sys
from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from .abi import ENTRY_TYPE
from .irhelpers import I32, I64, I8P, VOID, for_range, i64
from .cache_entry import cached_object
from .llvm_jit import init_llvm, load_objects, shared_target_machine

_PyArray_Empty_SLOT = 184          # numpy/__multiarray_api.h: PyArray_API[184] is PyArray_Empty (numpy 1.x and 2.x)
_METH_FASTCALL = 0x0080
_C_CONTIGUOUS = 0x0001
# PyArrayObject_fields: ob_refcnt, ob_type @8, data @16, nd @24 (int), dimensions @32, strides @40, base @48,
# descr @56, flags @64 (int)
_OFF_TYPE, _OFF_DATA, _OFF_ND, _OFF_DIMS, _OFF_DESCR, _OFF_FLAGS = 8, 16, 24, 32, 56, 64
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
            and read(_OFF_TYPE, ctypes.c_void_p) == id(np.ndarray))


# The C functions the trampoline calls, by address: name -> (result type, parameter types). PyArray_Empty comes
# from numpy's API table, the others from CPython (ctypes.pythonapi).
_C_FUNCTIONS = {
    "PyLong_AsVoidPtr": (I8P, [I8P]),
    "Py_IncRef": (VOID, [I8P]),
    "Py_DecRef": (VOID, [I8P]),
    "PyArray_Empty": (I8P, [I32, I64.as_pointer(), I8P, I32]),
    "PyEval_SaveThread": (I8P, []),
    "PyEval_RestoreThread": (VOID, [I8P]),
    "PyMem_RawMalloc": (I8P, [I64]),
    "PyMem_RawFree": (VOID, [I8P]),
    "PyErr_NoMemory": (I8P, []),
    "PyObject_Vectorcall": (I8P, [I8P, I8P.as_pointer(), I64, I8P]),
    "PyTuple_New": (I8P, [I64]),
    "PyTuple_SetItem": (I32, [I8P, I64, I8P]),
}
_NULL = ir.Constant(I8P, None)
_LEAF_T = ir.LiteralStructType([I8P, I64, I64.as_pointer()])                     # Leaf
_SPEC_T = ir.LiteralStructType([I8P, I8P, I64, I64, I8P, I8P, I64, I64, I64,         # CallSpec
                                _LEAF_T.as_pointer(), _LEAF_T.as_pointer()])


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _field_number(struct: type[ctypes.Structure], name: str) -> ir.Constant:
    """The LLVM field number of a field of Leaf or CallSpec (_LEAF_T and _SPEC_T follow their _fields_)."""
    return _i32([f[0] for f in struct._fields_].index(name))


class _Trampoline:
    """Emits the trampoline step by step, in the order it runs: check the arguments, allocate the results,
    call the entry with the GIL released, return. A failed check branches to `fallback` (the Python path)."""

    def __init__(self):
        self.module = ir.Module("xlapy_fastcall")
        fn = ir.Function(self.module, ir.FunctionType(I8P, [I8P, I8P.as_pointer(), I64]), "xlapy_fastcall")
        self.fn = fn
        self.self_obj, self.args, self.nargs = fn.args
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.fallback = fn.append_basic_block("fallback")
        self.out_of_memory = fn.append_basic_block("fail")
        self.spec = b.bitcast(self.call("PyLong_AsVoidPtr", self.self_obj), _SPEC_T.as_pointer())
        self.n_params, self.n_results = self.spec_field("n_params"), self.spec_field("n_results")
        self.param_leaves, self.result_leaves = self.spec_field("params"), self.spec_field("results")
        self.param_data = b.alloca(I8P, b.add(self.n_params, i64(1)))     # the entry's params
        self.result_data = b.alloca(I8P, b.add(self.n_results, i64(1)))   # the entry's results
        self.result_objs = b.alloca(I8P, b.add(self.n_results, i64(1)))   # the arrays that own them

    # -- emitting helpers ----------------------------------------------------------------------------------
    def call(self, name: str, *args: ir.Value) -> ir.Value:
        symbol = _SYMBOL_PREFIX + name
        callee = self.module.globals.get(symbol)
        if callee is None:
            result, params = _C_FUNCTIONS[name]
            callee = ir.Function(self.module, ir.FunctionType(result, params), symbol)
        return self.b.call(callee, list(args))

    def spec_field_pointer(self, name: str) -> ir.Value:
        return self.b.gep(self.spec, [_i32(0), _field_number(CallSpec, name)])

    def spec_field(self, name: str) -> ir.Value:
        return self.b.load(self.spec_field_pointer(name))

    def leaf_field(self, leaf: ir.Value, name: str) -> ir.Value:
        return self.b.load(self.b.gep(leaf, [_i32(0), _field_number(Leaf, name)]))

    def object_field(self, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
        """A field of a Python object (PyArrayObject) at a byte offset."""
        b = self.b
        return b.load(b.bitcast(b.gep(obj, [i64(offset)]), ty.as_pointer()))

    def require(self, cond: ir.Value, name: str) -> None:
        """Go on (in a new block `name`) where cond holds; otherwise take the Python path."""
        ok = self.fn.append_basic_block(name)
        self.b.cbranch(cond, ok, self.fallback)
        self.b.position_at_end(ok)

    def leave_if(self, cond: ir.Value, emit_exit: Callable[[], None]) -> None:
        """if (cond) { emit_exit(): ends in a return } and go on after it."""
        out, rest = self.fn.append_basic_block("leave"), self.fn.append_basic_block("go_on")
        self.b.cbranch(cond, out, rest)
        self.b.position_at_end(out)
        emit_exit()
        self.b.position_at_end(rest)

    def drop_results(self, count: ir.Value) -> None:
        """Release the first `count` result arrays."""
        with for_range(self.b, count, "drop") as k:
            self.call("Py_DecRef", self.b.load(self.b.gep(self.result_objs, [k])))

    # -- the steps -----------------------------------------------------------------------------------------
    def check_params(self) -> None:
        """Every argument an exact ndarray of its parameter's dtype, rank and dims, C-contiguous; its data
        pointer goes to param_data."""
        b = self.b
        self.require(b.icmp_signed("==", self.nargs, self.n_params), "count_ok")
        with for_range(b, self.n_params, "param") as i:
            arr = b.load(b.gep(self.args, [i]))
            self.check_array(arr, b.gep(self.param_leaves, [i]))
            b.store(self.object_field(arr, _OFF_DATA, I8P), b.gep(self.param_data, [i]))

    def check_array(self, arr: ir.Value, leaf: ir.Value) -> None:
        """arr is an exact ndarray with the leaf's dtype, rank and dims, C-contiguous."""
        b = self.b
        nd, dims = self.leaf_field(leaf, "nd"), self.leaf_field(leaf, "dims")
        is_ndarray = b.icmp_unsigned("==", self.object_field(arr, _OFF_TYPE, I8P), self.spec_field("ndarray_type"))
        same_dtype = b.icmp_unsigned("==", self.object_field(arr, _OFF_DESCR, I8P), self.leaf_field(leaf, "descr"))
        self.require(b.and_(is_ndarray, same_dtype), "header_ok")
        same_rank = b.icmp_signed("==", b.sext(self.object_field(arr, _OFF_ND, I32), I64), nd)
        flags = self.object_field(arr, _OFF_FLAGS, I32)
        contiguous = b.icmp_unsigned("!=", b.and_(flags, _i32(_C_CONTIGUOUS)), _i32(0))
        self.require(b.and_(same_rank, contiguous), "rank_ok")
        arr_dims = self.object_field(arr, _OFF_DIMS, I64.as_pointer())
        with for_range(b, nd, "dim") as d:
            self.require(b.icmp_signed("==", b.load(b.gep(arr_dims, [d])), b.load(b.gep(dims, [d]))), "dim_ok")

    def alloc_results(self) -> None:
        """A new array per result leaf (numpy's PyArray_Empty) in result_objs, its data pointer in result_data;
        where numpy fails, the arrays made so far are dropped and numpy's error is returned."""
        b = self.b
        with for_range(b, self.n_results, "result") as j:
            leaf = b.gep(self.result_leaves, [j])
            descr = self.leaf_field(leaf, "descr")
            self.call("Py_IncRef", descr)                          # PyArray_Empty steals a reference to descr
            out = self.call("PyArray_Empty", b.trunc(self.leaf_field(leaf, "nd"), I32), self.leaf_field(leaf, "dims"),
                            descr, _i32(0))
            b.store(out, b.gep(self.result_objs, [j]))

            def drop_made_so_far():
                self.drop_results(j)
                b.ret(_NULL)
            self.leave_if(b.icmp_unsigned("==", out, _NULL), drop_made_so_far)
            b.store(self.object_field(out, _OFF_DATA, I8P), b.gep(self.result_data, [j]))

    def take_scratch(self) -> tuple[ir.Value, ir.Value]:
        """(scratch, owned): the executable's shared scratch (marked busy), or where another thread holds it a
        malloc'd block (owned, aligned up to _ALIGN); a failed malloc goes to out_of_memory."""
        b, fn = self.b, self.fn
        busy = self.spec_field_pointer("busy")
        shared, own = fn.append_basic_block("shared_scratch"), fn.append_basic_block("own_scratch")
        run = fn.append_basic_block("run")
        b.cbranch(b.icmp_signed("!=", b.load(busy), i64(0)), own, shared)
        b.position_at_end(shared)
        b.store(i64(1), busy)
        shared_scratch = self.spec_field("scratch")
        b.branch(run)
        b.position_at_end(own)
        raw = self.call("PyMem_RawMalloc", self.spec_field("scratch_alloc"))
        own_ok = fn.append_basic_block("own_ok")
        b.cbranch(b.icmp_unsigned("==", raw, _NULL), self.out_of_memory, own_ok)
        b.position_at_end(own_ok)
        aligned = b.inttoptr(b.and_(b.add(b.ptrtoint(raw, I64), i64(_ALIGN - 1)), i64(-_ALIGN)), I8P)
        b.branch(run)
        b.position_at_end(run)
        scratch, owned = b.phi(I8P), b.phi(I8P)
        scratch.add_incoming(shared_scratch, shared)
        scratch.add_incoming(aligned, own_ok)
        owned.add_incoming(_NULL, shared)
        owned.add_incoming(raw, own_ok)
        return scratch, owned

    def call_entry(self) -> None:
        """entry(params, results, scratch) with the GIL released, then the scratch given back."""
        b = self.b
        scratch, owned = self.take_scratch()
        thread = self.call("PyEval_SaveThread")
        entry = b.bitcast(self.spec_field("entry"), ENTRY_TYPE.as_pointer())
        b.call(entry, [self.param_data, self.result_data, scratch])
        self.call("PyEval_RestoreThread", thread)
        with b.if_else(b.icmp_unsigned("==", owned, _NULL)) as (shared, own):
            with shared:
                b.store(i64(0), self.spec_field_pointer("busy"))
            with own:
                self.call("PyMem_RawFree", owned)

    def return_results(self) -> None:
        """The one array, or a tuple of them (where the tuple cannot be made: drop them, return its error)."""
        b = self.b
        self.leave_if(b.icmp_signed("==", self.spec_field("tuple_result"), i64(0)),
                      lambda: b.ret(b.load(self.result_objs)))
        result = self.call("PyTuple_New", self.n_results)

        def drop_all():
            self.drop_results(self.n_results)
            b.ret(_NULL)
        self.leave_if(b.icmp_unsigned("==", result, _NULL), drop_all)
        with for_range(b, self.n_results, "pack") as k:
            self.call("PyTuple_SetItem", result, k, b.load(b.gep(self.result_objs, [k])))
        b.ret(result)

    def exits(self) -> None:
        """The shared exit blocks: out of memory for a private scratch, and the Python path."""
        b = self.b
        b.position_at_end(self.out_of_memory)
        self.drop_results(self.n_results)
        b.ret(self.call("PyErr_NoMemory"))
        b.position_at_end(self.fallback)
        b.ret(self.call("PyObject_Vectorcall", self.spec_field("fallback"), self.args, self.nargs, _NULL))


_SYMBOL_PREFIX = "xlapy_capi_"        # the C functions it calls (_C_FUNCTIONS), registered under these names


def _build_trampoline() -> ir.Module:
    """The trampoline's LLVM module; it calls the C functions of _C_FUNCTIONS by their _SYMBOL_PREFIX names, so
    its object file holds no address of this process and the persistent cache can keep it."""
    t = _Trampoline()
    t.check_params()
    t.alloc_results()
    t.call_entry()
    t.return_results()
    t.exits()
    return t.module


def _init() -> bool:
    if "ok" in _state:
        return _state["ok"]
    _state["ok"] = False
    try:
        if not _layout_ok():
            return False
        addresses = {n: _capi(n) for n in _C_FUNCTIONS if n != "PyArray_Empty"}
        addresses["PyArray_Empty"] = ctypes.c_void_p.from_address(_numpy_api_table() + 8 * _PyArray_Empty_SLOT).value
        init_llvm()
        for name, address in addresses.items():
            llvm.add_symbol(_SYMBOL_PREFIX + name, address)

        def make() -> bytes:
            parsed = llvm.parse_assembly(str(_build_trampoline()))
            parsed.verify()
            return llvm.Target.from_default_triple().create_target_machine(opt=2).emit_object(parsed)
        # its structs' layouts depend on the Python and numpy versions (_layout_ok checks them)
        obj = cached_object("fastcall", f"python {sys.version}; numpy {np.__version__}", make)
        engine, address = load_objects([obj], "xlapy_fastcall", llvm.get_process_triple(),
                                       str(shared_target_machine().target_data))
        method = _MethodDef(b"xlapy_fastcall", address, _METH_FASTCALL, None)
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
    trampoline does not (it should hold what owns the entry's machine code); `scratch_alloc` is the byte count a
    contended call mallocs (size + alignment)."""
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
