"""lax ops that are neither math nor data movement: optimization_barrier (a fence for the optimizer) and
rng_bit_generator (random bits from an explicit key state). stop_gradient, a marker for autodiff, is in
transforms.py beside the autodiff it talks to.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..hlo import Shape
from ..passes.build import make
from .lax_elementwise import bitcast_convert_type
from .lax_operands import hlo_shape
from .lax_shapes import reshape
from .pytree import tree_flatten, tree_unflatten
from .tracer import aval, bind, current_trace, results_of


def optimization_barrier(operand):
    """Stops the optimizer from moving computation across this point; takes and returns a pytree."""
    leaves, tree = tree_flatten(operand)
    return tree_unflatten(tree, _barrier_list(leaves))


def _barrier_list(leaves):
    trace = current_trace()
    if trace is None:       # eager: the barrier has no effect on values
        return leaves
    ops = [trace.lift(v) for v in leaves]
    tup = trace.comp.add_instruction(make("tuple", [o.inst for o in ops], name="optimization_barrier"))
    return results_of(trace, make("opt-barrier", [tup], name="optimization_barrier"))


def rng_bit_generator(key, shape: Sequence[int], dtype=np.uint32, algorithm: str = "default"):
    """(new_key, random bits of `shape`) from a u32[4] (or u64[2]) key, as JAX lowers it."""
    ka = aval(key)
    dtype = np.dtype(dtype)
    alg = {"default": "rng_default", "three_fry": "rng_three_fry", "threefry": "rng_three_fry",
           "philox": "rng_philox"}[str(getattr(algorithm, "name", algorithm)).lower()]
    state = key
    if ka.dtype == np.uint32:
        state = bitcast_convert_type(reshape(key, (ka.size // 2, 2)), np.uint64)
    state_shape = aval(state).hlo_shape
    out_shape = Shape.tuple_of([state_shape, hlo_shape(dtype, tuple(shape))])
    new_state, bits = bind("rng-bit-generator", [state], {"algorithm": alg}, shape=out_shape,
                           name="rng_bit_generator")
    if ka.dtype == np.uint32:
        new_state = reshape(bitcast_convert_type(new_state, np.uint32), ka.shape)
    return new_state, bits

