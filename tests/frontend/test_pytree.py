"""Pytrees: flatten/unflatten round trips, treedef equality, namedtuples, registered nodes."""
from collections import namedtuple

import pytest

import xlapy
from xlapy import tree_util as tu

Point = namedtuple("Point", "x y")


def test_flatten_orders_dict_keys_and_skips_none():
    leaves, tree = tu.tree_flatten({"b": (1, [2, 3]), "a": None, "c": Point(4, 5)})
    assert leaves == [1, 2, 3, 4, 5]
    assert tu.tree_unflatten(tree, leaves) == {"a": None, "b": (1, [2, 3]), "c": Point(4, 5)}
    assert tree.num_leaves == 5


def test_treedef_equality_and_hash():
    _, t1 = tu.tree_flatten({"a": 1, "b": (2, 3)})
    _, t2 = tu.tree_flatten({"b": (7, 8), "a": 9})
    _, t3 = tu.tree_flatten({"a": 1, "b": [2, 3]})
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != t3
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))


def test_tree_map_multiple_trees_and_mismatch():
    assert tu.tree_map(lambda a, b: a + b, {"x": 1, "y": (2,)}, {"x": 10, "y": (20,)}) == {"x": 11, "y": (22,)}
    with pytest.raises(xlapy.XlapyError, match="structures differ"):
        tu.tree_map(lambda a, b: a, (1, 2), [1, 2])


def test_register_pytree_node():
    class Box:
        def __init__(self, items, label):
            self.items, self.label = items, label

    tu.register_pytree_node(Box, lambda b: (b.items, b.label), lambda label, ch: Box(list(ch), label))
    leaves, tree = tu.tree_flatten(Box([1, 2], "L"))
    assert leaves == [1, 2]
    out = tu.tree_unflatten(tree, [5, 6])
    assert isinstance(out, Box) and out.items == [5, 6] and out.label == "L"
    f = xlapy.jit(lambda b: b.items[0] + b.items[1])
    assert float(f(Box([1.0, 2.0], "L"))) == 3.0


def test_unflatten_wrong_leaf_count():
    _, tree = tu.tree_flatten((1, 2))
    with pytest.raises(xlapy.XlapyError, match="too few"):
        tu.tree_unflatten(tree, [1])
    with pytest.raises(xlapy.XlapyError, match="too many"):
        tu.tree_unflatten(tree, [1, 2, 3])


def test_leaf_paths():
    _, tree = tu.tree_flatten({"w": [1, 2], "p": Point(1, 2)})
    assert tu.leaf_paths(tree) == ["['p'].x", "['p'].y", "['w'][0]", "['w'][1]"]
