"""The reference interpreter: evaluates a Module with numpy, one instruction at a time.

Values: a numpy array for an array shape (0-d arrays for scalars, dtype exactly the HLO element type),
a Python tuple for a tuple shape, TOKEN for a token. Each op family lives in its own file and exports
HANDLERS = {opcode: fn(inst, args, ev) -> value}; HANDLER_TABLE below merges them, so the rule for an
opcode is found by reading one table.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from ... import trace_events
from ...errors import ExecutionError, UnimplementedError, XlapyError
from ...hlo import Computation, Instruction, Module, Shape
from ...hlo.cost import instruction_bytes, instruction_flops
from ...hlo.tables import merge_rule_tables, module_tables


class _Token:
    def __repr__(self) -> str:
        return "TOKEN"


TOKEN = _Token()

Handler = Callable[[Instruction, list, "Evaluator"], Any]


def _handler_table() -> dict[str, Handler]:
    from . import (collectives, control, convert, data_movement, dynamic_shapes, elementwise, gather_scatter, linalg,
                   misc, reduction)
    return merge_rule_tables("interpreter handlers", *module_tables(
        "HANDLERS", elementwise, convert, data_movement, control, reduction, gather_scatter, linalg, misc,
        dynamic_shapes, collectives))


_TABLE: dict[str, Handler] | None = None


def handler_table() -> dict[str, Handler]:
    global _TABLE
    if _TABLE is None:
        _TABLE = _handler_table()
    return _TABLE


class Evaluator:
    """Evaluates computations of one module. `call(comp, args)` is how ops run called computations."""

    def __init__(self, module: Module):
        self.module = module
        self.table = handler_table()

    def call(self, comp: Computation, args: Sequence[Any], lifted: bool = False, times: list | None = None) -> Any:
        """Evaluate `comp` on `args`. lifted=True runs a scalar computation on whole arrays at once
        (reducers.call_lifted), so results are not checked against the scalar shapes the HLO declares. times: a
        list that receives (instruction, start ns, end ns) of each instruction (the profiler's kernels)."""
        values: dict[int, Any] = {}
        for inst in comp.post_order():
            if inst.opcode == "parameter":
                n = inst.parameter_number
                if n >= len(args):
                    raise ExecutionError(f"computation {comp.name} needs parameter {n}; got {len(args)} arguments")
                values[id(inst)] = args[n]
                continue
            fn = self.table.get(inst.opcode)
            if fn is None:
                raise UnimplementedError(f"interpreter: no rule for opcode {inst.opcode!r} (instruction {inst.name})")
            operands = [values[id(o)] for o in inst.operands]
            t0 = time.monotonic_ns() if times is not None else 0
            try:
                with np.errstate(all="ignore"):
                    value = fn(inst, operands, self)
            except XlapyError:
                raise
            except Exception as e:  # a bug or unsupported corner: name the instruction
                shapes = ", ".join(str(o.shape) for o in inst.operands)
                raise ExecutionError(f"interpreter failed on {inst.name} = {inst.opcode}({shapes}): "
                                     f"{type(e).__name__}: {e}") from e
            if not lifted and isinstance(value, np.ndarray) and (value.shape != inst.shape.dims
                                                                  or value.dtype != inst.shape.dtype):
                # a rule returned the wrong shape or type: say so here, not three ops later
                raise ExecutionError(f"interpreter rule for {inst.opcode} returned {value.dtype}{list(value.shape)} "
                                     f"for {inst.name}, which is {inst.shape}")
            values[id(inst)] = value
            if times is not None:
                times.append((inst, t0, time.monotonic_ns()))
        return values[id(comp.root)]

    def call_scalar(self, comp: Computation, *scalars: Any) -> Any:
        """Run a scalar computation (a reducer or comparator) on 0-d values."""
        return self.call(comp, list(scalars))


def coerce_argument(value: Any, shape: Shape, index: int) -> Any:
    """Turn a user argument into the value the parameter `shape` expects, or raise naming the mismatch."""
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
            raise XlapyError(f"argument {index}: expected a tuple of {len(shape.tuple_shapes)} for {shape}")
        return tuple(coerce_argument(v, s, index) for v, s in zip(value, shape.tuple_shapes))
    if shape.is_token:
        return TOKEN
    arr = np.asarray(value)
    if arr.dtype != shape.dtype:
        if arr.dtype.kind == shape.dtype.kind or (arr.size and np.can_cast(arr.dtype, shape.dtype, "same_kind")):
            raise XlapyError(f"argument {index}: dtype {arr.dtype} does not match parameter shape {shape}")
        raise XlapyError(f"argument {index}: dtype {arr.dtype} does not match parameter shape {shape}")
    if tuple(arr.shape) != shape.dims:
        raise XlapyError(f"argument {index}: shape {arr.shape} does not match parameter shape {shape}")
    return arr


class Executable:
    """A module ready to run on the interpreter. `exe(*arrays)` returns an array or a tuple."""

    backend = "interpreter"

    def __init__(self, module: Module):
        self.module = module
        self.evaluator = Evaluator(module)

    def __call__(self, *args: Any) -> Any:
        entry = self.module.entry
        params = entry.parameters
        if len(args) != len(params):
            raise XlapyError(f"module {self.module.name} takes {len(params)} arguments, got {len(args)}")
        values = [coerce_argument(a, p.shape, i) for i, (a, p) in enumerate(zip(args, params))]
        session = trace_events.session()
        if session is None:
            return self.evaluator.call(entry, values)
        times: list = []
        t0 = time.monotonic_ns()
        out = self.evaluator.call(entry, values, times=times)
        session.extend(profile_events(self.module.name, t0, time.monotonic_ns(), times))
        return out

    def as_text(self) -> str:
        return self.module.to_text()


def profile_events(module: str, t0: int, t1: int, times: list) -> list[trace_events.Event]:
    """A call and its instructions as profiler events (the interpreter times them from Python)."""
    lane = ("cpu", threading.get_ident())
    module = f"{module} (interpreter)"
    out = [trace_events.Event(module, "call", t0, t1, lane, {"module": module, "backend": "interpreter"})]
    for inst, start, end in times:
        out.append(trace_events.Event(inst.name, "kernel", start, end, lane,
                                      {"module": module, "kind": inst.opcode, "flops": instruction_flops(inst)[0],
                                       "bytes": instruction_bytes(inst), "top": True}))
    return out


def compile_module(module: Module, verify: bool = True) -> Executable:
    if module.entry is None:
        raise XlapyError(f"module {module.name} has no entry computation")
    if verify:
        from ...hlo import verify as verify_module
        verify_module(module)
    return Executable(module)
