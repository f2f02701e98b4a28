"""The front end: tracing Python functions into HLO, jit, Array, pytrees, and the lax ops built on them.

Two layers (tests/unit/test_layering.py checks that imports point down):
  * the core: tracer.py (Trace, Tracer, bind, aval), dtypes.py, pytree.py, array.py, ops_mixin.py (the operators
    and methods Array and Tracer declare; xlapy/numpy/array_methods.py defines them), eager.py, jit.py
    (signature.py, warm_call.py), autodiff/ and transforms.py (grad, vjp, jvp, stop_gradient);
  * the ops over it: lax_operands.py (lax's operand rules), lax_elementwise.py, lax_shapes.py, lax_dot_conv.py,
    lax_reduce.py, lax_special.py, control_flow.py, and numpy's operators.py and indexing.py. xlapy/lax.py is the
    façade that exports them as JAX's lax API.

How tracing works
-----------------
There is one IR. A `Trace` (tracer.py) records one HLO `Computation`; a `Tracer` is an abstract value
(`ShapedArray`: shape, dtype, weak_type) bound to the instruction that computes it. Traces form a stack:
`jit` pushes a root trace whose parameters are the flattened arguments; `while_loop`, `cond`, `scan`,
`reduce`, `sort` ... push nested traces for their bodies (`trace_function`). A nested trace that uses a
tracer of an enclosing trace *captures* it as an extra parameter (`trace.captures`), and the control-flow
op passes it in (while: in the loop tuple; conditional: in the branch operand).

Every op goes through ONE function, `bind(opcode, operands, attrs, shape=None, name=None, weak_type=False)`:
  * inside a trace it lifts the operands into the innermost trace (concrete values become constants,
    outer tracers are captured), creates the instruction with `passes.build.make` (shape inferred unless
    given; shape errors are re-raised naming the op, the operand shapes and the user's file:line) and
    returns a Tracer — or a list of get-tuple-element Tracers when the result is a tuple;
  * outside any trace it runs the op eagerly (eager.py): the op alone becomes a tiny module whose
    parameters are the operands, compiled once per (module text, backend) and cached; it returns an
    `Array` (or a list of them). `eager_stats()` counts compiles and hits.
Several values passed as one HLO tuple operand are wrapped in `Packed([...])`.

How to add an op
----------------
A lax op goes in the frontend file of its family (lax_elementwise.py, lax_shapes.py, lax_dot_conv.py,
lax_reduce.py, control_flow.py, lax_special.py) and its name in xlapy/lax.py's import list and __all__; a numpy
function in the xlapy/numpy/ file of its family and xlapy/numpy/__init__.py; an nn function in xlapy/nn.py.
    def erfc(x):
        return bind("erfc-like-opcode", [x], name="erfc", weak_type=aval(x).weak_type)
Use `tracer.aval(x)` (also `xlapy.lax.aval`) to read any operand's ShapedArray (Tracer, Array, numpy value,
Python scalar), `lax_operands.coerce_same(name, *xs)` for lax's dtype/weak-type rule and `lax_error(name, msg)`
for its errors, `operators.promote_broadcast(name, *xs)` for numpy's (promotion + broadcasting),
`dtypes.promote` / `dtypes.result_type` for JAX's type lattice.
Ops that take a Python callable trace it with `tracer.trace_function` (see control_flow.py) or
`lax_reduce.scalar_computation` (reducers, comparators). Never call numpy on a Tracer: `bool()`, `int()`,
`float()`, `__index__` and `np.asarray` on a Tracer raise ConcretizationError naming the user's line.
Ops need no registration: an op is a Python function over `bind`; its semantics are the HLO opcode's.
A new array method (`x.foo()`) is declared in ops_mixin.ARRAY_METHODS and defined in xlapy/numpy/array_methods.py.

Markers for later transformations: `lax.stop_gradient` (transforms.py) emits `copy` with metadata
op_name="stop_gradient".

Public names
------------
jit, Jitted, Lowered, Compiled, explain_recompile, RecompilationWarning (jit.py); Array (also the abstract array
type: isinstance(tracer, Array) is True, as for jax.Array), asarray, is_concrete_array (array.py);
Tracer, ShapedArray, Trace, bind, Packed, current_trace, trace_function (tracer.py); pytree functions
(pytree.py, exported as xlapy.tree_util); dtypes.config (xlapy.config: enable_x64, default_backend);
default_backend() (backend.py: config.default_backend, else the backend registry's default);
eager_stats, clear_eager_cache (eager.py). The cost model behind `cost_analysis()` is xlapy/hlo/cost.py.
The rest of JAX's transformation API: custom_jvp, custom_vjp, checkpoint (custom_derivatives.py, over
autodiff/custom_rules.py), pure_callback (callbacks.py), jacfwd/jacrev/hessian/linearize/linear_transpose,
eval_shape, make_jaxpr and the device queries (api_transforms.py, a frontend-ops module over lax_shapes).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes, pytree
from .array import Array, asarray, is_concrete_array
from .backend import default_backend
from .dtypes import config
from .eager import clear_eager_cache, eager_stats
from .jit import Compiled, Jitted, Lowered, RecompilationWarning, clear_caches, explain_recompile, jit
from .tracer import Packed, ShapedArray, Trace, Tracer, bind, current_trace, trace_function


def device_get(tree: Any) -> Any:
    """Every Array leaf of `tree` as a numpy array."""
    return pytree.tree_map(lambda x: np.asarray(x) if is_concrete_array(x) else x, tree)


def device_put(tree: Any) -> Any:
    """Every array leaf of `tree` as an xlapy.Array."""
    return pytree.tree_map(lambda x: x if is_concrete_array(x) else Array(x), tree)


__all__ = ["jit", "Jitted", "Lowered", "Compiled", "explain_recompile", "RecompilationWarning", "Array",
           "asarray", "is_concrete_array", "Tracer", "ShapedArray", "Trace", "bind", "Packed", "current_trace", "trace_function",
           "pytree", "dtypes", "config", "eager_stats", "clear_eager_cache", "clear_caches", "device_get", "device_put",
           "default_backend"]
