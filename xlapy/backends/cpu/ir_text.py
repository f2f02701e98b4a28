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
from llvmlite.ir import _utils
from llvmlite.ir import instructions as li

_CACHE = "_StrCaching__cached_str"      # llvmlite's per-instruction text cache (ir/_utils.py _StrCaching)
_REF = "_StringReferenceCaching__cached_refstr"     # llvmlite's cached reference (`%"x"`, `i64 3`'s `3`)
# Values and types keep their text in their __dict__ once llvmlite computed it; reading it there is a dict
# lookup where get_reference() / str() are Python calls (a third of this module's time). `x or f()` is safe:
# neither text is ever empty.


# llvmlite fills its caches in `try: return self.__cached except AttributeError:`, and each miss raises an
# AttributeError with a formatted message (2% of emission's machine instructions): a miss here computes the text
# and fills llvmlite's cache directly, for the classes that use llvmlite's caching methods unchanged.
_STR_CACHING = _utils._StrCaching.__str__
_REF_CACHING = _utils._StringReferenceCaching.get_reference


def _r(v) -> str:
    ref = v.__dict__.get(_REF)
    if ref is None:
        if type(v).get_reference is _REF_CACHING:
            ref = v.__dict__[_REF] = v._get_reference()
        else:
            ref = v.get_reference()
    return ref


def _t(ty) -> str:
    text = ty.__dict__.get(_CACHE)
    if text is None:
        if type(ty).__str__ is _STR_CACHING:
            text = ty.__dict__[_CACHE] = ty._to_string()
        else:
            text = str(ty)
    return text


def _typed(v) -> str:
    return f"{_t(v.type)} {_r(v)}"


def _flagged(inst) -> str:
    return inst.opname if not inst.flags else " ".join([inst.opname] + inst.flags)


def _plain(inst) -> str:                    # binary ops and the like: `add nsw i64 %a, %b`
    operands = ", ".join([_r(v) for v in inst.operands])
    return f"{_flagged(inst)} {_t(inst.type)} {operands}"


def _cast(inst) -> str:
    return f"{inst.opname} {_typed(inst.operands[0])} to {_t(inst.type)}"


def _align(inst) -> str:
    return "" if inst.align is None else f", align {inst.align}"


def _load(inst) -> str:
    return f"load {_t(inst.type)}, {_typed(inst.operands[0])}{_align(inst)}"


def _store(inst) -> str:
    v, p = inst.operands
    return f"store {_typed(v)}, {_typed(p)}{_align(inst)}"


def _gep(inst) -> str:
    op = "getelementptr inbounds" if inst.inbounds else "getelementptr"
    indices = ", ".join([_typed(i) for i in inst.indices])
    return f"{op} {_t(inst.source_etype)}, {_typed(inst.pointer)}, {indices}"


def _phi(inst) -> str:
    incoming = ", ".join([f"[{_r(v)}, {_r(b)}]" for v, b in inst.incomings])
    return f"phi {' '.join(inst.flags)} {_t(inst.type)} {incoming}"


def _branch(inst) -> str:
    return f"{inst.opname} {', '.join([_typed(op) for op in inst.operands])}"


def _ret(inst) -> str:
    if not inst.operands:
        return inst.opname
    return f"{inst.opname} {_typed(inst.operands[0])}"


def _select(inst) -> str:
    c, a, b = inst.operands
    return f"select {' '.join(inst.flags)} {_typed(c)}, {_typed(a)}, {_typed(b)}"


def _compare(inst) -> str:
    a, b = inst.operands
    flags = "".join([" " + f for f in inst.flags])
    return f"{inst.opname}{flags} {inst.op} {_typed(a)}, {_r(b)}"


def _typed_operands(inst) -> str:         # extractelement, insertelement, shufflevector
    return f"{inst.opname} {', '.join([_typed(op) for op in inst.operands])}"


def _alloca(inst) -> str:
    count = "".join([f", {_typed(op)}" for op in inst.operands])
    return f"alloca {_t(inst.allocated_type)}{count}{_align(inst)}"


def _call(inst) -> str | None:
    """A plain call (no attributes, calling convention, tail marker, fast-math flags or varargs); else None."""
    fnty = inst.callee.function_type
    if inst.arg_attributes or inst.attributes or inst.fastmath or inst.cconv or inst.tail or fnty.var_arg:
        return None
    args = ", ".join([_typed(a) for a in inst.args])
    return f"call {_t(fnty.return_type)} {_r(inst.callee)}({args})"


