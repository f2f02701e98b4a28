"""Errors name the operation, the shapes and the user's source line."""
import numpy as np
import pytest

import xlapy
from xlapy import lax

THIS_FILE = __file__


def _line_of(marker: str) -> int:
    with open(THIS_FILE) as f:
        for n, line in enumerate(f, 1):
            if marker in line and "_line_of" not in line:
                return n
    raise AssertionError(marker)


def test_bool_of_tracer_names_user_line():
    def f(x):
        if x.sum() > 0:  # MARK-BOOL
            return x
        return -x
    with pytest.raises(xlapy.ConcretizationError) as e:
        xlapy.jit(f)(np.ones(3, np.float32))
    assert f"test_errors.py:{_line_of('MARK-BOOL')}" in str(e.value)
    assert "bool()" in str(e.value)


def test_int_and_index_and_asarray_of_tracer():
    def g(x):
        return int(x)  # MARK-INT
    with pytest.raises(xlapy.ConcretizationError, match=f"int\\(\\).*test_errors.py:{_line_of('MARK-INT')}"):
        xlapy.jit(g)(np.int32(3))
    with pytest.raises(xlapy.ConcretizationError, match="__index__"):
        xlapy.jit(lambda x, n: x[:n])(np.ones(4, np.float32), np.int32(2))
    with pytest.raises(xlapy.ConcretizationError, match="np.asarray"):
        xlapy.jit(lambda x: np.asarray(x))(np.ones(2, np.float32))
    with pytest.raises(xlapy.ConcretizationError, match="float"):
        xlapy.jit(lambda x: float(x))(np.float32(1))


def test_concretization_error_is_an_xlapy_error():
    assert issubclass(xlapy.ConcretizationError, xlapy.XlapyError)


def test_mismatched_shapes_name_op_and_shapes():
    with pytest.raises(xlapy.XlapyError, match=r"add: shapes f32\[3\], f32\[4\] do not broadcast.*test_errors.py"):
        xlapy.jit(lambda a, b: a + b)(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(xlapy.XlapyError, match=r"dot_general.*f32\[2,3\].*f32\[4,5\]"):
        xlapy.jit(lambda a, b: lax.dot(a, b))(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(xlapy.XlapyError, match=r"reshape.*f32\[2,3\].*\(4,\)"):
        xlapy.jit(lambda a: a.reshape(4))(np.ones((2, 3), np.float32))


def test_shape_inference_errors_are_wrapped_with_operands():
    with pytest.raises(xlapy.XlapyError, match=r"concatenate.*operands f32\[2,3\], f32\[2,4\].*test_errors.py"):
        xlapy.jit(lambda a, b: lax.concatenate([a, b], 0))(np.ones((2, 3), np.float32), np.ones((2, 4), np.float32))


def test_loop_body_type_mismatch():
    with pytest.raises(xlapy.XlapyError, match=r"while_loop body_fun: output.*f32\[3\].*must be.*s32"):
        xlapy.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5), (0, x)))(
            np.ones(3, np.int32))
    with pytest.raises(xlapy.XlapyError, match="branch 1"):
        lax.cond(True, lambda x: x, lambda x: x[:1], xlapy.Array(np.ones(2, np.float32)))


def test_bad_arguments():
    with pytest.raises(xlapy.XlapyError, match="argument.*str.*static"):
        xlapy.jit(lambda x, s: x)(np.ones(2), "hello")
    with pytest.raises(xlapy.XlapyError, match="hashable"):
        xlapy.jit(lambda x, s: x, static_argnums=1)(np.ones(2), [1, 2])


def test_leaked_tracer():
    leaked = []

    def f(x):
        leaked.append(x)
        return x
    xlapy.jit(f)(np.ones(2, np.float32))
    with pytest.raises(xlapy.XlapyError, match="escaped its trace"):
        xlapy.jit(lambda y: y + leaked[0])(np.ones(2, np.float32))
