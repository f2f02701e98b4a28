"""ConvCanonicalization (XLA:CPU): every convolution into one of the three layouts the CPU convolution kernels
expect.

| form            | dim_labels          | for                                                           |
|-----------------|---------------------|---------------------------------------------------------------|
| forward         | b01f_01io->b01f     | every convolution but those below (NHWC input, HWIO kernel)    |
| filter gradient | f01b_i01o->01bf     | a filter gradient (JAX's and XLA's labels for NHWC, f01b_i01o->01bf, or for NCHW, fb01_io01->fb01) whose batch (the forward channels) is at least MIN_FILTER_GRADIENT_BATCH or whose output features are at most FEW_FEATURES, and every one with batch_group_count > 1 |
| input gradient  | b01f_01oi->b01f     | an ungrouped f32/f64 convolution already in it (JAX's input gradient) with more than GEMM_FEATURES input and output features |

The input-gradient form is the forward form with the kernel's feature dims swapped (the forward HWIO kernel
read in place): the GEMM (backends/cpu/conv_gemm.py) reads it transposed by BLAS's flag instead of a transpose
per call (ResNet-50's 1x1 256->512 input gradient: 0.5 MB). Fewer features take the vector kernels, which want
the output features unit-stride.

An NCHW model's filter gradient (fb01_io01->fb01: activations and output gradient NCHW, result OIHW) takes the
same form: both big operands are then transposed to NHWC, the order the forward convolutions' own transposes
produce, so transpose motion (passes/transpose_motion.py) cancels them, where the forward form's transposes
(the activations' channels to the batch dim) cancel with nothing (unet/train: 219 -> 158 transposes, run -14%).

The filter-gradient form is the filter gradient of an NHWC convolution read in place: input NHWC (its batch N
is the convolution's input feature, its channels the batch), output gradient NHWC (kernel: N is the input
feature, channels the output feature), result HWIO. Rewriting it into the forward form transposes both big
operands; in place, the batch (the forward channels) is minor everywhere, so the depthwise filter gradient
(batch_group_count = channels) vectorizes over channels and the GEMM's patch matrix is copied in rows of channels
(backends/cpu/conv_gemm.py). A stem's 3 channels make the GEMM's patch rows too short: ResNet-50's 7x7 stem's
filter gradient ran 2.0 ms in place through the GEMM (its patches built 3 elements at a time and packed transposed
by BLAS), 1.2 ms in the forward form; with at most FEW_FEATURES output features backends/cpu/conv_filter_gradient.py
reads it in place without patches.
A convolution with other labels becomes

    conv(X, W), dim_labels=L => transpose(conv(transpose(X), transpose(W)), dim_labels=<form's labels>)

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


def _labels(template: str, num_spatial: int) -> ConvDimensionNumbers:
    """`template` with {s} standing for the spatial dims' digits (01 for 2-D)."""
    return ConvDimensionNumbers.parse(template.format(s="".join(str(i) for i in range(num_spatial))))


def canonical_labels(num_spatial: int) -> ConvDimensionNumbers:
    return _labels("b{s}f_{s}io->b{s}f", num_spatial)


def filter_gradient_labels(num_spatial: int) -> ConvDimensionNumbers:
    return _labels("f{s}b_i{s}o->{s}bf", num_spatial)


# the labels JAX gives a filter gradient, by the forward convolution's layout
_FILTER_GRADIENT_SOURCES = ("f{s}b_i{s}o->{s}bf", "fb{s}_io{s}->fb{s}")


MIN_FILTER_GRADIENT_BATCH = 8
FEW_FEATURES = 32       # backends/cpu/conv_filter_gradient.MAX_FEATURES: vectorized over the output features
GEMM_FEATURES = 64      # more: conv_gemm.py, never backends/cpu/conv_vector.py (WIDE_FEATURES)


def input_gradient_labels(num_spatial: int) -> ConvDimensionNumbers:
    return _labels("b{s}f_{s}oi->b{s}f", num_spatial)