def _extract_value(inst) -> str:
    agg = inst.aggregate
    return f"extractvalue {_typed(agg)}, {', '.join([str(i) for i in inst.indices])}"


def _insert_value(inst) -> str:
    return (f"insertvalue {_typed(inst.aggregate)}, {_typed(inst.value)}, "
            f"{', '.join([str(i) for i in inst.indices])}")


# exact instruction class -> its text without the result name; llvmlite's descr() for each, less the metadata
# (an instruction with metadata goes to llvmlite)
RULES = {li.Instruction: _plain, li.CastInstr: _cast, li.LoadInstr: _load, li.StoreInstr: _store,
         li.GEPInstr: _gep, li.PhiInstr: _phi, li.Branch: _branch, li.ConditionalBranch: _branch, li.Ret: _ret,
         li.SelectInstr: _select, li.ICMPInstr: _compare, li.FCMPInstr: _compare, li.CallInstr: _call,
         li.ExtractElement: _typed_operands, li.InsertElement: _typed_operands, li.ShuffleVector: _typed_operands,
         li.AllocaInstr: _alloca, li.ExtractValue: _extract_value, li.InsertValue: _insert_value}


def instruction_text(inst: ir.Instruction) -> str:
    """str(inst), computed once (llvmlite's cache is read and filled)."""
    d = inst.__dict__
    text = d.get(_CACHE)
    if text is not None:
        return text
    rule = RULES.get(type(inst))
    text = rule(inst) if rule is not None and not d.get("metadata") else None
    if text is None:                        # llvmlite's own text, cached where its __str__ caches it
        if type(inst).__str__ is _STR_CACHING:
            if type(inst.type) is not _VOID:
                _r(inst)                    # its reference cached first (llvmlite's would raise to find it missing)
            text = d[_CACHE] = inst._to_string()
            return text
        return str(inst)
    if type(inst.type) is not _VOID:
        ref = d.get(_REF)
        if ref is None:
            name = d["_name"]
            if "\\" in name or '"' in name:
                ref = inst.get_reference()
            else:           # llvmlite's NamedValue._get_reference for an instruction, cached where it caches it
                ref = d[_REF] = f'%"{name}"'
        text = f"{ref} = {text}"
    text = text.rstrip()
    d[_CACHE] = text
    return text


_VOID = ir.VoidType


def _attributes(attrs, ty) -> str | None:
    """An argument's or return value's attribute text (llvmlite's _to_list), None when it has none."""
    d = attrs.__dict__
    if not attrs and not d["_align"] and not d["_dereferenceable"] and not d["_dereferenceable_or_null"]:
        return None
    return " ".join(attrs._to_list(ty))


def _argument(a) -> str:                     # llvmlite's Argument.__str__
    attrs = _attributes(a.attributes, a.type)
    return f"{_t(a.type)} {_r(a)}" if attrs is None else f"{_t(a.type)} {attrs} {_r(a)}"


def prototype_text(fn: ir.Function) -> str:
    """The first line of str(fn) (llvmlite's descr_prototype), with its newline."""
    ftype = fn.ftype
    if fn.metadata or fn.section or fn.calling_convention or ftype.var_arg:
        buf: list[str] = []
        fn.descr_prototype(buf)
        return buf[0]
    rv = fn.return_value
    attrs = _attributes(rv.attributes, rv.type)
    ret = _t(rv.type) if attrs is None else f"{attrs} {_t(rv.type)}"
    fattrs = " " + " ".join(fn.attributes._to_list(ftype.return_type)) if fn.attributes else ""
    prefix = " ".join([x for x in ("define" if fn.blocks else "declare", fn.linkage, ret) if x])
    return f"{prefix} {_r(fn)}({', '.join([_argument(a) for a in fn.args])}){fattrs}\n"


def function_text(fn: ir.Function) -> str:
    """str(fn)."""
    if not fn.blocks:
        return prototype_text(fn)           # a declaration
    buf: list[str] = [prototype_text(fn)]
    buf.append("{\n")
    for block in fn.blocks:
        buf.append(f"{block._format_name()}:\n")
        buf += [f"  {instruction_text(i)}\n" for i in block.instructions]
    buf.append("}\n")
    return "".join(buf)
