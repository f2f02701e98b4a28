"""Module / Instruction -> HLO text in XLA's format (parse(print(m)) is a fixed point).

Options (keyword arguments of module_to_text / instruction_to_text):
  print_operand_shape  `add(f32[] %a, f32[] %b)` vs `add(%a, %b)`                      default True
  print_percent        `%name` vs `name`                                                default True
  print_program_shape  `%comp (p: f32[]) -> f32[] {` vs `%comp {`                       default True
  print_metadata, print_backend_config, print_control_dependencies                      default True
  operand_index_interval  a `/*index=N*/` comment before every Nth operand (0: none)     default 5
  print_large_constants   False prints constants of more than 10 elements as `{...}`    default True
  short_parsable=True  XLA's HloPrintOptions::ShortParsable(): no operand shapes, no '%', no program
                       shapes, metadata, backend configs or control dependencies.
"""
from __future__ import annotations

from typing import Any

from . import attrs as A
from .attr_table import kind_of, print_rank
from .ir import ELIDED, Computation, Instruction, Module
from .lexer import escape
from .literal import literal_to_text
from .shape import Shape

_DEFAULTS = dict(print_operand_shape=True, print_percent=True, print_program_shape=True, print_metadata=True,
                 print_backend_config=True, print_control_dependencies=True, operand_index_interval=5,
                 print_large_constants=True)
_SHORT = dict(print_operand_shape=False, print_percent=False, print_program_shape=False, print_metadata=False,
              print_backend_config=False, print_control_dependencies=False, operand_index_interval=0)


def _options(options: dict) -> dict:
    opts = dict(_DEFAULTS)
    if options.pop("short_parsable", False):
        opts.update(_SHORT)
    unknown = set(options) - set(opts)
    if unknown:
        raise TypeError(f"unknown print option(s): {sorted(unknown)}")
    opts.update(options)
    return opts


def shape_text(shape: Shape, print_layout: bool = True) -> str:
    """Shape text with XLA's `/*index=N*/` marks in long tuples."""
    if shape is None:
        return "<no shape>"
    if not shape.is_tuple:
        return shape.to_text(print_layout)
    parts = []
    for i, s in enumerate(shape.tuple_shapes):
        mark = f"/*index={i}*/" if i and i % 5 == 0 else ""
        parts.append(mark + shape_text(s, print_layout))
    return "(" + ", ".join(parts) + ")"


def _ints_text(v) -> str:
    if isinstance(v, (list, tuple)):
        return "{" + ",".join(_ints_text(x) for x in v) + "}"
    return str(int(v))


def _float_text(v: float) -> str:
    return "%g" % v


