"""Tracing: abstract values bound to HLO instructions, a stack of traces, and `bind`, the one way to make an op.

A Trace records one HLO Computation. A Tracer is an abstract value (shape, dtype, weak_type) bound to the
Instruction that computes it in its trace. `bind(opcode, operands, attrs)` is the single entry point every
op library uses:
  * inside a trace (jit, or the body of while_loop/cond/scan/reduce) it appends the instruction to the
    innermost trace; concrete operands become constants, tracers of an enclosing trace are captured
    (they become extra parameters of the inner computation; control flow passes them in);
  * outside any trace it runs the op eagerly: the op is traced into a tiny module whose parameters are the
    operands, compiled once per (module text, backend) and executed (see eager.py).

Each thread has its own stack of traces: threads trace, differentiate and run eager ops independently.
"""
from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ConcretizationError, XlapyError
from ..hlo import Computation, Instruction, Shape, type_name_of_dtype
from ..passes.build import make
from . import dtypes
from .ops_mixin import ArrayOps

_XLAPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frame() -> str:
    """`file:line` of the innermost stack frame outside the xlapy package (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_XLAPY_DIR + os.sep) and "importlib" not in path:
            return f"{path}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


@dataclass(frozen=True)
class ShapedArray:
    """The abstract value of an array: what jit specializes on."""
    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def hlo_shape(self) -> Shape:
        return Shape.array(type_name_of_dtype(self.dtype), self.shape)

    def str_short(self) -> str:
        return f"{type_name_of_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"

    __str__ = str_short


def aval_of_shape(shape: Shape, weak_type: bool = False) -> ShapedArray:
    return ShapedArray(shape.dims, shape.dtype, weak_type)


class Tracer(ArrayOps):
    """A value being traced: its aval and the instruction of `trace` that computes it."""
    __slots__ = ("aval", "inst", "trace")
    __array_priority__ = 100

    def __init__(self, trace: "Trace", inst: Instruction, weak_type: bool = False):
        self.trace = trace
        self.inst = inst
        self.aval = aval_of_shape(inst.shape, weak_type)

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def _concretization_error(self, what: str) -> ConcretizationError:
        return ConcretizationError(
            f"{what} needs a concrete value, but this is a traced {self.aval} (the result of "
            f"`{self.inst.opcode}` in {self.trace.name}) at {user_frame()}. Its value is only known when the "
            f"compiled program runs. Use lax.cond / lax.select / lax.while_loop for value-dependent control "
            f"flow, or mark the argument static (static_argnums / static_argnames).")

    def __bool__(self):
        raise self._concretization_error("bool() (an `if`, `while`, `and`/`or` or `assert` on a traced value)")

    def __int__(self):
        raise self._concretization_error("int()")

    def __float__(self):
        raise self._concretization_error("float()")

    def __complex__(self):
        raise self._concretization_error("complex()")

    def __index__(self):
        raise self._concretization_error("__index__ (use as a Python index, range bound or size)")

    def __array__(self, dtype=None, copy=None):
        raise self._concretization_error("np.asarray()")

    def tolist(self):
        raise self._concretization_error("tolist()")

    def item(self):
        raise self._concretization_error("item()")

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval} (static arguments must be hashable "
                        f"Python values, not traced arrays)")

    def __repr__(self) -> str:
        return f"Traced<{self.aval}>({self.inst.name} in {self.trace.name})"


class _ThreadTraces(threading.local):
    """The traces one thread is recording, innermost last. Tracing is per thread: a trace open in one thread
    never sees another thread's ops (jit, grad, eager ops and control flow may run in many threads at once)."""

    def __init__(self):
        self.stack: list["Trace"] = []
        self.compile_time_eval = False      # ensure_compile_time_eval (api_transforms.py)


_THREAD = _ThreadTraces()
# Every trace open in any thread. Empty (the usual case outside a trace) means no thread is tracing, so this one is
# not either: jit's warm path tests only this list (`if not OPEN_TRACES`: cheaper than reading the thread's own
# stack) and looks at its own stack otherwise. Changed under _OPEN_LOCK by Trace.__enter__/__exit__ alone.
OPEN_TRACES: list["Trace"] = []
_OPEN_LOCK = threading.Lock()


def thread_traces() -> list["Trace"]:
    """The calling thread's traces being recorded, innermost last (empty outside any trace)."""
    return _THREAD.stack


