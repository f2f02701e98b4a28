"""ConvDimensionNumbers.parse is cached (conv_canonicalization parses its templates per convolution and compile):
equal texts give the one frozen value, and malformed labels raise every time (errors are not cached)."""
import dataclasses

import pytest

from xlapy.hlo.attrs import ConvDimensionNumbers


def test_equal_labels_share_one_frozen_value():
    a = ConvDimensionNumbers.parse("b01f_01io->b01f")
    assert ConvDimensionNumbers.parse("b01f_01io->b01f") is a
    assert (a.input_batch, a.input_feature, a.input_spatial) == (0, 3, (1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.input_batch = 1


def test_malformed_labels_raise_each_time():
    for _ in range(2):
        with pytest.raises(ValueError, match="malformed"):
            ConvDimensionNumbers.parse("b01f-01io->b01f")
