"""What the parser does once the text is read: resolve names, name anonymous operands, fill in omitted
shapes and expand the async sugar.

Names may be used before they are defined, so the reader leaves a `Ref` (name and text position) for
every operand, control predecessor and called computation; errors point back at that position.
"""
from __future__ import annotations

from .ir import Computation, Instruction, Module
from .lexer import Cursor
from .opcodes import VARIADIC
from .shape import Shape


class Ref:
    """A name used before resolution (an operand, a control predecessor or a computation)."""
    __slots__ = ("name", "pos")

    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos


class PendingInstruction:
    """An instruction as read, before its operand and control-predecessor names are resolved."""
    __slots__ = ("inst", "operands", "control", "pos", "wrapped")

    def __init__(self, inst: Instruction, operands: list, pos: int):
        self.inst, self.operands, self.pos = inst, operands, pos
        self.control: list[Ref] = []
        self.wrapped: str | None = None   # async sugar: the wrapped opcode


Pending = list[tuple[Computation, list[PendingInstruction]]]


# -- names -----------------------------------------------------------------------------------------
def resolve_operands(cur: Cursor, comp: Computation, pend: list[PendingInstruction],
                     names: dict[str, Instruction]) -> None:
    """Operand and control-predecessor names -> instructions of `comp`; checks arity and acyclicity."""
    for p in pend:
        for op in p.operands:
            if isinstance(op, Ref):
                target = names.get(op.name)
                if target is None:
                    raise cur.error(f"use of undefined instruction {op.name} in {comp.name}",
                                    "a defined instruction name", op.pos)
                op = target
            p.inst._append_operand(op)
        arity = p.inst.info.arity
        if arity != VARIADIC and len(p.inst.operands) != arity:
            raise cur.error(f"{p.inst.opcode} takes {arity} operand(s), got {len(p.inst.operands)}",
                            f"{arity} operand(s)", p.pos)
        for ref in p.control:
            target = names.get(ref.name)
            if target is None:
                raise cur.error(f"undefined control predecessor {ref.name} in {comp.name}",
                                "a defined instruction name", ref.pos)
            p.inst.control_predecessors.append(target)
    _check_acyclic(comp, cur, {id(p.inst): p.pos for p in pend})


def resolve_computations(cur: Cursor, pending: Pending, names: dict[str, Computation]) -> None:
    """Computation names in attributes (to_apply=%add, branch_computations={%a, %b}) -> computations."""
    def get(ref: Ref) -> Computation:
        c = names.get(ref.name)
        if c is None:
            raise cur.error(f"use of undefined computation {ref.name}", "a computation name", ref.pos)
        return c
    for _, pend in pending:
        for p in pend:
            for key, v in p.inst.attrs.items():
                if isinstance(v, Ref):
                    p.inst.attrs[key] = get(v)
                elif isinstance(v, list) and v and isinstance(v[0], Ref):
                    p.inst.attrs[key] = [get(r) for r in v]


def name_anonymous(module: Module, anonymous: list[Instruction]) -> None:
    """Nested operands (`add(f32[] constant(1), x)`) are named after their opcode: constant, constant.1, ..."""
    if not anonymous:
        return
    anon = {id(i) for i in anonymous}
    taken = {i.name for c in module.computations for i in c.instructions if id(i) not in anon}
    for inst in anonymous:
        base = inst.opcode
        name, n = base, 0
        while name in taken:
            n += 1
            name = f"{base}.{n}"
        taken.add(name)
        inst.name = name


def _check_acyclic(comp: Computation, cur: Cursor, where: dict[int, int]) -> None:
    state: dict[int, int] = {}
    for start in comp.instructions:
        if id(start) in state:
            continue
        if not start.control_predecessors and all(state.get(id(o)) == 2 for o in start.operands):
            state[id(start)] = 2     # text in def-before-use order (the usual): nothing to walk
            continue
        stack = [(start, iter(start.operands + start.control_predecessors))]
        state[id(start)] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[id(node)] = 2
                stack.pop()
            elif state.get(id(nxt)) == 1:
                raise cur.error(f"instruction {nxt.name} in {comp.name} depends on itself (a cycle)",
                                "an acyclic computation", where.get(id(nxt), 0))
            elif id(nxt) not in state:
                state[id(nxt)] = 1
                stack.append((nxt, iter(nxt.operands + nxt.control_predecessors)))


