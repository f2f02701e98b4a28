"""The CPU Executable: `exe(*arrays)` calls the module's native entry `void entry(i8** params, i8** results,
i8* scratch)`. Everything that does not depend on the arguments (pointer arrays, output shapes, the scratch buffer)
is prepared once. Where every parameter and result is a plain row-major array (a flat tuple of them for the result),
calls go through a native trampoline (fastcall.py: well under a microsecond); other signatures, and arguments the
trampoline does not take as they are (lists, scalars, other dtypes or layouts), go through ctypes."""
from __future__ import annotations

import copy
import ctypes
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...errors import XlapyError
from ...hlo import Module, Shape
from . import fastcall, malloc_tuning
from .buffers import ALIGNMENT
from .indexing import major_to_minor
from .profile_ir import KernelLog


@dataclass(frozen=True)
class LeafSpec:
    """One array leaf of a parameter or of the result: logical dims, dtype, and its physical transposition."""
    dims: tuple[int, ...]
    dtype: np.dtype
    physical_order: tuple[int, ...] | None      # major-to-minor dims when the layout is not row-major

    @staticmethod
    def of(shape: Shape) -> "LeafSpec":
        order = tuple(major_to_minor(shape))
        return LeafSpec(shape.dims, shape.dtype, None if order == tuple(range(shape.rank)) else order)


def _structure(shape: Shape):
    """The tuple nesting of a result shape with leaves numbered in order: an int or a tuple of structures."""
    counter = iter(range(1 << 30))

    def walk(s: Shape):
        return tuple(walk(t) for t in s.tuple_shapes) if s.is_tuple else next(counter)
    return walk(shape)


