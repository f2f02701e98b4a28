"""Batching rules of dot, convolution, fft and the linear-algebra ops.

dot: both operands batched -> one more batch dimension (at 0 of both); one operand batched -> its batch axis
is one more free dimension, which lands in the output where dot puts that operand's free dimensions.

convolution (as JAX): input alone batched -> the batch folds into the input's batch dimension (B*N); kernel
alone batched -> into the kernel's output features (within each feature group); both -> into the input
features and the kernel's output features, with feature_group_count multiplied by B. A convolution with
batch_group_count > 1 runs once per example.

fft, cholesky and triangular-solve act on trailing dimensions, so a leading batch axis is free.
"""
from __future__ import annotations

from ...hlo import Shape
from .common import Batcher, per_example, per_example_rule, shift


def _dot(b: Batcher, inst, ops, dims):
    lhs, rhs = ops
    ld, rd = dims
    a = dict(inst.attrs)
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    et = inst.shape.element_type
    out = list(inst.shape.dims)
    if ld is not None and rd is not None:
        lhs, rhs = b.front(lhs, ld), b.front(rhs, rd)
        a.update(lhs_batch_dims=(0,) + shift(lb), rhs_batch_dims=(0,) + shift(rb),
                 lhs_contracting_dims=shift(lc), rhs_contracting_dims=shift(rc))
        pos = 0
    elif ld is not None:
        lb2, lc2 = shift(lb, ld), shift(lc, ld)
        a.update(lhs_batch_dims=lb2, lhs_contracting_dims=lc2)
        free = [k for k in range(lhs.shape.rank) if k not in lb2 and k not in lc2]
        pos = len(lb) + free.index(ld)
    else:
        rb2, rc2 = shift(rb, rd), shift(rc, rd)
        a.update(rhs_batch_dims=rb2, rhs_contracting_dims=rc2)
        skip = set(rb2) | set(rc2) | set(shift(a.get("rhs_group_dims", ()), rd))
        free = [k for k in range(rhs.shape.rank) if k not in skip]
        n_lhs_free = inst.operands[0].shape.rank - len(lb) - len(lc)
        pos = len(lb) + n_lhs_free + free.index(rd)
    for key in ("lhs_batch_dims", "rhs_batch_dims"):
        if not a.get(key):
            a.pop(key, None)
    out.insert(pos, b.size)
    return b.emit("dot", [lhs, rhs], a, shape=Shape.array(et, out)), pos


def _merge_into(b: Batcher, x, d: int, target: int):
    """x (batch axis at d) with the batch merged into dimension `target` of the unbatched numbering, batch-major."""
    x = b.front(x, d)
    dims = list(x.shape.dims[1:])
    perm = list(range(1, x.shape.rank))
    perm.insert(target, 0)
    x = b.transpose(x, perm)
    dims[target] *= b.size
    return b.reshape(x, dims)


def _split_out(b: Batcher, out, dim: int):
    """out with dimension `dim` (size B*n, batch-major) split into a batch axis at dim and n after it."""
    dims = list(out.shape.dims)
    n = dims[dim] // b.size
    return b.reshape(out, dims[:dim] + [b.size, n] + dims[dim + 1:])


def _convolution(b: Batcher, inst, ops, dims):
    lhs, rhs = ops
    ld, rd = dims
    a = dict(inst.attrs)
    if int(a.get("batch_group_count", 1)) != 1:
        return per_example(b, inst, ops, dims)
    dn = a["dim_labels"]
    fgc = int(a.get("feature_group_count", 1))
    et = inst.shape.element_type
    out = list(inst.shape.dims)
    if rd is None:                                    # the input alone: fold into its batch dimension
        lhs = _merge_into(b, lhs, ld, dn.input_batch)
        out[dn.output_batch] *= b.size
        y = b.emit("convolution", [lhs, rhs], a, shape=Shape.array(et, out))
        return _split_out(b, y, dn.output_batch), dn.output_batch
    if ld is None:                                    # the kernel alone: into its output features, per group
        ko = dn.kernel_output_feature
        r = b.front(rhs, rd)
        kd = list(r.shape.dims[1:])
        o = kd[ko]
        split = [b.size] + kd[:ko] + [fgc, o // fgc] + kd[ko + 1:]
        r = b.reshape(r, split)
        # order: dims before ko, G, B, O/G, the rest (positions in `split`: B is 0, dim k of kd is k+1)
        perm = list(range(1, ko + 1)) + [ko + 1, 0, ko + 2] + list(range(ko + 3, len(split)))
        r = b.transpose(r, perm)
        kd[ko] = o * b.size
        rhs = b.reshape(r, kd)
        of = dn.output_feature
        out[of] *= b.size
        y = b.emit("convolution", [lhs, rhs], a, shape=Shape.array(et, out))
        yd = list(inst.shape.dims)
        og = yd[of] // fgc
        y = b.reshape(y, yd[:of] + [fgc, b.size, og] + yd[of + 1:])
        n = len(yd) + 2
        perm = list(range(of)) + [of + 1, of, of + 2] + list(range(of + 3, n))
        y = b.transpose(y, perm)
        return b.reshape(y, yd[:of] + [b.size, yd[of]] + yd[of + 1:]), of
    lhs = _merge_into(b, lhs, ld, dn.input_feature)  # both: B more feature groups
    rhs = _merge_into(b, rhs, rd, dn.kernel_output_feature)
    a["feature_group_count"] = fgc * b.size
    of = dn.output_feature
    out[of] *= b.size
    y = b.emit("convolution", [lhs, rhs], a, shape=Shape.array(et, out))
    return _split_out(b, y, of), of


def _leading(b: Batcher, inst, ops, dims):
    """An op over trailing dimensions (fft, cholesky, triangular-solve): every operand batched at 0."""
    xs = [b.front(o, d) for o, d in zip(ops, dims)]
    shape = Shape.array(inst.shape.element_type, (b.size,) + tuple(inst.shape.dims))
    return b.emit(inst.opcode, xs, dict(inst.attrs), shape=shape), 0


RULES = {
    "dot": _dot, "convolution": _convolution,
    "fft": _leading, "cholesky": _leading, "triangular-solve": _leading,
    "ragged-dot": per_example_rule("ragged-dot's groups are per example"),
    **{op: per_example_rule("batch norm's statistics are per example") for op in
       ("batch-norm-training", "batch-norm-inference", "batch-norm-grad")},
}
