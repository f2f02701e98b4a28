"""Layouts through aliases and control flow on the CPU backend, against the interpreter (which ignores layouts).

A buffer holds its value in the layout of the instruction that wrote it; tuples, get-tuple-elements and calls
forward buffers whatever layouts they declare; the caller reads the result in the entry's declared layout. TF
dumps break the naive assumption that a tuple's declared layout is its operand's (`tf.image.resize`,
`tf.sort(axis=0)`), so random modules mix every source of a layout: parameters, transposes, copies, reshapes,
tuples and get-tuple-elements declaring other layouts, while-loop state, conditionals and calls, nested tuple
results. Each runs through the CPU pipeline and, as an already-optimized module, without it.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import xlapy
from xlapy.testing import assert_same

P0, P1, P2 = (2, 3), (2, 3, 4), ((3, 2), (4, 3, 2))


def _shape(dims, layout) -> str:
    return f"f32[{','.join(map(str, dims))}]{{{','.join(map(str, layout))}}}"


class RandomModule:
    """One random module as HLO text: `values` are (name, dims) of the entry that later ops and the root read."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.computations: list[str] = []
        self.lines: list[str] = []
        self.values: list[tuple[str, tuple]] = []
        self.count = 0

    def layout(self, dims) -> list[int]:
        order = list(range(len(dims)))
        self.rng.shuffle(order)
        return order

    def shape(self, dims) -> str:
        return _shape(dims, self.layout(dims))

    def tuple_shape(self, dims_list) -> str:
        return "(" + ", ".join("s32[]" if d == () else self.shape(d) for d in dims_list) + ")"

    def name(self, prefix: str = "v") -> str:
        self.count += 1
        return f"%{prefix}{self.count}"

    def add(self, dims, expr: str, keep: bool = True) -> str:
        n = self.name()
        self.lines.append(f"  {n} = {self.shape(dims)} {expr}")
        if keep:
            self.values.append((n, dims))
        return n

    def pick(self):
        return self.rng.choice(self.values)

    # -- ops: each appends instructions and values ------------------------------------------------------
    def negate(self):
        x, d = self.pick()
        self.add(d, f"negate({x})")

    def add_two(self):
        x, d = self.pick()
        y, _ = self.rng.choice([v for v in self.values if v[1] == d])
        self.add(d, f"add({x}, {y})")

    def transpose(self):
        x, d = self.pick()
        perm = list(range(len(d)))
        self.rng.shuffle(perm)
        self.add(tuple(d[p] for p in perm), f"transpose({x}), dimensions={{{','.join(map(str, perm))}}}")

    def copy(self):
        x, d = self.pick()
        self.add(d, f"copy({x})")

    def reshape(self):
        x, d = self.pick()
        self.add(tuple(reversed(d)), f"reshape({x})")

    def tuple_gte(self):
        (x, dx), (y, dy) = self.pick(), self.pick()
        t = self.name("t")
        self.lines.append(f"  {t} = {self.tuple_shape([dx, dy])} tuple({x}, {y})")
        k = self.rng.randrange(2)
        self.add((dx, dy)[k], f"get-tuple-element({t}), index={k}")

    def dot(self):
        pairs = [(a, b) for a in self.values for b in self.values
                 if len(a[1]) == 2 and len(b[1]) == 2 and a[1][1] == b[1][0]]
        if not pairs:
            return self.negate()
        (x, dx), (y, dy) = self.rng.choice(pairs)
        self.add((dx[0], dy[1]), f"dot({x}, {y}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")

    def reduce(self):
        x, d = self.pick()
        k = self.rng.randrange(len(d))
        self.add(tuple(n for i, n in enumerate(d) if i != k), f"reduce({x}, %zero), dimensions={{{k}}}, to_apply=%sum")

    def update_slice(self):
        x, d = self.pick()
        window = (1,) + tuple(d[1:])
        s = self.name("s")
        self.lines.append(f"  {s} = {self.shape(window)} slice({x}), slice={{[0:1], "
                          + ", ".join(f"[0:{n}]" for n in d[1:]) + "}")
        n = self.name("n")
        self.lines.append(f"  {n} = {self.shape(window)} negate({s})")
        self.add(d, f"dynamic-update-slice({x}, {n}, %k, " + ", ".join(["%k0"] * (len(d) - 1)) + ")")

    def _unpack(self, inst: str, dims_list) -> None:
        for k, d in enumerate(dims_list):
            if d != () and self.rng.random() < 0.8:
                self.add(d, f"get-tuple-element({inst}), index={k}")

    def while_loop(self):
        (x, dx), (y, dy) = self.pick(), self.pick()
        state = [(), dx, dy]
        c, body, cond = self.name("cnt"), self.name("body")[1:], self.name("cond")[1:]

        def st() -> str:     # the state's shape, each time in new random layouts
            return "(s32[], " + ", ".join(self.shape(d) for d in state[1:]) + ")"
        self.computations.append(
            f"%{body} (s: {st()}) -> {st()} {{\n  %s = {st()} parameter(0)\n"
            f"  %i = s32[] get-tuple-element(%s), index=0\n  %one = s32[] constant(1)\n"
            f"  %i1 = s32[] add(%i, %one)\n  %x = {self.shape(dx)} get-tuple-element(%s), index=1\n"
            f"  %y = {self.shape(dy)} get-tuple-element(%s), index=2\n  %nx = {self.shape(dx)} negate(%x)\n"
            f"  %ny = {self.shape(dy)} add(%y, %y)\n  ROOT %r = {st()} tuple(%i1, %nx, %ny)\n}}\n")
        self.computations.append(
            f"%{cond} (s: {st()}) -> pred[] {{\n  %s = {st()} parameter(0)\n"
            f"  %i = s32[] get-tuple-element(%s), index=0\n  %two = s32[] constant(2)\n"
            f"  ROOT %lt = pred[] compare(%i, %two), direction=LT\n}}\n")
        self.lines.append(f"  {c} = s32[] constant(0)")
        init = self.name("init")
        self.lines.append(f"  {init} = {st()} tuple({c}, {x}, {y})")
        w = self.name("w")
        self.lines.append(f"  {w} = {st()} while({init}), condition=%{cond}, body=%{body}")
        self._unpack(w, state)
        self.last_tuple = (w, state)

    def conditional(self):
        x, d = self.pick()
        perm = list(range(len(d)))[::-1]
        td = tuple(d[p] for p in perm)
        dims_t = ",".join(map(str, perm))
        out = [td, d]
        branches = []
        for k in range(2):
            b = self.name("branch")[1:]
            if k == 0:
                body = (f"  %t = {self.shape(td)} transpose(%x), dimensions={{{dims_t}}}\n"
                        f"  %n = {self.shape(d)} negate(%x)\n")
            else:
                body = (f"  %n0 = {self.shape(d)} negate(%x)\n"
                        f"  %t = {self.shape(td)} transpose(%n0), dimensions={{{dims_t}}}\n"
                        f"  %n = {self.shape(d)} copy(%x)\n")
            self.computations.append(f"%{b} (x: {_shape(d, self.layout(d))}) -> {self.tuple_shape(out)} {{\n"
                                     f"  %x = {self.shape(d)} parameter(0)\n{body}"
                                     f"  ROOT %r = {self.tuple_shape(out)} tuple(%t, %n)\n}}\n")
            branches.append(f"%{b}")
        cnd = self.name("cond")
        self.lines.append(f"  {cnd} = {self.tuple_shape(out)} conditional(%k, {x}, {x}), "
                          f"branch_computations={{{', '.join(branches)}}}")
        self._unpack(cnd, out)
        self.last_tuple = (cnd, out)

    def call(self):
        x, d = self.pick()
        perm = list(range(len(d)))
        self.rng.shuffle(perm)
        td = tuple(d[p] for p in perm)
        out = [d, td]
        f = self.name("callee")[1:]
        self.computations.append(
            f"%{f} (x: {self.shape(d)}) -> {self.tuple_shape(out)} {{\n  %x = {self.shape(d)} parameter(0)\n"
            f"  %t = {self.shape(td)} transpose(%x), dimensions={{{','.join(map(str, perm))}}}\n"
            f"  ROOT %r = {self.tuple_shape(out)} tuple(%x, %t)\n}}\n")
        c = self.name("call")
        self.lines.append(f"  {c} = {self.tuple_shape(out)} call({x}), to_apply=%{f}")
        self._unpack(c, out)
        self.last_tuple = (c, out)

    OPS = ("negate", "add_two", "transpose", "copy", "reshape", "tuple_gte", "while_loop", "conditional", "call",
           "dot", "reduce", "update_slice")

    def build(self) -> str:
        rng = self.rng
        self.last_tuple = None
        self.lines += [f"  %p0 = {self.shape(P0)} parameter(0)", f"  %p1 = {self.shape(P1)} parameter(1)",
                       f"  %p2 = {self.tuple_shape(P2)} parameter(2)", "  %k = s32[] parameter(3)",
                       "  %k0 = s32[] constant(0)", "  %zero = f32[] constant(0)"]
        self.values += [("%p0", P0), ("%p1", P1)]
        for k, d in enumerate(P2):
            self.add(d, f"get-tuple-element(%p2), index={k}")
        for _ in range(rng.randrange(2, 7)):
            getattr(self, rng.choice(self.OPS))()
        if self.last_tuple is not None and rng.random() < 0.25:      # the root is a while, conditional or call
            inst, dims_list = self.last_tuple
            self.lines.append(f"  ROOT %root = {self.tuple_shape(dims_list)} copy({inst})" if rng.random() < 0.3
                              else f"  ROOT %root = {self.tuple_shape(dims_list)} opt-barrier({inst})")
        elif rng.random() < 0.2:
            x, d = self.pick()
            self.lines.append(f"  ROOT %root = {self.shape(d)} copy({x})" if rng.random() < 0.5
                              else f"  ROOT %root = {self.shape(d)} negate({x})")
        else:
            chosen = [self.pick() for _ in range(rng.randrange(1, 5))]
            if len(chosen) >= 3 and rng.random() < 0.5:
                inner = self.name("inner")
                self.lines.append(f"  {inner} = {self.tuple_shape([d for _, d in chosen[1:]])} tuple("
                                  + ", ".join(n for n, _ in chosen[1:]) + ")")
                shape = f"({self.shape(chosen[0][1])}, {self.tuple_shape([d for _, d in chosen[1:]])})"
                self.lines.append(f"  ROOT %root = {shape} tuple({chosen[0][0]}, {inner})")
            else:
                self.lines.append(f"  ROOT %root = {self.tuple_shape([d for _, d in chosen])} tuple("
                                  + ", ".join(n for n, _ in chosen) + ")")
        self.computations.append("%sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                                 "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n")
        return "HloModule random_layouts\n\n" + "\n".join(self.computations) + \
            "\nENTRY %main {\n" + "\n".join(self.lines) + "\n}\n"


def _args(k: int):
    rng = np.random.default_rng(k)
    arr = lambda d: rng.integers(-9, 10, d).astype(np.float32)     # noqa: E731
    return [arr(P0), arr(P1), tuple(arr(d) for d in P2), np.int32(k % 2)]


def _flat(value) -> list:
    return [leaf for v in value for leaf in _flat(v)] if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("seed", range(24))
def test_random_layouts_match_interpreter(seed):
    text = RandomModule(seed).build()
    module = xlapy.hlo.parse(text)
    xlapy.hlo.verify(module)
    args = _args(seed)
    want = _flat(xlapy.compile(module, backend="interpreter")(*args))
    for pipeline in (True, False):
        got = _flat(xlapy.compile(module, backend="cpu", run_pipeline=pipeline)(*args))
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, where=f"seed {seed}, pipeline={pipeline}, output {i}\n{text}")
