"""JAX's Schur and Hessenberg custom-calls (`lapack_<t>gees_ffi`, `lapack_<t>gehrd_ffi`) on the CPU backend, as
LAPACK calls (lapack.py); staged like the other targets (lapack_ffi_emitter.py). The definitions are the
interpreter's (backends/interpreter/lapack_schur.py).

| routine | LAPACK call per batch element |
|---|---|
| gees (real) | xGEES(jobvs, 'N', NULL, n, a, n, sdim, wr, wi, vs, n, work, lwork, bwork, info) |
| gees (complex) | xGEES(jobvs, 'N', NULL, n, a, n, sdim, w, vs, n, work, lwork, rwork, bwork, info) |
| gehrd | xGEHRD(n, low, high, a, n, tau, work, lwork, info) |

sort = 'N': the selection function and bwork are not referenced (a null pointer and a one-element buffer).
"""
from __future__ import annotations

import re

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from .irhelpers import I8P, for_range
from .lapack_ffi_emitter import (BLOCK, REAL_OF, _batch, _Call, _config, _setup, _zero_ints, int_buffer, ints_out,
                                 scratch_buffer, stage_in, stage_out)
from .linalg_emitter import lapack_threads

NB_TSIZE = 65 * 64            # gehrd's blocked workspace: n * NB + TSIZE (LAPACK's NBMAX = 64, LDT = NBMAX + 1)


def gees(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "gees")
    outs = em.new_tree(inst.shape, inst)
    complex_ = cpt in ("c64", "c128")
    c = _config(inst)
    if c.get("sort", "N") != "N":
        raise UnimplementedError(f"cpu backend: custom-call {inst.name}: gees with sorted eigenvalues")
    n = a.shape.dims[-1]
    batch = _batch(a.shape.dims)
    work_a = stage_in(em, a, cpt)
    vs = scratch_buffer(em, cpt, batch * n * n)
    w = scratch_buffer(em, cpt, batch * n)                          # w (complex) or wr (real)
    wi = None if complex_ else scratch_buffer(em, cpt, batch * n)
    sdim, info = int_buffer(em, fn, batch), int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    if n:
        lwork = (2 * n if complex_ else 3 * n) + BLOCK * n
        work = scratch_buffer(em, cpt, lwork)
        rwork = scratch_buffer(em, REAL_OF[cpt], n) if complex_ else None
        bwork = int_buffer(em, fn, n)
        null = ir.Constant(I8P, None)
        with lapack_threads(em, batch * 25 * n ** 3), for_range(em.b, batch, "gees.batch") as bi:
            args = [k.c(c.get("mode", "V")), k.c("N"), null, k.n(n), k.at(work_a, bi, n * n), k.n(n),
                    k.int_at(sdim, bi, 1), k.at(w, bi, n)]
            if not complex_:
                args.append(k.at(wi, bi, n))
            args += [k.at(vs, bi, n * n), k.n(n), work, k.n(lwork)]
            if complex_:
                args.append(rwork)
            k.call(args + [bwork, k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, sdim, batch)
        _zero_ints(em, fn, info, batch)
    t_out, vs_out, *w_outs, sdim_out, info_out = outs
    stage_out(em, work_a, t_out, cpt)
    stage_out(em, vs, vs_out, cpt)
    for work, out in zip((w, wi), w_outs):
        stage_out(em, work, out, cpt, matrix=False)
    ints_out(em, fn, sdim, sdim_out)
    ints_out(em, fn, info, info_out)
    return outs


def _ints(inst: Instruction) -> dict[str, int]:
    text = str(inst.attrs.get("backend_config", "") or "")
    return {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)\s*:\s*i32", text)}


def gehrd(em, inst: Instruction, operands: list) -> tuple:
    (a,) = operands
    cpt, fn = _setup(inst, "gehrd")
    h_out, tau_out, info_out = em.new_tree(inst.shape, inst)
    n = a.shape.dims[-1]
    cfg = _ints(inst)
    low, high = cfg.get("low", 1), cfg.get("high", n)
    if not 1 <= low <= max(high, 1) <= max(n, 1):
        raise UnimplementedError(f"cpu backend: custom-call {inst.name}: gehrd with low = {low}, high = {high} "
                                 f"on {n} x {n} matrices")
    batch = _batch(a.shape.dims)
    work_a = stage_in(em, a, cpt)
    tau = scratch_buffer(em, cpt, batch * (n - 1))
    info = int_buffer(em, fn, batch)
    k = _Call(em, fn, cpt)
    if n:
        lwork = n * BLOCK + NB_TSIZE
        work = scratch_buffer(em, cpt, lwork)
        with lapack_threads(em, batch * 10 * n ** 3 // 3), for_range(em.b, batch, "gehrd.batch") as bi:
            k.call([k.n(n), k.n(low), k.n(high), k.at(work_a, bi, n * n), k.n(n), k.at(tau, bi, max(n - 1, 0)),
                    work, k.n(lwork), k.int_at(info, bi, 1)])
    else:
        _zero_ints(em, fn, info, batch)
    stage_out(em, work_a, h_out, cpt)
    stage_out(em, tau, tau_out, cpt, matrix=False)
    ints_out(em, fn, info, info_out)
    return h_out, tau_out, info_out


EMITTERS = {"gees": gees, "gehrd": gehrd}

__all__ = ["EMITTERS"]
