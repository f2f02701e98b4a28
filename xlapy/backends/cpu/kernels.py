"""Kernels as functions of their own: each instruction of a sequential computation that runs a loop (a fusion, a
dot, a convolution, a reduce, a sort, ...) is emitted into an LLVM function `void kernel(i8* scratch, i8*
buffer...)` that the entry (or a loop body) calls with the buffers it reads and writes, as XLA:CPU does.

Why: LLVM's optimizer and code generator cost grows faster than linearly in a function's size, and a training
step emitted as one function of hundreds of thousands of lines spent a minute in LLVM. Kernels of a few hundred
lines each keep that cost linear in the module, and structurally identical kernels (a ResNet's repeated blocks)
can share one function: a kernel reads its buffers through arguments, so the same code serves every call.

How: the instruction is emitted as usual, with the builder in a draft function whose one argument stands for the
scratch buffer; every value of the caller the code used (operand and result buffers, loaded from `params` /
`results` or offsets into the caller's scratch) becomes an argument of the final function, in order of first
use. The buffers the instruction returns are the caller's values again: an argument (the result aliases an
operand, or was preassigned), or an offset into scratch, recreated in the caller. Kernels are `noinline`:
inlining them back would undo the point.
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Callable

from llvmlite import ir

from . import kernel_replay
from .buffers import BufferRef, ValueTree
from .irhelpers import I8P, VOID, fast_names, mark_ftz
from .ir_text import function_text
from .parallel import ENCLOSING, _foreign_uses, _foreign_values, enclosing_functions
from .threadpool_ir import RUN_SYMBOL, SERIAL_BLAS_SYMBOL

# the instructions that stay inline: no loop of their own (value trees, aliases) or control flow whose
# computations' instructions become kernels themselves
INLINE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "opt-barrier",
                    "add-dependency", "while", "conditional", "call", "reshape"})
# XLAPY_OUTLINE_KERNELS=0 emits every kernel inline in its caller, as before (for comparisons)
OUTLINE = os.environ.get("XLAPY_OUTLINE_KERNELS", "1") != "0"


class KernelError(Exception):
    """A kernel whose result is a buffer the caller cannot name (an internal error of the emitter)."""


def outlined(em, inst, operands: list[ValueTree], emit: Callable[[], ValueTree]) -> ValueTree:
    """Run `emit()` (which emits `inst` over `operands` with em.b) into a kernel function and call it; returns
    inst's value in the caller's terms. An instruction structurally equal to one emitted before is not emitted:
    its recipe makes the call (kernel_replay.py). A kernel whose code equals one emitted before (KernelCache) is
    not kept: the call goes there."""
    replay = em.replay
    key = replay.key(inst, operands)
    recipe = replay.find(key, inst, operands) if key is not None else None
    if recipe is not None and kernel_replay.MODE != "check":
        return replay.replay(recipe, inst, operands)
    recording = replay.start() if key is not None else None
    try:
        value, kernel, buffers = _emit_outlined(em, inst, emit)
    finally:
        if recording is not None:
            replay.stop(recording)
    if recording is not None:
        fresh = replay.make(recording, inst, operands, kernel, buffers, value)
        if recipe is not None:
            replay.check(recipe, fresh, inst)
        elif fresh is not None:
            replay.add(key, fresh)
    return value


def _emit_outlined(em, inst, emit: Callable[[], ValueTree]) -> tuple[ValueTree, ir.Function, list[ir.Value]]:
    b = em.b
    module = b.module
    caller_block = b.block
    before = set(module.globals)
    draft = fast_names(ir.Function(module, ir.FunctionType(VOID, [I8P]), module.get_unique_name("xlapy_kernel.draft")))
    draft.args[0].name = "scratch"
    setattr(draft, ENCLOSING, b.function)       # its code may use the caller's values: they become arguments
    b.position_at_end(draft.append_basic_block("entry"))
    saved_scratch, em.scratch_arg = em.scratch_arg, draft.args[0]
    try:
        value = emit()          # under the caller's FTZ/DAZ (the entry's): no MXCSR of its own (scalar_ops.ieee_call)
        b.ret_void()
    finally:
        em.scratch_arg = saved_scratch
        b.position_at_end(caller_block)
    hoisted = _hoist_scratch_offsets(em, draft)
    foreign, users = _foreign_values(draft, also=hoisted)
    buffers = [hoisted[key] if key in hoisted else v for key, v in foreign.items()]
    kernel = _finish(module, draft, list(foreign), buffers, users, inst.name)
    kernel = em.kernel_cache.share(kernel, set(module.globals) - before)
    em.kernel_cache.called(kernel, b.call(kernel, buffers))
    return _in_caller(em, value, hoisted), kernel, buffers


def _hoist_scratch_offsets(em, draft: ir.Function) -> dict[int, ir.Value]:
    """Every buffer the draft addresses as scratch + offset is addressed in the caller and passed in instead, so
    the kernel is independent of where its buffers sit (and two equal kernels are one). Takes those geps out of
    the draft; returns draft gep -> caller gep (by id)."""
    scratch = draft.args[0]
    by_offset: dict[int, ir.Value] = {}
    hoisted: dict[int, ir.Value] = {}
    for block in draft.blocks:
        keep = []
        for inst in block.instructions:
            if isinstance(inst, ir.GEPInstr) and inst.pointer is scratch:
                (index,) = inst.indices
                offset = index.constant
                mine = by_offset.get(offset)
                if mine is None:
                    mine = by_offset[offset] = em.b.gep(em.scratch_arg, [index], inbounds=True)
                em.assignment.alias_pointer(mine, inst, offset)
                hoisted[id(inst)] = mine
            else:
                keep.append(inst)
        block.instructions = keep
    return hoisted


KERNEL_PREFIX = "xlapy_kernel."          # a kernel's symbol: the prefix and its instruction's name (opt_levels.py)
GENERIC_PREFIX = "xlapy_shared."         # a generic kernel's (kernel_generic.py): the prefix and a member's stem


def kernel_stem(label: str) -> str:
    """The symbol of the kernel of instruction `label` (llvmlite may append `.N` to make it unique)."""
    return KERNEL_PREFIX + re.sub(r"[^A-Za-z0-9_.]", "_", label)


def _finish(module: ir.Module, draft: ir.Function, keys: list[int], buffers: list[ir.Value], users: list,
            label: str) -> ir.Function:
    """The final kernel: draft's blocks under a function of the buffers it uses (`keys`: the ids of the values
    that stand for them in the draft; `users`: the draft instructions that use those). Its arguments are
    `noalias`: distinct buffers (a scratch slice, a parameter, a result) never overlap where a kernel writes: the
    buffer assignment lets an instruction write into an operand's buffer only when no other operand reads it
    (aliasing.can_overwrite), and two parameters that are one array are only read."""
    name = module.get_unique_name(kernel_stem(label))
    kernel = ir.Function(module, ir.FunctionType(VOID, [v.type for v in buffers]), name)
    kernel.linkage = "internal"
    kernel.attributes.add("nounwind")
    kernel.attributes.add("noinline")
    mark_ftz(kernel)
    kernel.scope = draft.scope              # the blocks' names live there; the arguments join them
    for k, arg in enumerate(kernel.args):
        arg.name = f"kernel.buffer{k}"
        arg.add_attribute("noalias")
    for block in draft.blocks:
        block.parent = kernel
    kernel.blocks, draft.blocks = draft.blocks, []
    rename = dict(zip(keys, kernel.args))
    _foreign_uses(kernel, lambda v: rename.get(id(v), v), users)
    del module.globals[draft.name]
    draft.__dict__.clear()                  # its cycles (arguments <-> function) freed now (ir_release.py)
    if _launch_only(kernel):
        kernel.attributes.add("optnone")
    return kernel


# What a kernel that only hands its loops to the thread pool is made of (parallel._emit_launch: the captures and
# task records stored, xlapy_pool_run called). Such code runs once per call, so LLVM need not optimize it:
# `optnone` skips the O3 pipeline and selects instructions fast (a launch kernel cost ~3 ms of LLVM time, O3
# had nothing to do in it), as it does for the pool workers that only call their loop's body (parallel.py).
_LAUNCH_OPS = frozenset({"alloca", "insertvalue", "store", "getelementptr", "bitcast", "load", "call", "ret void"})
_LAUNCH_CALLS = frozenset({RUN_SYMBOL, SERIAL_BLAS_SYMBOL})     # the pool, and the BLAS's threads around it


def _launch_only(kernel: ir.Function) -> bool:
    if len(kernel.blocks) != 1:
        return False
    launches = 0
    for inst in kernel.blocks[0].instructions:
        if inst.opname not in _LAUNCH_OPS:
            return False
        if inst.opname == "call":
            callee = getattr(inst.callee, "name", None)
            if callee not in _LAUNCH_CALLS:
                return False
            launches += callee == RUN_SYMBOL
    return launches > 0


def _in_caller(em, value: ValueTree, hoisted: dict[int, ir.Value]) -> ValueTree:
    """inst's value tree with each buffer pointer as the caller sees it: a caller value the kernel was given, or
    the caller's address of a scratch slice the kernel wrote."""
    if isinstance(value, tuple):          # recursion by name, not by a nested function: no cycle per kernel
        return tuple(_in_caller(em, v, hoisted) for v in value)
    if value is None:
        return None
    p = value.pointer
    p = hoisted.get(id(p), p)
    if isinstance(p, ir.Instruction) and p.function is not em.b.function and not _enclosing(em.b.function, p):
        raise KernelError(f"a kernel returns a buffer its caller cannot name: {p}")
    return BufferRef(p, value.shape)


