"""DLPack: Arrays export to numpy (and torch where installed) without a copy; imports keep or convert dtypes;
unsupported dtypes and non-producers get clear errors."""
import ml_dtypes
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import XlapyError


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16, np.complex64])
def test_export_to_numpy_shares_memory(dtype):
    a = xlapy.device_put(np.arange(12).reshape(3, 4).astype(dtype))
    assert a.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(a)
    np.testing.assert_array_equal(b, np.asarray(a))
    assert np.shares_memory(b, np.asarray(a))


def test_import_from_numpy_and_round_trip():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = xnp.from_dlpack(x)
    assert isinstance(a, xlapy.Array) and a.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(xlapy.dlpack.from_dlpack(a)), x)
    np.testing.assert_array_equal(np.asarray(xlapy.jit(lambda v: v * 2)(a)), x * 2)


def test_import_canonicalizes_64_bit_without_x64():
    a = xnp.from_dlpack(np.arange(3, dtype=np.float64))
    assert a.dtype == np.float32


def test_import_of_a_strided_view():
    x = np.arange(20, dtype=np.int32).reshape(4, 5)[:, ::2]
    np.testing.assert_array_equal(np.asarray(xnp.from_dlpack(x)), x)


def test_errors():
    with pytest.raises(XlapyError, match="no __dlpack__"):
        xnp.from_dlpack([1, 2, 3])
    bf = xlapy.device_put(np.ones(3, ml_dtypes.bfloat16))
    with pytest.raises(BufferError, match="cannot export"):
        np.from_dlpack(bf)

    class Gpu:
        def __dlpack__(self, **kw):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (2, 0)
    with pytest.raises(XlapyError, match="device type 2"):
        xnp.from_dlpack(Gpu())


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    a = xlapy.device_put(np.arange(6, dtype=np.float32))
    t = torch.from_dlpack(a)
    assert t.tolist() == list(range(6))
    back = xnp.from_dlpack(torch.arange(4, dtype=torch.int32))
    np.testing.assert_array_equal(np.asarray(back), np.arange(4, dtype=np.int32))
