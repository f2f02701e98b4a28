"""Shape inference as a table: every opcode has a rule, rules infer what XLA infers, verify is fast."""
from __future__ import annotations


import numpy as np
import pytest

import xlapy
from xlapy.errors import HloVerifierError
from xlapy.hlo.opcodes import OPCODES
from xlapy.hlo.shape_inference import infer_shape, rule_table

pytest.importorskip("xlapy.hlo.parser")


def test_every_opcode_has_a_rule():
    assert sorted(set(OPCODES) - set(rule_table())) == []


def entry_root(body: str):
    m = xlapy.hlo.parse(f"HloModule m\nENTRY main {{\n{body.strip()}\n}}\n")
    return m, m.entry.root


# (entry body whose ROOT is inferred, inferred shape text)
INFERRED = [
    ("p = f32[2,3] parameter(0)\nROOT r = u8[2,3,4] bitcast-convert(p)", "u8[2,3,4]"),
    ("p = c64[5] parameter(0)\nROOT r = f32[5] abs(p)", "f32[5]"),
    ("p = f32[5,3] parameter(0)\nROOT r = c64[5,2] fft(p), fft_type=RFFT, fft_length={3}", "c64[5,2]"),
    ("a = f32[6,4] parameter(0)\nb = f32[3,4,5] parameter(1)\ng = s32[3] parameter(2)\n"
     "ROOT r = f32[6,5] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, "
     "lhs_ragged_dims={0}, rhs_group_dims={0}", "f32[6,5]"),
    ("p = f32[10] parameter(0)\nROOT r = f32[4] slice(p), slice={[1:8:2]}", "f32[4]"),
    ("p = f32[3] parameter(0)\nz = f32[] constant(0)\nROOT r = f32[3] pad(p, z), padding=-2_1_2",
     "f32[6]"),
]


@pytest.mark.parametrize("body,expected", INFERRED)
def test_inferred_shape(body, expected):
    m, root = entry_root(body)
    assert infer_shape(root).to_text() == expected


def test_constant_literal_must_match_declared_shape():
    m, root = entry_root("ROOT c = f32[2] constant({1, 2})")
    root.literal = np.zeros(3, np.float32)
    with pytest.raises(HloVerifierError, match=r"c \(constant\): literal has dimensions \[3\] .* f32\[2\]"):
        xlapy.hlo.verify(m)
    root.literal = np.zeros(2, np.int32)
    with pytest.raises(HloVerifierError, match="literal has numpy dtype int32"):
        xlapy.hlo.verify(m)


def test_verify_is_fast():
    lines = ["p0 = f32[8,8] parameter(0)", "p1 = f32[8,8] parameter(1)", "x0 = f32[8,8] add(p0, p1)"]
    for i in range(1, 500):
        op = ("multiply", "add", "maximum", "subtract")[i % 4]
        lines.append(f"x{i} = f32[8,8] {op}(x{i - 1}, p1)")
    lines[-1] = "ROOT " + lines[-1]
    m, _ = entry_root("\n".join(lines))
    xlapy.hlo.verify(m)
    xlapy.hlo.verify(m)   # verifying twice changes nothing and raises nothing
