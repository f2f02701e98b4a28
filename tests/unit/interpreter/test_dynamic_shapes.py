"""Interpreter and shape rules of the dynamic-shape ops (dynamic_shapes.py): what runs on static shapes, and the
error that sends a module with dynamic sizes through the dynamic_padder pass first."""
import numpy as np
import pytest

import xlapy
from xlapy.errors import HloVerifierError, UnimplementedError
from xlapy.hlo.shape_inference import infer_shape
from xlapy.testing import hlo_module


def run(text: str, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")(*args)


def test_set_dimension_size_to_a_static_result_is_the_operand():
    """TF's top_k wraps its slices so: the size is the dimension's, the result static."""
    text = hlo_module("k = s32[] constant(3)\nROOT r = f32[4,3] set-dimension-size(p0, k), dimensions={1}",
                      params=["f32[4,3]"])
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(run(text, x), x)


def test_a_dynamic_result_needs_the_padder():
    text = hlo_module("ROOT r = f32[<=8] set-dimension-size(p0, p1), dimensions={0}", params=["f32[8]", "s32[]"])
    with pytest.raises(UnimplementedError, match="dynamic_padder"):
        run(text, np.zeros(8, np.float32), np.int32(3))


def test_get_dimension_size():
    static = hlo_module("ROOT r = s32[] get-dimension-size(p0), dimensions={1}", params=["f32[2,5]"])
    assert run(static, np.zeros((2, 5), np.float32)) == 5
    dynamic = hlo_module("ROOT r = s32[] get-dimension-size(p0), dimensions={0}", params=["f32[<=5]"])
    with pytest.raises(UnimplementedError, match="dynamic_padder"):
        run(dynamic, np.zeros(5, np.float32))


def test_slice_to_dynamic_and_pad_to_static():
    text = hlo_module('n = s32[] constant(2)\n'
                      'd = f32[<=4] custom-call(p0, n), custom_call_target="SliceToDynamic"\n'
                      'ROOT t = (f32[4], s32[]) custom-call(d), custom_call_target="PadToStatic"', params=["f32[4]"])
    x = np.arange(4, dtype=np.float32)
    data, size = run(text, x)
    np.testing.assert_array_equal(data, x)
    assert size == 4                      # xlapy keeps no sizes at run time: the bound


def test_set_dimension_size_shape_is_dynamic():
    module = xlapy.hlo.parse(hlo_module("ROOT r = f32[4,3] set-dimension-size(p0, p1), dimensions={1}",
                                        params=["f32[4,3]", "s32[]"]))
    shape = infer_shape(module.entry.root)
    assert shape.dims == (4, 3) and shape.is_dynamic_dim(1) and not shape.is_dynamic_dim(0)


@pytest.mark.parametrize("body, message", [
    ("ROOT r = f32[4] set-dimension-size(p0, p1), dimensions={0}", "s32 scalar"),
    ("k = s32[] constant(1)\nROOT r = f32[4] set-dimension-size(p0, k), dimensions={1}", "dimensions"),
    ("k = s32[] constant(1)\nROOT r = f32[<=4] dynamic-reshape(p0, k, k)", "one size per result dimension"),
])
def test_shape_rules_reject(body, message):
    with pytest.raises(HloVerifierError, match=message):
        xlapy.hlo.verify(xlapy.hlo.parse(hlo_module(body, params=["f32[4]", "f32[]"])))
