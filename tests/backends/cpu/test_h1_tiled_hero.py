"""tiled_transpose's compute phase reads the hero at its own index (`_hero_index`: each vdim's index split in a
radix, the hero's dims sums of the digits) instead of undoing the reshapes after it per element, and a W group
that 16 does not divide (up to MAX_WHOLE_W) is whole in each tile, so every loop has a constant trip count.
Values against the interpreter, bit for bit (data movement and exact adds); one compile holds every case."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import tiled_transpose as tt
from xlapy.hlo import parse


@pytest.fixture(autouse=True)
def small_slabs(monkeypatch):
    monkeypatch.setattr(tt, "MIN_SLAB_BYTES", 0)


# vit's head merge (transpose then reshape), the same with an add of an array in the output's order after the
# hero (finished in the store phase), a radix needed in the read group (the hero splits the read dim 6 x 5), a
# reshape that regroups across the swapped dims (no radix: the generators' path), and a W group of 65.
MODULE = """HloModule hero
merge {
  p = f32[2,3,5,7]{3,2,1,0} parameter(0)
  r = f32[2,3,5,1,7]{4,3,2,1,0} reshape(p)
  t = f32[2,7,3,1,5]{4,3,2,1,0} transpose(r), dimensions={0,4,1,3,2}
  ROOT o = f32[14,15]{1,0} reshape(t)
}
merge_add {
  p = f32[2,3,5,7]{3,2,1,0} parameter(0)
  y = f32[14,15]{1,0} parameter(1)
  r = f32[2,3,5,1,7]{4,3,2,1,0} reshape(p)
  t = f32[2,7,3,1,5]{4,3,2,1,0} transpose(r), dimensions={0,4,1,3,2}
  o = f32[14,15]{1,0} reshape(t)
  ROOT a = f32[14,15]{1,0} add(o, y)
}
split_read {
  p = f32[9,30]{1,0} parameter(0)
  r = f32[9,6,5]{2,1,0} reshape(p)
  t = f32[6,5,9]{2,1,0} transpose(r), dimensions={1,2,0}
  ROOT o = f32[30,9]{1,0} reshape(t)
}
regroup {
  p = f32[12,10]{1,0} parameter(0)
  t = f32[10,12]{1,0} transpose(p), dimensions={1,0}
  ROOT o = f32[8,15]{1,0} reshape(t)
}
wide_w {
  x = f32[520,128]{1,0} parameter(0)
  b = f32[4,32]{1,0} parameter(1)
  r = f32[8,65,4,32]{3,2,1,0} reshape(x)
  bb = f32[8,65,4,32]{3,2,1,0} broadcast(b), dimensions={2,3}
  a = f32[8,65,4,32]{3,2,1,0} add(r, bb)
  ROOT t = f32[8,4,32,65]{3,2,1,0} transpose(a), dimensions={0,2,3,1}
}
ENTRY e {
  p = f32[2,3,5,7]{3,2,1,0} parameter(0)
  y = f32[14,15]{1,0} parameter(1)
  q = f32[9,30]{1,0} parameter(2)
  g = f32[12,10]{1,0} parameter(3)
  x = f32[520,128]{1,0} parameter(4)
  b = f32[4,32]{1,0} parameter(5)
  f1 = f32[14,15]{1,0} fusion(p), kind=kLoop, calls=merge
  f2 = f32[14,15]{1,0} fusion(p, y), kind=kLoop, calls=merge_add
  f3 = f32[30,9]{1,0} fusion(q), kind=kLoop, calls=split_read
  f4 = f32[8,15]{1,0} fusion(g), kind=kLoop, calls=regroup
  f5 = f32[8,4,32,65]{3,2,1,0} fusion(x, b), kind=kLoop, calls=wide_w
  ROOT r = (f32[14,15], f32[14,15], f32[30,9], f32[8,15], f32[8,4,32,65]) tuple(f1, f2, f3, f4, f5)
}
"""


def _fusion(name):
    module = parse(MODULE)
    inst = next(i for i in module.entry.instructions if i.name == name)
    comp = inst.attrs["calls"]
    hero = [i for i in comp.post_order() if i.opcode == "transpose"][-1]
    path = [i for i in comp.post_order() if i is not hero and i.opcode != "parameter"
            and hero in _above(i)]
    return inst, hero, path


def _above(i, seen=None):
    out = set()
    for o in i.operands:
        out.add(o)
        out |= _above(o)
    return out


def test_hero_index_of_a_head_merge():
    inst, hero, path = _fusion("f1")
    reads = tt.read_order(inst, inst.shape)
    radix, coeffs = tt._hero_index(hero, path, reads.vdims)
    # output [14, 15] = [2 x 7, 3 x 5]; the hero [2, 7, 3, 1, 5] takes one digit each, the unit dim none
    digits = [n for sizes in radix for n in sizes]
    assert sorted(digits) == [2, 3, 5, 7]
    assert [sum(1 for c in row if c) for row in coeffs] == [1, 1, 1, 0, 1]


def test_tiles_of_a_w_group_of_65():
    inst, _, _ = _fusion("f5")
    p = tt.plan(tt.read_order(inst, inst.shape), 4)
    assert (p.size(p.w), p.tile_w, p.tile_r) == (65, 65, 32)


def test_hero_reads_against_the_interpreter():
    module = parse(MODULE)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32) for p in module.entry.parameters]
    exe = xlapy.compile(module, backend="cpu", num_threads=1, cache=False)
    got = exe(*args)
    want = xlapy.compile(parse(MODULE), backend="interpreter")(*args)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=str(k))
    assert "tile.sw" in exe.llvm_ir
