"""BatchNormExpander: batch-norm-training / -inference / -grad => elementwise ops, broadcasts and reduces.

Follows XLA's batchnorm_expander: statistics are sums over every dimension except `feature_index`
(reduces with the module's shared scalar_add_computation: build.scalar_reducer), per-feature values are
broadcast along `feature_index`, the variance is the biased E[X^2] - E[X]^2, and everything is computed in
the operand's element type. The element count per feature is a constant (XLA reads it with
get-dimension-size so that dynamic shapes work; a batch norm over a dynamic dimension is left alone here).
"""
from __future__ import annotations

from ..hlo import Instruction, Shape
from .builder import Builder
from .op_expander import OpExpanderPass

OPCODES = ("batch-norm-training", "batch-norm-inference", "batch-norm-grad")


class _BatchNormBuilder(Builder):
    """A Builder for one expansion, knowing the batch norm's feature dimension and element type."""

    def __init__(self, bn: Instruction):
        super().__init__(bn.parent)
        self.x = bn.operands[0]
        self.shape = self.x.shape.without_layout()
        self.ptype = self.shape.element_type
        self.fi = bn.attrs["feature_index"]
        self.feature_shape = Shape.array(self.ptype, (self.shape.dims[self.fi],))
        self.reduce_dims = tuple(d for d in range(self.shape.rank) if d != self.fi)
        self.adder = None if bn.opcode == "batch-norm-inference" else self.reducer("add", self.ptype)
        self.eps = float(bn.attrs.get("epsilon", 0.001))

    def number(self, value) -> Instruction:
        """A scalar constant of the operand's element type."""
        return self.scalar(value, self.ptype)

    def splat(self, scalar: Instruction, shape: Shape) -> Instruction:
        return self.emit("broadcast", [scalar], {"dimensions": ()}, shape=shape)

    def along_feature(self, v: Instruction) -> Instruction:
        """A per-feature vector broadcast to the operand's shape."""
        return self.emit("broadcast", [v], {"dimensions": (self.fi,)}, shape=self.shape)

    def sum_per_feature(self, v: Instruction, zero: Instruction) -> Instruction:
        return self.emit("reduce", [v, zero], {"dimensions": self.reduce_dims, "to_apply": self.adder},
                         shape=self.feature_shape)

    def count(self) -> Instruction:
        n = 1
        for d in self.reduce_dims:
            n *= self.shape.dims[d]
        return self.number(n)


def expand_training(bn: Instruction, b: _BatchNormBuilder) -> Instruction:
    # batch-norm-training(X, scale, offset) =>
    #   mean = sum(X) / N;  var = sum(X*X) / N - mean*mean
    #   tuple((X - mean) * rsqrt(var + eps) * scale + offset, mean, var)
    x, scale, offset = bn.operands
    zero = b.number(0)
    epsilon = b.splat(b.number(b.eps), b.shape)
    count = b.count()
    scale_b, offset_b = b.along_feature(scale), b.along_feature(offset)
    total = b.sum_per_feature(x, zero)
    squared_total = b.sum_per_feature(b.mul(x, x), zero)
    mean = b.div(total, b.splat(count, b.feature_shape))
    square_mean = b.div(squared_total, b.splat(count, b.feature_shape))
    var = b.sub(square_mean, b.mul(mean, mean))
    rsqrt = b.emit("rsqrt", [b.add(b.along_feature(var), epsilon)])
    normalized = b.mul(b.sub(x, b.along_feature(mean)), rsqrt)
    out = b.add(b.mul(normalized, scale_b), offset_b)
    return b.tuple([out, mean, var])


def expand_inference(bn: Instruction, b: _BatchNormBuilder) -> Instruction:
    # batch-norm-inference(X, scale, offset, mean, var) =>
    #   X * s + (offset - mean * s)   where s = scale * rsqrt(var + eps), both broadcast along the feature
    x, scale, offset, mean, var = bn.operands
    epsilon = b.splat(b.number(b.eps), b.feature_shape)
    true_scale = b.mul(scale, b.emit("rsqrt", [b.add(var, epsilon)]))
    true_shift = b.sub(offset, b.mul(mean, true_scale))
    return b.add(b.mul(x, b.along_feature(true_scale)), b.along_feature(true_shift))


def expand_grad(bn: Instruction, b: _BatchNormBuilder) -> Instruction:
    # batch-norm-grad(X, scale, mean, var, dY) =>
    #   grad_offset = sum(dY)
    #   grad_scale  = sum(dY * (X - mean)) * rsqrt(var + eps)
    #   grad_X      = scale * rsqrt(var + eps) / N
    #                 * (N * dY - sum(dY) - (X - mean) * sum(dY * (X - mean)) / (var + eps))
    x, scale, mean, var, grad_out = bn.operands
    count = b.count()
    zero = b.number(0)
    eps_scalar = b.number(b.eps)
    eps_full, eps_feature = b.splat(eps_scalar, b.shape), b.splat(eps_scalar, b.feature_shape)
    scale_b, var_b = b.along_feature(scale), b.along_feature(var)
    var_eps_b = b.add(var_b, eps_full)
    rsqrt_b = b.emit("rsqrt", [var_eps_b])
    rsqrt = b.emit("rsqrt", [b.add(var, eps_feature)])
    centered = b.sub(x, b.along_feature(mean))
    sum_dy_centered = b.sum_per_feature(b.mul(grad_out, centered), zero)
    grad_offset = b.sum_per_feature(grad_out, zero)
    grad_scale = b.mul(sum_dy_centered, rsqrt)
    i2 = b.along_feature(grad_offset)
    i5 = b.div(b.mul(b.along_feature(sum_dy_centered), centered), var_eps_b)
    coefficient = b.div(b.mul(scale_b, rsqrt_b), b.splat(count, b.shape))
    i1 = b.mul(grad_out, b.splat(count, b.shape))
    i6 = b.sub(b.sub(i1, i2), i5)
    grad_x = b.mul(coefficient, i6)
    return b.tuple([grad_x, grad_scale, grad_offset])


EXPANSIONS = {
    "batch-norm-training": expand_training,
    "batch-norm-inference": expand_inference,
    "batch-norm-grad": expand_grad,
}


class BatchNormExpander(OpExpanderPass):
    name = "batchnorm_expander"
    opcodes = frozenset({"batch-norm-training", "batch-norm-inference", "batch-norm-grad"})

    def __init__(self, rewrite_training_op: bool = True, rewrite_inference_op: bool = True,
                 rewrite_grad_op: bool = True):
        self.enabled = {"batch-norm-training": rewrite_training_op, "batch-norm-inference": rewrite_inference_op,
                        "batch-norm-grad": rewrite_grad_op}

    def matches(self, inst: Instruction) -> bool:
        return self.enabled.get(inst.opcode, False) and not any(inst.operands[0].shape.dynamic)

    def expand(self, inst: Instruction) -> Instruction:
        return EXPANSIONS[inst.opcode](inst, _BatchNormBuilder(inst))
