"""HLO text -> Module. `parse(text)` accepts what XLA, JAX and TensorFlow print (see tests/unit/test_parser.py).

Grammar (whitespace and /* */, // comments are skipped between tokens):
  module       HloModule NAME (, KEY=RAW)*  [FileNames/FunctionNames/FileLocations/StackFrames tables]
               computation*
  computation  [ENTRY] NAME [(P: SHAPE, ...) -> SHAPE] { instruction* } [, execution_thread="..."]
  instruction  [ROOT] NAME = [SHAPE] OPCODE ( operands ) (, KEY=VALUE)*
  operand      [SHAPE] NAME | [SHAPE] OPCODE ( operands )      (the latter: an anonymous nested instruction)
Attribute values are typed by attr_table (unknown ones are kept raw). Names may be used before they
are defined; operands, control predecessors and computations are resolved once everything is read.
`X-start / X-update / X-done` for an opcode X without its own async form is XLA's sugar for
async-start/-update/-done wrapping a one-instruction computation that runs X.
"""
from __future__ import annotations

import re

from ..errors import HloParseError
from . import attrs as A
from .attr_table import kind_of
from .ir import ELIDED, Computation, Instruction, Module
from .lexer import ATTR_NAME, INT, NAME, WORD, Cursor
from .literal import LiteralError, parse_array_literal
from .opcodes import OPCODES, VARIADIC
from .shape import PRIMITIVE_TYPES, Layout, Shape