# -- omitted shapes --------------------------------------------------------------------------------
def infer_shapes(cur: Cursor, pend: list[PendingInstruction]) -> None:
    for p in pend:
        inst = p.inst
        if (inst.opcode == "broadcast" and "dimensions" not in inst.attrs and inst.operands
                and inst.operands[0].shape is not None and inst.operands[0].shape.rank == 0
                and not inst.operands[0].shape.is_tuple):
            inst.attrs["dimensions"] = ()
            inst._attr_order = ("dimensions",) + (inst._attr_order or ())
        if inst.shape is None:
            inst.shape = _infer_shape(inst, cur, p.pos)


def _infer_shape(inst: Instruction, cur: Cursor, pos: int) -> Shape:
    """Shapes of shape-less instructions (XLA lets `add(x, y)` omit its shape): the easy cases only."""
    ops = inst.operands
    if any(o.shape is None for o in ops):
        for o in ops:
            if o.shape is None:
                o.shape = _infer_shape(o, cur, pos)
    op = inst.opcode
    if op == "tuple":
        return Shape.tuple_of(o.shape for o in ops)
    if op == "get-tuple-element" and ops and ops[0].shape.is_tuple:
        index = inst.attrs.get("index")
        if isinstance(index, int) and 0 <= index < len(ops[0].shape.tuple_shapes):
            return ops[0].shape.tuple_shapes[index]
    if inst.info.is_elementwise and ops and op != "convert":
        base = ops[1].shape if op in ("select", "clamp") and len(ops) > 1 else ops[0].shape
        if not base.is_tuple:
            if op in ("compare", "is-finite"):
                return base.with_element_type("pred")
            if op in ("real", "imag") and base.element_type in ("c64", "c128"):
                return base.with_element_type("f32" if base.element_type == "c64" else "f64")
            return base
    if op == "after-all":
        return Shape.token()
    raise cur.error(f"cannot infer the shape of {inst.opcode}; write it before the opcode",
                    "a shape", pos)


# -- async sugar -----------------------------------------------------------------------------------
def desugar_async(cur: Cursor, module: Module, pending: Pending) -> None:
    """`X-start(ops), attrs` -> async-start(ops), calls=<computation running X with X's attrs>."""
    for comp, pend in pending:
        for p in pend:
            if p.wrapped is None:
                continue
            inst = p.inst
            if inst.opcode != "async-start":
                continue
            shape = inst.shape
            if not (shape.is_tuple and len(shape.tuple_shapes) >= 2 and shape.tuple_shapes[0].is_tuple):
                raise cur.error(f"{p.wrapped}-start must have shape ((operands...), result, ...)",
                                "an async tuple shape", p.pos)
            own = {k: v for k, v in inst.attrs.items() if k == "async_execution_thread"}
            wrapped_attrs = {k: v for k, v in inst.attrs.items() if k not in own}
            params = [Instruction("parameter", s, name=f"param_{i}", parameter_number=i)
                      for i, s in enumerate(shape.tuple_shapes[0].tuple_shapes)]
            body = Instruction(p.wrapped, shape.tuple_shapes[1], params, wrapped_attrs, name=p.wrapped)
            body._attr_order = tuple(k for k in inst._attr_order if k in wrapped_attrs)
            name = module.unique_name(f"async_wrapped_{p.wrapped}")
            wrapped = Computation(name, params + [body], body)
            if "async_execution_thread" in own:
                wrapped.attrs["execution_thread"] = own["async_execution_thread"]
            wrapped.parent = module
            wrapped._async_sugar = True
            module.computations.insert(module.computations.index(comp), wrapped)
            inst.attrs = dict(own)
            inst.attrs["calls"] = wrapped
            inst._attr_order = tuple(k for k in inst._attr_order if k in own) + ("calls",)
