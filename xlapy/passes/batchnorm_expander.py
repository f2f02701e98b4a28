"""BatchNormExpander: batch-norm-training / -inference / -grad => elementwise ops, broadcasts and reduces.

Follows XLA's batchnorm_expander: statistics are sums over every dimension except `feature_index`
(reduces with a scalar add computation added to the module), per-feature values are broadcast along
`feature_index`, the variance is the biased E[X^2] - E[X]^2, and everything is computed in the operand's
element type. The element count per feature is a constant (XLA reads it with get-dimension-size so that
dynamic shapes work; a batch norm over a dynamic dimension is left alone here).
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module, Shape
from .build import constant, emit
from .op_expander import OpExpanderPass

OPCODES = ("batch-norm-training", "batch-norm-inference", "batch-norm-grad")


def scalar_add_computation(module: Module, element_type: str) -> Computation:
    """A new `scalar_add_computation` (x, y) -> x + y, placed first in the module (callees before callers)."""
    s = Shape.scalar(element_type)
    lhs = Instruction("parameter", s, (), {}, "scalar_lhs", parameter_number=0)
    rhs = Instruction("parameter", s, (), {}, "scalar_rhs", parameter_number=1)
    comp = Computation("scalar_add_computation", [lhs, rhs])
    comp.root = comp.add_instruction(Instruction("add", s, [lhs, rhs], {}, "add"))
    module.add_computation(comp)
    module.computations.insert(0, module.computations.pop())
    return comp


class _Builder:
    """Emits the pieces of one expansion into the batch norm's computation."""

    def __init__(self, bn: Instruction, adder: Computation):
        self.comp = bn.parent
        self.x = bn.operands[0]
        self.shape = self.x.shape.without_layout()
        self.ptype = self.shape.element_type
        self.fi = bn.attrs["feature_index"]
        self.feature_shape = Shape.array(self.ptype, (self.shape.dims[self.fi],))
        self.reduce_dims = tuple(d for d in range(self.shape.rank) if d != self.fi)
        self.adder = adder
        self.eps = float(bn.attrs.get("epsilon", 0.001))

    def op(self, opcode: str, *operands: Instruction) -> Instruction:
        return emit(self.comp, opcode, list(operands))

    def scalar(self, value) -> Instruction:
        return constant(self.comp, value, self.ptype)

    def splat(self, scalar: Instruction, shape: Shape) -> Instruction:
        return emit(self.comp, "broadcast", [scalar], {"dimensions": ()}, shape=shape)

    def along_feature(self, v: Instruction) -> Instruction:
        """A per-feature vector broadcast to the operand's shape."""
        return emit(self.comp, "broadcast", [v], {"dimensions": (self.fi,)}, shape=self.shape)

    def sum_per_feature(self, v: Instruction, zero: Instruction) -> Instruction:
        return emit(self.comp, "reduce", [v, zero], {"dimensions": self.reduce_dims, "to_apply": self.adder},
                    shape=self.feature_shape)

    def count(self) -> Instruction:
        n = 1
        for d in self.reduce_dims:
            n *= self.shape.dims[d]
        return self.scalar(n)


def expand_training(bn: Instruction, b: _Builder) -> Instruction:
    # batch-norm-training(X, scale, offset) =>
    #   mean = sum(X) / N;  var = sum(X*X) / N - mean*mean
    #   tuple((X - mean) * rsqrt(var + eps) * scale + offset, mean, var)
    x, scale, offset = bn.operands
    zero = b.scalar(0)
    epsilon = b.splat(b.scalar(b.eps), b.shape)
    count = b.count()
    scale_b, offset_b = b.along_feature(scale), b.along_feature(offset)
    total = b.sum_per_feature(x, zero)
    squared_total = b.sum_per_feature(b.op("multiply", x, x), zero)
    mean = b.op("divide", total, b.splat(count, b.feature_shape))
    square_mean = b.op("divide", squared_total, b.splat(count, b.feature_shape))
    var = b.op("subtract", square_mean, b.op("multiply", mean, mean))
    rsqrt = b.op("rsqrt", b.op("add", b.along_feature(var), epsilon))
    normalized = b.op("multiply", b.op("subtract", x, b.along_feature(mean)), rsqrt)
    out = b.op("add", b.op("multiply", normalized, scale_b), offset_b)
    return emit(b.comp, "tuple", [out, mean, var])


