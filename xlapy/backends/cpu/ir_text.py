"""A function's LLVM text, as llvmlite prints it, in half the time.

Every kernel is printed once while the module is emitted (KernelCache keys kernels by their text, and
llvm_parallel compiles that text), and printing was a third of emission: llvmlite formats each instruction
through several layers of `format` calls. `function_text(fn)` prints the common instructions with one f-string
each and leaves the rest (calls with attributes, aggregates, atomics, anything with metadata) to llvmlite, so
the text is llvmlite's own, character for character (tests/backends/cpu/test_folding_builder.py compares them on
a real model's kernels). Each instruction's text is also left in llvmlite's per-instruction cache, so printing
the module later (`str(module)`) reuses it as it would have reused llvmlite's.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as li

_CACHE = "_StrCaching__cached_str"      # llvmlite's per-instruction text cache (ir/_utils.py _StrCaching)


def _flagged(inst) -> str:
    return inst.opname if not inst.flags else " ".join([inst.opname] + inst.flags)


def _plain(inst) -> str:                    # binary ops and the like: `add nsw i64 %a, %b`
    return f"{_flagged(inst)} {inst.type} {', '.join([op.get_reference() for op in inst.operands])}"


def _cast(inst) -> str:
    op = inst.operands[0]
    return f"{inst.opname} {op.type} {op.get_reference()} to {inst.type}"


def _align(inst) -> str:
    return "" if inst.align is None else f", align {inst.align}"


def _load(inst) -> str:
    p = inst.operands[0]
    return f"load {inst.type}, {p.type} {p.get_reference()}{_align(inst)}"


def _store(inst) -> str:
    v, p = inst.operands
    return f"store {v.type} {v.get_reference()}, {p.type} {p.get_reference()}{_align(inst)}"


def _gep(inst) -> str:
    op = "getelementptr inbounds" if inst.inbounds else "getelementptr"
    indices = ", ".join([f"{i.type} {i.get_reference()}" for i in inst.indices])
    p = inst.pointer
    return f"{op} {inst.source_etype}, {p.type} {p.get_reference()}, {indices}"


def _phi(inst) -> str:
    incoming = ", ".join([f"[{v.get_reference()}, {b.get_reference()}]" for v, b in inst.incomings])
    return f"phi {' '.join(inst.flags)} {inst.type} {incoming}"


def _branch(inst) -> str:
    return f"{inst.opname} {', '.join([f'{op.type} {op.get_reference()}' for op in inst.operands])}"


def _ret(inst) -> str:
    if not inst.operands:
        return inst.opname
    v = inst.operands[0]
    return f"{inst.opname} {v.type} {v.get_reference()}"


def _select(inst) -> str:
    c, a, b = inst.operands
    return (f"select {' '.join(inst.flags)} {c.type} {c.get_reference()}, {a.type} {a.get_reference()}, "
            f"{b.type} {b.get_reference()}")


def _compare(inst) -> str:
    a, b = inst.operands
    flags = "".join([" " + f for f in inst.flags])
    return f"{inst.opname}{flags} {inst.op} {a.type} {a.get_reference()}, {b.get_reference()}"


def _typed_operands(inst) -> str:         # extractelement, insertelement, shufflevector
    return f"{inst.opname} {', '.join([f'{op.type} {op.get_reference()}' for op in inst.operands])}"


def _alloca(inst) -> str:
    count = "".join([f", {op.type} {op.get_reference()}" for op in inst.operands])
    return f"alloca {inst.allocated_type}{count}{_align(inst)}"


def _call(inst) -> str | None:
    """A plain call (no attributes, calling convention, tail marker, fast-math flags or varargs); else None."""
    fnty = inst.callee.function_type
    if inst.arg_attributes or inst.attributes or inst.fastmath or inst.cconv or inst.tail or fnty.var_arg:
        return None
    args = ", ".join([f"{a.type} {a.get_reference()}" for a in inst.args])
    return f"call {fnty.return_type} {inst.callee.get_reference()}({args})"


# exact instruction class -> its text without the result name; llvmlite's descr() for each, less the metadata
# (an instruction with metadata goes to llvmlite)
RULES = {li.Instruction: _plain, li.CastInstr: _cast, li.LoadInstr: _load, li.StoreInstr: _store,
         li.GEPInstr: _gep, li.PhiInstr: _phi, li.Branch: _branch, li.ConditionalBranch: _branch, li.Ret: _ret,
         li.SelectInstr: _select, li.ICMPInstr: _compare, li.FCMPInstr: _compare, li.CallInstr: _call,
         li.ExtractElement: _typed_operands, li.InsertElement: _typed_operands, li.ShuffleVector: _typed_operands,
         li.AllocaInstr: _alloca}


def instruction_text(inst: ir.Instruction) -> str:
    """str(inst), computed once (llvmlite's cache is read and filled)."""
    text = inst.__dict__.get(_CACHE)
    if text is not None:
        return text
    rule = RULES.get(type(inst))
    text = rule(inst) if rule is not None and not inst.metadata else None
    if text is None:
        return str(inst)
    if type(inst.type) is not ir.VoidType:
        text = f"{inst.get_reference()} = {text}"
    text = text.rstrip()
    inst.__dict__[_CACHE] = text
    return text


def function_text(fn: ir.Function) -> str:
    """str(fn)."""
    if not fn.blocks:
        return str(fn)
    buf: list[str] = []
    fn.descr_prototype(buf)
    buf.append("{\n")
    for block in fn.blocks:
        buf.append(f"{block._format_name()}:\n")
        buf += [f"  {instruction_text(i)}\n" for i in block.instructions]
    buf.append("}\n")
    return "".join(buf)
