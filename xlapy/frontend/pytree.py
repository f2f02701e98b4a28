"""Pytrees: nested tuples, lists, dicts (keys sorted, as in JAX), None, namedtuples and registered classes.

    leaves, treedef = tree_flatten({"b": (1, 2), "a": None})   # leaves [1, 2]; None is an empty node
    tree_unflatten(treedef, [10, 20])                           # {"a": None, "b": (10, 20)}

A PyTreeDef is a hashable value: two trees have equal treedefs iff they have the same structure (node
types, dict keys, namedtuple types, registered aux data) — jit uses it in its cache key.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

from ..errors import XlapyError

# type -> (flatten(node) -> (children, aux), unflatten(aux, children) -> node)
_REGISTRY: dict[type, tuple[Callable[[Any], tuple[Iterable[Any], Hashable]], Callable[[Hashable, list], Any]]] = {
    tuple: (lambda t: (t, None), lambda _, ch: tuple(ch)),
    list: (lambda l: (l, None), lambda _, ch: list(ch)),
    dict: (lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))), lambda keys, ch: dict(zip(keys, ch))),
    type(None): (lambda n: ((), None), lambda _, ch: None),
}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Register `nodetype` as an inner node: flatten_func(x) -> (children, aux_data) with hashable aux_data;
    unflatten_func(aux_data, children) -> x."""
    _REGISTRY[nodetype] = (flatten_func, unflatten_func)


def registered_node(nodetype: type) -> tuple[Callable, Callable] | None:
    """(flatten_func, unflatten_func) of a node type in the registry (tuple, list, dict, None and the registered
    classes), or None (a namedtuple or a leaf)."""
    return _REGISTRY.get(nodetype)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields") and type(x) is not tuple


def _handler(x: Any):
    h = _REGISTRY.get(type(x))
    if h is not None:
        return h
    if _is_namedtuple(x):
        return (lambda t: (tuple(t), None), None)
    return None


class PyTreeDef:
    """The structure of a pytree. `node_type` None marks a leaf. An immutable value: equal structures are equal
    and hash alike (the hash is computed once, on first use)."""
    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_type: type | None, aux: Hashable, children: tuple["PyTreeDef", ...]):
        self.node_type, self.aux, self.children = node_type, aux, children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = None

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def __eq__(self, other: Any) -> bool:
        if self is other:
            return True
        if type(other) is not PyTreeDef:
            return NotImplemented
        return (self.node_type is other.node_type and self.num_leaves == other.num_leaves
                and self.aux == other.aux and self.children == other.children)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash((self.node_type, self.aux, self.children))
        return h

    def __reduce__(self):
        return (PyTreeDef, (self.node_type, self.aux, self.children))

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        return tree_unflatten(self, leaves)

    def __repr__(self) -> str:
        return f"PyTreeDef({_describe(self)})"


_LEAF = PyTreeDef(None, None, ())


def _describe(t: PyTreeDef) -> str:
    if t.node_type is None:
        return "*"
    inner = [_describe(c) for c in t.children]
    if t.node_type is tuple:
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    if t.node_type is list:
        return "[" + ", ".join(inner) + "]"
    if t.node_type is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(t.aux, inner)) + "}"
    if t.node_type is type(None):
        return "None"
    return f"{t.node_type.__name__}(" + ", ".join(inner) + ")"


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    leaves: list[Any] = []

    def go(x: Any) -> PyTreeDef:
        h = None if (is_leaf is not None and is_leaf(x)) else _handler(x)
        if h is None:
            leaves.append(x)
            return _LEAF
        children, aux = h[0](x)
        return PyTreeDef(type(x), aux, tuple(go(c) for c in children))
    return leaves, go(tree)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    it = iter(leaves)

    def go(t: PyTreeDef) -> Any:
        if t.node_type is None:
            try:
                return next(it)
            except StopIteration:
                raise XlapyError(f"tree_unflatten: too few leaves for {t!r}") from None
        children = [go(c) for c in t.children]
        h = _REGISTRY.get(t.node_type)
        if h is None:     # a namedtuple
            return t.node_type(*children)
        return h[1](t.aux, children)
    out = go(treedef)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise XlapyError(f"tree_unflatten: too many leaves for {treedef!r}")
    return out


_SENTINEL = object()


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """f applied leafwise; `rest` must have the structure of `tree`."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise XlapyError(f"tree_map: tree structures differ: {treedef!r} vs {r_def!r}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def leaf_paths(treedef: PyTreeDef, prefix: str = "") -> list[str]:
    """A readable key path per leaf, e.g. `['w'][0]`, used in error messages and recompile explanations."""
    if treedef.node_type is None:
        return [prefix]
    out: list[str] = []
    for i, child in enumerate(treedef.children):
        if treedef.node_type is dict:
            key = f"[{treedef.aux[i]!r}]"
        elif treedef.node_type in (tuple, list) or treedef.node_type is not None and issubclass(treedef.node_type, tuple):
            fields = getattr(treedef.node_type, "_fields", None)
            key = f".{fields[i]}" if fields else f"[{i}]"
        else:
            key = f"[{i}]"
        out.extend(leaf_paths(child, prefix + key))
    return out


def all_leaves(trees: Iterable[Any]) -> bool:
    return all(tree_structure(t) == _LEAF for t in trees)


__all__ = ["PyTreeDef", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "leaf_paths"]
