"""tiled_transpose._hero_index: the hero transpose's index as affine sums of the output index's digits, probed with
numpy through the reshapes between them, or None where a reshape regroups dims no radix separates."""
from __future__ import annotations

import pytest

import xlapy
from xlapy.backends.cpu.tiled_transpose import _hero_index


def hero_index(text: str, vdims):
    insts = xlapy.hlo.parse(text).entry.instructions
    hero = [i for i in insts if i.opcode == "transpose"][-1]
    return _hero_index(hero, insts[insts.index(hero) + 1:], vdims)


def module(param: str, hero: str, perm: str, out: str) -> str:
    return f"""HloModule m
ENTRY e {{
  p = f32[{param}] parameter(0)
  t = f32[{hero}] transpose(p), dimensions={{{perm}}}
  ROOT r = f32[{out}] reshape(t)
}}"""


CASES = [
    # vit/fwd's head transpose: a size-1 dim dropped, each hero dim one digit (the size-1 one none)
    (module("8,65,4,1,32", "8,4,65,1,32", "0,2,1,3,4", "8,4,65,32"), [(0, 8, 1), (1, 4, 1), (2, 65, 1), (3, 32, 1)],
     ([[8], [4], [65], [32]], [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1]])),
    # two hero dims merged into one output dim: its index in two digits
    (module("8,4,32", "8,32,4", "0,2,1", "8,128"), [(0, 8, 1), (1, 128, 1)],
     ([[8], [32, 4]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])),
    # one hero dim split over two output dims: a coefficient other than 1
    (module("128,8", "8,128", "1,0", "8,4,32"), [(0, 8, 1), (1, 4, 1), (2, 32, 1)],
     ([[8], [4], [32]], [[1, 0, 0], [0, 32, 1]])),
    # a reshape that regroups [6,4] as [4,6]: no radix
    (module("4,6", "6,4", "1,0", "4,6"), [(0, 4, 1), (1, 6, 1)], None),
]


@pytest.mark.parametrize("text,vdims,want", CASES)
def test_hero_index(text, vdims, want):
    assert hero_index(text, vdims) == want