class Trace:
    """One HLO computation being recorded. `parent` is the enclosing trace whose tracers may be captured."""

    def __init__(self, name: str, parent: "Trace | None" = None, allow_captures: bool = True,
                 abstract: bool = False):
        self.name = name
        self.parent = parent
        self.allow_captures = allow_captures
        self.abstract = abstract      # only for shape evaluation: outer tracers become plain parameters
        self.comp = Computation(name)
        self.params: list[Tracer] = []
        self.captures: list[tuple[Any, Tracer]] = []   # (value in parent trace, parameter here)
        self._captured: dict[int, Tracer] = {}

    # -- context -------------------------------------------------------------------------------------
    def __enter__(self) -> "Trace":
        with _OPEN_LOCK:
            OPEN_TRACES.append(self)
        _THREAD.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        popped = _THREAD.stack.pop()
        with _OPEN_LOCK:
            OPEN_TRACES.remove(self)
        assert popped is self, "trace stack corrupted"

    def is_active(self) -> bool:
        """Whether this trace is being recorded by the calling thread."""
        return any(t is self for t in _THREAD.stack)

    # -- building ------------------------------------------------------------------------------------
    def add(self, inst: Instruction, weak_type: bool = False) -> Tracer:
        self.comp.add_instruction(inst)
        return Tracer(self, inst, weak_type)

    def new_param(self, aval: ShapedArray | Shape, name: str | None = None) -> Tracer:
        shape = aval.hlo_shape if isinstance(aval, ShapedArray) else aval
        number = len(self.comp.parameters)
        inst = Instruction("parameter", shape, (), {}, name or f"Arg_{number}", parameter_number=number)
        t = self.add(inst, getattr(aval, "weak_type", False))
        self.params.append(t)
        return t

    def constant(self, value: Any, dtype=None, weak_type: bool = False) -> Tracer:
        arr = np.asarray(value, dtype=dtype)
        inst = Instruction("constant", Shape.array(type_name_of_dtype(arr.dtype), arr.shape), (), {}, "constant",
                           literal=arr)
        return self.add(inst, weak_type)

    def lift(self, value: Any) -> Tracer:
        """`value` as a tracer of this trace: itself, a captured outer tracer, or a constant."""
        if isinstance(value, Tracer):
            if value.trace is self:
                return value
            key = id(value)
            if key in self._captured:
                return self._captured[key]
            if self.abstract:
                self._captured[key] = self.new_param(value.aval)
                return self._captured[key]
            if not self._is_ancestor(value.trace):
                raise XlapyError(
                    f"a traced value {value.aval} from {value.trace.name} escaped its trace and was used in "
                    f"{self.name} at {user_frame()} (an UnexpectedTracerError in JAX: a tracer stored in a "
                    f"global or returned through a side channel)")
            if not self.allow_captures:
                raise XlapyError(f"{self.name}: this computation cannot close over the traced value {value.aval}"
                                 f" from {value.trace.name}; pass it as an operand (at {user_frame()})")
            outer = self.parent.lift(value)
            param = self.new_param(outer.aval)
            self.captures.append((value, param))
            self._captured[key] = param
            self._captured[id(outer)] = param
            return param
        weak = dtypes.is_python_scalar(value) or bool(getattr(value, "weak_type", False))
        return self.constant(concrete_value(value), weak_type=weak)

    def _is_ancestor(self, trace: "Trace") -> bool:
        t = self.parent
        while t is not None:
            if t is trace:
                return True
            t = t.parent
        return False

    def finish(self, outputs: Sequence[Tracer], tuple_root: bool | None = None) -> Computation:
        """Set the root: the single output, or a tuple of them (always a tuple when tuple_root)."""
        outs = [self.lift(o) for o in outputs]
        if tuple_root is None:
            tuple_root = len(outs) != 1
        if tuple_root:
            root = make("tuple", [o.inst for o in outs], name="tuple")
            self.comp.add_instruction(root)
        else:
            root = outs[0].inst
        self.comp.root = root
        return self.comp


def current_trace() -> Trace | None:
    """The calling thread's innermost trace, or None outside any (then `bind` runs ops eagerly)."""
    if not OPEN_TRACES:
        return None
    stack = _THREAD.stack
    return stack[-1] if stack else None


def concrete_value(value: Any) -> np.ndarray:
    """The numpy array of a concrete operand (Array, numpy value or Python scalar), canonically typed."""
    if isinstance(value, Tracer):
        raise value._concretization_error("a concrete value")
    if dtypes.is_python_scalar(value):
        return np.asarray(value, dtype=dtypes.python_scalar_type(value).dtype)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise XlapyError(f"cannot convert {type(value).__name__} to an array")
    canon = dtypes.canonicalize(arr.dtype)
    return arr if canon == arr.dtype else arr.astype(canon)


_NUMPY_AVALS: dict[tuple, ShapedArray] = {}     # (shape, dtype, x64) -> the aval of a numpy operand of them


def numpy_aval(x: np.ndarray) -> ShapedArray:
    """The aval of a numpy operand (canonicalized as concrete_value would), one object per (shape, dtype)."""
    key = (x.shape, x.dtype, dtypes.config.enable_x64)
    a = _NUMPY_AVALS.get(key)
    if a is None:
        arr = concrete_value(x)
        a = ShapedArray(tuple(arr.shape), arr.dtype, False)
        if len(_NUMPY_AVALS) < 4096 and arr.dtype == x.dtype:
            _NUMPY_AVALS[key] = a
    return a