_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_TYPE_BRACKET = re.compile(r"([a-z][a-z0-9]*)\[")
_DIM = re.compile(r"<=\d+|\?|\d+")
_LAYOUT_START = re.compile(r"\{\s*(?:\d|:|\})")
_LAYOUT_TAIL = re.compile(r"[^{}]*")
_FLOAT = re.compile(r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_DIM_LABELS = re.compile(r"[0-9a-z?]+_[0-9a-z?]+->[0-9a-z?]+")
_PADDING = re.compile(r"[-\d_x]+")
_TABLE_HEADS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_LINE = re.compile(r"[ \t]*(?:(?:FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*|\d+[ \t][^\n]*)?(?:\n|$)")
_ASYNC_SUFFIXES = ("-start", "-update", "-done")


class _Ref:
    """A name used before resolution (an operand, a control predecessor or a computation)."""
    __slots__ = ("name", "pos")

    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos


class _PendingInstruction:
    __slots__ = ("inst", "operands", "control", "pos", "wrapped")

    def __init__(self, inst: Instruction, operands: list, pos: int):
        self.inst, self.operands, self.pos = inst, operands, pos
        self.control: list[_Ref] = []
        self.wrapped: str | None = None   # async sugar: the wrapped opcode


class Parser:
    def __init__(self, text: str):
        self.cur = Cursor(text)
        self.pending: list[tuple[Computation, list[_PendingInstruction]]] = []
        self.anonymous: list[Instruction] = []

    # -- module --------------------------------------------------------------------------------------
    def module(self) -> Module:
        cur = self.cur
        if not cur.accept_keyword("HloModule"):
            raise cur.error("expected 'HloModule' at the start of the module", "'HloModule'")
        module = Module(self._name("a module name"))
        while cur.accept(","):
            key = cur.take(ATTR_NAME, "a module attribute name")
            cur.expect("=", f"after module attribute {key}")
            module.attrs[key] = cur.raw_value()
        module.tables = self._tables()
        entry: Computation | None = None
        names: dict[str, Computation] = {}
        while not cur.at_end():
            pos = cur.pos
            comp, is_entry = self._computation()
            if comp.name in names:
                raise cur.error(f"computation {comp.name} is defined twice", "a new computation name", pos)
            names[comp.name] = comp
            if is_entry:
                if entry is not None:
                    raise cur.error("a module has one ENTRY computation", "a non-ENTRY computation", pos)
                entry = comp
            comp.parent = module
            module.computations.append(comp)
        if not module.computations:
            raise cur.error("the module has no computations", "a computation")
        module.entry = entry or module.computations[-1]
        self._resolve_computations(names, module)
        self._name_anonymous(module)
        for comp, pend in self.pending:
            self._infer_shapes(pend)
        self._desugar_async(module)
        for comp in module.computations:
            module._names.add(comp.name)
            module._names.update(i.name for i in comp.instructions)
        return module

    def _tables(self) -> str:
        cur = self.cur
        cur.skip()
        if not cur.text.startswith(_TABLE_HEADS, cur.pos):
            return ""
        start = pos = cur.pos
        text = cur.text
        while pos < len(text):
            m = _TABLE_LINE.match(text, pos)
            if not m or m.end() == pos:
                break
            pos = m.end()
        cur.pos = pos
        return text[start:pos].rstrip()

    def _name(self, what: str) -> str:
        return self.cur.take(NAME, what).lstrip("%")

    # -- computations --------------------------------------------------------------------------------
    def _computation(self) -> tuple[Computation, bool]:
        cur = self.cur
        is_entry = cur.accept_keyword("ENTRY")
        if not cur.peek(NAME):
            raise cur.error("expected a computation", "'ENTRY' or a computation name")
        name = self._name("a computation name")
        if cur.peek_char() == "(":
            self._signature()
        cur.expect("{", f"to open the body of computation {name}")
        comp = Computation(name)
        pend: list[_PendingInstruction] = []
        root: Instruction | None = None
        seen: dict[str, Instruction] = {}
        while not cur.accept("}"):
            if cur.at_end():
                raise cur.error(f"computation {name} is not closed", "'}'")
            pos = cur.pos
            is_root = cur.accept_keyword("ROOT")
            p = self._instruction(comp, pend)
            if p.inst.name in seen:
                raise cur.error(f"instruction {p.inst.name} is defined twice in {name}", "a new name", pos)
            seen[p.inst.name] = p.inst
            if is_root:
                if root is not None:
                    raise cur.error(f"computation {name} has two ROOT instructions", "one ROOT", pos)
                root = p.inst
        if not comp.instructions:
            raise cur.error(f"computation {name} has no instructions", "an instruction")
        comp.root = root or next(i for i in reversed(comp.instructions) if i.name in seen)
        save = cur.pos
        if cur.accept(",") and cur.accept_keyword("execution_thread"):
            cur.expect("=", "after execution_thread")
            comp.attrs["execution_thread"] = cur.string()
        elif cur.pos != save:
            cur.pos = save
        self._resolve_operands(comp, pend, seen)
        self.pending.append((comp, pend))
        return comp, is_entry

    def _signature(self) -> None:
        cur = self.cur
        cur.expect("(")
        if not cur.accept(")"):
            while True:
                cur.take(NAME, "a parameter name")
                cur.expect(":", "after a parameter name")
                self._shape()
                if cur.accept(")"):
                    break
                cur.expect(",", "between parameters")
        cur.expect("->", "after the parameter list")
        self._shape()

    # -- instructions --------------------------------------------------------------------------------
    def _instruction(self, comp: Computation, pend: list[_PendingInstruction]) -> _PendingInstruction:
        cur = self.cur
        name = self._name("an instruction name")
        cur.expect("=", f"after instruction name {name}")
        p = self._op_body(comp, pend, name)
        inst = p.inst
        order: list[str] = []
        while cur.peek_char() == ",":
            save = cur.pos
            cur.accept(",")
            m = cur.peek(ATTR_NAME)
            if not m or not cur.text.startswith("=", _skip_to(cur, m.end())):
                cur.pos = save
                raise cur.error("expected an attribute 'name=value'", "an attribute")
            key = m.group(0)
            cur.pos = m.end()
            cur.expect("=")
            if key in order:
                raise cur.error(f"attribute {key} is given twice on {name}", "a new attribute", m.start())
            order.append(key)
            if key == "control-predecessors":
                p.control = self._name_list()
            else:
                inst.attrs[key] = self._attr_value(key)
        inst._attr_order = tuple(order)
        return p

    def _op_body(self, comp: Computation, pend: list[_PendingInstruction], name: str | None) -> _PendingInstruction:
        """[shape] opcode(operands) -- the part of an instruction after '=' (or an anonymous operand)."""
        cur = self.cur
        shape = self._shape() if self._shape_ahead() else None
        pos = cur.pos
        text = cur.take(_OPCODE, "an opcode")
        opcode, wrapped = self._opcode(text, pos)
        cur.expect("(", f"after opcode {text}")
        inst = Instruction(opcode, shape, name=name or "")
        p = _PendingInstruction(inst, [], pos)
        p.wrapped = wrapped
        if opcode == "parameter":
            inst.parameter_number = int(cur.take(INT, "a parameter number"))
            cur.expect(")", "after the parameter number")
        elif opcode == "constant":
            if shape is None:
                raise cur.error("a constant needs a shape", "a shape before 'constant'", pos)
            inst.literal = self._literal(shape)
            cur.expect(")", "after the literal")
        elif not cur.accept(")"):
            while True:
                p.operands.append(self._operand(comp, pend))
                if cur.accept(")"):
                    break
                cur.expect(",", "between operands")
        if name is None:
            self.anonymous.append(inst)
        comp.add_instruction(inst)
        pend.append(p)
        return p

    def _opcode(self, text: str, pos: int) -> tuple[str, str | None]:
        if text in OPCODES:
            return text, None
        for suffix in _ASYNC_SUFFIXES:
            base = text[: -len(suffix)] if text.endswith(suffix) else ""
            if base in OPCODES:
                return "async" + suffix, base
        raise self.cur.error(f"unknown opcode {text!r}", "an HLO opcode", pos)

    def _operand(self, comp: Computation, pend: list[_PendingInstruction]):
        cur = self.cur
        save = cur.pos
        if self._shape_ahead():
            self._shape()
        m = cur.peek(NAME)
        if not m:
            raise cur.error("expected an operand", "an operand name")
        after = _skip_to(cur, m.end())
        if not m.group(0).startswith("%") and cur.text.startswith("(", after):
            cur.pos = save
            return self._op_body(comp, pend, None).inst
        cur.pos = m.end()
        return _Ref(m.group(0).lstrip("%"), m.start())

    def _name_list(self) -> list[_Ref]:
        cur = self.cur
        cur.expect("{")
        out: list[_Ref] = []
        if cur.accept("}"):
            return out
        while True:
            m = cur.peek(NAME)
            if not m:
                raise cur.error("expected a name", "a name")
            cur.pos = m.end()
            out.append(_Ref(m.group(0).lstrip("%"), m.start()))
            if cur.accept("}"):
                return out
            cur.expect(",", "between names")

    def _literal(self, shape: Shape):
        cur = self.cur
        cur.skip()
        if cur.text.startswith("{...}", cur.pos):
            cur.pos += 5
            return ELIDED
        if shape.is_tuple:
            cur.expect("(", "to open a tuple literal")
            parts = []
            for i, sub in enumerate(shape.tuple_shapes):
                if i:
                    cur.expect(",", "between tuple literal elements")
                parts.append(self._literal(sub))
            cur.expect(")", "to close a tuple literal")
            return tuple(parts)
        start = cur.pos
        try:
            value, end = parse_array_literal(cur.text, start, shape)
        except LiteralError as e:
            raise cur.error(f"bad literal for {shape}: {e}", "a literal", start + e.offset) from None
        cur.pos = end
        return value

    # -- shapes --------------------------------------------------------------------------------------
    def _shape_ahead(self) -> bool:
        cur = self.cur
        c = cur.peek_char()
        return c == "(" or bool(cur.peek(_TYPE_BRACKET))

    def _shape(self) -> Shape:
        cur = self.cur
        if cur.accept("("):
            subs: list[Shape] = []
            if not cur.accept(")"):
                while True:
                    subs.append(self._shape())
                    if cur.accept(")"):
                        break
                    cur.expect(",", "between tuple shape elements")
            return Shape.tuple_of(subs)
        pos = cur.pos
        m = cur.peek(_TYPE_BRACKET)
        if not m or m.group(1) not in PRIMITIVE_TYPES:
            raise cur.error("expected a shape", "a shape such as f32[2,3]", pos)
        etype = m.group(1)
        cur.pos = m.end()
        dims: list[int] = []
        dynamic: list[bool] = []
        if not cur.accept("]"):
            while True:
                d = cur.take(_DIM, "a dimension size")
                if d == "?":
                    dims.append(-1)
                    dynamic.append(True)
                elif d.startswith("<="):
                    dims.append(int(d[2:]))
                    dynamic.append(True)
                else:
                    dims.append(int(d))
                    dynamic.append(False)
                if cur.accept("]"):
                    break
                cur.expect(",", "between dimensions")
        layout = None
        if cur.peek(_LAYOUT_START):
            layout = self._layout(len(dims))
        if etype in ("token", "opaque") and dims:
            raise cur.error(f"{etype} shapes have no dimensions", f"{etype}[]", pos)
        return Shape(etype, tuple(dims), layout, (), tuple(dynamic) if any(dynamic) else ())

    def _layout(self, rank: int) -> Layout:
        cur = self.cur
        pos = cur.pos
        cur.expect("{")
        m2m: list[int] = []
        tail = ""
        while True:
            if cur.accept("}"):
                break
            if cur.accept(":"):
                tail = cur.take(_LAYOUT_TAIL, "a layout tail").strip()
                cur.expect("}", "to close the layout")
                break
            m2m.append(int(cur.take(INT, "a dimension number")))
            if cur.peek_char() == ",":
                cur.accept(",")
        if len(m2m) != rank and (m2m or rank == 0 or not tail):
            raise cur.error(f"layout has {len(m2m)} dimensions, the shape has {rank}", f"{rank} dimensions", pos)
        if sorted(m2m) != list(range(len(m2m))):
            raise cur.error("layout must be a permutation of the dimensions", "a permutation", pos)
        return Layout(tuple(m2m), tail)

    # -- attribute values ----------------------------------------------------------------------------
    def _attr_value(self, key: str):
        cur = self.cur
        kind = kind_of(key)
        pos = cur.pos
        try:
            if kind == "int":
                return int(cur.take(INT, f"an integer for {key}"))
            if kind == "float":
                return float(cur.take(_FLOAT, f"a number for {key}"))
            if kind == "bool":
                word = cur.take(WORD, f"true or false for {key}")
                if word not in ("true", "false"):
                    raise cur.error(f"{key} must be true or false", "true or false", pos)
                return word == "true"
            if kind == "word":
                return cur.take(WORD, f"a word for {key}")
            if kind == "string":
                return cur.string()
            if kind == "ints":
                return self._int_list(key)
            if kind == "words":
                cur.expect("{", f"to open {key}")
                words: list[str] = []
                if not cur.accept("}"):
                    while True:
                        words.append(cur.take(WORD, f"a word in {key}"))
                        if cur.accept("}"):
                            break
                        cur.expect(",", f"between entries of {key}")
                return tuple(words)
            if kind == "comp":
                m = cur.peek(NAME)
                if not m:
                    raise cur.error(f"expected a computation name for {key}", "a computation name")
                cur.pos = m.end()
                return _Ref(m.group(0).lstrip("%"), m.start())
            if kind == "comps":
                return self._name_list()
            if kind == "calls":
                if cur.peek_char() == "{":
                    return self._name_list()
                return self._attr_value_comp(key)
            if kind == "window":
                return A.Window.parse(cur.raw_value())
            if kind == "dim_labels":
                return A.ConvDimensionNumbers.parse(cur.take(_DIM_LABELS, "dim_labels like b01f_01io->b01f"))
            if kind == "slice":
                return A.parse_slice(cur.raw_value())
            if kind == "padding":
                return A.parse_padding(cur.take(_PADDING, "padding like 0_1x2_3"))
            if kind == "shape":
                return self._shape()
            return cur.raw_value()
        except ValueError as e:
            raise cur.error(f"bad value for attribute {key}: {e}", f"a valid {key}", pos) from None

    def _attr_value_comp(self, key: str):
        cur = self.cur
        m = cur.peek(NAME)
        if not m:
            raise cur.error(f"expected a computation name for {key}", "a computation name")
        cur.pos = m.end()
        return _Ref(m.group(0).lstrip("%"), m.start())

    def _int_list(self, key: str, depth: int = 0):
        cur = self.cur
        if depth > 8:
            raise cur.error(f"{key} is nested too deeply", "a flat list of integers")
        cur.expect("{", f"to open {key}")
        out: list = []
        if cur.accept("}"):
            return ()
        while True:
            if cur.peek_char() == "{":
                out.append(self._int_list(key, depth + 1))
            else:
                out.append(int(cur.take(INT, f"an integer in {key}")))
            if cur.accept("}"):
                return tuple(out)
            cur.expect(",", f"between entries of {key}")

    # -- resolution ----------------------------------------------------------------------------------
    def _resolve_operands(self, comp: Computation, pend: list[_PendingInstruction],
                          names: dict[str, Instruction]) -> None:
        for p in pend:
            for op in p.operands:
                if isinstance(op, _Ref):
                    target = names.get(op.name)
                    if target is None:
                        raise self.cur.error(f"use of undefined instruction {op.name} in {comp.name}",
                                             "a defined instruction name", op.pos)
                    op = target
                p.inst._append_operand(op)
            arity = p.inst.info.arity
            if arity != VARIADIC and len(p.inst.operands) != arity:
                raise self.cur.error(f"{p.inst.opcode} takes {arity} operand(s), got {len(p.inst.operands)}",
                                     f"{arity} operand(s)", p.pos)
            for ref in p.control:
                target = names.get(ref.name)
                if target is None:
                    raise self.cur.error(f"undefined control predecessor {ref.name} in {comp.name}",
                                         "a defined instruction name", ref.pos)
                p.inst.control_predecessors.append(target)
        _check_acyclic(comp, self.cur, {id(p.inst): p.pos for p in pend})

    def _resolve_computations(self, names: dict[str, Computation], module: Module) -> None:
        def get(ref: _Ref) -> Computation:
            c = names.get(ref.name)
            if c is None:
                raise self.cur.error(f"use of undefined computation {ref.name}", "a computation name", ref.pos)
            return c
        for comp, pend in self.pending:
            for p in pend:
                for key, v in p.inst.attrs.items():
                    if isinstance(v, _Ref):
                        p.inst.attrs[key] = get(v)
                    elif isinstance(v, list) and v and isinstance(v[0], _Ref):
                        p.inst.attrs[key] = [get(r) for r in v]

    def _name_anonymous(self, module: Module) -> None:
        if not self.anonymous:
            return
        anon = {id(i) for i in self.anonymous}
        taken = {i.name for c in module.computations for i in c.instructions if id(i) not in anon}
        for inst in self.anonymous:
            base = inst.opcode
            name, n = base, 0
            while name in taken:
                n += 1
                name = f"{base}.{n}"
            taken.add(name)
            inst.name = name

    def _infer_shapes(self, pend: list[_PendingInstruction]) -> None:
        for p in pend:
            inst = p.inst
            if (inst.opcode == "broadcast" and "dimensions" not in inst.attrs and inst.operands
                    and inst.operands[0].shape is not None and inst.operands[0].shape.rank == 0
                    and not inst.operands[0].shape.is_tuple):
                inst.attrs["dimensions"] = ()
                inst._attr_order = ("dimensions",) + tuple(getattr(inst, "_attr_order", ()))
            if inst.shape is None:
                inst.shape = _infer_shape(inst, self.cur, p.pos)

    def _desugar_async(self, module: Module) -> None:
        """`X-start(ops), attrs` -> async-start(ops), calls=<computation running X with X's attrs>."""
        for comp, pend in self.pending:
            for p in pend:
                if p.wrapped is None:
                    continue
                inst = p.inst
                if inst.opcode != "async-start":
                    continue
                shape = inst.shape
                if not (shape.is_tuple and len(shape.tuple_shapes) >= 2 and shape.tuple_shapes[0].is_tuple):
                    raise self.cur.error(f"{p.wrapped}-start must have shape ((operands...), result, ...)",
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


def _skip_to(cur: Cursor, pos: int) -> int:
    save = cur.pos
    cur.pos = pos
    cur.skip()
    out = cur.pos
    cur.pos = save
    return out


def _check_acyclic(comp: Computation, cur: Cursor, where: dict[int, int]) -> None:
    state: dict[int, int] = {}
    for start in comp.instructions:
        if id(start) in state:
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


def parse(text: str) -> Module:
    """Parse HLO text into a Module. Any malformed input raises HloParseError (line:column, token, expected)."""
    if not isinstance(text, str):
        raise HloParseError(f"HLO text must be a str, got {type(text).__name__}")
    parser = Parser(text)
    try:
        return parser.module()
    except HloParseError:
        raise
    except RecursionError:
        raise parser.cur.error("the text is nested too deeply", "less nesting") from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError) as e:
        raise parser.cur.error(f"malformed HLO ({type(e).__name__}: {e})", "well-formed HLO") from None
