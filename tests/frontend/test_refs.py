"""xlapy.ref (jax.ref): Ref, new_ref, empty_ref, freeze, free_ref, ds; and make_user_context. Expected values are
the ones JAX 0.10.2 gives for the same programs (checked by hand with .venv-models). jit, while_loop, fori_loop, scan,
cond and switch thread Refs as JAX does; the errors are xlapy's for the transformations that do not (grad, vmap)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import ds, empty_ref, free_ref, freeze, new_ref


def test_eager_reads_writes_and_repr():
    r = new_ref(xnp.arange(5.0))
    assert isinstance(r, xlapy.Ref) and r.shape == (5,) and r.dtype == np.float32 and r.ndim == 1
    assert r.size == 5 and len(r) == 5
    np.testing.assert_array_equal(r[1:3], [1.0, 2.0])
    r[1:3] = xnp.full(2, 7.0)
    r[...] += 1
    assert repr(r) == "Ref([1., 8., 8., 4., 5.], dtype=float32)"
    r.addupdate(2.0, 1)
    np.testing.assert_array_equal(r[...], [1, 10, 8, 4, 5])
    np.testing.assert_array_equal(r[ds(1, 2, 2)], [10, 4])
    assert repr(new_ref(3.0)) == "Ref(3., dtype=float32, weak_type=True)"


def test_writes_need_the_indexed_shape_and_the_refs_dtype():
    r = new_ref(xnp.zeros(5))
    with pytest.raises(ValueError, match=r"Invalid shape for `swap`.*Expected shape: \(2,\). Value shape: \(\)"):
        r[1:3] = 7.0
    with pytest.raises(ValueError, match="Invalid dtype for `swap`. Ref dtype: float32. Value dtype: int32"):
        r[0] = 5
    with pytest.raises(ValueError, match="Out of bound slice: start=4, size=2"):
        r[ds(4, 2)]


@xlapy.jit
def _local_cell(x, i):
    a = new_ref(x)
    a[0] += 5
    a[ds(i, 2)] = xnp.zeros(2)
    return freeze(a), a_read(x, i)


def a_read(x, i):
    b = new_ref(x * 2)
    return b[ds(i, 2)]


def test_refs_created_inside_jit_are_mutable_cells():
    for i, want_tail in ((2, [6, 1, 0, 0, 1, 1]), (5, [6, 1, 1, 1, 0, 0])):      # a traced start clamps (JAX's too)
        out, window = _local_cell(xnp.ones(6), i)
        np.testing.assert_array_equal(out, want_tail)
        np.testing.assert_array_equal(window, [2, 2])


def test_empty_ref_and_two_dimensional_slices():
    @xlapy.jit
    def f(x):
        e = empty_ref(xlapy.ShapeDtypeStruct((2, 3), np.float32))
        e[...] = x
        e[0, 1] = 9.0
        e[ds(1, 1), ds(0, 2)] = xnp.full((1, 2), 4.0)
        return freeze(e)
    np.testing.assert_array_equal(f(xnp.ones((2, 3))), [[1, 9, 1], [4, 4, 1]])


def test_refs_under_grad_and_vmap():
    def loss(x):
        r = new_ref(x)
        r[...] = r[...] * 3
        return freeze(r).sum()
    np.testing.assert_array_equal(xlapy.grad(loss)(xnp.ones(2)), [3.0, 3.0])
    np.testing.assert_array_equal(xlapy.vmap(lambda x: freeze(new_ref(x)) * 2)(xnp.ones((2, 3))), np.full((2, 3), 2.0))


def test_freeze_and_free_invalidate():
    r = new_ref(xnp.arange(3.0))
    np.testing.assert_array_equal(freeze(r), [0, 1, 2])
    with pytest.raises(xlapy.XlapyError, match="frozen"):
        r[...]
    q = new_ref(xnp.zeros(2))
    free_ref(q)
    with pytest.raises(xlapy.XlapyError, match="freed"):
        q[0] = 1.0
    with pytest.raises(xlapy.XlapyError, match="expected a Ref"):
        freeze(xnp.zeros(2))


def test_a_ref_argument_to_jit_is_written_back():
    # JAX 0.10.2: f(r, 1.0) -> 2.0, r = [1, 2, 3]; f(r, 2.0) -> 6.0, r = [3, 4, 5]
    r = new_ref(xnp.arange(3.0))

    @xlapy.jit
    def f(x_ref, y):
        x_ref[...] += y
        return x_ref[0] * 2
    assert float(f(r, 1.0)) == 2.0
    np.testing.assert_array_equal(r[...], [1, 2, 3])
    assert float(f(r, 2.0)) == 6.0 and f.trace_count == 1
    np.testing.assert_array_equal(r[...], [3, 4, 5])
    # a Ref and an array of the same aval are different signatures; the array's keeps its warm call
    np.testing.assert_array_equal(xlapy.jit(lambda a: a[...] * 2)(r), [6, 8, 10])
    g = xlapy.jit(lambda a: a[...] + 1.0)
    np.testing.assert_array_equal(g(xnp.zeros(3)), [1, 1, 1])
    np.testing.assert_array_equal(g(r), [4, 5, 6])
    assert g.trace_count == 2 and len(g._order) == 2       # each signature has its warm call
    np.testing.assert_array_equal(g(xnp.ones(3)), [2, 2, 2])
    assert "._value = r1" in f._order[0].source                  # the warm call writes the Ref back
    # the Ref's value is a parameter, its last value an output after f's own
    assert "ENTRY %main (x_ref: f32[3], y: f32[]) -> (f32[], f32[3])" in f.lower(r, 1.0).as_text()


def test_refs_closed_over_by_jit_are_threaded():
    # JAX: g(ones) -> 1.0, g(3 * ones) -> 4.0, c = [4, 4]; h reads the Ref's value at each call: 2.0, then 6.0
    c = new_ref(xnp.zeros(2))

    @xlapy.jit
    def g(x):
        c[...] = c[...] + x
        return c[1]
    assert float(g(xnp.ones(2))) == 1.0 and float(g(xnp.ones(2) * 3)) == 4.0
    np.testing.assert_array_equal(c[...], [4, 4])
    d = new_ref(np.float32(1.0))
    h = xlapy.jit(lambda x: x + d[...])
    assert float(h(1.0)) == 2.0
    d[...] = np.float32(5.0)
    assert float(h(1.0)) == 6.0 and h.trace_count == 1


def test_refs_written_in_loops_and_branches_are_carried():
    @xlapy.jit
    def scanned(xs):
        acc = new_ref(0.0)

        def body(c, x):
            acc[...] += x
            return c, None
        xlapy.lax.scan(body, 0.0, xs)
        return freeze(acc)

    @xlapy.jit
    def counted(n):
        acc = new_ref(xnp.zeros(3))

        def body(i, c):
            acc[i % 3] += i
            return c + 1
        c = xlapy.lax.fori_loop(0, n, body, 0)
        return freeze(acc), c

    @xlapy.jit
    def branch(p, x):
        acc = new_ref(xnp.ones(2))
        xlapy.lax.cond(p, lambda: acc.__setitem__(..., acc[...] * x), lambda: None)
        return freeze(acc)

    @xlapy.jit
    def doubling(x):            # the loop's condition reads the Ref its body writes
        a = new_ref(x)

        def body(i):
            a[...] = a[...] * 2
            return i + 1
        i = xlapy.lax.while_loop(lambda i: a[...] < 100.0, body, 0)
        return i, freeze(a)
    # the values JAX 0.10.2 gives
    assert float(scanned(xnp.arange(4.0))) == 6.0
    acc, c = counted(7)
    np.testing.assert_array_equal(acc, [9, 5, 7])
    assert int(c) == 7
    np.testing.assert_array_equal(branch(True, 3.0), [3, 3])
    np.testing.assert_array_equal(branch(False, 3.0), [1, 1])
    i, a = doubling(3.0)
    assert int(i) == 6 and float(a) == 192.0
    e = new_ref(xnp.zeros(()))          # an eager loop over an eager Ref

    def add_index(i, c):
        e[...] += i
        return c
    xlapy.lax.fori_loop(0, 4, add_index, 0)
    assert float(e[...]) == 6.0

    q = new_ref(xnp.zeros(2))           # jit, then a loop inside it, over a Ref closed over by both

    @xlapy.jit
    def nested(x):
        def body(i, c):
            q[i] += x
            return c
        xlapy.lax.fori_loop(0, 2, body, 0)
        return q[...].sum()
    assert float(nested(2.0)) == 4.0 and float(nested(1.0)) == 6.0
    np.testing.assert_array_equal(q[...], [3, 3])


def test_refs_that_cannot_cross_raise():
    r = new_ref(xnp.zeros(3))
    with pytest.raises(xlapy.XlapyError, match="the same Ref is two of the inputs"):
        xlapy.jit(lambda a, b: a[...] + b[...])(r, r)
    with pytest.raises(xlapy.XlapyError, match="cannot return a Ref"):
        xlapy.jit(lambda a: a)(r)
    d = new_ref(np.float32(5.0))      # grad and vmap read an eager Ref's present value, as JAX (5.0, then 7.0)
    assert float(xlapy.grad(lambda x: x * d[...])(2.0)) == 5.0
    d[...] = np.float32(7.0)
    assert float(xlapy.grad(lambda x: x * d[...])(2.0)) == 7.0
    np.testing.assert_array_equal(xlapy.vmap(lambda x: x + d[...])(xnp.zeros(2)), [7, 7])

    def written(x):
        d[...] = x
        return x * 2
    with pytest.raises(xlapy.XlapyError, match="created outside any trace.*does not thread Refs"):
        xlapy.grad(written)(2.0)                    # JAX refuses too (a differentiated value)

    @xlapy.jit
    def written_under_grad(x):
        acc = new_ref(0.0)

        def loss(y):
            acc[...] = y
            return y * 2
        return xlapy.grad(loss)(x)
    with pytest.raises(xlapy.XlapyError, match="enclosing trace"):
        written_under_grad(1.0)
    c = new_ref(xnp.zeros(3))
    both = xlapy.jit(lambda a: a.addupdate(c[...]))
    both(r)
    with pytest.raises(xlapy.XlapyError, match="passed and also closed over"):
        both(c)             # the cached trace has two cells; warm and full paths both refuse
    @xlapy.jit
    def writes_in_cond(x):
        a = new_ref(x)

        def cond_fun(i):
            a[...] = a[...] + 1
            return i < 3
        return xlapy.lax.while_loop(cond_fun, lambda i: i + 1, 0)
    with pytest.raises(xlapy.XlapyError, match="cond_fun writes a Ref"):
        writes_in_cond(1.0)
    assert "argument a: a Ref -> an array" in xlapy.explain_recompile(both, xnp.zeros(3))
    frozen = new_ref(xnp.zeros(2))
    freeze(frozen)
    with pytest.raises(xlapy.XlapyError, match="frozen"):
        xlapy.jit(lambda a: a[...])(frozen)


def test_ds_is_jax_dslice():
    assert ds(None) == slice(None)
    assert ds(3) == xlapy.ref.Slice(0, 3, 1) and ds(2, 3) == xlapy.ref.Slice(2, 3, 1)
    assert ds(1, 3, 2).stride == 2 and not ds(1, 3).is_dynamic_start
    with pytest.raises(ValueError, match="Non-static stride"):
        ds(1, 2, 1.5)


def test_make_user_context_retraces():
    ctx = xlapy.make_user_context(default_value=1)
    traces = []

    @xlapy.jit
    def f(x):
        traces.append(ctx.value)
        return x * ctx.value

    assert float(f(2.0)) == 2.0
    assert float(f(2.0)) == 2.0 and traces == [1]
    with ctx(3):
        assert ctx.value == 3 and float(f(2.0)) == 6.0
    assert ctx.value == 1 and float(f(2.0)) == 2.0
    assert traces == [1, 3, 1]
    ctx.set_global(5)
    assert ctx.get_global() == 5 and float(f(2.0)) == 10.0


def test_ds_indexes_arrays_as_jax():
    # the values JAX 0.10.2 gives: a traced start reads / writes a clamped window, a Slice mixes with other indices
    x = xnp.arange(10.0)
    np.testing.assert_array_equal(x[ds(2, 3)], [2, 3, 4])
    np.testing.assert_array_equal(x[ds(1, 3, 2)], [1, 3, 5])
    np.testing.assert_array_equal(x[ds(8, 4)], [6, 7, 8, 9])
    np.testing.assert_array_equal(xlapy.jit(lambda v, i: v[ds(i, 3)])(x, 9), [7, 8, 9])
    np.testing.assert_array_equal(xlapy.jit(lambda v, i: v.at[ds(i, 2)].set(0.0))(x, 3),
                                  [0, 1, 2, 0, 0, 5, 6, 7, 8, 9])
    np.testing.assert_array_equal(x.at[ds(1, 2)].add(xnp.ones(2)), [0, 2, 3, 3, 4, 5, 6, 7, 8, 9])
    np.testing.assert_array_equal(x.at[ds(1, 2)].get(), [1, 2])
    m = xnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(m[ds(1, 2), 1], [5, 9])
    np.testing.assert_array_equal(m[..., ds(1, 2)], [[1, 2], [5, 6], [9, 10]])
    with pytest.raises(xlapy.XlapyError, match="None or a boolean mask"):
        m[None, ds(0, 2)]
