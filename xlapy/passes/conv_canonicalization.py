"""ConvCanonicalization (XLA:CPU): every convolution into the layout the CPU convolution kernel expects.

Canonical dim_labels are input b01f (NHWC), kernel 01io (HWIO), output b01f. A convolution with other
labels becomes

    conv(X, W), dim_labels=L => transpose(conv(transpose(X), transpose(W)), dim_labels=b01f_01io->b01f)

The window, group counts and precision stay as they are: spatial dims keep their order, so the window
still describes the same dims. XLA runs this on the entry computation only and also rewrites canonical
convolutions that Eigen cannot run; here every non-fusion computation is visited and only the labels
decide. Identity transposes are not emitted.
"""
from __future__ import annotations

from ..hlo import Instruction, Shape
from ..hlo.attrs import ConvDimensionNumbers
from .build import emit, make
from .op_expander import OpExpanderPass


def canonical_labels(num_spatial: int) -> ConvDimensionNumbers:
    digits = "".join(str(i) for i in range(num_spatial))
    return ConvDimensionNumbers.parse(f"b{digits}f_{digits}io->b{digits}f")


def _transpose(x: Instruction, perm: tuple[int, ...]) -> Instruction:
    if perm == tuple(range(len(perm))):
        return x
    return emit(x.parent, "transpose", [x], {"dimensions": perm})


def inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)


def canonicalize_convolution(conv: Instruction) -> Instruction:
    # conv(X, W) with any dim_labels => transpose(conv_b01f_01io->b01f(transpose(X), transpose(W)))
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    x, w = conv.operands[:2]
    new_x = _transpose(x, (dn.input_batch, *dn.input_spatial, dn.input_feature))
    new_w = _transpose(w, (*dn.kernel_spatial, dn.kernel_input_feature, dn.kernel_output_feature))
    out_order = (dn.output_batch, *dn.output_spatial, dn.output_feature)
    attrs = dict(conv.attrs)
    attrs["dim_labels"] = canonical_labels(len(dn.input_spatial))
    out_dims = [conv.shape.dims[d] for d in out_order]
    new_conv = emit(conv.parent, "convolution", [new_x, new_w, *conv.operands[2:]], attrs,
                    shape=Shape.array(conv.shape.element_type, out_dims), name=conv.name)
    if out_order == tuple(range(len(out_order))):
        return new_conv
    return make("transpose", [new_conv], {"dimensions": inverse(out_order)}, shape=conv.shape.without_layout())


class ConvCanonicalization(OpExpanderPass):
    name = "convolution-canonicalization"

    def matches(self, inst: Instruction) -> bool:
        if inst.opcode != "convolution":
            return False
        dn = inst.attrs.get("dim_labels")
        return dn is not None and dn.known and dn.text != canonical_labels(len(dn.input_spatial)).text

    def expand(self, inst: Instruction) -> Instruction:
        return canonicalize_convolution(inst)
