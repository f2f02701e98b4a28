"""xlapy.vmap's API: in_axes/out_axes as ints, None and pytrees, axis_size, keyword arguments, JAX's errors
with their messages, composition with jit/grad/vmap and control flow, and JAX's own outputs for random
functions mapped over keys (tests/frontend/vmap_data/jax_vmap.npz, from tools/gen_vmap_data.py). Both
backends (conftest's xlapy_backend)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax, random
from xlapy.errors import XlapyError

DATA = np.load(Path(__file__).parent / "vmap_data" / "jax_vmap.npz")
X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7


def close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


# -- axes specs and pytrees --------------------------------------------------------------------------------
def test_in_axes_ints_none_and_negative():
    y = np.ones(4, np.float32) * 2
    close(xlapy.vmap(lambda a, b: a * b, in_axes=(0, None))(X, y), X * y)
    close(xlapy.vmap(lambda a: a.sum(), in_axes=-1)(X), X.sum(0))
    close(xlapy.vmap(lambda a: a.sum(), in_axes=[1])(X), X.sum(0))      # a list at the top is a tuple


def test_in_axes_pytrees_dicts_lists_and_none_leaves():
    params = {"w": np.ones((4, 2), np.float32), "b": np.arange(3 * 2, dtype=np.float32).reshape(3, 2)}

    def f(p, xs):
        return xs[0] @ p["w"] + p["b"] + xs[1]
    out = xlapy.vmap(f, in_axes=({"w": None, "b": 0}, [0, None]))(params, [X, np.float32(1)])
    close(out, X @ params["w"] + params["b"] + 1)


def test_kwargs_are_mapped_along_axis_0():
    close(xlapy.vmap(lambda x, *, s: x * s)(X, s=np.arange(3, dtype=np.float32)), X * np.arange(3)[:, None])


def test_out_axes_pytree_none_and_negative():
    def f(x):
        return {"row": x, "total": x.sum(), "const": xnp.float32(3)}
    out = xlapy.vmap(f, out_axes={"row": -1, "total": 0, "const": None})(X)
    close(out["row"], X.T)
    close(out["total"], X.sum(1))
    assert np.asarray(out["const"]).shape == ()


def test_unbatched_output_is_broadcast_to_out_axes():
    out = xlapy.vmap(lambda x: (x, xnp.ones(2)), out_axes=(0, 1))(X)
    assert np.asarray(out[1]).shape == (2, 3)


def test_axis_size_when_nothing_is_mapped():
    out = xlapy.vmap(lambda x: x + 1, in_axes=None, axis_size=5)(np.float32(2))
    close(out, np.full(5, 3, np.float32))
    assert np.asarray(xlapy.vmap(lambda: xnp.zeros(2), axis_size=4)()).shape == (4, 2)


def test_weak_types_and_dtypes_are_kept():
    out = xlapy.vmap(lambda x: x * 2)(np.arange(3, dtype=np.int32))
    assert np.asarray(out).dtype == np.int32
    assert xlapy.vmap(lambda x: x + 1.5)(X).dtype == np.float32


# -- errors -----------------------------------------------------------------------------------------------
def test_inconsistent_sizes_name_the_sizes_and_the_arguments():
    with pytest.raises(ValueError, match=r"vmap got inconsistent sizes for array axes to be mapped:\n"
                                         r"  \* one axis had size 3: axis 0 of argument x of type f32\[3,4\];\n"
                                         r"  \* one axis had size 2: axis 0 of argument y of type f32\[2\]") as e:
        xlapy.vmap(lambda x, y: x)(X, np.ones(2, np.float32))
    assert isinstance(e.value, XlapyError)


def test_inconsistent_sizes_with_axis_size_and_most_axes():
    def f(a, b, c):
        return a
    with pytest.raises(ValueError, match=r"the `axis_size` argument was 2;\n  \* most axes \(3 of them\) had size 3"):
        xlapy.vmap(f, axis_size=2)(X, X, X)


def test_nothing_mapped_without_axis_size():
    with pytest.raises(ValueError, match="vmap must have at least one non-None value in in_axes or axis_size must "
                                         "be specified"):
        xlapy.vmap(lambda x: x, in_axes=None)(X)
    with pytest.raises(ValueError, match="vmap wrapped function must be passed at least one argument"):
        xlapy.vmap(lambda: 1.0)()


def test_in_axes_out_of_range():
    with pytest.raises(ValueError, match=r"vmap was requested to map its argument along axis 2, which implies that "
                                         r"its rank should be at least 3, but is only 2 \(its shape is \(3, 4\)\)"):
        xlapy.vmap(lambda x: x, in_axes=2)(X)
    with pytest.raises(ValueError, match="rank should be at least 3"):
        xlapy.vmap(lambda x: x, in_axes=-3)(X)


def test_out_axes_none_for_a_batched_output():
    with pytest.raises(ValueError, match=r"at vmap out_axes, got axis spec None but output was batched on axis 0"):
        xlapy.vmap(lambda x: x * 2, out_axes=None)(X)
    with pytest.raises(ValueError, match=r"vmap has mapped output \(axis_name=i\) but out_axes is None"):
        xlapy.vmap(lambda x: x * 2, out_axes=None, axis_name="i")(X)
    close(xlapy.vmap(lambda x: xnp.float32(1), out_axes=None)(X), 1.0)


def test_bad_axes_types_are_type_errors():
    with pytest.raises(TypeError, match="vmap in_axes must be an int, None, or a tuple of entries"):
        xlapy.vmap(lambda x: x, in_axes="0")
    with pytest.raises(TypeError, match=r"vmap in_axes must be an int, None, or \(nested\) container"):
        xlapy.vmap(lambda x: x, in_axes=(0.5,))
    with pytest.raises(TypeError, match=r"vmap out_axes must be an int, None, or \(nested\) container"):
        xlapy.vmap(lambda x: x, out_axes=[True])
    with pytest.raises(XlapyError):
        xlapy.vmap(lambda x: x, in_axes="0")


def test_in_axes_tuple_length_and_prefix_mismatch():
    with pytest.raises(ValueError, match=r"but got len\(in_axes\)=2, len\(args\)=1"):
        xlapy.vmap(lambda x: x, in_axes=(0, 0))(X)
    with pytest.raises(ValueError, match="vmap in_axes specification must be a tree prefix of the corresponding "
                                         "value"):
        xlapy.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": X})
    with pytest.raises(ValueError, match="vmap out_axes specification must be a tree prefix"):
        xlapy.vmap(lambda x: x, out_axes=(0, 0))(X)


def test_a_collective_over_the_axis_name_raises_clearly():
    from xlapy.frontend.tracer import bind

    def f(x):
        return bind("all-reduce", [x], {"to_apply": lax.monoid_computation("add", np.float32, "sum")},
                    shape=x.aval.hlo_shape)
    with pytest.raises(XlapyError, match=r"collectives over a vmap axis \(axis_name='i'\) are not supported yet"):
        xlapy.vmap(f, axis_name="i")(X)


def test_spmd_axis_name_is_accepted_and_ignored():
    close(xlapy.vmap(lambda x: x * 2, spmd_axis_name="data")(X), X * 2)


# -- composition ------------------------------------------------------------------------------------------
def test_nested_vmap_is_an_outer_product():
    a, b = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32)
    outer = xlapy.vmap(xlapy.vmap(lambda x, y: x * y, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    close(outer, np.outer(a, b))
    close(xlapy.vmap(xlapy.vmap(xnp.sum, in_axes=1), in_axes=1)(X.reshape(3, 2, 2)), X.reshape(3, 2, 2).sum(0))


def test_vmap_of_jit_and_jit_of_vmap():
    f = xlapy.jit(lambda x: xnp.tanh(x) @ xnp.ones((4, 2), np.float32))
    want = np.tanh(X) @ np.ones((4, 2), np.float32)
    close(xlapy.vmap(f)(X), want)
    jv = xlapy.jit(xlapy.vmap(lambda x: xnp.tanh(x) @ xnp.ones((4, 2), np.float32)))
    close(jv(X), want)
    close(jv(X * 2), np.tanh(X * 2) @ np.ones((4, 2), np.float32))


def f_scalar(x):
    return xnp.sum(xnp.sin(x) * x ** 2)


def test_vmap_of_grad_and_grad_of_vmap():
    per = np.stack([np.asarray(xlapy.grad(f_scalar)(x)) for x in X])
    close(xlapy.vmap(xlapy.grad(f_scalar))(X), per)
    close(xlapy.grad(lambda xs: xlapy.vmap(f_scalar)(xs).sum())(X), per)
    close(xlapy.vmap(xlapy.grad(lambda x: xnp.sum(xnp.tanh(x) ** 2)))(DATA["xs"]), DATA["grad_of_sum"])


def test_second_order_through_vmap():
    """check_grads-style: grad of grad through vmap matches the per-example second derivative."""
    g2 = xlapy.grad(xlapy.grad(lambda x: xnp.sin(x) * x ** 3))
    xs = np.linspace(-1, 1, 5, dtype=np.float32)
    want = np.array([float(g2(x)) for x in xs], np.float32)
    close(xlapy.vmap(g2)(xs), want, rtol=1e-4)
    gv = xlapy.grad(lambda v: xlapy.vmap(xlapy.grad(lambda x: xnp.sin(x) * x ** 3))(v).sum())
    close(gv(xs), want, rtol=1e-4)
    close(xlapy.jvp(xlapy.vmap(lambda x: xnp.sin(x) * x ** 3), (xs,), (np.ones(5, np.float32),))[1],
          np.cos(xs) * xs ** 3 + 3 * np.sin(xs) * xs ** 2, rtol=1e-4)


def test_vmap_inside_control_flow_bodies():
    def body(c, x):
        return c + xlapy.vmap(lambda r: r * x)(xnp.ones((2, 2), np.float32)).sum(), c
    carry, _ = lax.scan(body, np.float32(0), np.arange(3, dtype=np.float32))
    close(carry, 4 * 3.0)
    out = lax.cond(True, lambda v: xlapy.vmap(xnp.sum)(v), lambda v: v[:, 0], X)
    close(out, X.sum(1))
    w = lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, xlapy.vmap(lambda r: r + 1.0)(c[1])), (0, X))
    close(w[1], X + 2)


def test_vmap_of_control_flow_matches_jax():
    close(xlapy.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + 1.0),
                                              (0, np.float32(1.0)))[1])(DATA["ns"]), DATA["while"])
    close(xlapy.vmap(lambda x: lax.cond(x.sum() > 0, xnp.sin, xnp.cos, x))(DATA["xs"]), DATA["cond"])


def test_vmap_of_fori_loop_with_batched_bound_becomes_a_masked_loop():
    out = xlapy.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(np.array([0, 1, 4, 2], np.int32))
    np.testing.assert_array_equal(np.asarray(out), [0, 0, 6, 1])


def test_derived_hlo_has_no_per_example_loop_for_vectorized_rules():
    text = xlapy.jit(xlapy.vmap(lambda a, b: xnp.tanh(a @ b).sum(0))).lower(
        np.ones((5, 2, 3), np.float32), np.ones((5, 3, 4), np.float32)).as_text()
    assert "while" not in text and "lhs_batch_dims={0}" in text


# -- random keys, as JAX ------------------------------------------------------------------------------------
KEYS = DATA["keys"]


@pytest.mark.parametrize("name, fn", [
    ("bits", lambda k: random.bits(k, (5,))),
    ("uniform", lambda k: random.uniform(k, (2, 3))),
    ("split", lambda k: random.split(k, 3)),
    ("randint", lambda k: random.randint(k, (4,), 0, 10)),
])
def test_random_over_keys_gives_jax_bits(name, fn):
    got = np.asarray(xlapy.vmap(fn)(KEYS))
    assert got.dtype == DATA[name].dtype
    np.testing.assert_array_equal(got, DATA[name])


def test_random_normal_and_fold_in_over_keys_match_jax():
    np.testing.assert_array_equal(np.asarray(xlapy.vmap(random.fold_in)(KEYS, DATA["data"])), DATA["fold_in"])
    close(xlapy.vmap(lambda k: random.normal(k, (6,)))(KEYS), DATA["normal"], rtol=1e-6, atol=1e-6)
    close(xlapy.vmap(lambda k: random.normal(k, (2,)), out_axes=1)(KEYS), DATA["normal_out_axes_1"],
          rtol=1e-6, atol=1e-6)



def test_numpy_vectorize_over_vmap():
    f = xnp.vectorize(lambda a, b: a * b + 1)
    close(f(X, np.float32(2)), X * 2 + 1)
    g = xnp.vectorize(lambda v: v.sum(), signature="(n)->()")
    close(g(X), X.sum(1))
