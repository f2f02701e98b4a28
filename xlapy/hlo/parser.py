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

This file reads the structure (module, computations, instructions, operands, constants); the parts:
  parser_shapes   shapes and layouts
  parser_attrs    attribute values, by kind
  parser_resolve  after reading: names -> objects, anonymous names, omitted shapes, async sugar
  lexer           the Cursor;  literal  array literal text -> numpy
"""
from __future__ import annotations

import re

from ..errors import HloParseError
from .gc_pause import paused as gc_paused
from .ir import ELIDED, Computation, Instruction, Module
from .lexer import ATTR_NAME, INT, NAME, Cursor
from .literal import LiteralError, parse_array_literal
from .opcodes import OPCODES
from .parser_attrs import name_list, parse_attr_value
from .parser_resolve import (Pending, PendingInstruction, Ref, desugar_async, infer_shapes, name_anonymous,
                             resolve_computations, resolve_operands)
from .parser_shapes import _SEEN as _SEEN_SHAPES
from .parser_shapes import parse_shape, shape_ahead
from .shape import Shape

_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_TABLE_HEADS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_LINE = re.compile(r"[ \t]*(?:(?:FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*|\d+[ \t][^\n]*)?(?:\n|$)")
_ASYNC_SUFFIXES = ("-start", "-update", "-done")
# the common forms in one match each (anything else takes the general path, which also words the errors):
_INSTRUCTION_HEAD = re.compile(r"(ROOT[ \t]+)?(%?[A-Za-z_][\w.\-]*|%[\w.\-]+)[ \t]*=")          # `[ROOT] name =`
_OPCODE_CALL = re.compile(r"([a-z][a-z0-9\-]*)\(")                                              # `opcode(`
_ATTR_HEAD = re.compile(r"[ \t]*,[ \t]*([A-Za-z_][\w.\-]*)[ \t]*=")                             # `, key=`
_NAME_REF = re.compile(r"(%?[A-Za-z_][\w.\-]*|%[\w.\-]+)(?=[ \t]*[,)])")                        # an operand name before , or )
# `SHAPE opcode(operands)` on one line, each operand a name, with its plain array shape or none: most instructions
# of JAX's and TensorFlow's text. _op_body reads it in one match when every shape in it was read before (else, and
# for anything else, the general path, which words the errors)
_PLAIN_SHAPE = r"[a-z][a-z0-9]*\[(?:\d+(?:,\d+)*)?\](?:\{(?:\d+(?:,\d+)*)?\})?"
_OPERAND = rf"(?:{_PLAIN_SHAPE}[ \t]+)?(?:%?[A-Za-z_][\w.\-]*|%[\w.\-]+)"
_FAST_BODY = re.compile(rf"[ \t]*({_PLAIN_SHAPE})[ \t]*([a-z][a-z0-9\-]*)\([ \t]*"
                        rf"((?:{_OPERAND}(?:[ \t]*,[ \t]*{_OPERAND})*)?)[ \t]*\)")
_FAST_OPERAND = re.compile(rf"(?:({_PLAIN_SHAPE})[ \t]+)?(%?[A-Za-z_][\w.\-]*|%[\w.\-]+)")
_NOT_FAST = frozenset({"parameter", "constant"})      # their operand is a number or a literal


class Parser:
    def __init__(self, text: str):
        self.cur = Cursor(text)
        self.pending: Pending = []
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
        resolve_computations(cur, self.pending, names)
        name_anonymous(module, self.anonymous)
        for _, pend in self.pending:
            infer_shapes(cur, pend)
        desugar_async(cur, module, self.pending)
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
        pend: list[PendingInstruction] = []
        root: Instruction | None = None
        seen: dict[str, Instruction] = {}
        while not cur.accept("}"):
            if cur.at_end():
                raise cur.error(f"computation {name} is not closed", "'}'")
            pos = cur.pos
            m = _INSTRUCTION_HEAD.match(cur.text, pos)
            if m and (m.group(1) or m.group(2) != "ROOT"):
                is_root = m.group(1) is not None
                cur.pos = m.end()
                p = self._instruction(comp, pend, m.group(2).lstrip("%"))
            else:
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
        resolve_operands(cur, comp, pend, seen)
        self.pending.append((comp, pend))
        return comp, is_entry

    def _signature(self) -> None:
        """`(p: SHAPE, ...) -> SHAPE`: checked for form, not kept (the parameters carry the shapes)."""
        cur = self.cur

        def parameter() -> None:
            cur.take(NAME, "a parameter name")
            cur.expect(":", "after a parameter name")
            parse_shape(cur)
        cur.expect("(")
        cur.items(")", "between parameters", parameter)
        cur.expect("->", "after the parameter list")
        parse_shape(cur)

    # -- instructions --------------------------------------------------------------------------------
    def _instruction(self, comp: Computation, pend: list[PendingInstruction],
                     name: str | None = None) -> PendingInstruction:
        """The instruction after [ROOT]; `name`: its name and '=' are already read."""
        cur = self.cur
        if name is None:
            name = self._name("an instruction name")
            cur.expect("=", f"after instruction name {name}")
        p = self._op_body(comp, pend, name)
        inst = p.inst
        order: list[str] = []
        while True:
            m = _ATTR_HEAD.match(cur.text, cur.pos)
            if m:
                key, key_pos = m.group(1), m.start(1)
                cur.pos = m.end()
            elif cur.peek_char() == ",":
                key, key_pos = self._attr_head()
            else:
                break
            if key in order:
                raise cur.error(f"attribute {key} is given twice on {name}", "a new attribute", key_pos)
            order.append(key)
            if key == "control-predecessors":
                p.control = name_list(cur)
            else:
                inst.attrs[key] = parse_attr_value(cur, key)
        inst._attr_order = tuple(order)
        return p

    def _attr_head(self) -> tuple[str, int]:
        """`, key =` with comments or newlines between: the key and where it starts."""
        cur = self.cur
        save = cur.pos
        cur.accept(",")
        m = cur.peek(ATTR_NAME)
        if not m or not cur.text.startswith("=", cur.next_token_pos(m.end())):
            cur.pos = save
            raise cur.error("expected an attribute 'name=value'", "an attribute")
        cur.pos = m.end()
        cur.expect("=")
        return m.group(0), m.start()

    def _op_body(self, comp: Computation, pend: list[PendingInstruction], name: str | None) -> PendingInstruction:
        """[shape] opcode(operands) -- the part of an instruction after '=' (or an anonymous operand)."""
        cur = self.cur
        if name is not None:
            p = self._fast_op_body(comp, pend, name)
            if p is not None:
                return p
        shape = parse_shape(cur) if shape_ahead(cur) else None
        pos = cur.pos
        cur.skip()
        m = _OPCODE_CALL.match(cur.text, cur.pos)
        if m and m.group(1) in OPCODES:
            opcode, wrapped = m.group(1), None
            cur.pos = m.end()
        else:
            text = cur.take(_OPCODE, "an opcode")
            opcode, wrapped = self._opcode(text, pos)
            cur.expect("(", f"after opcode {text}")
        inst = Instruction(opcode, shape, name=name or "")
        p = PendingInstruction(inst, [], pos)
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
            # not cur.items: two frames a nesting level keep the depth parse() accepts where it was
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

    def _fast_op_body(self, comp: Computation, pend: list[PendingInstruction], name: str) -> PendingInstruction | None:
        """_op_body for the common form (_FAST_BODY) in one match, with what the general path would make (the same
        shapes, operand references and text positions); None when the text is not of that form."""
        cur = self.cur
        text = cur.text
        m = _FAST_BODY.match(text, cur.pos)
        if m is None or m.group(2) not in OPCODES or m.group(2) in _NOT_FAST:
            return None
        shape = _SEEN_SHAPES.get(m.group(1))
        if shape is None:
            return None
        refs = []
        for o in _FAST_OPERAND.finditer(text, m.start(3), m.end(3)):
            if o.group(1) is not None and o.group(1) not in _SEEN_SHAPES:
                return None             # an operand's shape the general path has to check
            refs.append(Ref(o.group(2).lstrip("%"), o.start(2)))
        # where the general path stands after the shape: past a layout's '}', else at the opcode (past the blanks)
        pos = m.end(1) if text[m.end(1) - 1] == "}" else m.start(2)
        inst = Instruction(m.group(2), shape, name=name)
        p = PendingInstruction(inst, refs, pos)
        cur.pos = m.end()
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

    def _operand(self, comp: Computation, pend: list[PendingInstruction]):
        cur = self.cur
        save = cur.pos
        if shape_ahead(cur):
            parse_shape(cur)
        cur.skip()
        m = _NAME_REF.match(cur.text, cur.pos)
        if m:
            cur.pos = m.end()
            return Ref(m.group(0).lstrip("%"), m.start())
        m = cur.peek(NAME)
        if not m:
            raise cur.error("expected an operand", "an operand name")
        after = cur.next_token_pos(m.end())
        if not m.group(0).startswith("%") and cur.text.startswith("(", after):
            cur.pos = save
            return self._op_body(comp, pend, None).inst
        cur.pos = m.end()
        return Ref(m.group(0).lstrip("%"), m.start())

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


def parse(text: str) -> Module:
    """Parse HLO text into a Module. Any malformed input raises HloParseError (line:column, token, expected)."""
    if not isinstance(text, str):
        raise HloParseError(f"HLO text must be a str, got {type(text).__name__}")
    parser = Parser(text)
    try:
        with gc_paused():       # (hlo/gc_pause.py: a big module's parse ran full collections of the caller's heap)
            return parser.module()
    except HloParseError:
        raise
    except RecursionError:
        raise parser.cur.error("the text is nested too deeply", "less nesting") from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError) as e:
        raise parser.cur.error(f"malformed HLO ({type(e).__name__}: {e})", "well-formed HLO") from None
