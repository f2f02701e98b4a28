"""xlapy.tree_util covers jax.tree_util's public names (JAX 0.10.2's list below) with JAX's behaviour: key paths
(against JAX's strings in transform_data/), registration helpers, reductions, transposition, Partial; xlapy.tree."""
import dataclasses
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import xlapy
from xlapy import tree_util as tu

REF = np.load(Path(__file__).parent / "transform_data" / "jax_transforms.npz")

# dir(jax.tree_util) and dir(jax.tree) of JAX 0.10.2, public names
JAX_TREE_UTIL = ['DictKey', 'FlattenedIndexKey', 'GetAttrKey', 'KeyEntry', 'KeyPath', 'Partial', 'PyTreeDef',
                 'SequenceKey', 'all_leaves', 'default_registry', 'flatten_one_level', 'flatten_one_level_with_keys',
                 'is_tree_node', 'keystr', 'register_dataclass', 'register_pytree_node', 'register_pytree_node_class',
                 'register_pytree_with_keys', 'register_pytree_with_keys_class', 'register_static', 'tree_all',
                 'tree_broadcast', 'tree_flatten', 'tree_flatten_with_path', 'tree_leaves', 'tree_leaves_with_path',
                 'tree_map', 'tree_map_with_path', 'tree_reduce', 'tree_reduce_associative', 'tree_structure',
                 'tree_transpose', 'tree_unflatten', 'treedef_children', 'treedef_is_leaf', 'treedef_tuple']
JAX_TREE = ['all', 'broadcast', 'flatten', 'flatten_with_path', 'leaves', 'leaves_with_path', 'map', 'map_with_path',
            'reduce', 'reduce_associative', 'static', 'structure', 'transpose', 'unflatten']
TREE = {"a": [1, (2, 3)], "b": None, "c": {"d": 4}}


def test_every_name_exists():
    assert [n for n in JAX_TREE_UTIL if not hasattr(tu, n)] == []
    assert [n for n in JAX_TREE if not hasattr(xlapy.tree, n)] == []


def test_key_paths_match_jax():
    pairs, treedef = tu.tree_flatten_with_path(TREE)
    assert [tu.keystr(p) for p, _ in pairs] == list(REF["keypaths"])
    assert [tu.keystr(p, simple=True, separator="/") for p, _ in pairs] == list(REF["keypaths_simple"])
    assert [leaf for _, leaf in pairs] == [1, 2, 3, 4]
    assert treedef == tu.tree_structure(TREE)
    assert [leaf for _, leaf in tu.tree_leaves_with_path(TREE)] == [1, 2, 3, 4]
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), TREE, tu.tree_map(lambda x: 10 * x, TREE))
    assert out["a"][1][0] == ("['a'][1][0]", 22)


def test_key_classes():
    assert str(tu.DictKey("a")) == "['a']" and str(tu.SequenceKey(2)) == "[2]"
    assert str(tu.GetAttrKey("w")) == ".w" and str(tu.FlattenedIndexKey(1)) == "[<flat index 1>]"
    assert tu.DictKey("a") == tu.DictKey("a") and hash(tu.SequenceKey(1)) == hash(tu.SequenceKey(1))

    class P(NamedTuple):
        x: int
        y: int
    pairs, _ = tu.tree_flatten_with_path(P(1, 2))
    assert [tu.keystr(p) for p, _ in pairs] == [".x", ".y"]


def test_register_pytree_node_class_and_keys():
    @tu.register_pytree_node_class
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), "meta"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "meta"
            return cls(*children)
    leaves, td = tu.tree_flatten(Box(1, [2, 3]))
    assert leaves == [1, 2, 3]
    back = tu.tree_unflatten(td, [4, 5, 6])
    assert (back.a, back.b) == (4, [5, 6])
    assert [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(Box(1, 2))[0]] == ["[<flat index 0>]",
                                                                                    "[<flat index 1>]"]

    @tu.register_pytree_with_keys_class
    class Named:
        def __init__(self, w):
            self.w = w

        def tree_flatten_with_keys(self):
            return ((tu.GetAttrKey("w"), self.w),), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
    assert [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(Named(3))[0]] == [".w"]
    assert tu.tree_map(lambda x: x + 1, Named(3)).w == 4