def aval(x: Any) -> ShapedArray:
    """The abstract value of any operand: a Tracer, an Array, a numpy value or a Python scalar."""
    a = getattr(x, "aval", None)
    if a is not None:
        return a
    if type(x) is np.ndarray:
        return numpy_aval(x)
    if dtypes.is_python_scalar(x):
        t = dtypes.python_scalar_type(x)
        return ShapedArray((), t.dtype, t.weak)
    arr = concrete_value(x)
    return ShapedArray(tuple(arr.shape), arr.dtype, False)


class Packed(list):
    """An operand of `bind` made of several values passed as one HLO tuple (while's carry, a branch's
    operands): `bind("while", [Packed(values)], ...)`."""


def make_op(trace: "Trace", opcode: str, operands: Sequence[Any], attrs: dict[str, Any] | None,
            shape: Shape | None, name: str | None) -> Instruction:
    """Lift `operands` into `trace` (packing Packed groups into tuples) and make the instruction (detached).
    Shape errors are re-raised naming the op, the operand shapes and the user's source line."""
    insts = []
    for o in operands:
        if isinstance(o, Packed):
            parts = [trace.lift(v).inst for v in o]
            insts.append(trace.comp.add_instruction(make("tuple", parts, name=name or opcode)))
        else:
            insts.append(trace.lift(o).inst)
    try:
        return make(opcode, insts, attrs, shape, name or opcode)
    except (XlapyError, ValueError) as e:
        for i in insts:     # a failed make may leave a dangling user edge behind
            i.users = [u for u in i.users if u.parent is not None]
        described = ", ".join(i.shape.to_text() for i in insts)
        raise XlapyError(f"{name or opcode}: {e} (operands {described}; at {user_frame()})") from None


_RUN_EAGERLY: list = []      # eager.run_eagerly (eager imports this module), found on the first op


def bind(opcode: str, operands: Sequence[Any], attrs: dict[str, Any] | None = None, *,
         shape: Shape | None = None, name: str | None = None, weak_type: bool = False) -> Any:
    """Make one HLO op on `operands` (tracers, concrete values, Packed groups). Returns a Tracer/Array, or a
    list of them when the op's result is a tuple. Shape errors name the op, operand shapes and user line."""
    trace = current_trace()
    if trace is None or (_THREAD.compile_time_eval and _all_concrete(operands)):
        if not _RUN_EAGERLY:
            from .eager import run_eagerly
            _RUN_EAGERLY.append(run_eagerly)
        return _RUN_EAGERLY[0](opcode, operands, attrs, shape=shape, name=name, weak_type=weak_type)
    return results_of(trace, make_op(trace, opcode, operands, attrs, shape, name), weak_type)


def _all_concrete(operands: Sequence[Any]) -> bool:
    return not any(isinstance(v, Tracer) for o in operands for v in (o if isinstance(o, Packed) else (o,)))


def set_compile_time_eval(on: bool) -> bool:
    """ensure_compile_time_eval's switch (per thread): inside a trace, an op whose operands are all concrete runs
    eagerly. Returns the previous setting."""
    previous = _THREAD.compile_time_eval
    _THREAD.compile_time_eval = bool(on)
    return previous


def results_of(trace: Trace, inst: Instruction, weak_type: bool = False) -> Any:
    """Add `inst` to `trace`; a tuple-shaped result is unpacked into get-tuple-element tracers."""
    if not inst.shape.is_tuple:
        return trace.add(inst, weak_type)
    trace.comp.add_instruction(inst)
    return [trace.add(make("get-tuple-element", [inst], {"index": i}, name=inst.name))
            for i in range(len(inst.shape.tuple_shapes))]


def trace_function(fn, in_avals: Sequence[ShapedArray], in_tree, name: str = "region", *,
                   allow_captures: bool = True, param_names: Sequence[str] | None = None):
    """Trace `fn(*tree_unflatten(in_tree, params))` into a new computation whose parameters have `in_avals`
    (captured outer tracers become further parameters, listed in trace.captures).
    Returns (trace, flat output tracers, output treedef); the root is not set yet (see Trace.finish)."""
    from .pytree import tree_flatten, tree_unflatten
    trace = Trace(name, current_trace(), allow_captures)
    with trace:
        params = [trace.new_param(a, param_names[i] if param_names else None) for i, a in enumerate(in_avals)]
        args = tree_unflatten(in_tree, params)
        out = fn(*args)
        leaves, out_tree = tree_flatten(out)
        outs = [trace.lift(v) for v in leaves]
    return trace, outs, out_tree