class _Printer:
    def __init__(self, opts: dict):
        self.o = opts
        self.pct = "%" if opts["print_percent"] else ""

    # -- attribute values ----------------------------------------------------------------------------
    def comp_ref(self, c: Computation) -> str:
        return self.pct + c.name

    def value(self, key: str, v: Any) -> str:
        kind = kind_of(key)
        if isinstance(v, Computation):
            return self.comp_ref(v)
        if isinstance(v, list) and v and all(isinstance(c, Computation) for c in v):
            return "{" + ", ".join(self.comp_ref(c) for c in v) + "}"
        if isinstance(v, bool):
            return "true" if v else "false"
        if kind == "ints":
            return _ints_text(v)
        if kind == "words":
            return "{" + ",".join(v) + "}"
        if kind == "string":
            return '"' + escape(v) + '"'
        if kind == "comps" or kind == "calls":
            return "{" + ", ".join(self.comp_ref(c) for c in v) + "}"
        if isinstance(v, float):
            return _float_text(v)
        if isinstance(v, (A.Window, A.ConvDimensionNumbers)):
            return v.to_text()
        if kind == "slice":
            return A.slice_to_text(v)
        if kind == "padding":
            return A.padding_to_text(v)
        if isinstance(v, Shape):
            return shape_text(v)
        return str(v)

    # -- instructions --------------------------------------------------------------------------------
    def attr_items(self, inst: Instruction, skip=()) -> list[tuple[str, str]]:
        items: list[tuple[str, Any]] = [(k, v) for k, v in inst.attrs.items() if k not in skip]
        if inst.control_predecessors and self.o["print_control_dependencies"]:
            items.append(("control-predecessors", inst.control_predecessors))
        order = inst._attr_order
        pos = {k: i for i, k in enumerate(order or ())}
        if order is not None and all(k in pos for k, _ in items):
            items.sort(key=lambda kv: pos[kv[0]])      # as parsed
        else:
            items.sort(key=lambda kv: print_rank(kv[0]))
        out = []
        for k, v in items:
            if k == "metadata" and not self.o["print_metadata"]:
                continue
            if k == "backend_config" and not self.o["print_backend_config"]:
                continue
            if k == "control-predecessors":
                out.append((k, "{" + ", ".join(self.pct + p.name for p in v) + "}"))
            else:
                out.append((k, self.value(k, v)))
        return out

    def operands(self, inst: Instruction) -> str:
        if inst.opcode == "parameter":
            return str(inst.parameter_number)
        if inst.opcode == "constant":
            lit = inst.literal
            if (not self.o["print_large_constants"] and lit is not ELIDED and not inst.shape.is_tuple
                    and inst.shape.numel > 10):
                return "{...}"
            return literal_to_text(lit, inst.shape)
        parts = []
        every = self.o["operand_index_interval"]
        for i, op in enumerate(inst.operands):
            mark = f"/*index={i}*/" if every and i and i % every == 0 else ""
            shape = shape_text(op.shape) + " " if self.o["print_operand_shape"] else ""
            parts.append(mark + shape + self.pct + op.name)
        return ", ".join(parts)

    def instruction(self, inst: Instruction) -> str:
        opname = inst.opcode
        attrs = self.attr_items(inst)
        wrapped = _sugar_wrapped(inst)
        if wrapped is not None:
            root = wrapped.root
            opname = root.opcode + inst.opcode[len("async"):]
            attrs = [(k, v) for k, v in attrs if k != "calls"]
            if inst.opcode == "async-start":
                attrs += self.attr_items(root)
        text = f"{self.pct}{inst.name} = {shape_text(inst.shape)} {opname}({self.operands(inst)})"
        if attrs:
            text += ", " + ", ".join(f"{k}={v}" for k, v in attrs)
        return text

    # -- computations and modules --------------------------------------------------------------------
    def computation(self, comp: Computation, is_entry: bool) -> str:
        head = ("ENTRY " if is_entry else "") + self.pct + comp.name
        if self.o["print_program_shape"]:
            params = ", ".join(f"{p.name}: {shape_text(p.shape, False)}" for p in comp.parameters)
            result = shape_text(comp.root.shape, False) if comp.root is not None else "()"
            head += f" ({params}) -> {result}"
        lines = [head + " {"]
        for inst in comp.post_order():
            lines.append("  " + ("ROOT " if inst is comp.root else "") + self.instruction(inst))
        tail = "}"
        if "execution_thread" in comp.attrs:
            tail += f', execution_thread="{escape(comp.attrs["execution_thread"])}"'
        lines.append(tail)
        return "\n".join(lines)

    def module(self, module: Module) -> str:
        header = "HloModule " + module.name
        for k, v in module.attrs.items():
            header += f", {k}={v}"
        if module.attrs and "\n" in str(list(module.attrs.values())[-1]):
            header += "\n"
        pieces = [header]
        if module.tables:
            pieces.append(module.tables.rstrip() + "\n")
        sugar = {id(c) for c in _sugar_computations(module)}
        comps = [self.computation(c, c is module.entry) for c in module.computation_post_order()
                 if id(c) not in sugar]
        return "\n\n".join(pieces + comps) + "\n"


def _sugar_ok(comp: Computation) -> bool:
    root = comp.root
    if not comp._async_sugar or root is None or root.opcode == "parameter":
        return False
    params = comp.parameters
    return (len(comp.instructions) == len(params) + 1 and root.operands == params
            and all(p.parameter_number == i for i, p in enumerate(params)))


def _sugar_computations(module: Module) -> list[Computation]:
    return [c for c in module.computations if _sugar_ok(c)]


def _sugar_wrapped(inst: Instruction) -> Computation | None:
    """The wrapped computation when `inst` prints as `X-start/-update/-done` sugar, else None."""
    if inst.opcode not in ("async-start", "async-update", "async-done"):
        return None
    start = inst
    seen = 0
    while start.opcode in ("async-update", "async-done") and start.operands and seen < 1000:
        start = start.operands[0]
        seen += 1
    if start.opcode != "async-start":
        return None
    calls = start.attrs.get("calls")
    if isinstance(calls, Computation) and _sugar_ok(calls):
        return calls
    return None


def module_to_text(module: Module, **options) -> str:
    return _Printer(_options(options)).module(module)


def instruction_to_text(inst: Instruction, **options) -> str:
    return _Printer(_options(options)).instruction(inst)


def computation_to_text(comp: Computation, **options) -> str:
    return _Printer(_options(options)).computation(comp, comp.is_entry)
