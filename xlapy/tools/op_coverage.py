"""Op coverage as data: for every opcode and every layer, either the layer's rule or the reason it has none.

A layer is a driver over tables of rules keyed by opcode (shape inference, the interpreter, the CPU emitters,
JVP, VJP). Whether a layer has a rule is read from its live tables; this module holds only the exceptions: each
opcode a layer has no rule for, with its reason, from a closed set of kinds (KINDS). tests/unit/test_op_coverage.py
holds the two against each other in both directions: an opcode that gains a rule while a reason still says it has
none fails, and so does one that loses its rule without a reason. `xlapy ops OPCODE` prints one opcode's row
with each rule's file:line (tools/ops.py).

This module imports every layer, so it sits at the top, with the command line.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..backends.builtin import CPU_EXPANDED

# -- reasons -------------------------------------------------------------------------------------------------
EXPANDED = "expanded"                     # a named pass rewrites the op away before this layer sees it
UNSUPPORTED = "unsupported"               # the layer cannot run it (yet); the note says why
NOT_DIFFERENTIABLE = "not differentiable"  # autodiff: no derivative flows through it; the note says why
BY_DRIVER = "handled by the driver"       # the layer's driver handles it itself, outside the rule table
KINDS = (EXPANDED, UNSUPPORTED, NOT_DIFFERENTIABLE, BY_DRIVER)


@dataclass(frozen=True)
class Reason:
    """Why a layer has no rule for an opcode. `target`: the pass name (EXPANDED) or the driver function as
    "module:qualname" (BY_DRIVER)."""
    kind: str
    note: str = ""
    target: str = ""

    def text(self) -> str:
        if self.kind == EXPANDED:
            return f"expanded by pass {self.target}" + (f" ({self.note})" if self.note else "")
        return f"{self.kind}: {self.note}"


def expanded(pass_name: str, note: str = "") -> Reason:
    return Reason(EXPANDED, note, pass_name)


def unsupported(note: str) -> Reason:
    return Reason(UNSUPPORTED, note)


def not_differentiable(note: str) -> Reason:
    return Reason(NOT_DIFFERENTIABLE, note)


def by_driver(driver: str, note: str) -> Reason:
    return Reason(BY_DRIVER, note, driver)


def _each(opcodes: str, reason: Reason) -> dict[str, Reason]:
    return {op: reason for op in opcodes.split()}


# -- opcodes no single-device layer runs ---------------------------------------------------------------------
COLLECTIVES = """all-gather all-gather-start all-gather-done all-reduce all-reduce-start all-reduce-done all-to-all
                 ragged-all-to-all collective-broadcast collective-permute collective-permute-start
                 collective-permute-done reduce-scatter"""
HOST_TRANSFERS = "infeed outfeed send send-done recv recv-done"
SCHEDULED_ASYNC = "async-start async-update async-done copy-start copy-done"

_NOT_ON_ONE_DEVICE = {
    **_each(COLLECTIVES, unsupported("a collective: xlapy runs on one device")),
    **_each(HOST_TRANSFERS, unsupported("a host transfer: xlapy has no infeed/outfeed or channels")),
    **_each(SCHEDULED_ASYNC, unsupported("an asynchronous pair that XLA's scheduler makes; xlapy runs in order")),
    "domain": unsupported("a sharding-domain marker: xlapy does not partition"),
}

# -- per layer -----------------------------------------------------------------------------------------------
SHAPE_NO_RULE: dict[str, Reason] = {}

INTERPRETER_NO_RULE: dict[str, Reason] = {
    **_NOT_ON_ONE_DEVICE,
    "parameter": by_driver("xlapy.backends.interpreter.evaluator:Evaluator.call", "binds the arguments"),
    "rng-get-and-update-state": unsupported("XLA's internal RNG state; the front end uses rng-bit-generator"),
    "ragged-dot": unsupported("no rule yet"),
    "dynamic-reshape": unsupported("needs the dynamic sizes: the dynamic_padder pass rewrites it first"),
}

CPU_NO_RULE: dict[str, Reason] = {
    **INTERPRETER_NO_RULE,
    "parameter": by_driver("xlapy.backends.cpu.emitter:IrEmitter.emit_computation", "binds the argument buffers"),
    # the CPU backend's registry entry counts these as supported (backends/builtin.py states them once)
    **{op: expanded(pass_name, note) for op, (pass_name, note) in CPU_EXPANDED.items()},
    **_each("partition-id replica-id", unsupported("no emitter: xlapy runs one partition and one replica")),
    "rng": unsupported("no emitter; the front end draws random numbers with rng-bit-generator"),
    "scan": unsupported("no emitter yet (the interpreter runs it)"),
    "stochastic-convert": unsupported("no emitter yet (the interpreter runs it)"),
}

# collectives run on the devices of a replicated run (backends/spmd.py: interpreter/collectives.py, and on the CPU
# backend cpu/collectives_emitter.py); the interpreter also runs the generic async-start/-update/-done wrappers
_RUN_REPLICATED = set(COLLECTIVES.split())
for _op in _RUN_REPLICATED | {"async-start", "async-update", "async-done"}:
    del INTERPRETER_NO_RULE[_op]
for _op in _RUN_REPLICATED | {"partition-id", "replica-id", "async-start", "async-update", "async-done"}:
    del CPU_NO_RULE[_op]


_COPY_FORWARD = "xlapy.frontend.autodiff.vjp:copy_forward"
_NO_OPERANDS = not_differentiable("it has no operands, so no tangent reaches it")
_INTEGRAL = not_differentiable("integer and boolean values carry no derivative")
_NO_RULE_YET = unsupported("no rule yet")

AUTODIFF_NO_RULE: dict[str, Reason] = {
    **_NOT_ON_ONE_DEVICE,
    "get-dimension-size": _INTEGRAL,
    "parameter": by_driver(_COPY_FORWARD, "binds the primal arguments"),
    "fusion": unsupported("fusions are made by the CPU pipeline, after differentiation"),
    **_each("constant iota partition-id replica-id rng-get-and-update-state", _NO_OPERANDS),
    **_each("and or xor not popcnt count-leading-zeros shift-left shift-right-arithmetic shift-right-logical",
            _INTEGRAL),
    **_each("compare is-finite", not_differentiable("its result is boolean")),
    "after-all": not_differentiable("its result is a token"),
    "bitcast-convert": not_differentiable("it reinterprets bits"),
    "rng-bit-generator": not_differentiable("random bits"),
    **_each("add-dependency map ragged-dot scan stochastic-convert", _NO_RULE_YET),
    **_each("dynamic-reshape set-dimension-size", unsupported("dynamic shapes: no derivative rule yet")),
    **_each("batch-norm-training batch-norm-inference batch-norm-grad",
            unsupported("the front end writes batch norm as elementwise ops and reductions")),
}


_BATCH_INTO = "xlapy.frontend.batching:batch_into"
_NEVER_BATCHED = by_driver(_BATCH_INTO, "no operands, so never batched: copied unchanged")

BATCHING_NO_RULE: dict[str, Reason] = {
    **_NOT_ON_ONE_DEVICE,
    **_each(COLLECTIVES, unsupported("a collective the front end does not emit: batch_into raises naming the "
                                     "vmap axis")),
    "parameter": by_driver(_BATCH_INTO, "binds the batched arguments"),
    **_each("constant iota replica-id rng-get-and-update-state", _NEVER_BATCHED),
    "after-all": by_driver(_BATCH_INTO, "its operands are tokens, never batched: copied unchanged"),
    **_each("dynamic-reshape set-dimension-size", unsupported("dynamic shapes: no batching rule")),
}


for _op in "all-reduce all-gather reduce-scatter collective-permute all-to-all".split():
    del BATCHING_NO_RULE[_op]       # frontend/batching/rules_collective.py (partition-id too: axis_index)
    del AUTODIFF_NO_RULE[_op]       # frontend/autodiff/rules_collective.py


# -- layers --------------------------------------------------------------------------------------------------
def _shape_tables():
    from ..hlo import shape_inference
    return [("shape_inference.rule_table()", shape_inference.rule_table())]


def _interpreter_tables():
    from ..backends.interpreter import evaluator
    return [("interpreter.evaluator.handler_table()", evaluator.handler_table())]


def _cpu_tables():
    from ..backends.cpu import elemental, emitter
    return [("emitter.HANDLERS", emitter.HANDLERS), ("elemental.TABLE", elemental.TABLE)]


def _jvp_tables():
    from ..frontend.autodiff import jvp
    return [("autodiff.jvp.jvp_rules()", jvp.jvp_rules())]


def _vjp_tables():
    from ..frontend.autodiff import vjp
    return [("autodiff.vjp.vjp_rules()", vjp.vjp_rules())]


def _batching_tables():
    from ..frontend import batching
    return [("batching.batching_rules()", batching.batching_rules())]


@dataclass(frozen=True)
class Layer:
    """A layer's rule tables (loaded on first use: each is (label, opcode -> rule function)) and its reasons.
    A layer that does not exist yet has no tables and says so in `absent`."""
    name: str
    description: str
    load_tables: Callable[[], list[tuple[str, Mapping[str, Callable]]]] | None
    no_rule: Mapping[str, Reason] = field(default_factory=dict)
    absent: str = ""

    def tables(self) -> list[tuple[str, Mapping[str, Callable]]]:
        return self.load_tables() if self.load_tables is not None else []

    def rules(self, opcode: str) -> list[tuple[str, Callable]]:
        """(table label, rule) for each of the layer's tables that has a rule for `opcode`."""
        return [(label, table[opcode]) for label, table in self.tables() if opcode in table]

    def covered(self) -> set[str]:
        return {op for _, table in self.tables() for op in table}