def _enclosing(fn: ir.Function, value: ir.Instruction) -> bool:
    return id(value.function) in enclosing_functions(fn)


class KernelCache:
    """One function per distinct kernel of a module. Kernels are compared by their text, with references to the
    module's other definitions (thread-pool workers, their bound tables, constants) compared by those
    definitions' own text, recursively: two kernels are equal when they would compile to the same machine code
    for any buffers. Local names are compared as printed: each function numbers and deduplicates its own names
    (a fresh llvmlite scope per draft, kernels.py, and per worker, parallel.py), and emitters name values by
    role, never by HLO name, so structurally equal emissions print the same names. (Renumbering them by a regex
    pass cost a tenth of emission; a kernel equal up to its names only would be kept twice, never merged
    wrongly.)"""

    _GLOBAL = re.compile(r'@(?:"((?:[^"\\]|\\.)*)"|([-a-zA-Z$._0-9]+))')

    def __init__(self, module: ir.Module):
        self.module = module
        self.by_key: dict[str, ir.Function] = {}
        self._keys: dict[str, str] = {}
        self.shared = 0              # kernels that reused an earlier one
        self.printed: dict[str, str] = {}    # name -> llvmlite's text of a function as `key` printed it
        self.dropped: list[ir.Function] = []  # the duplicates and their workers, out of the module (ir_release.py)
        self.calls: dict[str, list] = {}     # kernel name -> the call instructions made of it (kernel_generic.py)

    def share(self, kernel: ir.Function, new_symbols: set[str]) -> ir.Function:
        """The kernel to call: an equal one emitted before (this one and the workers it made are dropped), or
        this one."""
        key = self.key(kernel.name)
        first = self.by_key.setdefault(key, kernel)
        if first is kernel:
            return kernel
        for name in new_symbols:
            g = self.module.globals.get(name)
            if g is kernel or name.startswith("xlapy_task"):
                self.dropped.append(g)
                del self.module.globals[name]
                self.printed.pop(name, None)
        self.shared += 1
        return first

    def called(self, kernel: ir.Function, call: ir.CallInstr) -> None:
        """Note a call of `kernel` (kernels are called only so: kernel_generic.py redirects them)."""
        self.calls.setdefault(kernel.name, []).append(call)

    def key(self, name: str) -> str:
        """A digest of the definition of `name`, independent of the names of it and of what it refers to."""
        hit = self._keys.get(name)
        if hit is not None:
            return hit
        g = self.module.globals[name]
        if isinstance(g, ir.Function) and not g.blocks or isinstance(g, ir.GlobalVariable) and g.initializer is None:
            digest = "@" + name             # a declaration: its name is what it is
        elif isinstance(g, ir.GlobalVariable) and isinstance(getattr(g.initializer, "constant", None), bytearray):
            digest = "bytes:" + hashlib.sha1(g.initializer.constant).hexdigest()   # a constant's data (emitter.py)
        else:
            digest = hashlib.sha1(self._canonical_text(g).encode()).hexdigest()
        self._keys[name] = digest
        return digest

    def _canonical_text(self, g) -> str:
        text = self.printed[g.name] = function_text(g) if isinstance(g, ir.Function) else str(g)

        def global_ref(m: re.Match) -> str:
            ref = m.group(1) if m.group(1) is not None else m.group(2)
            if ref == g.name:
                return "@SELF"
            return "@" + self.key(ref) if ref in self.module.globals else m.group(0)
        return self._GLOBAL.sub(global_ref, text)
