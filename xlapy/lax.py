"""xlapy.lax: JAX's lax API. Each function builds HLO through `bind` (see xlapy/frontend/__init__.py), so it
works traced under jit and eagerly on Arrays. Signatures and the HLO emitted follow JAX.

lax ops do not broadcast (except rank-0 operands) and do not promote dtypes, except that weakly typed
values (Python scalars) take the dtype of the other operands: `lax.add(x_f32, 1)` is f32.

This module is a façade, as jax/lax/__init__.py is over jax/_src/lax: it holds no logic, only what xlapy.lax
exports and where each name is implemented.

    frontend/lax_operands.py     the operand rules: convert_element_type, coerce_same, coerce_same_dtype
    frontend/lax_elementwise.py  elementwise math and bitwise ops, comparisons, select, clamp, bit conversions
    frontend/lax_shapes.py       broadcast, reshape, transpose, slicing, concatenate, pad, rev, iota, full
    frontend/lax_dot_conv.py     dot_general, dot, conv_general_dilated, conv_transpose, Precision
    frontend/lax_reduce.py       reductions, windows, cumulative ops, sort, top_k, gather, scatter
    frontend/control_flow.py     while_loop, fori_loop, cond, switch, scan, map
    frontend/lax_special.py      optimization_barrier, rng_bit_generator
    frontend/lax_special_math.py lgamma, digamma, polygamma, zeta, igamma(c), betainc, erfc, erf_inv, bessel_i0e/i1e
    frontend/lax_fft.py          fft, FftType
    frontend/lax_more.py         the rest, composed from the families above: asin..atanh, nextafter, select_n,
                                 *_in_dim slicing, split/stack/tile, cumlogsumexp, conv helpers, scatter_sub ...
    frontend/lax_linalg.py       the submodule `linalg` (jax.lax.linalg): cholesky, qr, eigh, lu, svd, ...
    frontend/transforms.py       stop_gradient
    frontend/parallel/collectives.py  psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all, axis_index
    frontend/tracer.py           aval (the abstract value of any operand)
"""
from .frontend.control_flow import cond, fori_loop, map, scan, switch, while_loop
from .frontend.lax_dot_conv import (Precision, conv_general_dilated, conv_transpose, dot, dot_general,
                                    padtype_to_pads)
from .frontend.lax_elementwise import (RoundingMethod, abs, add, atan2, bitcast_convert_type, bitwise_and,
                                       bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil, clamp, clz, complex, cos,
                                       div, eq, erf, exp, expm1, floor, ge, gt, imag, integer_pow, is_finite, le,
                                       log, log1p, logistic, lt, max, min, mul, ne, neg, population_count, pow, real,
                                       reduce_precision, rem, round, rsqrt, select, shift_left,
                                       shift_right_arithmetic, shift_right_logical, sign, sin, sqrt, sub, tan, tanh)
from .frontend.lax_fft import FftType, fft
from .frontend import lax_linalg as linalg
from .frontend.lax_more import (AccuracyMode, ConvDimensionNumbers, ConvGeneralDilatedDimensionNumbers,
                                DotAlgorithm, DotAlgorithmPreset,
                                DotDimensionNumbers, PrecisionLike, RaggedDotDimensionNumbers, RandomAlgorithm,
                                Token, Tolerance, acos, acosh, after_all, approx_max_k, approx_min_k, asin, asinh,
                                associative_scan, atan, atanh, batch_matmul, broadcast_like, broadcast_shapes,
                                broadcast_to_rank, collapse, composite, conj, conv, conv_dimension_numbers,
                                conv_general_dilated_local, conv_general_dilated_patches,
                                conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple,
                                conv_transpose_shape_tuple, conv_with_general_padding, cosh, create_token,
                                cumlogsumexp, custom_linear_solve, custom_root, dce_sink, dtype,
                                dynamic_slice_in_dim, dynamic_update_slice_in_dim, empty, exp2, index_in_dim,
                                index_take, mulhi, nextafter, platform_dependent, ragged_dot, ragged_dot_general,
                                reciprocal, reduce_window_shape_tuple, rng_uniform, scaled_dot, scatter_apply,
                                scatter_sub, select_n, shape_as_value, sinh, slice_in_dim, split, square, stack,
                                stage, tile, unstack)
from .frontend.lax_operands import coerce_same, coerce_same_dtype, convert_element_type
from .frontend.lax_reduce import (GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, argmax, argmin,
                                  cummax, cummin, cumprod, cumsum, gather, monoid_computation, reduce, reduce_and,
                                  reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum, reduce_window,
                                  reduce_xor, scalar_computation, scatter, scatter_add, scatter_max, scatter_min,
                                  scatter_mul, sort, sort_key_val, top_k)
from .frontend.lax_shapes import (broadcast, broadcast_in_dim, broadcasted_iota, concatenate, dynamic_index_in_dim,
                                  dynamic_slice, dynamic_update_index_in_dim, dynamic_update_slice, expand_dims, full,
                                  full_like, iota, pad, reshape, rev, slice, squeeze, transpose, zeros_like_array)
