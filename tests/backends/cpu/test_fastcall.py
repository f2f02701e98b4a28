"""The native call path of CPU executables (fastcall.py): taken for plain array signatures, and every argument
it does not take as it is still reaches the ctypes path, which coerces or raises the usual XlapyError."""
import sys
import threading

import numpy as np
import pytest

from xlapy.backends import compile as compile_module
from xlapy.backends.cpu import fastcall
from xlapy.errors import XlapyError
from xlapy.hlo import parse

pytestmark = pytest.mark.skipif(not fastcall.available(), reason="no native call path on this Python/numpy")

TWO_OUT = """HloModule two_out
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  s = f32[2,3] add(a, b)
  p = f32[2,3] multiply(a, b)
  ROOT t = (f32[2,3], f32[2,3]) tuple(s, p)
}"""
SCALAR = """HloModule scalar
ENTRY main {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}"""
NESTED = """HloModule nested
ENTRY main {
  a = (f32[2], s32[]) parameter(0)
  x = f32[2] get-tuple-element(a), index=0
  ROOT n = f32[2] negate(x)
}"""

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.full((2, 3), 2, np.float32)


def cpu(text):
    return compile_module(parse(text), backend="cpu")


def test_plain_signatures_get_a_native_builtin():
    exe = cpu(TWO_OUT)
    assert exe.fast_call is not None and type(exe.fast_call).__name__ == "builtin_function_or_method"
    s, p = exe.fast_call(A, B)
    np.testing.assert_array_equal(s, A + B)
    np.testing.assert_array_equal(p, A * B)
    assert s.flags.c_contiguous and s.dtype == np.float32 and s.shape == (2, 3)


def test_tuple_parameters_keep_the_ctypes_path():
    exe = cpu(NESTED)
    assert exe.fast_call is None
    np.testing.assert_array_equal(exe((np.array([1, 2], np.float32), np.int32(0))), [-1, -2])


@pytest.mark.parametrize("a", [np.asfortranarray(A), A.T.copy().T, np.arange(12, dtype=np.float32)[::2]
                               .reshape(2, 3), A.tolist(), A.view(np.matrix)],
                         ids=["fortran", "transposed", "strided", "list", "subclass"])
def test_arguments_the_trampoline_declines_are_coerced(a):
    exe = cpu(TWO_OUT)
    if isinstance(a, list):
        with pytest.raises(XlapyError, match="dtype float64 does not match"):
            exe(a, B)
        return
    s, _ = exe(a, B)
    np.testing.assert_array_equal(s, np.asarray(a) + B)


def test_wrong_arguments_raise_the_usual_errors():
    exe = cpu(TWO_OUT)
    with pytest.raises(XlapyError, match="argument 0: dtype float64 does not match parameter dtype float32"):
        exe(A.astype(np.float64), B)
    with pytest.raises(XlapyError, match=r"argument 1: shape \(1, 3\) does not match parameter shape \(2, 3\)"):
        exe(A, B[:1])
    with pytest.raises(XlapyError, match="takes 2 arguments, got 1"):
        exe(A)


def test_scalars_and_zero_d_arrays():
    exe = cpu(SCALAR)
    assert exe.fast_call is not None
    assert exe(np.array(3, np.float32)) == -3 and exe(np.float32(4)) == -4
    assert exe(np.array(3, np.float32)).shape == ()


def test_no_reference_leaks():
    exe = cpu(TWO_OUT)
    f32 = np.dtype(np.float32)
    for _ in range(100):
        exe(A, B)
    before = sys.getrefcount(f32), sys.getrefcount(A)
    for _ in range(1000):
        exe(A, B)
    assert (sys.getrefcount(f32), sys.getrefcount(A)) == before


def test_concurrent_calls_do_not_share_scratch():
    exe = cpu(TWO_OUT)
    ok = []

    def work():
        for _ in range(300):
            s, p = exe(A, B)
            ok.append(bool((s == A + B).all() and (p == A * B).all()))
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 1200 and all(ok)


def test_the_builtin_keeps_its_executable_alive():
    import gc
    fast = cpu(SCALAR).fast_call
    gc.collect()
    assert fast(np.array(2, np.float32)) == -2
