"""Dots of gathered rows: multiply the table, then gather (message passing's "transform before you gather").

A graph network multiplies gathered rows by a weight: `dot(gather(H, src), W)` picks M rows of the R-row table
H (one per edge) and multiplies each by W. Each output row is one row of H times W, so the same numbers come
from multiplying H first and gathering the products, `gather(dot(H, W), src)`: R/M of the multiply-adds (a
graph with 4x more edges than nodes does a quarter of the work; an embedding table of 8 rows gathered for 16,384
edges, 1/2048). The gather moves as many elements as before when W keeps the row width, and it then fuses into
what reads the product (a bias, a segment sum) instead of feeding a GEMM through memory.

| HLO                                                            | rewritten                                      |
|----------------------------------------------------------------|------------------------------------------------|
| dot(gather(X, i), W)           whole rows of X, R <= M/2         | gather(dot(X, W), i)                           |
| dot(select(rows p, gather(X, i), NaN), W)   (jnp.take's "fill")  | select(rows p, gather(dot(X, W), i), NaN)      |
| dot(concatenate(P1, .., Pn) along K, W), some Pj one of the above | dot(P1, W[K1]) + .. + dot(Pn, W[Kn])            |

`whole rows`: the gather's slices are rows of the rank-2 X (slice sizes 1 x K, the one batch dimension first),
and the dot contracts the row (lhs dim 1) with no batch dimensions. Out-of-bounds indices clamp the same way
before and after (the start index of a row, against R rows either way). A NaN row times W is NaN in every
column, whatever W holds, so the fill can be selected after the product; a zero fill could not (0 * inf is
NaN). The concatenate rule splits K only where a piece then gets cheaper, and only for f32/f64 products (the
partial products are added in the product's type): the split sums K in two groups, as a blocked GEMM does.
"""
from __future__ import annotations

import math

from ...hlo import Instruction
from ...hlo.attrs import SliceRange
from ..build import make
from ..pattern import Any, Op, literal_scalar
from ..rewrite import RuleSet, rule

SPLIT_TYPES = frozenset({"f32", "f64"})


def _row_gather(g: Instruction, rows: int) -> bool:
    """g gathers whole rows of a rank-2 table with at most half as many rows as g has."""
    if g.opcode != "gather" or g.shape.rank != 2 or g.operands[0].shape.rank != 2:
        return False
    a, table = g.attrs, g.operands[0].shape
    return (tuple(a.get("offset_dims", ())) == (1,) and tuple(a.get("collapsed_slice_dims", ())) == (0,)
            and tuple(a.get("start_index_map", ())) == (0,) and not a.get("operand_batching_dims")
            and tuple(a.get("slice_sizes", ())) == (1, table.dims[1]) and 2 * table.dims[0] <= rows)


def _nan_fill(x: Instruction) -> bool:
    v = literal_scalar(x)
    try:
        return v is not None and math.isnan(float(v))
    except (TypeError, ValueError):
        return False


def _row_mask(p: Instruction) -> Instruction | None:
    """The rank-1 predicate p[M] that `p` broadcasts along dim 0 (a mask of whole rows), or None."""
    if p.opcode == "broadcast" and p.operands[0].shape.rank == 1 and tuple(p.attrs.get("dimensions", ())) == (0,):
        return p.operands[0]
    return None


def _pieces(lhs: Instruction) -> tuple[Instruction, Instruction | None, Instruction | None] | None:
    """(the row gather, its row mask, the scalar NaN it is filled with) when `lhs` is a row gather (mask and fill
    None) or a NaN-filled one; else None."""
    rows = lhs.shape.dims[0] if lhs.shape.rank == 2 else 0
    if _row_gather(lhs, rows):
        return lhs, None, None
    if lhs.opcode == "select" and _row_gather(lhs.operands[1], rows):
        mask, fill = _row_mask(lhs.operands[0]), lhs.operands[2]
        if fill.opcode == "broadcast" and fill.operands[0].shape.rank == 0:
            fill = fill.operands[0]
        if mask is not None and fill.shape.rank == 0 and _nan_fill(fill):
            return lhs.operands[1], mask, fill
    return None


def _plain_dot(dot: Instruction) -> bool:
    a = dot.attrs
    return (dot.operands[0].shape.rank == 2 and tuple(a.get("lhs_contracting_dims", ())) == (1,)
            and not a.get("lhs_batch_dims") and not a.get("rhs_batch_dims"))


def _gathered_product(dot: Instruction) -> Instruction | None:
    """`dot` rewritten as the gather of its lhs table's product (with its NaN fill), or None."""
    lhs, rhs = dot.operands
    found = _pieces(lhs)
    if found is None:
        return None
    g, mask, fill = found
    table, index = g.operands
    shape = dot.shape.without_layout()
    product = make("dot", [table, rhs], dict(dot.attrs),
                   shape=shape.with_dims((table.shape.dims[0], *shape.dims[1:])))
    attrs = {"offset_dims": tuple(range(1, shape.rank)), "collapsed_slice_dims": (0,), "start_index_map": (0,),
             "index_vector_dim": g.attrs["index_vector_dim"], "slice_sizes": (1, *shape.dims[1:])}
    for flag in ("indices_are_sorted", "unique_indices"):
        if flag in g.attrs:
            attrs[flag] = g.attrs[flag]
    out = make("gather", [product, index], attrs, shape=shape)
    if mask is None:
        return out
    pred = make("broadcast", [mask], {"dimensions": (0,)}, shape=shape.with_element_type("pred"))
    return make("select", [pred, out, make("broadcast", [fill], {"dimensions": ()}, shape=shape)], shape=shape)


@rule(Op("dot"))
def dot_of_gathered_rows(inst):
    # dot(gather(X, i), W) => gather(dot(X, W), i)   (whole rows of X, fewer rows than gathered; NaN fill too)
    if not _plain_dot(inst):
        return None
    return _gathered_product(inst)


@rule(Op("dot", Op("concatenate", name="cat"), Any()))
def dot_of_concat_with_gathered_rows(inst, cat):
    # dot(concatenate(P1, .., Pn) along K, W) => dot(P1, W[K1]) + .. + dot(Pn, W[Kn])   (some Pj a row gather)
    if (not _plain_dot(inst) or tuple(cat.attrs["dimensions"]) != (1,)
            or inst.shape.ptype.name not in SPLIT_TYPES
            or any(o.shape.ptype != inst.shape.ptype for o in (*cat.operands, inst.operands[1]))
            or not any(_pieces(p) is not None for p in cat.operands)):
        return None
    w = inst.operands[1]
    (k_dim,) = inst.attrs["rhs_contracting_dims"]
    shape = inst.shape.without_layout()
    total, start = None, 0
    for piece in cat.operands:
        size = piece.shape.dims[1]
        ranges = tuple(SliceRange(start, start + size, 1) if d == k_dim else SliceRange(0, n, 1)
                       for d, n in enumerate(w.shape.dims))
        part = make("slice", [w], {"slice": ranges})
        term = make("dot", [piece, part], dict(inst.attrs), shape=shape)
        total = term if total is None else make("add", [total, term], shape=shape)
        start += size
    return total


RULES = RuleSet([dot_of_concat_with_gathered_rows, dot_of_gathered_rows])
