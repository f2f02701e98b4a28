"""JAX's CPU linear-algebra custom-calls (`lapack_<t><routine>_ffi`) on the CPU backend, as LAPACK calls into the
BLAS provider's library (lapack.py). The definitions are the interpreter's (backends/interpreter/lapack_targets.py).

| routine | LAPACK call per batch element |
|---|---|
| potrf | xPOTRF(uplo, n, a, n, info) |
| trsm | xTRSM(side, uplo, trans, diag, m, n, 1, a, lda, b, m) |
| geqrf, orgqr/ungqr | qr_emitter (geqrf, orgqr/ungqr): the `Qr` target's code |
| syevd/heevd | xSYEVD / xHEEVD(jobz, uplo, n, a, n, w, work, lwork, [rwork, lrwork,] iwork, liwork, info) |
| getrf | xGETRF(m, n, a, m, ipiv, info) |
| gesdd | xGESDD(jobz, m, n, a, m, s, u, m, vt, ldvt, work, lwork, [rwork,] iwork, info) |
| gtsv | xGTSV(n, nrhs, dl + 1, d, du, b, n, info) |
| gees, gehrd | lapack_schur_emitter.py |
| geev | xGEEV(jobvl, jobvr, n, a, n, wr, wi, vl, n, vr, n, work, lwork, info) (real: the packed conjugate pairs are unpacked into the complex results), complex: w, vl, vr, rwork |

Every matrix is copied into a column-major work matrix of its batch element (LAPACK's order; the logical
matrix, whatever the buffer's layout) and copied back into the result; vectors and LAPACK's integers
(ipiv, info) likewise. Workspace sizes are LAPACK's documented minimums plus a block margin, fixed at compile
time (no workspace queries). Without a BLAS provider with LAPACK (XLAPY_BLAS=none) each target is an
UnimplementedError naming it; the interpreter runs them.
"""
from __future__ import annotations

import math
import re

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from . import lapack
from .buffers import BufferRef
from .indexing import linear_index, row_major_linear
from .irhelpers import I32, for_range, i64, loop_nest
from .linalg_emitter import lapack_threads, scratch_buffer
from .linalg_loops import Field
from .qr_emitter import householder_product, qr
from .types import load_element, store_element

DTYPES = {"s": "f32", "d": "f64", "c": "c64", "z": "c128"}
REAL_OF = {"f32": "f32", "f64": "f64", "c64": "f32", "c128": "f64"}
BLOCK = 64


