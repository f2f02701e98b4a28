"""jit: trace a Python function on abstract values into an HLO module, compile it once per signature.

The cache key is (pytree structure of the dynamic arguments, each leaf's (shape, dtype, weak_type), the
static argument values, the backend): the same signature never retraces, a new one does. A warm call does not
build that key: each signature gets a Python function generated for it (warm_call.py) that checks the arguments
against it in straight-line code (an Array's aval by identity: concrete Arrays share interned avals) and calls the
executable's native entry directly, so dispatch costs about a microsecond plus a fraction per pytree leaf.
`jit(f).lower(*args)` gives the HLO before optimization; `.compile()` the optimized executable with
`.as_text()` and `.cost_analysis()`. `jit(f, explain=True)` warns with the reason whenever f retraces;
`explain_recompile(jitted_f, *args)` returns that reason as a string.

Threads: a jitted function may be called from many threads at once. Tracing is per thread (tracer.py); the
first calls of one signature compile it once (the others wait for it), different signatures and functions
compile side by side (compile_cache.py). Each function keeps at most `config.jit_cache_size` compiled
signatures: the ones with a warm-call function (the first _MAX_FAST) stay, the others go least recently used first
(a call of those takes the full path, which keeps the order; warm calls do not pay for it). `clear_cache()` drops
its own, `clear_caches()` those of every jitted function and eager op.

`donate_argnums` / `donate_argnames` follow JAX: the executable may reuse a donated argument's buffer, so after the
call every xlapy.Array in a donated argument is deleted (`x.is_deleted()`; reading it raises XlapyError "Array has
been deleted (donated to a jitted call)"). numpy arrays and Python scalars are copied in, never deleted.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import re
import threading
import warnings
import weakref
from typing import Any, Callable, Iterable, Sequence

from .. import trace_events
from ..errors import XlapyError
from ..hlo import Module
from . import dtypes
from .array import Array, clear_interned_avals, host_value, is_concrete_array
from .backend import registry_default
from .compile_cache import CompileCache, release_freed_memory
from .eager import build_module, clear_eager_cache
from .lazy import clear_lazy_cache
from .lazy import inline as lazy_inline
from .lazy import state as lazy_state
from .pytree import PyTreeDef, leaf_paths, tree_flatten, tree_unflatten
from .ref_threading import bound, distinct, is_ref, live_value, retrying
from .signature import RefAval, Signature, abstractify
from .tracer import OPEN_TRACES, Trace, current_trace, thread_traces
from .warm_call import MISS, make_warm_call


class RecompilationWarning(UserWarning):
    """Issued by jit(f, explain=True) when f is traced again, naming what changed."""


def _sanitize(name: str) -> str:
    name = re.sub(r"\[['\"]?([^\]'\"]*)['\"]?\]", r"_\1", name).replace(".", "_")
    name = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")
    return name if name and not name[0].isdigit() else f"Arg_{name}"


class Lowered:
    """A traced function: `.as_text()` is the HLO before optimization, `.compile()` optimizes and compiles."""

    def __init__(self, module: Module, in_tree: PyTreeDef, out_tree: PyTreeDef, out_weak: Sequence[bool],
                 backend: str, jitted: "Jitted", ref_io: "RefIO | None" = None):
        self.module, self.in_tree, self.out_tree = module, in_tree, out_tree
        self.out_weak, self.backend, self._jitted = tuple(out_weak), backend, jitted
        self.ref_io = ref_io

    def as_text(self) -> str:
        return self.module.to_text()

    def compile(self) -> "Compiled":
        from ..backends import compile as compile_module
        return Compiled(self, compile_module(self.module, backend=self.backend, pipeline="cpu",
                                             allow_soft_placement=self._jitted.allow_soft_placement))

    def cost_analysis(self) -> dict[str, float]:
        from ..hlo.cost import cost_analysis
        return cost_analysis(self.module)


class Compiled:
    """An executable for one signature: call it with arguments of that signature."""

    def __init__(self, lowered: Lowered, executable: Any):
        self.lowered, self.executable = lowered, executable

    def as_text(self) -> str:
        return self.executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        from ..hlo.cost import cost_analysis
        module = getattr(self.executable, "module", None)
        return cost_analysis(module if isinstance(module, Module) else self.lowered.module)

    def __call__(self, *args, **kwargs):
        jitted = self.lowered._jitted
        _, _, leaves, tree = jitted._split(args, kwargs)
        if tree != self.lowered.in_tree:
            raise XlapyError(f"compiled function called with arguments of structure {tree}, compiled for "
                             f"{self.lowered.in_tree}")
        out = _run(self.executable, leaves, self.lowered)
        jitted._donate(args, kwargs)
        return out


class RefIO:
    """How a traced function threads Refs (frontend/ref_threading.py): the leaves that are Ref arguments, the Refs
    it closes over (parameters after the leaves'), and which of those (indices into arguments' + captured) it
    writes: their last values are the module's outputs after the function's own, written back after each call."""

    def __init__(self, arg_leaves: Sequence[int], captured: Sequence[Any], written: Sequence[int],
                 written_weak: Sequence[bool]):
        self.arg_leaves, self.captured = tuple(arg_leaves), tuple(captured)
        self.written, self.written_weak = tuple(written), tuple(written_weak)

    def inputs(self, leaves: Sequence[Any]) -> list:
        """The executable's arguments: each leaf's value (a Ref's current one), then the captured Refs'."""
        distinct([leaves[k] for k in self.arg_leaves] + list(self.captured), "jit")
        return [host_value(live_value(v) if is_ref(v) else v) for v in leaves] + \
            [host_value(live_value(r)) for r in self.captured]

    def write_back(self, leaves: Sequence[Any], results: Sequence[Any]) -> None:
        refs = [leaves[k] for k in self.arg_leaves] + list(self.captured)
        for slot, value, weak in zip(self.written, results, self.written_weak):
            refs[slot]._value = Array(value, weak_type=weak)


def _run(executable: Any, leaves: Sequence[Any], lowered: Lowered) -> Any:
    io = lowered.ref_io
    arrays = [host_value(leaf) for leaf in leaves] if io is None else io.inputs(leaves)
    out = executable(*arrays)
    n = lowered.out_tree.num_leaves
    total = n + (len(io.written) if io is not None else 0)
    outs = list(out) if total != 1 else [out]
    if io is not None:
        io.write_back(leaves, outs[n:])
    return tree_unflatten(lowered.out_tree, [Array(o, weak_type=w) for o, w in zip(outs, lowered.out_weak)])


_MAX_FAST = 16          # warm-call functions kept per jitted function; later signatures take the full path


def _no_match(args: tuple, kwargs: dict) -> Any:
    return MISS


_LIVE: "weakref.WeakSet[Jitted]" = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def _live_jitted() -> list["Jitted"]:
    with _LIVE_LOCK:
        return list(_LIVE)


def _forget_warm_calls() -> None:
    """When a profiler trace starts or stops, warm calls must take the full path once: the signature then says
    whether the executable is the instrumented one (so warm calls need no check of their own)."""
    for jitted in _live_jitted():
        jitted._forget_warm_calls()


trace_events.on_start_stop(_forget_warm_calls)


def clear_caches() -> None:
    """Drop every compiled executable: each jitted function's signatures and the eager-op cache (jax.clear_caches).
    Their machine code and buffers are freed as soon as nothing else holds them (a Compiled object, a running
    call); later calls trace and compile again."""
    for jitted in _live_jitted():
        jitted.clear_cache()
    clear_eager_cache()
    clear_lazy_cache()
    clear_interned_avals()
    release_freed_memory()


class Jitted:
    """The result of jit(f): call it like f.

    Warm calls take a fast path: each compiled signature gets a function generated for it (warm_call.py) that
    checks the arguments against that signature in straight-line code and calls the executable; the full
    signature (pytree flattening, avals, static values, the cache lookup) is built only when none matches."""

    _sharded: Any = None        # jit(in_shardings=, out_shardings=): parallel/sharded_jit.ShardedJit

    def __init__(self, fun: Callable, static_argnums: int | Iterable[int] = (), static_argnames: str |
                 Iterable[str] = (), donate_argnums: int | Iterable[int] = (), backend: str | None = None,
                 explain: bool = False, donate_argnames: str | Iterable[str] = (), allow_soft_placement: bool = False):
        self.fun = fun
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        self.donate_argnames = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames)
        self.backend = backend
        self.allow_soft_placement = allow_soft_placement
        self.explain = explain
        self.trace_count = 0
        self._lock = threading.Lock()           # guards trace_count and the warm-call functions
        self._cache = CompileCache(lambda: dtypes.config.jit_cache_size, on_evict=self._evicted,
                                   keep=self._has_warm_call)
        self._fast: dict[Signature, list[Callable]] = {}     # warm-call functions (one per kind of leaves seen)
        self._order: list[Callable] = []        # the same, oldest first
        self._dispatch: Callable = _no_match    # tries them, newest first: the result, or MISS
        try:
            self._params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            self._params = []
        positional = [p.name for p in self._params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._argnames = positional
        # static argnames given positionally, and static argnums passed by keyword, are both recognized
        self._static_names = set(self.static_argnames) | {positional[i] for i in self.static_argnums
                                                          if -len(positional) <= i < len(positional)}
        with _LIVE_LOCK:
            _LIVE.add(self)
        name = getattr(fun, "__name__", "fun")
        self.__name__ = name
        self.module_name = "jit_" + re.sub(r"[^A-Za-z0-9_]", "_", name).rstrip("_")
        functools.update_wrapper(self, fun, updated=())   # not fun.__dict__: it may hold names Jitted uses

    # -- arguments -----------------------------------------------------------------------------------
    def _split(self, args: tuple, kwargs: dict):
        """(static items, dynamic (args, kwargs) with static ones set to None, dynamic leaves, treedef)."""
        n = len(args)
        static_pos = {i % n for i in self.static_argnums if -n <= i < n}
        static_pos |= {i for i, name in enumerate(self._argnames[:n]) if name in self._static_names}
        static = [(i, args[i]) for i in sorted(static_pos)]
        static += [(k, kwargs[k]) for k in sorted(kwargs) if k in self._static_names]
        for key, value in static:
            try:
                hash(value)
            except TypeError:
                raise XlapyError(f"jit: static argument {self._arg_label(key)} must be hashable, got "
                                 f"{type(value).__name__}") from None
        dyn_args = tuple(None if i in static_pos else a for i, a in enumerate(args))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        return tuple(static), (dyn_args, dyn_kwargs), leaves, tree

    def _arg_label(self, key) -> str:
        if isinstance(key, int):
            return self._argnames[key] if key < len(self._argnames) else f"#{key}"
        return str(key)

    def _leaf_names(self, tree: PyTreeDef) -> list[str]:
        """Readable names per leaf: `x`, `params['w']`, `*args[2]` ..."""
        names = []
        for path in leaf_paths(tree):
            m = re.match(r"\[(\d)\]\[(\d+|'[^']*')\](.*)", path)
            if not m:
                names.append(path)
                continue
            group, key, rest = m.groups()
            if group == "0":
                i = int(key)
                base = self._argnames[i] if i < len(self._argnames) else f"args[{i}]"
            else:
                base = key.strip("'")
            names.append(base + rest)
        return names

    def _signature(self, args: tuple, kwargs: dict):
        static, dyn, leaves, tree = self._split(args, kwargs)
        try:
            avals = tuple(abstractify(leaf) for leaf in leaves)
        except XlapyError:          # again, naming the argument
            names = self._leaf_names(tree)
            avals = tuple(abstractify(leaf, f" {name}") for leaf, name in zip(leaves, names))
        backend = self.backend or dtypes.config.default_backend or registry_default()
        return Signature(tree, avals, static, backend, bool(dtypes.config.enable_x64),
                         trace_events.session() is not None), dyn, leaves

    # -- tracing -------------------------------------------------------------------------------------
    def _trace(self, sig: Signature, args: tuple, kwargs: dict) -> Lowered:
        with trace_events.span(f"trace {self.module_name}", "trace"):
            return self._trace_untimed(sig, args, kwargs)

    def _trace_untimed(self, sig: Signature, args: tuple, kwargs: dict) -> Lowered:
        with self._lock:
            self.trace_count += 1
        arg_refs = [k for k, a in enumerate(sig.avals) if isinstance(a, RefAval)]
        leaves = self._split(args, kwargs)[2] if arg_refs else []
        distinct([leaves[k] for k in arg_refs], self.module_name)
        return retrying(lambda captured: self._trace_once(sig, args, kwargs, arg_refs, leaves, captured),
                        current_trace())

    def _trace_once(self, sig: Signature, args: tuple, kwargs: dict, arg_refs: list[int], leaves: list,
                    captured: list) -> Lowered:
        """One trace of f; Ref arguments and the Refs in `captured` are threaded (RefIO)."""
        names = self._leaf_names(sig.tree)
        trace = Trace("main")
        with trace:
            params = [trace.new_param(a.aval if isinstance(a, RefAval) else a, _sanitize(n))
                      for a, n in zip(sig.avals, names)]
            refs = [leaves[k] for k in arg_refs] + captured
            ref_params = [params[k] for k in arg_refs] + [trace.new_param(live_value(r).aval, f"ref_{j}")
                                                          for j, r in enumerate(captured)]
            values = list(params)
            for k in arg_refs:
                values[k] = leaves[k]
            with bound(refs, ref_params, trace):
                dyn_args, dyn_kwargs = tree_unflatten(sig.tree, values)
                static = dict(sig.static)
                full_args = [static.get(i, a) for i, a in enumerate(dyn_args)]
                full_kwargs = dict(dyn_kwargs, **{k: v for k, v in static.items() if isinstance(k, str)})
                out = self.fun(*full_args, **full_kwargs)
                out_leaves, out_tree = tree_flatten(out)
                if any(is_ref(v) for v in out_leaves):
                    raise XlapyError(f"{self.module_name}: a jitted function cannot return a Ref; return "
                                     f"`freeze(ref)` or `ref[...]`")
                outs = [trace.lift(v) for v in out_leaves]
                finals = [trace.lift(live_value(r)) for r in refs]
        written = [j for j, (f, p) in enumerate(zip(finals, ref_params)) if f is not p]
        extra = [finals[j] for j in written]
        comp = trace.finish(outs + extra, tuple_root=len(outs) + len(extra) != 1)
        module = build_module(self.module_name, comp)
        io = RefIO(arg_refs, captured, written, [f.aval.weak_type for f in extra]) if refs else None
        return Lowered(module, sig.tree, out_tree, [o.aval.weak_type for o in outs], sig.backend, self, io)

    def lower(self, *args, **kwargs) -> Lowered:
        sig, _, _ = self._signature(args, kwargs)
        return self._trace(sig, args, kwargs)

    def __call__(self, *args, **kwargs):
        if not OPEN_TRACES or not thread_traces():
            out = self._dispatch(args, kwargs)
            if out is not MISS:
                return out
        return self._call_slow(args, kwargs)

    def _call_slow(self, args: tuple, kwargs: dict):
        if current_trace() is not None or _DISABLED[0]:       # jit inside jit: inline; disable_jit: op by op
            return self.fun(*args, **kwargs)
        if self._sharded is not None:       # partitioned over a mesh, run on its devices
            return self._sharded.call(self, args, kwargs)
        sig, _, leaves = self._signature(args, kwargs)
        lowered, executable = self._cache.get_or_make(sig, lambda: self._compile(sig, args, kwargs))
        if lazy_state.enabled() and self.backend is None and not (self.donate_argnums or self.donate_argnames) \
                and lowered.ref_io is None and lazy_inline.wants_inline(leaves):       # pending arguments: one node of the lazy graph
            return lazy_inline.call_lowered(lowered, leaves)
        run = self._warm_call(sig, args, kwargs, leaves, lowered, executable)
        if run is not None:
            out = run(args, kwargs)
            if out is not MISS:
                return out
        out = _run(executable, leaves, lowered)
        self._donate(args, kwargs)
        return out

    def _compile(self, sig: Signature, args: tuple, kwargs: dict) -> tuple[Lowered, Any]:
        if self.explain and len(self._cache):
            warnings.warn(f"{self.module_name} is retraced: {self._explain(sig)}", RecompilationWarning,
                          stacklevel=5)
        lowered = self._trace(sig, args, kwargs)
        from ..backends import compile as compile_module
        with trace_events.span(f"compile {self.module_name}", "compile", backend=sig.backend):
            return lowered, compile_module(lowered.module, backend=sig.backend,
                                           allow_soft_placement=self.allow_soft_placement)

    # -- warm-call functions (warm_call.py) ---------------------------------------------------------------
    def _warm_call(self, sig: Signature, args: tuple, kwargs: dict, leaves: list, lowered: Lowered,
                   executable: Any) -> Callable | None:
        """A new warm-call function for this call of sig (the existing ones did not match its kinds of leaves:
        Arrays, numpy arrays, scalars), kept while there is room (_MAX_FAST per function); None if none."""
        if self._warm_count() >= _MAX_FAST:
            return None
        run = make_warm_call(sig, args, kwargs, leaves, lowered, executable, self._donated_keys(len(args)),
                             check_backend=self.backend is None, label=self.module_name)
        if run is None:
            return None
        with self._lock:
            # only while sig is cached: once evicted its executable must not live on in a warm-call function
            if self._warm_count() < _MAX_FAST and sig in self._cache:
                self._fast.setdefault(sig, []).append(run)
                self._order.append(run)
                self._set_dispatch()
        return run

    def _warm_count(self) -> int:
        return len(self._order)

    def _set_dispatch(self) -> None:
        """Point _dispatch at the warm-call functions, newest first (called with self._lock held)."""
        runs = tuple(reversed(self._order))
        if not runs:
            self._dispatch = _no_match
            return
        if len(runs) == 1:
            self._dispatch = runs[0]
            return

        def dispatch(args: tuple, kwargs: dict) -> Any:
            for r in runs:
                out = r(args, kwargs)
                if out is not MISS:
                    return out
            return MISS
        self._dispatch = dispatch

    def _has_warm_call(self, sig: Signature) -> bool:
        return sig in self._fast

    def _evicted(self, sig: Signature, entry: Any) -> None:
        with self._lock:
            runs = self._fast.pop(sig, None)
            if runs:
                self._order = [r for r in self._order if r not in runs]
                self._set_dispatch()

    def _forget_warm_calls(self) -> None:
        with self._lock:
            self._fast.clear()
            self._order = []
            self._dispatch = _no_match

    def _donated_keys(self, n: int) -> tuple[set[int], set[str]]:
        """The donated positions (of n positional arguments) and keyword names."""
        if not (self.donate_argnums or self.donate_argnames):
            return set(), set()
        positions = {i % n for i in self.donate_argnums if -n <= i < n}
        names = set(self.donate_argnames) | {self._argnames[i] for i in self.donate_argnums
                                             if 0 <= i < len(self._argnames)}
        positions |= {i for i, name in enumerate(self._argnames[:n]) if name in names}
        return positions, names

    def _donate(self, args: tuple, kwargs: dict) -> None:
        """Delete the xlapy.Arrays of donated arguments (JAX: their buffers may now belong to the result)."""
        if not (self.donate_argnums or self.donate_argnames):
            return
        positions, names = self._donated_keys(len(args))
        donated = [args[i] for i in sorted(positions)] + [v for k, v in kwargs.items() if k in names]
        for leaf in tree_flatten(donated)[0]:
            if is_concrete_array(leaf):
                leaf.delete()

    # -- cache introspection ---------------------------------------------------------------------------
    def _cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        """Drop this function's compiled signatures (their code is freed once nothing else holds it)."""
        self._forget_warm_calls()
        self._cache.clear()

    def _explain(self, sig: Signature) -> str:
        if sig in self._cache:
            return "no retrace: a compiled executable for these arguments is cached"
        cached = self._cache.keys()
        if not cached:
            return "first call: nothing is cached yet"
        best = min(cached, key=lambda old: len(_differences(self, old, sig)))
        return "; ".join(_differences(self, best, sig))


def _differences(jitted: Jitted, old: Signature, new: Signature) -> list[str]:
    out = []
    if old.backend != new.backend:
        out.append(f"backend {old.backend!r} -> {new.backend!r}")
    if dict(old.static) != dict(new.static):
        keys = sorted({k for k, _ in old.static} | {k for k, _ in new.static}, key=str)
        o, n = dict(old.static), dict(new.static)
        for k in keys:
            if o.get(k, "<absent>") != n.get(k, "<absent>"):
                out.append(f"static argument {jitted._arg_label(k)} changed: {o.get(k, '<absent>')!r} -> "
                           f"{n.get(k, '<absent>')!r}")
    if old.tree != new.tree:
        out.append(f"argument structure changed: {old.tree} -> {new.tree}")
        return out
    for name, a, b in zip(jitted._leaf_names(new.tree), old.avals, new.avals):
        if isinstance(a, RefAval) != isinstance(b, RefAval):
            kinds = ["a Ref" if isinstance(v, RefAval) else "an array" for v in (a, b)]
            out.append(f"argument {name}: {kinds[0]} -> {kinds[1]}")
        if a.shape != b.shape:
            out.append(f"argument {name}: shape {a.shape} -> {b.shape}")
        if a.dtype != b.dtype:
            out.append(f"argument {name}: dtype {a.dtype} -> {b.dtype}")
        elif a.weak_type != b.weak_type:
            out.append(f"argument {name}: weak_type {a.weak_type} -> {b.weak_type} (Python scalar vs array)")
    return out or ["signature differs"]


def jit(fun: Callable | None = None, *, static_argnums: int | Iterable[int] = (),
        static_argnames: str | Iterable[str] = (), donate_argnums: int | Iterable[int] = (),
        donate_argnames: str | Iterable[str] = (), backend: str | None = None, explain: bool = False,
        allow_soft_placement: bool = False, in_shardings: Any = None, out_shardings: Any = None):
    """Compile `fun` (JAX's jit): usable as `jit(f, ...)` or as a decorator `@jit` / `@partial(jit, ...)`.

    in_shardings / out_shardings: NamedShardings (or tree prefixes of the arguments / results holding them): the
    function is partitioned over their mesh by the SPMD partitioner and runs on its devices
    (frontend/parallel/sharded_jit.py).

    backend: a registered backend's name (xlapy.backends.names()); None: xlapy.default_backend() at each call.
    allow_soft_placement: ops the backend lacks run on the next backend that has them, with a
    SoftPlacementWarning (xlapy/backends/placement.py); without it such an op is an UnsupportedOpcodeError.

    donate_argnums / donate_argnames: as in JAX, the compiled program may reuse these arguments' buffers, so
    the xlapy.Arrays passed there are deleted after the call (using one raises XlapyError "Array has been
    deleted (donated to a jitted call)"); pass numpy arrays, or keep the result, to go on using the values."""
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, donate_argnames=donate_argnames, backend=backend,
                             explain=explain, allow_soft_placement=allow_soft_placement, in_shardings=in_shardings,
                             out_shardings=out_shardings)
    jitted = Jitted(fun, static_argnums, static_argnames, donate_argnums, backend, explain, donate_argnames,
                    allow_soft_placement)
    if in_shardings is not None or out_shardings is not None:
        from .parallel.sharded_jit import ShardedJit
        jitted._sharded = ShardedJit(in_shardings, out_shardings)
    return jitted


_DISABLED = [0]         # open disable_jit contexts (process-wide, as JAX's config flag)


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Inside this context jitted functions run op by op, eagerly (jax.disable_jit): for debugging with print
    and breakpoints. Warm calls are dropped on entry, so every call takes the slow path, which checks the flag
    (warm calls cost nothing extra outside the context)."""
    if not disable:
        yield
        return
    _DISABLED[0] += 1
    _forget_warm_calls()
    try:
        yield
    finally:
        _DISABLED[0] -= 1


def explain_recompile(jitted: Jitted, *args, **kwargs) -> str:
    """Why calling `jitted(*args, **kwargs)` would (or would not) trace again, naming each changed argument."""
    if not isinstance(jitted, Jitted):
        raise XlapyError("explain_recompile expects a function returned by xlapy.jit")
    sig, _, _ = jitted._signature(args, kwargs)
    return jitted._explain(sig)
