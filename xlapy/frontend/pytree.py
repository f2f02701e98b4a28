"""Pytrees: nested tuples, lists, dicts (keys sorted, as in JAX), None, namedtuples and registered classes.

    leaves, treedef = tree_flatten({"b": (1, 2), "a": None})   # leaves [1, 2]; None is an empty node
    tree_unflatten(treedef, [10, 20])                           # {"a": None, "b": (10, 20)}

A PyTreeDef is a hashable value: two trees have equal treedefs iff they have the same structure (node
types, dict keys, namedtuple types, registered aux data) — jit uses it in its cache key.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, Sequence

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
        self.node_type, self.aux, self.children = node_type, aux, _Children(children)
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

    def node_data(self) -> tuple[type, Hashable] | None:
        """(node type, aux data) of the root, as JAX; None for a leaf."""
        return None if self.node_type is None else (self.node_type, self.aux)

    def flatten_up_to(self, xs: Any) -> list[Any]:
        """The subtrees of `xs` at this treedef's leaves (`xs` has this structure as a prefix)."""
        return _flatten_up_to(self, xs, "")

    def __repr__(self) -> str:
        return f"PyTreeDef({_describe(self)})"


class _Children(tuple):
    """A treedef's child treedefs: a tuple, and callable as JAX's `treedef.children()` (a list)."""

    def __call__(self) -> list["PyTreeDef"]:
        return list(self)


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


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every item is a leaf."""
    return all(tree_structure(t, is_leaf) == _LEAF for t in iterable)


# -- jax.tree_util's whole API: key paths, registration helpers, reductions, transposition ----------------------
import dataclasses as _dataclasses
import functools as _functools


@_dataclasses.dataclass(frozen=True)
class DictKey:
    """The key path entry of a dict child: `['a']`."""
    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@_dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The key path entry of a tuple/list child: `[0]`."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@_dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The key path entry of an attribute (namedtuple field, dataclass field): `.name`."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@_dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The key path entry of a child of a node registered without keys: its flat index."""
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = Any
KeyPath = tuple
_NO_INIT = object()
# type -> flatten_with_keys(node) -> (list of (key, child), aux)
_KEYED: dict[type, Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]]] = {}


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: `['a'][0].x`, or with simple=True the bare keys joined by `separator` (`a/0/x`)."""
    if not simple:
        return separator.join(str(k) for k in keys)

    def bare(k):
        for attr in ("key", "idx", "name"):
            if hasattr(k, attr):
                return str(getattr(k, attr))
        return str(k)
    return separator.join(bare(k) for k in keys)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Register `nodetype` with key paths: flatten_with_keys(x) -> (iterable of (key, child), aux_data)."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func)
    _KEYED[nodetype] = flatten_with_keys


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: `x.tree_flatten() -> (children, aux)` and `cls.tree_unflatten(aux, children)`."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: `x.tree_flatten_with_keys()`, `cls.tree_unflatten`, optionally `x.tree_flatten()`."""
    flat = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              None if flat is None else (lambda x: x.tree_flatten()))
    return cls


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()) -> type:
    """Register a dataclass: `data_fields` are children, `meta_fields` static aux data (inferred from the
    dataclass fields when both are None: `field(metadata=dict(static=True))` marks a meta field)."""
    if data_fields is None and meta_fields is None:
        if not _dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when the class is not a "
                            "dataclass")
        fields = [f for f in _dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    elif data_fields is None or meta_fields is None:
        raise TypeError("register_dataclass: data_fields and meta_fields must both be given, or neither")
    data_fields, meta_fields = list(data_fields), list(meta_fields)
    if _dataclasses.is_dataclass(nodetype):
        init = {f.name for f in _dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if init != given:
            raise ValueError(f"data_fields and meta_fields must include all dataclass fields with ``init=True`` "
                             f"and only them. Missing: {sorted(init - given)}; unexpected: {sorted(given - init)}")

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(meta, children):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, children)))
    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype


def register_static(cls: type) -> type:
    """Register `cls` as a node with no children whose instances are the aux data (hashable)."""
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