LAYERS: tuple[Layer, ...] = (
    Layer("shape", "shape inference (hlo/shape_inference*.py)", _shape_tables, SHAPE_NO_RULE),
    Layer("interpreter", "reference interpreter (backends/interpreter)", _interpreter_tables, INTERPRETER_NO_RULE),
    Layer("cpu", "CPU emitters: non-elemental handlers, then element generators (backends/cpu)", _cpu_tables,
          CPU_NO_RULE),
    Layer("jvp", "forward-mode autodiff (frontend/autodiff)", _jvp_tables, AUTODIFF_NO_RULE),
    Layer("vjp", "reverse-mode autodiff (frontend/autodiff)", _vjp_tables, AUTODIFF_NO_RULE),
    Layer("batching", "vmap's batching rules (frontend/batching)", _batching_tables, BATCHING_NO_RULE),
)


def layer(name: str) -> Layer:
    return next(ly for ly in LAYERS if ly.name == name)


def resolve(reference: str) -> Callable:
    """The function named "package.module:Qual.name"."""
    module_name, qualname = reference.split(":")
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def pass_class(pass_name: str) -> type:
    """The class of a registered pass (passes/registry.py)."""
    from ..passes.registry import PASSES
    module_name, cls_name = PASSES[pass_name]
    return getattr(importlib.import_module(f"xlapy.passes.{module_name}"), cls_name)
