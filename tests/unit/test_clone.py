"""Module.clone() builds the copy directly; it must be exactly the module the text round trip
(Module.clone_via_text: parse(print)) gives: same text, computation and instruction order, names, users,
attribute values and their types, attribute print order, literals, module name set."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xlapy.hlo import Computation, parse

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "testdata"


def _files() -> list:
    files = sorted((SHARED / "xla_parser_cases").glob("*.hlo")) if (SHARED / "xla_parser_cases").is_dir() else []
    if (SHARED / "tf_mobilenet_cluster.hlo").exists():
        files.append(SHARED / "tf_mobilenet_cluster.hlo")
    files += sorted((REPO / "tests" / "corpus").rglob("*.hlo"))
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no HLO modules"))]
    return [pytest.param(f, id=f"{f.parent.name}/{f.stem}") for f in files]


def _same_value(a, b, where):
    if isinstance(a, Computation) or isinstance(b, Computation):
        assert isinstance(a, Computation) and isinstance(b, Computation) and a.name == b.name, where
        return
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == b.tobytes(), where
        return
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for x, y in zip(a, b):
            _same_value(x, y, where)
    elif not (isinstance(a, float) and a != a and b != b):
        assert a == b, where


def assert_same_module(s, t):
    assert s.to_text() == t.to_text()
    assert (s.name, s.attrs, s.tables) == (t.name, t.attrs, t.tables)
    assert [c.name for c in s.computations] == [c.name for c in t.computations]
    assert s.entry.name == t.entry.name
    assert s._names == t._names
    for cs, ct in zip(s.computations, t.computations):
        assert cs.parent is s and cs.attrs == ct.attrs and cs.root.name == ct.root.name
        assert getattr(cs, "_async_sugar", False) == getattr(ct, "_async_sugar", False)
        assert len(cs.instructions) == len(ct.instructions)
        for a, b in zip(cs.instructions, ct.instructions):
            where = (cs.name, a.name)
            assert (a.name, a.opcode, a.shape, a.parameter_number) == (b.name, b.opcode, b.shape, b.parameter_number)
            assert a.parent is cs
            for edges in ("operands", "users", "control_predecessors"):
                assert [o.name for o in getattr(a, edges)] == [o.name for o in getattr(b, edges)], (where, edges)
            assert all(o.parent is cs for o in a.operands + a.users), where
            assert (getattr(a, "_attr_order", None) or ()) == (getattr(b, "_attr_order", None) or ()), where
            assert list(a.attrs) == list(b.attrs), where
            for k in a.attrs:
                _same_value(a.attrs[k], b.attrs[k], where + (k,))
            _same_value(a.literal, b.literal, where + ("literal",))


@pytest.mark.parametrize("path", _files())
def test_structural_clone_equals_text_clone(path):
    try:
        module = parse(path.read_text())
    except Exception:
        pytest.skip("not a parsable module")
    assert_same_module(module.clone(), module.clone_via_text())


def test_clone_of_traced_modules_equals_text_clone():
    import xlapy
    import xlapy.numpy as xnp

    def loss(w, x):
        h = xnp.maximum(x @ w, 0.0)
        return xnp.sum(xnp.exp(h - h.max(1, keepdims=True)))
    x = np.ones((4, 3), np.float32)
    w = np.ones((3, 2), np.float32)
    for f in (loss, xlapy.grad(loss), lambda w, x: xnp.cumsum(x, axis=0) @ w):
        module = xlapy.jit(f).lower(w, x).module
        assert_same_module(module.clone(), module.clone_via_text())


def test_clone_is_independent():
    module = parse("""HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ENTRY e {
  p = f32[4]{0} parameter(0)
  c = f32[] constant(0)
  ROOT s = f32[] reduce(p, c), dimensions={0}, to_apply=add
}
""")
    text = module.to_text()
    clone = module.clone()
    reduce = clone.entry.root
    assert reduce.attrs["to_apply"] is clone.computation("add")
    assert reduce.attrs["to_apply"] is not module.computation("add")
    assert not set(map(id, clone.instructions())) & set(map(id, module.instructions()))
    reduce.operands[1].literal[...] = 5
    reduce.attrs["dimensions"] = (0,)
    clone.entry.root.operands[0].name = "renamed"
    assert module.to_text() == text
    assert clone.unique_name("p") == "p.1"
