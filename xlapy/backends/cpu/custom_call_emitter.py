"""custom-call on the CPU backend: one table, target name -> emitter (XLA:CPU's custom-call registry).

| target | what | emitter |
|---|---|---|
| Qr | Householder QR in LAPACK's compact form (XLA's QrExpander semantics) | qr_emitter.qr (geqrf) |
| ProductOfElementaryHouseholderReflectors | Q from the compact form | qr_emitter.householder_product (orgqr/ungqr) |
| lapack_{s,d,c,z}{potrf,trsm,geqrf,orgqr/ungqr,syevd/heevd,getrf,gesdd,gtsv,geev,gees,gehrd}_ffi | JAX's CPU linear algebra | lapack_ffi_emitter.TARGETS (LAPACK calls) |
| SliceToDynamic | XLA's marker: a padded buffer and sizes as a dynamic-shaped result | a copy of the data |
| PadToStatic | the inverse: a dynamic value as (padded data, size per dimension) | the data, each dimension's bound |
| xlapy_host_callback | a Python function on the host (pure_callback) | host_callback_emitter.emit (a ctypes trampoline) |

xlapy's buffers always have the bound size (XLA's padding semantics), so the two dynamic-shape markers move no
data: a dynamic result comes back at its bound, the valid elements first. A target not in the table is an
UnimplementedError naming it.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from .buffers import ValueTree
from .irhelpers import i64
from .host_callback_emitter import TARGETS as HOST_CALLBACK_TARGETS
from .lapack_ffi_emitter import TARGETS as LAPACK_TARGETS
from .qr_emitter import householder_product, qr
from .types import store_element


def _slice_to_dynamic(em, inst: Instruction, operands: list) -> ValueTree:
    data = operands[0]
    if data.shape.dims != inst.shape.dims:
        raise UnimplementedError(f"cpu backend: custom-call {inst.name} (SliceToDynamic) from {data.shape} to "
                                 f"{inst.shape}")
    out = em.new_buffer(inst.shape, inst)
    em.copy_leaf(data, out)
    return out


def _pad_to_static(em, inst: Instruction, operands: list) -> ValueTree:
    (data,) = operands
    out = em.new_tree(inst.shape, inst)
    em.copy_leaf(data, out[0])
    for d, size in enumerate(out[1:]):
        store_element(em.b, size.pointer, size.shape.ptype, i64(0), ir.Constant(ir.IntType(32), data.shape.dims[d]))
    return out


TARGETS: dict[str, Callable[..., ValueTree]] = {
    "Qr": qr,
    "ProductOfElementaryHouseholderReflectors": householder_product,
    "SliceToDynamic": _slice_to_dynamic,
    "PadToStatic": _pad_to_static,
    **LAPACK_TARGETS,
    **HOST_CALLBACK_TARGETS,
}


def custom_call(em, inst: Instruction, operands: list) -> ValueTree:
    """HANDLERS entry for custom-call."""
    target = str(inst.attrs.get("custom_call_target", ""))
    emit = TARGETS.get(target)
    if emit is None:
        raise UnimplementedError(f"cpu backend: custom-call target {target!r} (instruction {inst.name}) is not "
                                 f"supported; supported: {', '.join(sorted(TARGETS))}")
    return emit(em, inst, operands)


__all__ = ["TARGETS", "custom_call"]
