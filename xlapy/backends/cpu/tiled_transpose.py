"""Tiled transposes: a loop whose output is laid out transposed relative to what it reads runs tile by tile.

A plain loop over the output (loops.py) writes along rows but reads a transposed operand with a stride of a whole
row: one cache line per element, a few GB/s at best (the attention transposes of a transformer's training step and
their gradients ran at ~1 GB/s, issue 11). XLA's answer, on GPU and CPU alike, is the tiled transpose: after
collapsing the dims that stay together, the loop nest is over tiles of the two dims that swap (W, contiguous in the
output, and R, contiguous in what is read), and each tile runs in two phases through a small buffer:

| phase | loops (outer, inner) | reads | writes |
|---|---|---|---|
| compute | w in tile, r in tile | the arrays laid out like the read one, along R: contiguous, vectorized | the tile buffer, contiguous |
| store | r in tile, w in tile | the tile buffer (in L1); in a split fusion, the arrays laid out like the output, along W | the output along W: contiguous |

A fusion splits at its hero (XLA's term; `split_at_hero`): the last transpose between the array read transposed
and the output. The compute phase computes the hero's elements (its operands' work: exp(x) of exp(x)^T + y), the
store phase the rest of the fusion from them (the + y), so arrays in either layout are read along their rows.

Tiles are TILE_BYTES along the output's rows (a cache line: 16 f32) by TILE_R_BYTES along the reads (128 f32): the
compute phase's inner loop must be long enough for a vectorized transcendental to overlap its iterations (an
exponential in 32x32 f32 tiles ran 2x slower than in 16x128 ones), and a tile (8 KiB) and the rows it touches stay
in L1. The tiles are the units the parallel-task plan (parallel.py) splits over threads. A W group that 16 does
not divide, up to MAX_WHOLE_W elements (a ViT's 65 tokens), is whole in every tile, with R edges of about the same
area (65 x 32): partial edge tiles made every loop's trip count a run-time value, which LLVM vectorizes with a
remainder loop and checks (LLVM time of vit/fwd's add_transpose kernel -30%; its run time is not worse).

When the fusion reshapes the hero's value before the output (a transformer's head merge: [B, S, H, D] transposed
and reshaped to [B*S, H*D]), the compute phase evaluates the hero's generator at the hero's own index, built from
the loop's vdim indices (`_hero_index`: each vdim split in the coarsest radix in which every hero dim is a sum of
digits, probed with numpy and checked over the whole array), instead of the output's generator, whose reshapes
divided each element's index by 65 again: the read along R is then contiguous, where LLVM had gathered 8 scalars
per vector (vit/fwd's head merge 4x faster, its LLVM time -25%).

What is read in which order (`read_order`): each array of the output's size the loop reads (a fusion's parameter,
a transpose's or copy's operand) is followed through the shape ops between it and the output
(transpose, reshape, elementwise ops, copy) by probing: numpy carries its elements' physical offsets to the output,
and when they are affine in the output index the strides give the order in which it is contiguous. The largest
array read out of the output's order decides. `plan` collapses the dims adjacent in both orders; a permutation that
leaves the minor-most group in place (a "0213" whose rows stay contiguous on both sides) or collapses to the
identity is not tiled.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ...hlo import Instruction
from ...hlo.shape import Shape
from .buffers import BufferRef, byte_size
from .indexing import is_row_major, linear_index, major_to_minor
from .irhelpers import I8P, alloca_once, element_pointer, for_range, i64
from .parallel import MIN_BYTES_PER_TASK, chunk_bounds, parallel_for, task_count
from .types import load_element, storage_type, store_element

TILE_BYTES = 64               # the tile's extent along the output's rows: a cache line
TILE_R_BYTES = 512            # ... and along the reads: the compute phase's inner loop
MAX_TILE, MIN_TILE = 128, 8   # tile edges in elements
MAX_WHOLE_W = 128             # a W group up to this many elements that 16 does not divide is whole in a tile
MIN_TILED = 4                 # both swapped groups must have at least this many elements
MIN_SLAB_BYTES = 32 << 10     # ... and together span more than L1: a smaller slab is read strided from L1 anyway
                              # (vit/train's 65x65 attention transposes ran 0-13% slower tiled)
PROBE_LIMIT = 1 << 21         # arrays probed up to this many elements (compile time)
# XLAPY_TILED_TRANSPOSE=0 emits every loop untiled, as before (for comparisons; not part of the persistent cache's key:
# compare with XLAPY_CACHE_DIR=off)
ENABLED = os.environ.get("XLAPY_TILED_TRANSPOSE", "1") != "0"
_SHAPE_OPS = {"transpose", "reshape", "copy", "convert", "bitcast-convert"}


# -- what is read in which order ----------------------------------------------------------------------
def _physical_offsets(shape: Shape) -> np.ndarray:
    """An array of shape's logical dims whose element at each index is that element's offset in its layout."""
    order = major_to_minor(shape)
    phys = np.arange(shape.numel, dtype=np.int32).reshape([shape.dims[d] for d in order])
    return phys.transpose(np.argsort(order))


def _propagate(inst: Instruction, ops: list[dict]) -> dict:
    """The offset maps of inst's value from its operands' (param number -> array over the operand's dims)."""
    op = inst.opcode
    dims = tuple(inst.shape.dims)
    out: dict = {}
    if op == "transpose":
        perm = [int(p) for p in inst.attrs["dimensions"]]
        return {k: a.transpose(perm) for k, a in ops[0].items()}
    if op == "reshape":
        return {k: a.reshape(dims) for k, a in ops[0].items()}
    if op == "slice":
        window = tuple(slice(r.start, r.limit, r.stride or 1) for r in inst.attrs["slice"])
        return {k: a[window] for k, a in ops[0].items()}
    if op == "pad":                   # the padding's elements are read from nowhere: -1
        pads = inst.attrs["padding"]
        if any(p.low < 0 or p.high < 0 or p.interior for p in pads):
            return {}
        window = tuple(slice(p.low, p.low + n) for p, n in zip(pads, inst.operands[0].shape.dims))
        padded = {}
        for k, a in ops[0].items():
            padded[k] = np.full(dims, -1, dtype=a.dtype)
            padded[k][window] = a
        return padded
    if op in _SHAPE_OPS or inst.info.is_elementwise:
        for o, maps in zip(inst.operands, ops):
            if tuple(o.shape.dims) != dims:
                continue
            for k, a in maps.items():
                if k in out and out[k] is not None and not np.array_equal(out[k], a):
                    out[k] = None                     # reached along two paths with different orders
                elif k not in out:
                    out[k] = a
        return {k: a for k, a in out.items() if a is not None}
    return {}


@dataclass
class Reads:
    """The order of the reads over the output: the output's dims split where the reads need it (`vdims`: (output
    dim, size, step) major to minor in the output's layout; index[dim] is the sum of step * a vdim's index), and
    `order`: the vdims, major to minor, in the order the read array is contiguous in."""
    vdims: list[tuple[int, int, int]]
    order: list[int]
    source: int | None = None       # the fusion parameter read so

    @property
    def transposed(self) -> bool:
        return self.order != sorted(self.order)


def _split(line: np.ndarray, valid: np.ndarray) -> list[tuple[int, int, int]] | None:
    """An output dim whose offsets (relative to its first) are `line` where `valid`, as sub-dims (size, step,
    stride), major first, each affine; None when some part of it is not (or repeats: a broadcast)."""
    parts, mult, rest = [], 1, len(line)
    while rest > 1:
        steps, ok = line[::mult][:rest], valid[::mult][:rest]
        known = np.flatnonzero(ok[1:]) + 1
        if not known.size or steps[known[0]] % known[0]:
            return None
        stride = int(steps[known[0]]) // int(known[0])
        if stride == 0:
            return None
        bad = np.flatnonzero(ok & (steps != np.arange(rest, dtype=np.int32) * stride))
        run = int(bad[0]) if bad.size else rest
        size = max(q for q in range(1, run + 1) if rest % q == 0)
        if size == 1:
            return None
        parts.append((size, mult, stride))
        mult, rest = mult * size, rest // size
    return parts[::-1]


def _dim_parts(line: np.ndarray, start: int) -> list[tuple[int, int, int]] | None:
    """_split for an output dim whose offsets are `line` (-1: padding) from its first element read, `start`. A dim
    padded below must be one affine part (extended over the padding)."""
    valid = line >= 0
    if start == 0:
        return _split(line - line[0], valid)
    parts = _split(line[start:] - line[start], valid[start:])
    return [(len(line), 1, parts[0][2])] if parts is not None and len(parts) == 1 else None


def _transposed_reads(offsets: np.ndarray, out: Shape) -> Reads | None:
    """Reads of an array whose elements' offsets over the output's logical index are `offsets` (-1 where the
    output reads nothing of it: padding), when they are an affine function of the (split) index and not in the
    output's order. The order comes from one line along each dim from the first element read (cheap); the whole
    array is checked only when that order is transposed."""
    rank = offsets.ndim
    valid = offsets >= 0
    if 2 * int(valid.sum()) < offsets.size:
        return None
    origin = np.unravel_index(int(np.argmax(valid)), offsets.shape) if rank else ()
    base = int(offsets[origin])
    subs = {}
    for d in range(rank):
        line = offsets[tuple(slice(None) if k == d else origin[k] for k in range(rank))]
        subs[d] = _dim_parts(line, int(origin[d]))
        if subs[d] is None:
            return None
    vdims, vstrides = [], []
    for d in major_to_minor(out):
        for size, step, stride in subs[d]:
            vdims.append((d, size, step))
            vstrides.append(stride)
    reads = Reads(vdims, sorted(range(len(vdims)), key=lambda v: (-abs(vstrides[v]), v)))
    if not reads.transposed:
        return None
    sizes = [size for d in range(rank) for size, _, _ in subs[d]]
    strides = [stride for d in range(rank) for _, _, stride in subs[d]]
    starts = [int(origin[d]) if len(subs[d]) == 1 else 0 for d in range(rank) for _ in subs[d]]
    expected = np.full(sizes, base, dtype=np.int32)
    for k, (n, stride, o) in enumerate(zip(sizes, strides, starts)):
        expected = expected + ((np.arange(n, dtype=np.int32) - o) * stride).reshape(
            [n if j == k else 1 for j in range(len(sizes))])
    refined, mask = offsets.reshape(sizes), valid.reshape(sizes)
    return reads if np.array_equal(expected[mask], refined[mask]) else None


def _big(shape: Shape, out: Shape) -> bool:
    """An array about the output's size (a pad or slice between them at most halves or doubles it)."""
    return shape.is_array and 2 * shape.numel >= out.numel and shape.numel <= 2 * out.numel


def _may_transpose(inst: Instruction, comp, out: Shape) -> bool:
    """Cheap test before probing: the fusion holds a transpose, or the output or an operand the output's size is
    laid out other than row-major."""
    if any(i.opcode == "transpose" for i in comp.instructions) or not is_row_major(out):
        return True
    return any(_big(o.shape, out) and not is_row_major(o.shape) for o in inst.operands)


def _candidates(inst: Instruction, comp, order: list[Instruction], out: Shape) -> dict[int, Shape]:
    """The parameters of the output's size that may reach it transposed (the rest keep a row-major order): all of
    them under a non-row-major output, else those laid out otherwise or read by a transpose."""
    big = {p.parameter_number: inst.operands[p.parameter_number].shape for p in comp.parameters
           if _big(inst.operands[p.parameter_number].shape, out)}
    if not big or not is_row_major(out):
        return big
    reach: dict[int, frozenset] = {}
    through: set[int] = set()
    for i in order:
        reach[id(i)] = frozenset([i.parameter_number]) if i.opcode == "parameter" and i.parameter_number in big \
            else frozenset().union(*(reach[id(o)] for o in i.operands))
        if i.opcode == "transpose":
            through |= reach[id(i)]
    return {k: s for k, s in big.items() if k in through or not is_row_major(s)}


def read_order(inst: Instruction, out: Shape, value: Instruction | None = None) -> Reads | None:
    """The order in which the largest array `inst` reads is contiguous over its output (laid out as `out`), when
    that is not the output's own order; None when nothing large is read transposed. `value`: for a multi-output
    fusion, the fused instruction whose value is being stored (default: the fused root, or inst itself)."""
    if out.is_tuple or out.numel <= 1 or out.numel > PROBE_LIMIT:
        return None
    if inst.opcode in ("transpose", "copy"):
        source = inst.operands[0].shape
        if not _big(source, out):
            return None
        maps = _propagate(inst, [{0: _physical_offsets(source)}])
        sizes = {0: source.numel}
    elif inst.opcode == "fusion" and inst.attrs.get("kind") != "kCustom":
        comp = inst.attrs["calls"]
        value = comp.root if value is None else value
        if value.opcode == "tuple" or not _may_transpose(inst, comp, out):
            return None
        order = comp.post_order()
        big = _candidates(inst, comp, order, out)
        if not big:
            return None
        inner: dict[int, dict] = {}
        for i in order:
            if i.opcode == "parameter":
                k = i.parameter_number
                inner[id(i)] = {k: _physical_offsets(big[k])} if k in big else {}
            else:
                inner[id(i)] = _propagate(i, [inner[id(o)] for o in i.operands])
            if i is value:
                break
        maps = inner.get(id(value), {})
        sizes = {k: s.numel for k, s in big.items()}
    else:
        return None
    for k in sorted(maps, key=lambda k: (-sizes[k], k)):     # the largest array read transposed decides
        reads = _transposed_reads(maps[k], out)
        if reads is not None:
            reads.source = k if inst.opcode == "fusion" else None
            return reads
    return None


# -- what runs in which phase ---------------------------------------------------------------------------
@dataclass
class Part:
    """One output of a tiled loop: `compute` runs in the read order and fills the tile (elements of `ptype`);
    `finish` (None: the tile is the output) runs in the output's order, reading the tile's element as `held[0]`.
    `hero`: (the hero's generator, its index in the vdims' indices: _hero_index), when the compute phase reads
    the hero at that index instead of undoing the reshapes between it and the output."""
    compute: Callable
    ptype: object
    finish: Callable | None = None
    held: list | None = None
    hero: tuple[Callable, tuple] | None = None


def _ancestors(value: Instruction) -> set[int]:
    seen, stack = set(), [value]
    while stack:
        i = stack.pop()
        if id(i) not in seen:
            seen.add(id(i))
            stack.extend(i.operands)
    return seen


def _dependents(order: list[Instruction], first: Instruction) -> set[int]:
    out = {id(first)}
    for i in order:
        if any(id(o) in out for o in i.operands):
            out.add(id(i))
    return out


def _radix(lines: list[np.ndarray]) -> list[int] | None:
    """The coarsest mixed radix (sizes, major first) of an index 0..n-1 in which every line (an integer function
    of the index) is affine in the digits: from the minor end, the longest run over which all are affine and
    whose length divides what is left. None when some line is affine over no run longer than 1."""
    n, sizes, mult = len(lines[0]), [], 1
    while mult < n:
        rest = n // mult
        samples = [line[::mult][:rest] for line in lines]
        run = rest
        for line in samples:
            steps = line - line[0]
            bad = np.flatnonzero(steps != np.arange(rest, dtype=np.int64) * (steps[1] if rest > 1 else 0))
            run = min(run, int(bad[0]) if bad.size else rest)
        size = max(q for q in range(1, run + 1) if rest % q == 0)
        if size == 1:
            return None
        sizes.append(size)
        mult *= size
    return sizes[::-1]


def _hero_index(hero: Instruction, path: list[Instruction], vdims: list[tuple[int, int, int]]) \
        -> tuple[list[list[int]], list[list[int]]] | None:
    """The hero's logical index over the output's: (radix, coeffs), each vdim's index split in its `radix`
    (sizes, major first) and each hero dim's index a sum of coeffs[k][j] times those digits (j over the digits of
    every vdim in order); None when the reshapes between them regroup dims no radix separates. Probed with
    numpy: the hero's index arrays carried through `path` (reshapes, transposes and elementwise ops from the hero
    to the output, post order) to the output, and checked over the whole array."""
    maps = {id(hero): list(np.indices(tuple(hero.shape.dims), dtype=np.int64))}
    for i in path:
        ops = [maps[id(o)] for o in i.operands if id(o) in maps]
        if i.opcode == "transpose":
            perm = [int(p) for p in i.attrs["dimensions"]]
            maps[id(i)] = [a.transpose(perm) for a in ops[0]]
        elif i.opcode == "reshape":
            maps[id(i)] = [a.reshape(tuple(i.shape.dims)) for a in ops[0]]
        else:                                    # elementwise (split_at_hero checked): the hero's element
            maps[id(i)] = ops[0]
    out = maps[id(path[-1])] if path else maps[id(hero)]
    rank = len(out[0].shape)
    by_dim = [[v for v, (d, _, _) in enumerate(vdims) if d == k] for k in range(rank)]
    sizes = [vdims[v][1] for k in range(rank) for v in by_dim[k]]       # logical dim order, major first
    order = [v for k in range(rank) for v in by_dim[k]]
    if math.prod(sizes) != math.prod(out[0].shape):
        return None
    arrays = [a.reshape(sizes) for a in out]
    radix: list[list[int]] = [[] for _ in vdims]
    for axis, v in enumerate(order):
        line = tuple(slice(None) if j == axis else 0 for j in range(len(sizes)))
        digits = _radix([a[line] for a in arrays]) if sizes[axis] > 1 else [1]
        if digits is None:
            return None
        radix[v] = digits
    fine = [n for v in order for n in radix[v]]
    position = {}                                # (v, j) -> axis of the fine array
    for v in order:
        for j in range(len(radix[v])):
            position[v, j] = len(position)
    digit_order = [(v, j) for v in range(len(vdims)) for j in range(len(radix[v]))]
    coeffs = []
    for a in arrays:
        a = a.reshape(fine)
        if int(a.flat[0]) != 0:
            return None
        # the affine prediction, broadcast: only the digits with a coefficient make it an array of their sizes (a
        # hero dim is mostly one digit), so the check is one pass over `a` (np.indices over the fine radix and a
        # full array per digit were ~10 ms of vit/fwd's emission)
        row, want = [], np.zeros((1,) * len(fine), dtype=np.int64)
        for v, j in digit_order:
            axis = position[v, j]
            c = int(a[tuple(1 if q == axis else 0 for q in range(len(fine)))]) if fine[axis] > 1 else 0
            row.append(c)
            if c:
                want = want + c * np.arange(fine[axis], dtype=np.int64).reshape(
                    tuple(fine[axis] if q == axis else 1 for q in range(len(fine))))
        if not (a == want).all():
            return None
        coeffs.append(row)
    return radix, coeffs


def split_at_hero(em, comp, value: Instruction, gens: dict, source: int | None, out_ptype,
                  vdims: list[tuple[int, int, int]] | None = None) -> Part:
    """The part computing fused `value`: split at its hero (XLA's term), the last transpose between parameter
    `source` (the array read transposed) and value, when only shape ops and elementwise ops of its size lie between
    them: the hero is computed into the tile in the read order (its operands read contiguously), the rest of the
    fusion in the output's order, so the arrays read in the output's layout are read contiguously too. Otherwise
    all of value is computed into the tile."""
    whole = Part(gens[id(value)], out_ptype)
    params = [p for p in comp.parameters if p.parameter_number == source]
    if not params:
        return whole
    order = comp.post_order()
    above = _ancestors(value)
    reached = _dependents(order, params[0])
    heroes = [t for t in order if t.opcode == "transpose" and id(t) in reached and id(t) in above]
    if not heroes:
        return whole
    hero = heroes[-1]
    if hero is value:
        return whole
    on = _dependents(order, hero)
    path = [i for i in order if id(i) in on and id(i) in above and i is not hero]
    for i in path:
        if i.shape.numel != hero.shape.numel or not (i.opcode in ("reshape", "transpose", "copy", "convert")
                                                     or i.info.is_elementwise):
            return whole
    held: list = [None]
    computes, finishes = {id(hero): gens[id(hero)]}, {id(hero): lambda index: held[0]}
    for i in path:
        if i.opcode in ("reshape", "transpose"):
            computes[id(i)] = em.elemental.generator(i, [computes[id(i.operands[0])]])
        else:               # elementwise: the hero's element at the same index
            computes[id(i)] = next(computes[id(o)] for o in i.operands if id(o) in computes)
        finishes[id(i)] = em.elemental.generator(i, [finishes.get(id(o), gens[id(o)]) for o in i.operands])
    coeffs = _hero_index(hero, path, vdims) if vdims is not None and hero.shape.numel <= PROBE_LIMIT else None
    return Part(computes[id(value)], hero.shape.ptype, finishes[id(value)], held,
                (gens[id(hero)], coeffs) if coeffs is not None else None)


# -- the tiling ---------------------------------------------------------------------------------------
@dataclass
class Plan:
    """Groups of vdims (each major to minor, adjacent in the output and in the reads), in the output's order; w and
    r: the groups contiguous in the output and in the reads; the tile edges."""
    vdims: list[tuple[int, int, int]]
    groups: list[list[int]]
    w: int
    r: int
    tile_w: int = 0
    tile_r: int = 0

    def size(self, g: int) -> int:
        return math.prod(self.vdims[v][1] for v in self.groups[g])


def tile_edge(element_bytes: int, nbytes: int = TILE_BYTES) -> int:
    return max(MIN_TILE, min(MAX_TILE, nbytes // max(element_bytes, 1)))


def plan(reads: Reads, element_bytes: int) -> Plan | None:
    """The tiling of a loop reading in `reads`; None when it is not a transpose of the minor dims after collapsing
    (the identity, or the minor-most group stays minor-most: rows contiguous on both sides)."""
    position = {v: k for k, v in enumerate(reads.order)}
    groups: list[list[int]] = []
    for v in range(len(reads.vdims)):
        if groups and position[v] == position[groups[-1][-1]] + 1:
            groups[-1].append(v)
        else:
            groups.append([v])
    if len(groups) < 2:
        return None
    w = len(groups) - 1
    r = next(g for g, vs in enumerate(groups) if reads.order[-1] in vs)
    if r == w:
        return None
    p = Plan(reads.vdims, groups, w, r)
    nw, nr = p.size(w), p.size(r)
    if nw < MIN_TILED or nr < MIN_TILED or nw * nr * element_bytes < MIN_SLAB_BYTES:
        return None
    p.tile_w, p.tile_r = min(tile_edge(element_bytes), nw), min(tile_edge(element_bytes, TILE_R_BYTES), nr)
    if nw % p.tile_w and nw <= MAX_WHOLE_W:         # the whole W group in each tile: constant trip counts
        area = p.tile_w * p.tile_r
        p.tile_w = nw
        p.tile_r = min(nr, max(MIN_TILE, 1 << round(math.log2(area / nw))))
    return p


def _group_index(b: ir.IRBuilder, linear: ir.Value, vs: list[int], vdims, index: list, ivs: dict) -> None:
    """Add to index (logical, None for nothing yet) the contributions of a group's vdims (major to minor) at the
    group's row-major linear index; ivs[v]: each vdim's own index."""
    rest = linear
    for k in reversed(range(len(vs))):
        d, n, step = vdims[vs[k]]
        iv = rest if k == 0 else b.urem(rest, i64(n))
        if k:
            rest = b.udiv(rest, i64(n))
        ivs[vs[k]] = iv
        _add_term(b, index, d, iv, step)


def _add_term(b: ir.IRBuilder, index: list, d: int, iv: ir.Value, step: int) -> None:
    """index[d] += iv * step (index[d] None: nothing yet)."""
    term = iv if step == 1 else b.mul(iv, i64(step), flags=["nsw", "nuw"])
    index[d] = term if index[d] is None else b.add(index[d], term, flags=["nsw", "nuw"])


def _group_index_at(b: ir.IRBuilder, start: ir.Value, local: ir.Value, edge: int, vs: list[int], vdims, index: list,
                    ivs: dict) -> None:
    """_group_index of start + local, where start (a tile's corner) is a multiple of `edge` and 0 <= local < edge.
    A minor vdim whose size is a multiple of the edge takes start % n + local, and those above it depend on start
    alone (the same for the whole tile: LLVM hoists them); one the edge is a multiple of takes local % n, and the
    split goes on with edge / n. Per element there are adds, not divisions of a loop variable's sum, which LLVM's
    loop passes spent most of a small transpose kernel's compile on without removing them all."""
    k = len(vs) - 1
    while k > 0 and local is not None:
        d, n, step = vdims[vs[k]]
        if n % edge == 0:                      # start % n + local < n
            iv = b.add(b.urem(start, i64(n)), local, flags=["nsw", "nuw"])
            start, local = b.udiv(start, i64(n)), None
        elif edge % n == 0:                    # start % n == 0
            iv = b.urem(local, i64(n))
            start, local, edge = b.udiv(start, i64(n)), b.udiv(local, i64(n)), edge // n
        else:
            break
        ivs[vs[k]] = iv
        _add_term(b, index, d, iv, step)
        k -= 1
    rest = start if local is None else b.add(start, local, flags=["nsw", "nuw"])
    _group_index(b, rest, vs[:k + 1], vdims, index, ivs)


def _hero_at(b: ir.IRBuilder, radix: list[list[int]], coeffs: list[list[int]], ivs: dict) -> list[ir.Value]:
    """The hero's index (Part.hero) from the vdims' indices ivs: each split in its radix, the digits combined."""
    digits = []
    for v, sizes in enumerate(radix):
        below = math.prod(sizes)
        for n in sizes:
            below //= n
            d = ivs[v] if below == 1 else b.udiv(ivs[v], i64(below))
            digits.append(d if n * below == math.prod(sizes) else b.urem(d, i64(n)))
    index = []
    for row in coeffs:
        total = None
        for d, c in zip(digits, row):
            if c:
                term = d if c == 1 else b.mul(d, i64(c), flags=["nsw", "nuw"])
                total = term if total is None else b.add(total, term, flags=["nsw", "nuw"])
        index.append(i64(0) if total is None else total)
    return index


def emit_tiled(b: ir.IRBuilder, parts: Sequence[Part], bufs: Sequence[BufferRef], reads: Reads | None,
               tasks: int = 1) -> bool:
    """Store each part over bufs[0]'s shape into its buffer (all laid out alike) tile by tile; False, having
    emitted nothing, when the loop is not a tileable transpose (the caller emits its loop)."""
    if reads is None or not bufs or any(major_to_minor(x.shape) != major_to_minor(bufs[0].shape) or
                                        x.shape.dims != bufs[0].shape.dims for x in bufs):
        return False
    shape = bufs[0].shape
    element_bytes = max(byte_size(x.shape) // max(x.shape.numel, 1) for x in bufs)
    p = plan(reads, element_bytes)
    if p is None:
        return False
    nw, nr = p.size(p.w), p.size(p.r)
    tw, tr = p.tile_w, p.tile_r
    outer = [g for g in range(len(p.groups)) if g not in (p.w, p.r)]
    counts = [p.size(g) for g in outer] + [-(-nr // tr), -(-nw // tw)]
    total = math.prod(counts)

    def new_tiles(b: ir.IRBuilder) -> list:        # in the function the loop runs in (a pool worker's own)
        return [alloca_once(b, ir.ArrayType(storage_type(part.ptype), tr * tw), "tile") for part in parts]

    def extent(b: ir.IRBuilder, start: ir.Value, n: int, edge: int) -> ir.Value | int:
        if n % edge == 0:
            return edge
        left = b.sub(i64(n), start)
        return b.select(b.icmp_signed("<", left, i64(edge)), left, i64(edge))

    def one_tile(b: ir.IRBuilder, t: ir.Value, tiles: list) -> None:
        ivs, rest = [], t
        for k in reversed(range(len(counts))):
            if k == 0:
                ivs.append(rest)
            else:
                ivs.append(b.urem(rest, i64(counts[k])))
                rest = b.udiv(rest, i64(counts[k]))
        ivs.reverse()
        base: list = [None] * shape.rank
        base_ivs: dict = {}
        for g, iv in zip(outer, ivs):
            _group_index(b, iv, p.groups[g], p.vdims, base, base_ivs)
        r0 = b.mul(ivs[-2], i64(tr), flags=["nsw", "nuw"])
        w0 = b.mul(ivs[-1], i64(tw), flags=["nsw", "nuw"])
        rn, wn = extent(b, r0, nr, tr), extent(b, w0, nw, tw)

        def at(wl, rl, ivs: dict | None = None) -> list:
            index, ivs = list(base), ivs if ivs is not None else {}
            ivs.update(base_ivs)
            _group_index_at(b, w0, wl, tw, p.groups[p.w], p.vdims, index, ivs)
            _group_index_at(b, r0, rl, tr, p.groups[p.r], p.vdims, index, ivs)
            return [i64(0) if i is None else i for i in index]
        with for_range(b, wn, "tile.w") as wl:              # compute: along R, contiguous reads
            with for_range(b, rn, "tile.r") as rl:
                ivs: dict = {}
                index = at(wl, rl, ivs)
                slot = b.add(b.mul(wl, i64(tr), flags=["nsw", "nuw"]), rl, flags=["nsw", "nuw"])
                for tile, part in zip(tiles, parts):
                    if part.hero is not None:     # the hero at its own index: no reshape undone per element
                        gen, (radix, coeffs) = part.hero
                        value = gen(_hero_at(b, radix, coeffs, ivs))
                    else:
                        value = part.compute(index)
                    store_element(b, b.bitcast(tile, I8P), part.ptype, slot, value)
        with for_range(b, rn, "tile.sr") as rl:             # store: along W, contiguous writes
            with for_range(b, wn, "tile.sw") as wl:
                index = at(wl, rl)
                slot = b.add(b.mul(wl, i64(tr), flags=["nsw", "nuw"]), rl, flags=["nsw", "nuw"])
                k = linear_index(b, index, shape)
                for tile, part, x in zip(tiles, parts, bufs):
                    if part.finish is None:         # the tile's bits are the output's
                        st = storage_type(x.shape.ptype)
                        b.store(b.load(b.gep(tile, [i64(0), slot], inbounds=True)), element_pointer(b, x.pointer, st, k))
                    else:
                        part.held[0] = load_element(b, b.bitcast(tile, I8P), part.ptype, slot)
                        store_element(b, x.pointer, x.shape.ptype, k, part.finish(index))

    def chunk(b: ir.IRBuilder, start, end, task) -> None:
        tiles = new_tiles(b)
        with for_range(b, end, "tile", start=start) as t:
            one_tile(b, t, tiles)

    if tasks > 1 and total >= tasks and parallel_for(b, chunk_bounds(total, tasks, 1), chunk, quantum=1):
        return True
    tiles = new_tiles(b)
    with for_range(b, total, "tile") as t:
        one_tile(b, t, tiles)
    return True


def tiled(em, inst: Instruction, gen: Callable, bufs: Sequence[BufferRef], gens: dict | None = None,
          values: Sequence[Instruction] | None = None) -> bool:
    """The emitter's hook: store inst's value through gen into bufs as a tiled transpose when inst reads a large
    array transposed; False: the caller emits its loop. For a fusion, `gens` (its instructions' generators) let
    the loop split at the transpose (split_at_hero); `values`: the fused instructions whose values bufs get (a
    multi-output fusion's group; default: the fused root)."""
    if not bufs or not ENABLED:
        return False
    comp = inst.attrs.get("calls") if inst.opcode == "fusion" else None
    values = list(values) if values is not None else [comp.root] if comp is not None else [inst]
    if len(values) != len(bufs):
        return False
    reads = read_order(inst, bufs[0].shape, values[0] if comp is not None else None)
    if reads is None:
        return False
    if gens is None or comp is None:
        if len(bufs) != 1:
            return False
        parts = [Part(gen, bufs[0].shape.ptype)]
    else:
        parts = [split_at_hero(em, comp, v, gens, reads.source, x.shape.ptype, reads.vdims) for v, x in zip(values, bufs)]
    return emit_tiled(em.b, parts, bufs, reads, task_count(inst, em.num_threads))


def tiled_copy(em, src: BufferRef, dst: BufferRef) -> bool:
    """A layout-changing copy of a buffer, tiled (tasks by its traffic, as parallel.task_count counts it)."""
    if not ENABLED or src.shape.numel > PROBE_LIMIT or src.shape.dims != dst.shape.dims or src.shape.numel <= 1:
        return False
    tasks = max(1, min(em.num_threads, 2 * byte_size(dst.shape) // MIN_BYTES_PER_TASK))
    reads = _transposed_reads(_physical_offsets(src.shape), dst.shape)
    return emit_tiled(em.b, [Part(em.generator_of(src), dst.shape.ptype)], [dst], reads, tasks)
