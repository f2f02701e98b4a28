"""pattern.literal_scalar and same_value (what ConstantScalar asks of every constant operand the simplifier meets):
their answers, and that a constant of varied values is told apart without a pass over all of it."""
import ml_dtypes
import numpy as np
import pytest

from xlapy.hlo import parse
from xlapy.passes import pattern
from xlapy.passes.pattern import literal_scalar, same_value


@pytest.mark.parametrize("v, x, same", [
    (np.float32(0.0), 0, True), (np.float32(-0.0), 0, False), (np.float32(-0.0), -0.0, True),
    (np.float32(1.0), 1, True), (np.float32(1.0), 2, False), (np.float32("nan"), 0, False),
    (np.int32(0), 0, True), (np.int32(0), -0.0, True), (np.uint8(1), 1, True),
    (ml_dtypes.bfloat16(-0.0), 0, False), (ml_dtypes.bfloat16(-0.0), -0.0, True), (ml_dtypes.bfloat16(1), 1, True),
    (np.float16(0.0), -0.0, False), (np.complex64(0), 0, True), (np.bool_(True), 1, True),
])
def test_same_value(v, x, same):
    assert same_value(v, x) is same


def _constant(text_values: str, shape: str = "f32[4]"):
    m = parse(f"HloModule m\nENTRY e {{ ROOT c = {shape} constant({text_values}) }}")
    return m.entry.root


@pytest.mark.parametrize("values, expected", [
    ("{1, 1, 1, 1}", 1.0), ("{1, 2, 1, 1}", None), ("{1, 1, 2, 1}", None), ("{1, 1, 1, 2}", None),
    ("{nan, nan, nan, nan}", "nan"), ("{-0, 0, 0, 0}", -0.0),
])
def test_literal_scalar(values, expected):
    v = literal_scalar(_constant(values))
    if expected is None:
        assert v is None
    elif expected == "nan":
        assert np.isnan(v)
    else:
        assert v == expected


def test_a_varied_constant_is_rejected_without_comparing_all_of_it(monkeypatch):
    n = 1 << 16
    inst = _constant("{" + ", ".join(str(i % 7) for i in range(n)) + "}", f"f32[{n}]")
    sizes = []
    real = np.full_like
    monkeypatch.setattr(pattern.np, "full_like", lambda a, *args, **kw: sizes.append(a.size) or real(a, *args, **kw))
    assert literal_scalar(inst) is None
    assert max(sizes) <= 3