def expand_inference(bn: Instruction, b: _Builder) -> Instruction:
    # batch-norm-inference(X, scale, offset, mean, var) =>
    #   X * s + (offset - mean * s)   where s = scale * rsqrt(var + eps), both broadcast along the feature
    x, scale, offset, mean, var = bn.operands
    epsilon = b.splat(b.scalar(b.eps), b.feature_shape)
    true_scale = b.op("multiply", scale, b.op("rsqrt", b.op("add", var, epsilon)))
    true_shift = b.op("subtract", offset, b.op("multiply", mean, true_scale))
    return b.op("add", b.op("multiply", x, b.along_feature(true_scale)), b.along_feature(true_shift))


def expand_grad(bn: Instruction, b: _Builder) -> Instruction:
    # batch-norm-grad(X, scale, mean, var, dY) =>
    #   grad_offset = sum(dY)
    #   grad_scale  = sum(dY * (X - mean)) * rsqrt(var + eps)
    #   grad_X      = scale * rsqrt(var + eps) / N
    #                 * (N * dY - sum(dY) - (X - mean) * sum(dY * (X - mean)) / (var + eps))
    x, scale, mean, var, grad_out = bn.operands
    count = b.count()
    zero = b.scalar(0)
    eps_scalar = b.scalar(b.eps)
    eps_full, eps_feature = b.splat(eps_scalar, b.shape), b.splat(eps_scalar, b.feature_shape)
    scale_b, var_b = b.along_feature(scale), b.along_feature(var)
    var_eps_b = b.op("add", var_b, eps_full)
    rsqrt_b = b.op("rsqrt", var_eps_b)
    rsqrt = b.op("rsqrt", b.op("add", var, eps_feature))
    centered = b.op("subtract", x, b.along_feature(mean))
    sum_dy_centered = b.sum_per_feature(b.op("multiply", grad_out, centered), zero)
    grad_offset = b.sum_per_feature(grad_out, zero)
    grad_scale = b.op("multiply", sum_dy_centered, rsqrt)
    i2 = b.along_feature(grad_offset)
    i5 = b.op("divide", b.op("multiply", b.along_feature(sum_dy_centered), centered), var_eps_b)
    coefficient = b.op("divide", b.op("multiply", scale_b, rsqrt_b), b.splat(count, b.shape))
    i1 = b.op("multiply", grad_out, b.splat(count, b.shape))
    i6 = b.op("subtract", b.op("subtract", i1, i2), i5)
    grad_x = b.op("multiply", coefficient, i6)
    return emit(b.comp, "tuple", [grad_x, grad_scale, grad_offset])


EXPANSIONS = {
    "batch-norm-training": expand_training,
    "batch-norm-inference": expand_inference,
    "batch-norm-grad": expand_grad,
}


class BatchNormExpander(OpExpanderPass):
    name = "batchnorm_expander"

    def __init__(self, rewrite_training_op: bool = True, rewrite_inference_op: bool = True,
                 rewrite_grad_op: bool = True):
        self.enabled = {"batch-norm-training": rewrite_training_op, "batch-norm-inference": rewrite_inference_op,
                        "batch-norm-grad": rewrite_grad_op}
        self._adders: dict[str, Computation] = {}

    def matches(self, inst: Instruction) -> bool:
        return self.enabled.get(inst.opcode, False) and not any(inst.operands[0].shape.dynamic)

    def expand(self, inst: Instruction) -> Instruction:
        module = inst.parent.parent
        ptype = inst.operands[0].shape.element_type
        needs_adder = inst.opcode != "batch-norm-inference"
        adder = self._adders.get(ptype) if needs_adder else None
        if needs_adder and (adder is None or adder.parent is not module):
            adder = self._adders[ptype] = scalar_add_computation(module, ptype)
        return EXPANSIONS[inst.opcode](inst, _Builder(inst, adder))
