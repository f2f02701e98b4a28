"""jit's warm path: for each compiled signature, a Python function generated to recognize it and run it.

A warm call must not build the full Signature (flatten the pytree, abstractify every leaf, hash the key): that
costs several microseconds. Instead each signature gets `run(args, kwargs)`, written as straight-line Python for
that signature alone, in three parts:

  1. guards: the configuration the trace depended on (the default backend unless jit fixed one, enable_x64);
  2. argument checks: the pytree structure (node types, lengths, dict keys, registered aux data), each leaf's
     type and aval (an Array's aval by identity first: concrete Arrays share interned avals), static values;
     meanwhile it collects the expression of each leaf's numpy value;
  3. the call: the executable's native entry on those values, donated Arrays deleted, and the output pytree of
     Arrays whose avals were computed here.

Any check that fails returns MISS, having done nothing, and jit takes the full path. The generated source is
kept as `run.source` (tests and curious readers print it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..hlo import Module
from . import dtypes
from .array import Array, interned_aval
from .backend import registry_default
from .pytree import PyTreeDef, registered_node
from .ref_threading import is_ref
from .signature import Signature, abstractify
from .tracer import Tracer, concrete_value

if TYPE_CHECKING:
    from .jit import Lowered

MISS = object()        # what a warm-call function returns when the arguments are not its signature's


def static_eq(value: Any, expected: Any) -> bool:
    """Whether a static argument is the one a warm-call function was made for (same type, equal)."""
    if value is expected:
        return True
    try:
        return type(value) is type(expected) and bool(value == expected)
    except Exception:       # noqa: BLE001 - a value that cannot be compared takes the full path
        return False


class _Unsupported(Exception):
    """A leaf the warm-call function does not handle."""


def make_warm_call(sig: Signature, args: tuple, kwargs: dict, leaves: Sequence[Any], lowered: "Lowered",
                   executable: Any, donated: tuple[set[int], set[str]], check_backend: bool,
                   label: str) -> Callable | None:
    """The warm-call function of `sig`, made from one call (args, kwargs) of it; None when a leaf is of a kind
    it does not handle (a Tracer). donated: the donated positions and keyword names; check_backend: whether the
    default backend is part of the signature (jit was given none)."""
    writer = _Writer(sig, leaves)
    try:
        writer.arguments(args, kwargs, donated)
    except _Unsupported:
        return None
    guards = writer.guards(check_backend)
    writer.call(executable, lowered)
    return writer.build(guards, label)


class _Writer:
    """One warm-call function being written: its lines, and the constants they name (c0, c1, ...)."""

    def __init__(self, sig: Signature, leaves: Sequence[Any]):
        self.sig = sig
        self.consts: dict[str, Any] = {}
        self.body: list[str] = []
        self.values: list[str] = []             # per leaf, the expression of its numpy value
        self.donated_arrays: list[str] = []     # the variables holding donated Arrays
        self.callee: Any = None                 # what CALL names: the native entry, else the executable
        self.ref_args: list[str] = []           # the variables holding Ref arguments (jit.RefIO), leaf order
        self._names = iter(f"v{i}" for i in range(1 << 30))
        self._leaves = iter(zip(leaves, sig.avals))

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        self.consts[name] = value
        return name

    def emit(self, line: str) -> None:
        self.body.append(line)

    def name(self) -> str:
        return next(self._names)

    # -- 1. guards -----------------------------------------------------------------------------------------
    def guards(self, check_backend: bool) -> list[str]:
        out = []
        if check_backend:
            out.append(f"if (CFG.default_backend or DEFAULT_BACKEND()) != {self.const(self.sig.backend)}: return MISS")
        out.append(f"if CFG.enable_x64 != {self.const(self.sig.x64)}: return MISS")
        return out

    # -- 2. argument checks ----------------------------------------------------------------------------------
    def arguments(self, args: tuple, kwargs: dict, donated: tuple[set[int], set[str]]) -> None:
        """Check the argument count, then each positional and keyword argument in signature order."""
        static = dict(self.sig.static)
        args_tree, kwargs_tree = self.sig.tree.children
        donated_pos, donated_names = donated
        self.emit(f"if len(args) != {len(args)}: return MISS")
        self.emit(f"if len(kwargs) != {len(kwargs)}: return MISS" if kwargs else "if kwargs: return MISS")
        for i, child in enumerate(args_tree.children):
            v = self.name()
            self.emit(f"{v} = args[{i}]")
            if i in static:
                self.static_value(v, static[i])
            else:
                self.node(v, child, i in donated_pos)
        dyn_keys = list(kwargs_tree.aux)
        for key in dyn_keys + sorted(k for k in kwargs if k not in kwargs_tree.aux):
            v = self.name()
            self.emit(f"{v} = kwargs.get({self.const(key)}, MISS)")
            self.emit(f"if {v} is MISS: return MISS")
            if key in static:
                self.static_value(v, static[key])
            else:
                self.node(v, kwargs_tree.children[dyn_keys.index(key)], key in donated_names)

    def static_value(self, v: str, value: Any) -> None:
        c = self.const(value)
        self.emit(f"if {v} is not {c} and not static_eq({v}, {c}): return MISS")

    def node(self, v: str, tree: PyTreeDef, donated: bool) -> None:
        """Check the subtree held by variable `v`: its node, then each child (bound to a variable if indexed)."""
        if tree.node_type is None:
            return self.leaf(v, donated)
        for expr, child in zip(self.children(v, tree), tree.children):
            if "[" in expr:
                name = self.name()
                self.emit(f"{name} = {expr}")
                expr = name
            self.node(expr, child, donated)

    def children(self, v: str, tree: PyTreeDef) -> list[str]:
        """Check the node type (and length, keys or aux data) of `v`; the expressions of its children."""
        kind, n = tree.node_type, len(tree.children)
        if kind is tuple or kind is list:
            self.emit(f"if type({v}) is not {kind.__name__} or len({v}) != {n}: return MISS")
            return [f"{v}[{i}]" for i in range(n)]
        if kind is dict:
            self.emit(f"if type({v}) is not dict or len({v}) != {n}: return MISS")
            children = []
            for key in tree.aux:
                child = self.name()
                self.emit(f"{child} = {v}.get({self.const(key)}, MISS)")
                self.emit(f"if {child} is MISS: return MISS")
                children.append(child)
            return children
        if kind is type(None):
            self.emit(f"if {v} is not None: return MISS")
            return []
        registered = registered_node(kind)
        if registered is not None:
            flat, aux = self.name(), self.name()
            self.emit(f"if type({v}) is not {self.const(kind)}: return MISS")
            self.emit(f"{flat}, {aux} = {self.const(registered[0])}({v})")
            self.emit(f"if {aux} != {self.const(tree.aux)}: return MISS")
            self.emit(f"{flat} = tuple({flat})")
            self.emit(f"if len({flat}) != {n}: return MISS")
            return [f"{flat}[{i}]" for i in range(n)]
        self.emit(f"if type({v}) is not {self.const(kind)}: return MISS")       # a namedtuple
        return [f"{v}[{i}]" for i in range(n)]

    def leaf(self, v: str, donated: bool) -> None:
        """Check a leaf's type and aval, by the kind of leaf the signature was made from."""
        value, aval = next(self._leaves)
        t = type(value)
        if t is Array:
            a = self.const(interned_aval(aval.shape, aval.dtype, aval.weak_type))
            self.emit(f"if type({v}) is not Array: return MISS")
            self.emit(f"t = {v}.aval")
            self.emit(f"if t is not {a} and (t.shape != {a}.shape or t.dtype != {a}.dtype or "
                      f"t.weak_type != {a}.weak_type): return MISS")
            self.values.append(f"{v}._value")
            if donated:
                self.donated_arrays.append(v)
        elif t is np.ndarray:
            raw = value.dtype
            self.emit(f"if type({v}) is not ndarray or {v}.dtype != {self.const(raw)} or "
                      f"{v}.shape != {self.const(aval.shape)}: return MISS")
            self.values.append(v if raw == aval.dtype else f"{v}.astype({self.const(aval.dtype)})")
        elif t in (bool, int, float, complex):
            self.emit(f"if type({v}) is not {t.__name__}: return MISS")
            self.values.append(f"asarray({v}, {self.const(aval.dtype)})")
        elif isinstance(value, np.generic) and value.dtype.kind in "biufc" and type(value) is value.dtype.type:
            self.emit(f"if type({v}) is not {self.const(t)}: return MISS")
            self.values.append(f"asarray({v}, {self.const(aval.dtype)})")
        elif isinstance(value, Tracer):
            raise _Unsupported
        elif is_ref(value):             # its current value, an Array (jit.RefIO writes the new one back)
            self.emit(f"if type({v}) is not {self.const(t)} or {v}._state != 'live': return MISS")
            self.values.append(self.ref_value(v, aval.aval))
            self.ref_args.append(v)
        else:
            self.emit(f"if type({v}) is not {self.const(t)} or abstractify({v}) != {self.const(aval)}: return MISS")
            self.values.append(f"concrete_value({v})")

    def ref_value(self, ref: str, aval: Any) -> str:
        """Check that the Ref in expression `ref` holds an Array of `aval`; the expression of its numpy value."""
        w, a = self.name(), self.const(interned_aval(aval.shape, aval.dtype, aval.weak_type))
        self.emit(f"{w} = {ref}._value")
        self.emit(f"if type({w}) is not Array: return MISS")
        self.emit(f"t = {w}.aval")
        self.emit(f"if t is not {a} and (t.shape != {a}.shape or t.dtype != {a}.dtype or "
                  f"t.weak_type != {a}.weak_type): return MISS")
        return f"{w}._value"

    # -- 3. the call and its results --------------------------------------------------------------------------
    def call(self, executable: Any, lowered: "Lowered") -> None:
        """Call the executable on the leaves' values (and the Refs' jit closes over), delete donated Arrays, write
        the Refs' new values back, return the output pytree."""
        fast = getattr(executable, "fast_call", None)
        self.callee = fast or executable
        io, n = lowered.ref_io, lowered.out_tree.num_leaves
        refs = list(self.ref_args)
        for ref in (io.captured if io is not None else ()):
            c = self.const(ref)
            self.emit(f"if {c}._state != 'live': return MISS")
            self.values.append(self.ref_value(c, ref._value.aval))
            refs.append(c)
        for i, a in enumerate(refs):        # one Ref in two places: the full path raises
            for other in refs[i + 1:]:
                self.emit(f"if {a} is {other}: return MISS")
        written = [refs[slot] for slot in io.written] if io is not None else []
        total = n + len(written)
        self.emit(f"o = CALL({', '.join(self.values)})")
        for v in self.donated_arrays:
            self.emit(f"{v}.delete()")
        weaks = list(lowered.out_weak) + (list(io.written_weak) if io is not None else [])
        for k, (shape, weak) in enumerate(zip(_result_shapes(lowered.module, total), weaks)):
            o = "o" if total == 1 else f"o[{k}]"
            if fast is not None:       # results are fresh row-major ndarrays of exactly these avals
                self.emit(f"r{k} = new(Array)")
                self.emit(f"r{k}._value = {o}")
                self.emit(f"r{k}.aval = {self.const(interned_aval(tuple(shape.dims), shape.dtype, bool(weak)))}")
            else:
                self.emit(f"r{k} = Array({o}, weak_type={bool(weak)})")
        for j, ref in enumerate(written):
            self.emit(f"{ref}._value = r{n + j}")
        self.emit(f"return {self.output(lowered.out_tree, iter(range(n)))}")

    def output(self, tree: PyTreeDef, results) -> str:
        """The expression rebuilding the output pytree `tree` from the results r0, r1, ..."""
        kind = tree.node_type
        if kind is None:
            return f"r{next(results)}"
        parts = [self.output(c, results) for c in tree.children]
        if kind is tuple:
            return "(" + "".join(p + ", " for p in parts) + ")"
        if kind is list:
            return "[" + ", ".join(parts) + "]"
        if kind is dict:
            return "{" + ", ".join(f"{self.const(k)}: {p}" for k, p in zip(tree.aux, parts)) + "}"
        if kind is type(None):
            return "None"
        registered = registered_node(kind)
        if registered is not None:
            return f"{self.const(registered[1])}({self.const(tree.aux)}, [{', '.join(parts)}])"
        return f"{self.const(kind)}({', '.join(parts)})"

    # -- the function ------------------------------------------------------------------------------------------
    def build(self, guards: list[str], label: str) -> Callable:
        """Compile `def run(args, kwargs)` inside a factory whose parameters are the names the lines use."""
        fixed = dict(MISS=MISS, Array=Array, new=object.__new__, ndarray=np.ndarray, asarray=np.asarray,
                     abstractify=abstractify, concrete_value=concrete_value, static_eq=static_eq,
                     CFG=dtypes.config, DEFAULT_BACKEND=registry_default, CALL=self.callee)
        params = list(fixed) + list(self.consts)
        source = (f"def factory({', '.join(params)}):\n    def run(args, kwargs):\n"
                  + "".join(f"        {line}\n" for line in guards + self.body) + "    return run\n")
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<xlapy.jit warm call of {label}>", "exec"), namespace)
        run = namespace["factory"](*fixed.values(), *self.consts.values())
        run.source = source
        return run


def _result_shapes(module: Module, n: int) -> list:
    shape = module.entry.root.shape
    leaves = list(shape.leaves())
    return leaves if len(leaves) == n else [shape]