class Partial(_functools.partial):
    """functools.partial as a pytree: the function is static, the bound arguments are children (so a Partial
    can be passed through jit and the transformations)."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, _functools.partial):
            original, func = func, func.func
            args, kw = original.args + args, {**original.keywords, **kw}
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, ch: Partial(func, *ch[0], **ch[1]))


def _keyed_children(x: Any, node_type: type, children: list, aux: Hashable) -> list:
    if node_type in (tuple, list):
        return [SequenceKey(i) for i in range(len(children))]
    if node_type is dict:
        return [DictKey(k) for k in aux]
    if node_type in _KEYED:
        return [k for k, _ in _KEYED[node_type](x)[0]]
    fields = getattr(node_type, "_fields", None)
    if fields is not None and issubclass(node_type, tuple):
        return [GetAttrKey(f) for f in fields]
    return [FlattenedIndexKey(i) for i in range(len(children))]


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """((key path, leaf) pairs, treedef)."""
    out: list[tuple[KeyPath, Any]] = []

    def leafy(path, x):
        if is_leaf is None:
            return False
        return is_leaf(path, x) if is_leaf_takes_path else is_leaf(x)

    def go(path: tuple, x: Any) -> PyTreeDef:
        h = None if leafy(path, x) else _handler(x)
        if h is None:
            out.append((path, x))
            return _LEAF
        children, aux = h[0](x)
        children = list(children)
        keys = _keyed_children(x, type(x), children, aux)
        return PyTreeDef(type(x), aux, tuple(go(path + (k,), c) for k, c in zip(keys, children)))
    return out, go((), tree)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """f(key_path, leaf, *other leaves) at every leaf."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef.flatten_up_to(r) for r in rest]
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def _flatten_up_to(t: PyTreeDef, x: Any, path: str) -> list[Any]:
    if t.node_type is None:
        return [x]
    h = _handler(x)
    if h is None or type(x) is not t.node_type:
        raise ValueError(f"pytree structure error: different types at key path\n    {path or 'tree'}\nAt that key "
                         f"path, the prefix pytree has a subtree of type {t.node_type.__name__}, but the full pytree "
                         f"has a subtree of type {type(x).__name__}.")
    children, aux = h[0](x)
    children = list(children)
    if len(children) != len(t.children):
        raise ValueError(f"pytree structure error: different lengths of {t.node_type.__name__} at key path\n    "
                         f"{path or 'tree'}\nAt that key path, the prefix pytree has a subtree of type "
                         f"{t.node_type.__name__} of length {len(t.children)}, but the full pytree has a subtree of "
                         f"the same type but of length {len(children)}.")
    if aux != t.aux:
        raise ValueError(f"pytree structure error: different pytree metadata at key path\n    {path or 'tree'}\n"
                         f"The prefix has {t.aux!r}, the full pytree {aux!r}.")
    out: list[Any] = []
    for i, (ct, c) in enumerate(zip(t.children, children)):
        key = f"[{t.aux[i]!r}]" if t.node_type is dict else f"[{i}]"
        out.extend(_flatten_up_to(ct, c, path + key))
    return out


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INIT,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """functools.reduce over the leaves."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INIT:
        return _functools.reduce(function, leaves)
    return _functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *, identity: Any = _NO_INIT,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """A balanced reduction of the leaves by an associative operation."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_INIT:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(leaves) > 1:
        leaves = [operation(leaves[i], leaves[i + 1]) if i + 1 < len(leaves) else leaves[i]
                  for i in range(0, len(leaves), 2)]
    return leaves[0]


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.children)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    return PyTreeDef(tuple, None, tuple(treedefs))


def _compose(outer: PyTreeDef, inner: PyTreeDef) -> PyTreeDef:
    """`outer` with `inner` at each of its leaves."""
    if outer.node_type is None:
        return inner
    return PyTreeDef(outer.node_type, outer.aux, tuple(_compose(c, inner) for c in outer.children))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any) -> Any:
    """A tree of structure outer(inner) turned into inner(outer)."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    expected = _compose(outer_treedef, inner_treedef)
    if treedef != expected:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    n_inner, n_outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    groups = [flat[i * n_inner:(i + 1) * n_inner] for i in range(n_outer)]
    transposed = [tree_unflatten(outer_treedef, [g[j] for g in groups]) for j in range(n_inner)]
    return tree_unflatten(inner_treedef, transposed)


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`prefix_tree` with each leaf repeated over the matching subtree of `full_tree`."""
    prefix = tree_structure(prefix_tree, is_leaf)
    subtrees = prefix.flatten_up_to(full_tree)
    leaves = tree_leaves(prefix_tree, is_leaf)
    return tree_unflatten(prefix, [tree_map(lambda _: x, sub, is_leaf=is_leaf) for x, sub in zip(leaves, subtrees)])


def flatten_one_level(tree: Any) -> tuple[list[Any], Hashable]:
    """(children, aux data) of a node; a leaf raises ValueError."""
    h = _handler(tree)
    if h is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = h[0](tree)
    if _is_namedtuple(tree) and type(tree) not in _REGISTRY:
        aux = type(tree)
    return list(children), aux


def flatten_one_level_with_keys(tree: Any) -> tuple[list[tuple[Any, Any]], Hashable]:
    children, aux = flatten_one_level(tree)
    h = _handler(tree)
    keys = _keyed_children(tree, type(tree), children, h[0](tree)[1])
    return list(zip(keys, children)), aux


def is_tree_node(x: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether `x` is an inner node (a registered container, a namedtuple or None)."""
    if is_leaf is not None and is_leaf(x):
        return False
    if isinstance(x, type):
        return x in _REGISTRY or (issubclass(x, tuple) and hasattr(x, "_fields"))
    return _handler(x) is not None


class _DefaultRegistry:
    """jax.tree_util.default_registry: the registry tree_flatten uses (this module's)."""

    def flatten(self, tree: Any, is_leaf: Callable[[Any], bool] | None = None):
        return tree_flatten(tree, is_leaf)

    def register_node(self, nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
        register_pytree_node(nodetype, flatten_func, unflatten_func)


default_registry = _DefaultRegistry()

__all__ = ["PyTreeDef", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map", "leaf_paths", "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "KeyEntry",
           "KeyPath", "keystr", "register_pytree_with_keys", "register_pytree_with_keys_class",
           "register_pytree_node_class", "register_dataclass", "register_static", "Partial",
           "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "tree_reduce",
           "tree_reduce_associative", "tree_all", "tree_transpose", "tree_broadcast", "treedef_children",
           "treedef_is_leaf", "treedef_tuple", "all_leaves", "flatten_one_level", "flatten_one_level_with_keys",
           "is_tree_node", "default_registry"]