from .frontend.lax_special import optimization_barrier, rng_bit_generator
from .frontend.lax_special_math import (bessel_i0e, bessel_i1e, betainc, digamma, erf_inv, erfc, igamma,
                                        igamma_grad_a, igammac, lgamma, polygamma, random_gamma_grad, zeta)
from .frontend.tracer import aval
from .frontend.transforms import stop_gradient
from .frontend.parallel.collectives import (all_gather, all_to_all, axis_index, axis_size, pbroadcast, pcast, pmax,
                                            pmean, pmin, ppermute, pshuffle, psum, psum_scatter, pswapaxes)
from .frontend.parallel.point_to_point import precv, psend, ragged_all_to_all
from .frontend.parallel.sharded_jit import with_sharding_constraint

# Not lax's API, but reachable as xlapy.lax.<name> before this module became a façade; kept so that no name
# disappears, and left out of __all__.
from .errors import XlapyError
from .frontend import dtypes
from .frontend.tracer import ShapedArray, Tracer, bind, concrete_value, user_frame
from .hlo import Shape, type_name_of_dtype
from .hlo.attrs import PadDim, SliceRange, Window, WindowDim

__all__ = [
    # elementwise
    "abs", "add", "atan2", "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "cbrt", "ceil", "clamp", "clz", "complex", "convert_element_type", "cos", "div", "eq", "erf", "exp", "expm1",
    "floor", "ge", "gt", "imag", "integer_pow", "is_finite", "le", "log", "log1p", "logistic", "lt", "max", "min",
    "mul", "ne", "neg", "population_count", "pow", "real", "reduce_precision", "rem", "round", "RoundingMethod",
    "rsqrt", "select", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sqrt", "sub",
    "tan", "tanh",
    # shapes and data movement
    "broadcast", "broadcast_in_dim", "broadcasted_iota", "concatenate", "dynamic_index_in_dim", "dynamic_slice",
    "dynamic_update_index_in_dim", "dynamic_update_slice", "expand_dims", "full", "full_like", "iota", "pad",
    "reshape", "rev", "slice", "squeeze", "transpose", "zeros_like_array",
    # contractions
    "Precision", "conv_general_dilated", "conv_transpose", "dot", "dot_general", "padtype_to_pads",
    # reductions, windows, sorting, gather and scatter
    "argmax", "argmin", "cummax", "cummin", "cumprod", "cumsum", "gather", "GatherDimensionNumbers",
    "GatherScatterMode", "reduce", "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod",
    "reduce_sum", "reduce_window", "reduce_xor", "scatter", "scatter_add", "scatter_max", "scatter_min",
    "scatter_mul", "ScatterDimensionNumbers", "sort", "sort_key_val", "top_k",
    # control flow
    "cond", "fori_loop", "map", "scan", "switch", "while_loop",
    # Fourier transforms
    "fft", "FftType",
    # linear algebra (the namespace xlapy.lax.linalg)
    "linalg",
    # special functions
    "bessel_i0e", "bessel_i1e", "betainc", "digamma", "erf_inv", "erfc", "igamma", "igamma_grad_a", "igammac",
    "lgamma", "polygamma", "random_gamma_grad", "zeta",
    # markers and state
    "optimization_barrier", "rng_bit_generator", "stop_gradient",
    # the rest of jax.lax over the families above (frontend/lax_more.py)
    "AccuracyMode", "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm",
    "DotAlgorithmPreset",
    "DotDimensionNumbers", "PrecisionLike", "RaggedDotDimensionNumbers", "RandomAlgorithm", "Token", "Tolerance",
    "acos", "acosh", "after_all", "approx_max_k", "approx_min_k", "asin", "asinh", "associative_scan", "atan",
    "atanh", "batch_matmul", "broadcast_like", "broadcast_shapes", "broadcast_to_rank", "collapse", "composite",
    "conj", "conv", "conv_dimension_numbers", "conv_general_dilated_local", "conv_general_dilated_patches",
    "conv_general_permutations", "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple",
    "conv_with_general_padding", "cosh", "create_token", "cumlogsumexp", "custom_linear_solve", "custom_root",
    "dce_sink", "dtype", "dynamic_slice_in_dim", "dynamic_update_slice_in_dim", "empty", "exp2", "index_in_dim",
    "index_take", "mulhi", "nextafter", "platform_dependent", "ragged_dot", "ragged_dot_general", "reciprocal",
    "reduce_window_shape_tuple", "rng_uniform", "scaled_dot", "scatter_apply", "scatter_sub", "select_n",
    "shape_as_value", "sinh", "slice_in_dim", "split", "square", "stack", "stage", "tile", "unstack",
    "with_sharding_constraint",
    # collectives over named axes (frontend/parallel/collectives.py)
    "all_gather", "all_to_all", "axis_index", "axis_size", "pbroadcast", "pcast", "pmax", "pmean", "pmin", "ppermute",
    "pshuffle", "psum", "psum_scatter", "pswapaxes",
    # point to point and ragged (frontend/parallel/point_to_point.py)
    "precv", "psend", "ragged_all_to_all",
    # xlapy's helpers for writing ops (frontend/__init__.py, "How to add an op")
    "aval", "coerce_same", "coerce_same_dtype", "monoid_computation", "scalar_computation",
]