def _config(inst: Instruction) -> dict[str, str]:
    text = str(inst.attrs.get("backend_config", "") or "")
    return {k: chr(int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)\s*:\s*ui8", text)}


def _target(inst: Instruction) -> str:
    return str(inst.attrs.get("custom_call_target"))


def _setup(inst: Instruction, routine: str) -> tuple[str, lapack.LapackFunction]:
    """(compute type, the routine) for a `lapack_<t><routine>_ffi` target; the operand types must be t's."""
    letter = _target(inst)[len("lapack_")]
    cpt = DTYPES[letter]
    first = inst.operands[0].shape.element_type
    if first != cpt and routine != "gtsv":
        raise UnimplementedError(f"cpu backend: custom-call {inst.name} ({_target(inst)}) on {first}")
    fn = lapack.lapack_function(routine, cpt)
    if fn is None:
        raise UnimplementedError(f"cpu backend: custom-call {inst.name} ({_target(inst)}) needs LAPACK's "
                                 f"{routine}, and no BLAS provider with it is in use (XLAPY_BLAS)")
    return cpt, fn


# -- staging: column-major matrices, contiguous vectors, LAPACK integers ------------------------------------
def _col_offset(b: ir.IRBuilder, index: list, dims: tuple) -> ir.Value:
    m, n = dims[-2:]
    batch = i64(0)
    for i, d in zip(index[:-2], dims[:-2]):
        batch = b.add(b.mul(batch, i64(d)), i)
    return b.add(b.mul(batch, i64(m * n)), b.add(b.mul(index[-1], i64(m)), index[-2]))


def _offset(b, index, dims, matrix: bool):
    return _col_offset(b, index, dims) if matrix else row_major_linear(b, index, dims)


def stage_in(em, src: BufferRef, cpt: str, matrix: bool = True) -> ir.Value:
    """A fresh work buffer of compute type cpt holding src (matrices column-major per batch element)."""
    f = Field(em.b, cpt)
    work = scratch_buffer(em, cpt, src.shape.numel)
    b = em.b
    with loop_nest(b, list(src.shape.dims), "ffi.in") as index:
        value = load_element(b, src.pointer, src.shape.ptype, linear_index(b, index, src.shape))
        f.store(work, _offset(b, index, src.shape.dims, matrix), value)
    return work


def stage_out(em, work: ir.Value, out: BufferRef, cpt: str, matrix: bool = True) -> None:
    f = Field(em.b, cpt)
    b = em.b
    with loop_nest(b, list(out.shape.dims), "ffi.out") as index:
        value = f.load(work, _offset(b, index, out.shape.dims, matrix))
        store_element(b, out.pointer, out.shape.ptype, linear_index(b, index, out.shape), value)


def int_buffer(em, fn: lapack.LapackFunction, count: int) -> ir.Value:
    return em.b.gep(em.scratch_arg, [i64(em.scratch.allocate(max(count, 1) * fn.int_bits // 8))], inbounds=True)


def int_pointer(em, fn: lapack.LapackFunction, base: ir.Value, offset: ir.Value) -> ir.Value:
    b = em.b
    return b.gep(b.bitcast(base, fn.int_type.as_pointer()), [offset], inbounds=True)


def ints_out(em, fn: lapack.LapackFunction, work: ir.Value, out: BufferRef) -> None:
    """LAPACK integers (row-major per batch element) into an s32 result."""
    b = em.b
    with loop_nest(b, list(out.shape.dims), "ffi.int") as index:
        value = b.load(int_pointer(em, fn, work, row_major_linear(b, index, out.shape.dims)))
        value = b.trunc(value, I32) if fn.int_bits > 32 else value
        store_element(b, out.pointer, out.shape.ptype, linear_index(b, index, out.shape), value)


def _batch(dims: tuple, minor: int = 2) -> int:
    return math.prod(dims[:-minor]) if len(dims) >= minor else 1


class _Call:
    """Per-batch-element pointers into work buffers and LAPACK scalar arguments."""

    def __init__(self, em, fn: lapack.LapackFunction, cpt: str):
        self.em, self.fn, self.cpt, self.b = em, fn, cpt, em.b
        self.f = Field(em.b, cpt)
        self.r = Field(em.b, REAL_OF[cpt])

    def at(self, base: ir.Value, bi: ir.Value, size: int, real: bool = False) -> ir.Value:
        return (self.r if real else self.f).pointer(base, self.b.mul(bi, i64(size)))

    def int_at(self, base: ir.Value, bi: ir.Value, size: int) -> ir.Value:
        return int_pointer(self.em, self.fn, base, self.b.mul(bi, i64(size)))

    def n(self, value) -> ir.Value:
        return lapack.integer(self.b, self.fn, value)

    def c(self, letter: str) -> ir.Value:
        return lapack.char(self.b, letter)

    def call(self, args: list) -> None:
        lapack.call(self.b, self.fn, args)


# -- the targets ----------------------------------------------------------------------------------------------
def potrf(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "potrf")
    out, info_out = em.new_tree(inst.shape, inst)
    n = a.shape.dims[-1]
    batch = _batch(a.shape.dims)
    work = stage_in(em, a, cpt)
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    uplo = _config(inst).get("uplo", "L")
    if n:
        with lapack_threads(em, batch * n ** 3 // 3), for_range(em.b, batch, "potrf.batch") as bi:
            k.call([k.c(uplo), k.n(n), k.at(work, bi, n * n), k.n(n), k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    stage_out(em, work, out, cpt)
    ints_out(em, fn, info, info_out)
    return out, info_out


def _zero_ints(em, fn, base, count):
    with for_range(em.b, count, "ffi.zero") as i:
        em.b.store(ir.Constant(fn.int_type, 0), int_pointer(em, fn, base, i))


def trsm(em, inst: Instruction, operands: list) -> BufferRef:
    a, rhs = operands
    cpt, fn = _setup(inst, "trsm")
    out = em.new_buffer(inst.shape, inst)
    if out.shape.numel == 0:
        return out
    c = _config(inst)
    rows, cols = rhs.shape.dims[-2:]
    ma = a.shape.dims[-1]
    batch = _batch(rhs.shape.dims)
    ta, x = stage_in(em, a, cpt), stage_in(em, rhs, cpt)
    k = _Call(em, fn, cpt)
    one = lapack.ref(em.b, k.f.elem, k.f.constant(1.0))
    with lapack_threads(em, batch * ma * ma * (cols if c.get("side", "L") == "L" else rows)), \
            for_range(em.b, batch, "trsm.batch") as bi:
        k.call([k.c(c.get("side", "L")), k.c(c.get("uplo", "L")), k.c(c.get("trans_x", "N")),
                k.c(c.get("diag", "N")), k.n(rows), k.n(cols), one, k.at(ta, bi, ma * ma), k.n(max(ma, 1)),
                k.at(x, bi, rows * cols), k.n(max(rows, 1))])
    stage_out(em, x, out, cpt)
    return out


def syevd(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "syevd")
    v_out, w_out, info_out = em.new_tree(inst.shape, inst)
    n = a.shape.dims[-1]
    batch = _batch(a.shape.dims)
    c = _config(inst)
    work_a = stage_in(em, a, cpt)
    w = scratch_buffer(em, REAL_OF[cpt], batch * n)
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    if n:
        complex_ = cpt in ("c64", "c128")
        lwork = (2 * n + n * n if complex_ else 1 + 6 * n + 2 * n * n) + BLOCK * n
        lrwork = 1 + 5 * n + 2 * n * n
        liwork = 3 + 5 * n
        work = scratch_buffer(em, cpt, lwork)
        rwork = scratch_buffer(em, REAL_OF[cpt], lrwork) if complex_ else None
        iwork = int_buffer(em, fn, liwork)
        with lapack_threads(em, batch * 9 * n ** 3), for_range(em.b, batch, "syevd.batch") as bi:
            args = [k.c(c.get("mode", "V")), k.c(c.get("uplo", "L")), k.n(n), k.at(work_a, bi, n * n), k.n(n),
                    k.at(w, bi, n, real=True), work, k.n(lwork)]
            if complex_:
                args += [rwork, k.n(lrwork)]
            k.call(args + [iwork, k.n(liwork), k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    stage_out(em, work_a, v_out, cpt)
    stage_out(em, w, w_out, REAL_OF[cpt], matrix=False)
    ints_out(em, fn, info, info_out)
    return v_out, w_out, info_out


def getrf(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "getrf")
    lu_out, piv_out, info_out = em.new_tree(inst.shape, inst)
    m, n = a.shape.dims[-2:]
    kk = min(m, n)
    batch = _batch(a.shape.dims)
    work = stage_in(em, a, cpt)
    piv = int_buffer(em, fn, batch * kk)
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    if kk:
        with lapack_threads(em, batch * m * n * kk), for_range(em.b, batch, "getrf.batch") as bi:
            k.call([k.n(m), k.n(n), k.at(work, bi, m * n), k.n(m), k.int_at(piv, bi, kk), k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    stage_out(em, work, lu_out, cpt)
    ints_out(em, fn, piv, piv_out)
    ints_out(em, fn, info, info_out)
    return lu_out, piv_out, info_out


def gesdd(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "gesdd")
    a_out, s_out, u_out, vt_out, info_out = em.new_tree(inst.shape, inst)
    mode = _config(inst).get("mode", "A")
    m, n = a.shape.dims[-2:]
    mn, mx = min(m, n), max(m, n)
    batch = _batch(a.shape.dims)
    um, uc = u_out.shape.dims[-2:]
    vr, vc = vt_out.shape.dims[-2:]
    work_a = stage_in(em, a, cpt)
    s = scratch_buffer(em, REAL_OF[cpt], batch * mn)
    u = scratch_buffer(em, cpt, batch * um * uc)
    vt = scratch_buffer(em, cpt, batch * vr * vc)
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    complex_ = cpt in ("c64", "c128")
    if mn:
        if complex_:
            lwork = (2 * mn + mx if mode == "N" else mn * mn + 2 * mn + mx) + BLOCK * (m + n)
            lrwork = 7 * mn if mode == "N" else mn * max(5 * mn + 7, 2 * mx + 2 * mn + 1)
        else:
            lwork = 3 * mn + max(mx, 4 * mn * mn + 4 * mn if mode != "N" else 7 * mn) + BLOCK * (m + n)
            lrwork = 0
        work = scratch_buffer(em, cpt, lwork)
        rwork = scratch_buffer(em, REAL_OF[cpt], lrwork) if complex_ else None
        iwork = int_buffer(em, fn, 8 * mn)
        ldvt = max(vr, 1)
        with lapack_threads(em, batch * 4 * m * n * mn), for_range(em.b, batch, "gesdd.batch") as bi:
            args = [k.c(mode), k.n(m), k.n(n), k.at(work_a, bi, m * n), k.n(m), k.at(s, bi, mn, real=True),
                    k.at(u, bi, um * uc), k.n(max(um, 1)), k.at(vt, bi, vr * vc), k.n(ldvt), work, k.n(lwork)]
            if complex_:
                args.append(rwork)
            k.call(args + [iwork, k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    stage_out(em, work_a, a_out, cpt)
    stage_out(em, s, s_out, REAL_OF[cpt], matrix=False)
    stage_out(em, u, u_out, cpt)
    stage_out(em, vt, vt_out, cpt)
    ints_out(em, fn, info, info_out)
    return a_out, s_out, u_out, vt_out, info_out


def gtsv(em, inst: Instruction, operands: list) -> tuple:
    dl, d, du, rhs = operands
    cpt, fn = _setup(inst, "gtsv")
    dl_out, d_out, du_out, x_out, info_out = em.new_tree(inst.shape, inst)
    n = d.shape.dims[-1]
    nrhs = rhs.shape.dims[-1]
    batch = _batch(d.shape.dims, 1)
    wdl, wd, wdu = (stage_in(em, v, cpt, matrix=False) for v in (dl, d, du))
    x = stage_in(em, rhs, cpt)
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    if n:
        with for_range(em.b, batch, "gtsv.batch") as bi:
            lower = k.f.pointer(k.at(wdl, bi, n), i64(1))
            k.call([k.n(n), k.n(nrhs), lower, k.at(wd, bi, n), k.at(wdu, bi, n), k.at(x, bi, n * nrhs),
                    k.n(n), k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    for work, out in ((wdl, dl_out), (wd, d_out), (wdu, du_out)):
        stage_out(em, work, out, cpt, matrix=False)
    stage_out(em, x, x_out, cpt)
    ints_out(em, fn, info, info_out)
    return dl_out, d_out, du_out, x_out, info_out


def geev(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "geev")
    outs = em.new_tree(inst.shape, inst)
    complex_ = cpt in ("c64", "c128")
    ccpt = cpt if complex_ else {"f32": "c64", "f64": "c128"}[cpt]
    c = _config(inst)
    jobl, jobr = c.get("compute_left", "N"), c.get("compute_right", "V")
    n = a.shape.dims[-1]
    batch = _batch(a.shape.dims)
    b = em.b
    work_a = stage_in(em, a, cpt)
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    lwork = (2 * n if complex_ else 4 * n) + BLOCK * n + 1
    work = scratch_buffer(em, cpt, lwork)
    w = scratch_buffer(em, cpt, batch * n)                         # w (complex) or wr (real)
    wi = None if complex_ else scratch_buffer(em, cpt, batch * n)
    vl = scratch_buffer(em, cpt, batch * n * n)
    vr = scratch_buffer(em, cpt, batch * n * n)
    rwork = scratch_buffer(em, REAL_OF[cpt], 2 * n) if complex_ else None
    if n:
        with lapack_threads(em, batch * 25 * n ** 3), for_range(b, batch, "geev.batch") as bi:
            args = [k.c(jobl), k.c(jobr), k.n(n), k.at(work_a, bi, n * n), k.n(n), k.at(w, bi, n)]
            if not complex_:
                args.append(k.at(wi, bi, n))
            args += [k.at(vl, bi, n * n), k.n(n), k.at(vr, bi, n * n), k.n(n), work, k.n(lwork)]
            if complex_:
                args.append(rwork)
            k.call(args + [k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    if complex_:
        w_out, vl_out, vr_out, info_out = outs
        stage_out(em, w, w_out, cpt, matrix=False)
        stage_out(em, vl, vl_out, cpt)
        stage_out(em, vr, vr_out, cpt)
    else:
        wr_out, wi_out, vl_out, vr_out, info_out = outs
        stage_out(em, w, wr_out, cpt, matrix=False)
        stage_out(em, wi, wi_out, cpt, matrix=False)
        _unpack_pairs(em, cpt, ccpt, wi, vl, vl_out, n)
        _unpack_pairs(em, cpt, ccpt, wi, vr, vr_out, n)
    ints_out(em, fn, info, info_out)
    return outs


def _unpack_pairs(em, cpt: str, ccpt: str, wi: ir.Value, v: ir.Value, out: BufferRef, n: int) -> None:
    """Real geev's eigenvectors as complex ones: a pair (j, j+1) with wi[j] > 0 is v_j +- i v_{j+1}."""
    b = em.b
    f, cf = Field(b, cpt), Field(b, ccpt)
    zero = f.constant(0.0)
    dims = out.shape.dims
    with loop_nest(b, list(dims), "geev.unpack") as index:
        col = _col_offset(b, index, dims)
        j = index[-1]
        bi = i64(0)
        for i, d in zip(index[:-2], dims[:-2]):
            bi = b.add(b.mul(bi, i64(d)), i)
        imag_j = f.load(wi, b.add(b.mul(bi, i64(n)), j))
        first = b.fcmp_ordered(">", imag_j, zero)
        second = b.fcmp_ordered("<", imag_j, zero)
        here = f.load(v, col)
        nxt = f.load(v, b.select(first, b.add(col, i64(n)), col))
        prev = f.load(v, b.select(second, b.sub(col, i64(n)), col))
        re = b.select(second, prev, here)
        im = b.select(first, nxt, b.select(second, b.fneg(here), zero))
        store_element(b, out.pointer, out.shape.ptype, linear_index(b, index, out.shape), cf.make(re, im))


def _geqrf(em, inst, operands):
    _setup(inst, "geqrf")
    return qr(em, inst, operands)


def _orgqr(em, inst, operands):
    _setup(inst, "orgqr")
    return householder_product(em, inst, operands)


EMITTERS = {"potrf": potrf, "trsm": trsm, "geqrf": _geqrf, "orgqr": _orgqr, "ungqr": _orgqr, "syevd": syevd,
            "heevd": syevd, "getrf": getrf, "gesdd": gesdd, "gtsv": gtsv, "geev": geev}
_REAL_ONLY = {"orgqr", "syevd"}
_COMPLEX_ONLY = {"ungqr", "heevd"}

from .lapack_schur_emitter import EMITTERS as _SCHUR_EMITTERS  # noqa: E402  (gees, gehrd: built on the above)

EMITTERS.update(_SCHUR_EMITTERS)
TARGETS = {f"lapack_{t}{routine}_ffi": emit for routine, emit in EMITTERS.items() for t in "sdcz"
           if not (routine in _REAL_ONLY and t in "cz" or routine in _COMPLEX_ONLY and t in "sd")}

__all__ = ["TARGETS"]