def _gemm_input_gradient(conv: Instruction, dn: ConvDimensionNumbers) -> bool:
    types = {conv.shape.element_type, *(o.shape.element_type for o in conv.operands[:2])}
    return (int(conv.attrs.get("feature_group_count", 1)) == 1 and len(types) == 1 and types <= {"f32", "f64"}
            and min(conv.shape.dims[dn.output_feature], conv.operands[0].shape.dims[dn.input_feature]) > GEMM_FEATURES)


def target_labels(conv: Instruction) -> ConvDimensionNumbers:
    """The canonical form `conv` is rewritten into (the module docstring's table)."""
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    wgrad = filter_gradient_labels(len(dn.input_spatial))
    if int(conv.attrs.get("batch_group_count", 1)) > 1:
        return wgrad
    sources = {_labels(t, len(dn.input_spatial)).text for t in _FILTER_GRADIENT_SOURCES}
    if dn.text in sources and (conv.operands[0].shape.dims[dn.input_batch] >= MIN_FILTER_GRADIENT_BATCH
                               or conv.shape.dims[dn.output_feature] <= FEW_FEATURES):
        return wgrad
    if dn.text == input_gradient_labels(len(dn.input_spatial)).text and _gemm_input_gradient(conv, dn):
        return dn
    return canonical_labels(len(dn.input_spatial))


def _transpose(x: Instruction, perm: tuple[int, ...]) -> Instruction:
    if perm == tuple(range(len(perm))):
        return x
    return emit(x.parent, "transpose", [x], {"dimensions": perm})


def inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)


# each operand's dims by role: (batch, feature, spatial...) / (input feature, output feature, spatial...)
def _input_dims(dn: ConvDimensionNumbers) -> tuple[int, ...]:
    return (dn.input_batch, dn.input_feature, *dn.input_spatial)


def _kernel_dims(dn: ConvDimensionNumbers) -> tuple[int, ...]:
    return (dn.kernel_input_feature, dn.kernel_output_feature, *dn.kernel_spatial)


def _output_dims(dn: ConvDimensionNumbers) -> tuple[int, ...]:
    return (dn.output_batch, dn.output_feature, *dn.output_spatial)


def _permutation(new: tuple[int, ...], old: tuple[int, ...]) -> tuple[int, ...]:
    """The transpose dimensions moving each role from its dim in `old` to its dim in `new`."""
    perm = [0] * len(new)
    for n, o in zip(new, old):
        perm[n] = o
    return tuple(perm)


def canonicalize_convolution(conv: Instruction, labels: ConvDimensionNumbers | None = None) -> Instruction:
    # conv(X, W) with any dim_labels => transpose(conv_<form>(transpose(X), transpose(W)))
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    labels = labels or canonical_labels(len(dn.input_spatial))
    x, w = conv.operands[:2]
    new_x = _transpose(x, _permutation(_input_dims(labels), _input_dims(dn)))
    new_w = _transpose(w, _permutation(_kernel_dims(labels), _kernel_dims(dn)))
    out_order = _permutation(_output_dims(labels), _output_dims(dn))
    attrs = dict(conv.attrs)
    attrs["dim_labels"] = labels
    out_dims = [conv.shape.dims[d] for d in out_order]
    new_conv = emit(conv.parent, "convolution", [new_x, new_w, *conv.operands[2:]], attrs,
                    shape=Shape.array(conv.shape.element_type, out_dims), name=conv.name)
    if out_order == tuple(range(len(out_order))):
        return new_conv
    return make("transpose", [new_conv], {"dimensions": inverse(out_order)}, shape=conv.shape.without_layout())


class ConvCanonicalization(OpExpanderPass):
    name = "convolution-canonicalization"
    opcodes = frozenset({"convolution"})

    def matches(self, inst: Instruction) -> bool:
        if inst.opcode != "convolution":
            return False
        dn = inst.attrs.get("dim_labels")
        return dn is not None and dn.known and dn.text != target_labels(inst).text

    def expand(self, inst: Instruction) -> Instruction:
        return canonicalize_convolution(inst, target_labels(inst))
