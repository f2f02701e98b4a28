"""The llvmlite objects of an emitted module freed at once, by reference counting, before the collector returns.

llvmlite's IR is cyclic (an instruction names its block, the block its function, the function its module, and
each holds the other's list), so a module of 100k objects is garbage only for Python's cyclic collector. A
compile pauses the collector while it emits (hlo/gc_pause.py), and the first collection after the pause walks
every object made meanwhile: on unet/fwd 115-150 ms of the calling thread, on the compile's critical path, just
to find them alive, and ~200 ms more later (in whatever runs next) to free them. Once the module's text is
printed nothing reads its objects again, so the compile empties them here (each instruction's, block's and
function's attributes): the acyclic rest goes by reference counting, and the collection that follows the pause
finds little left.
"""
from __future__ import annotations

from llvmlite import ir


def release(module: ir.Module) -> None:
    """Empty `module`: its functions, blocks, instructions and globals. Nothing of it may be used afterwards."""
    release_functions(module.globals.values())
    module.__dict__.clear()


def release_functions(functions) -> None:
    """Empty each function (or global) of `functions` and its blocks and instructions."""
    for g in list(functions):
        for block in getattr(g, "blocks", ()):
            for inst in block.instructions:
                inst.__dict__.clear()
            block.__dict__.clear()
        g.__dict__.clear()