def test_register_dataclass_static_and_jit():
    @dataclasses.dataclass
    class Params:
        w: np.ndarray
        scale: float = dataclasses.field(metadata=dict(static=True), default=2.0)
    tu.register_dataclass(Params)
    p = Params(np.ones(3), 3.0)
    leaves, td = tu.tree_flatten(p)
    assert len(leaves) == 1
    out = xlapy.jit(lambda p: p.w * p.scale)(p)
    np.testing.assert_allclose(out, 3 * np.ones(3))
    with pytest.raises(ValueError, match="init=True"):
        tu.register_dataclass(Params, data_fields=["w"], meta_fields=[])

    @tu.register_static
    class Cfg:
        def __init__(self, n):
            self.n = n

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, o):
            return isinstance(o, Cfg) and o.n == self.n
    assert tu.tree_leaves([Cfg(1), 2]) == [2]


def test_reductions_and_structure_helpers():
    assert tu.tree_reduce(lambda a, b: a + b, TREE) == 10
    assert tu.tree_reduce(lambda a, b: a + b, TREE, 5) == 15
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_reduce_associative(lambda a, b: a * b, [1, 2, 3, 4]) == 24
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(lambda a, b: a * b, [])
    assert tu.tree_all([True, (True,)]) and not tu.tree_all([True, False])
    td = tu.tree_structure((1, {"a": 2}))
    assert tu.treedef_children(td) == [tu.tree_structure(1), tu.tree_structure({"a": 2})]
    assert td.children() == tu.treedef_children(td)
    assert tu.treedef_is_leaf(tu.tree_structure(1)) and tu.treedef_is_leaf(tu.tree_structure(None))
    assert not tu.treedef_is_leaf(td)
    assert tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([2])]) == tu.tree_structure((1, [2]))
    assert tu.all_leaves([1, 2.0]) and not tu.all_leaves([1, (2,)])
    assert tu.is_tree_node([1]) and not tu.is_tree_node(1)
    assert tu.flatten_one_level({"a": 1, "b": (2, 3)}) == ([1, (2, 3)], ("a", "b"))
    with pytest.raises(ValueError):
        tu.flatten_one_level(1)
    keys = [tu.keystr((k,)) for k, _ in tu.flatten_one_level_with_keys({"a": 1, "b": 2})[0]]
    assert keys == ["['a']", "['b']"]
    assert str(tu.tree_structure(TREE)) == str(REF["treedef_str"])
    assert td.node_data() == (tuple, None)


def test_transpose_and_broadcast():
    outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    with pytest.raises(TypeError, match="Mismatch"):
        tu.tree_transpose(outer, inner, [(1, 2), (3,)])
    assert tu.tree_broadcast((1, 2), ((3, 4), 5)) == ((1, 1), 2)
    with pytest.raises(ValueError, match="pytree structure error"):
        tu.tree_structure([0, 0]).flatten_up_to([1, 2, 3])


def test_partial_through_jit():
    def scale(x, s):
        return x * s
    p = tu.Partial(scale, s=np.float32(3.0))
    leaves, _ = tu.tree_flatten(p)
    assert len(leaves) == 1
    out = xlapy.jit(lambda f, x: f(x))(p, np.ones(2, np.float32))
    np.testing.assert_allclose(out, [3.0, 3.0])
    assert tu.Partial(tu.Partial(scale, 1.0), 2.0)() == 2.0


def test_tree_module():
    assert xlapy.tree.map(lambda x: x * 2, {"a": 1}) == {"a": 2}
    assert xlapy.tree.leaves([1, [2]]) == [1, 2]
    assert xlapy.tree.reduce(max, [3, 1, 4]) == 4