class Executable:
    """A module compiled to native code. Not reentrant: calls from several threads are serialized."""

    backend = "cpu"
    from_cache = False          # loaded from the persistent compilation cache (compiler.py)

    def __init__(self, module: Module | Callable[[], Module], engine, address: int, scratch_size: int,
                 llvm_ir: str | Callable[[], str], llvm_ir_opt: str | Callable[[], str], assembly_fn,
                 kernels: list | None = None, log_offset: int | None = None,
                 signature: tuple[str, list[Shape], Shape] | None = None):
        """module: the optimized Module, or a function making it on first use (then `signature` gives the module's
        name, parameter shapes and result shape). llvm_ir, llvm_ir_opt: the texts, or functions printing them."""
        malloc_tuning.apply_once()      # results' memory stays in the process between calls (malloc_tuning.py)
        if isinstance(module, Module):
            self._module = module
            signature = (module.name, [p.shape for p in module.entry.parameters], module.entry.root.shape)
        else:
            self._module, self._module_fn = None, module
        self.name, param_shapes, result_shape = signature
        self._llvm_ir = llvm_ir
        self._llvm_ir_opt = llvm_ir_opt      # the text, or a function printing it on first use
        self._assembly_fn = assembly_fn
        self._engine = engine            # keeps the machine code alive
        self._param_shapes = list(param_shapes)
        self._param_leaves = [[LeafSpec.of(s) for s in shape.leaves()] for shape in param_shapes]
        self._result_leaves = [LeafSpec.of(s) for s in result_shape.leaves()]
        self._structure = _structure(result_shape)
        n_params = sum(len(x) for x in self._param_leaves)
        self._params = (ctypes.c_void_p * max(n_params, 1))()
        self._results = (ctypes.c_void_p * max(len(self._result_leaves), 1))()
        self._scratch_size = scratch_size
        self._scratch_ptr = self._new_scratch()
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)
        self._lock = threading.Lock()
        self._simple = all(len(x) == 1 and x[0].physical_order is None for x in self._param_leaves)
        # profiled code (profile_ir.py) logs its kernels into the scratch buffer: calls go through ctypes, which
        # reads the log after each call
        self.profile = KernelLog(self.name, kernels, self._scratch_ptr.value + log_offset) if kernels else None
        self._fast = self._make_fast_call(address, scratch_size) if self.profile is None else None
        # the native caller, `fast_call(*arrays)`, or None: callers that hold numpy arrays may call it directly
        self.fast_call = self._fast.function if self._fast is not None else None

    def _new_scratch(self) -> ctypes.c_void_p:
        buf = np.empty(self._scratch_size + ALIGNMENT, np.uint8)
        self._scratch_bufs = getattr(self, "_scratch_bufs", []) + [buf]
        base = buf.__array_interface__["data"][0]
        return ctypes.c_void_p(base + (-base) % ALIGNMENT)

    def _make_fast_call(self, address: int, scratch_size: int):
        structure = self._structure
        flat = isinstance(structure, int) or all(isinstance(s, int) for s in structure)
        if not (self._simple and flat and all(r.physical_order is None for r in self._result_leaves)):
            return None
        fast = fastcall.make(address, self._scratch_ptr.value, scratch_size + ALIGNMENT,
                             [(x[0].dims, x[0].dtype) for x in self._param_leaves],
                             [(r.dims, r.dtype) for r in self._result_leaves],
                             isinstance(structure, tuple), self._call_ctypes)
        if fast is not None:
            # the trampoline owns the first scratch buffer; the ctypes path gets its own (taken under self._lock)
            self._scratch_ptr = self._new_scratch()
        return fast

    host_callbacks = False      # its code calls pure_callback's trampoline: no fast_call; errors raised after calls

    def use_host_callbacks(self) -> None:
        """Called by the compiler for code that calls host callbacks (host_callback_emitter.py): calls go through
        ctypes, and an error a callback raised is raised when the call returns."""
        from .host_callback_emitter import raise_pending
        self.host_callbacks = True
        self.check_after_calls(raise_pending)

    after_call: tuple = ()      # checks run after each ctypes call (trampolines.py: raise what a trampoline caught)

    def check_after_calls(self, check) -> None:
        """Call through ctypes, and run `check` after every call (once, however often it is added)."""
        self.fast_call = None
        if check not in self.after_call:
            self.after_call = self.after_call + (check,)
    result_allocator = None     # (dims, dtype) -> array for the results of ctypes calls; None: np.empty (spmd.py pools)

    def instance(self) -> "Executable":
        """Another caller of the same machine code with its own scratch buffer and lock: calls on one Executable
        are serialized, so a replicated run (backends/spmd.py) takes one instance per device."""
        other = copy.copy(self)
        other._params = (ctypes.c_void_p * len(self._params))()
        other._results = (ctypes.c_void_p * len(self._results))()
        other._scratch_bufs = []
        other._scratch_ptr = other._new_scratch()
        other._lock = threading.Lock()
        other._fast, other.fast_call, other.profile = None, None, None
        return other

    def __call__(self, *args: Any) -> Any:
        fast = self.fast_call
        if fast is not None:
            return fast(*args)
        out = self._call_ctypes(*args)
        for check in self.after_call:
            check()
        return out

    def _call_ctypes(self, *args: Any) -> Any:
        if len(args) != len(self._param_leaves):
            raise XlapyError(f"module {self.name} takes {len(self._param_leaves)} arguments, got {len(args)}")
        keep = []
        params = self._params
        if self._simple:
            for i, (a, spec) in enumerate(zip(args, self._param_leaves)):
                spec = spec[0]
                if type(a) is not np.ndarray or a.dtype != spec.dtype or a.shape != spec.dims \
                        or not a.flags.c_contiguous:
                    a = self._coerce(a, spec, i)
                    keep.append(a)
                params[i] = a.ctypes.data
        else:
            k = 0
            for i, (a, specs) in enumerate(zip(args, self._param_leaves)):
                for leaf, spec in zip(self._flatten_arg(a, self._param_shapes[i], i), specs):
                    leaf = self._coerce(leaf, spec, i)
                    if spec.physical_order is not None:
                        leaf = np.ascontiguousarray(leaf.transpose(spec.physical_order))
                    keep.append(leaf)
                    params[k] = leaf.ctypes.data
                    k += 1
        outs = []
        results = self._results
        for j, spec in enumerate(self._result_leaves):
            dims = spec.dims if spec.physical_order is None else tuple(spec.dims[d] for d in spec.physical_order)
            o = np.empty(dims, spec.dtype) if self.result_allocator is None else self.result_allocator(dims, spec.dtype)
            results[j] = o.ctypes.data
            outs.append(o if spec.physical_order is None else o.transpose(np.argsort(spec.physical_order)))
        with self._lock:
            if self.profile is None:
                self._fn(params, results, self._scratch_ptr)
            else:
                self.profile.run(self._fn, params, results, self._scratch_ptr)
        del keep
        return self._assemble(self._structure, outs)

    def _assemble(self, structure, outs):
        if isinstance(structure, tuple):
            return tuple(self._assemble(s, outs) for s in structure)
        # a result whose layout is not row-major is the transposed view of its buffer (as numpy's transpose is): no
        # copy per call, and fed back to a parameter of the same layout it is that buffer again (_call_ctypes)
        return outs[structure]

    @staticmethod
    def _flatten_arg(value, shape: Shape, index: int) -> list:
        if shape.is_tuple:
            if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
                raise XlapyError(f"argument {index}: expected a tuple of {len(shape.tuple_shapes)} for {shape}")
            return [leaf for v, s in zip(value, shape.tuple_shapes) for leaf in Executable._flatten_arg(v, s, index)]
        return [value]

    @staticmethod
    def _coerce(value, spec: LeafSpec, index: int) -> np.ndarray:
        arr = np.asarray(value)
        if arr.dtype != spec.dtype:
            raise XlapyError(f"argument {index}: dtype {arr.dtype} does not match parameter dtype {spec.dtype} "
                             f"(shape {list(spec.dims)})")
        if tuple(arr.shape) != spec.dims:
            raise XlapyError(f"argument {index}: shape {arr.shape} does not match parameter shape {spec.dims}")
        return np.ascontiguousarray(arr)

    @property
    def module(self) -> Module:
        """The optimized module this runs."""
        if self._module is None:
            self._module = self._module_fn()
        return self._module

    def as_text(self) -> str:
        return self.module.to_text()

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR emitted for the module, before LLVM's optimizer."""
        if callable(self._llvm_ir):
            self._llvm_ir = self._llvm_ir()
        return self._llvm_ir

    @property
    def assembly(self) -> str:
        return self._assembly_fn()

    @property
    def llvm_ir_optimized(self) -> str:
        if callable(self._llvm_ir_opt):
            self._llvm_ir_opt = self._llvm_ir_opt()
        return self._llvm_ir_opt
