"""Soft placement (xlapy/backends/placement.py): a module holding an opcode its backend does not declare is an
error naming the opcode, unless soft placement is allowed; then the entry is split into parts by backend, each
part runs on the first backend by priority that has its ops, and the result is the interpreter's.

The backend `few` is the interpreter declaring only a few elementwise opcodes, at the lowest priority."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.backends import PlacedExecutable, SoftPlacementWarning, builtin, placement, registry
from xlapy.errors import UnsupportedOpcodeError

FEW = {"parameter", "constant", "broadcast", "convert", "tuple", "get-tuple-element", "add", "subtract", "multiply",
       "negate"}

MIXED = """HloModule mixed

less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY e {
  x = f32[5] parameter(0)
  y = f32[5] parameter(1)
  s = f32[5] add(x, y)
  sn = f32[5] sine(s)
  m = f32[5] multiply(sn, y)
  srt = f32[5] sort(m), dimensions={0}, to_apply=less
  d = f32[5] subtract(srt, x)
  ROOT t = (f32[5], f32[5]) tuple(d, s)
}
"""

LOOP = """HloModule loop

cond {
  cp = (s32[], f32[3]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  three = s32[] constant(3)
  ROOT clt = pred[] compare(ci, three), direction=LT
}

body {
  bp = (s32[], f32[3]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bv = f32[3] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  bi2 = s32[] add(bi, one)
  bsin = f32[3] sine(bv)
  ROOT bt = (s32[], f32[3]) tuple(bi2, bsin)
}

ENTRY e {
  x = f32[3] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, x)
  w = (s32[], f32[3]) while(init), condition=cond, body=body
  r = f32[3] get-tuple-element(w), index=1
  ROOT n = f32[3] negate(r)
}
"""

REPLICA = """HloModule replica
ENTRY e {
  x = f32[] parameter(0)
  r = f32[] rng(x, x), distribution=rng_uniform
  ROOT a = f32[] add(x, r)
}
"""

DEAD_SINE = """HloModule dead
ENTRY e {
  x = f32[4] parameter(0)
  unused = f32[4] sine(x)
  ROOT n = f32[4] negate(x)
}
"""

NO_BACKEND = """HloModule nobody
ENTRY e {
  ROOT r = u64[2] rng-get-and-update-state(), delta=1
}
"""


@pytest.fixture
def few(monkeypatch):
    """Register `few` (records the options each compile got); unregister it after the test."""
    monkeypatch.delenv(registry.ENV_VAR, raising=False)
    calls = []

    def factory(module, **options):
        calls.append((module.name, options))
        return builtin.compile_interpreter(module, **options)
    factory.calls = calls
    yield registry.register("few", factory, priority=-10, supported_opcodes=FEW)
    registry.unregister("few")


def _args(n=5):
    rng = np.random.default_rng(0)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def _soft(text, backend="few", **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe = xlapy.compile(text, backend=backend, allow_soft_placement=True, **options)
    return exe, [str(w.message) for w in caught if issubclass(w.category, SoftPlacementWarning)]


def _assert_same_as_interpreter(exe, text, *args):
    want = xlapy.compile(text, backend="interpreter")(*args)
    got = exe(*args)
    for g, w in zip(got if isinstance(want, tuple) else [got], want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


# -- without soft placement: an error naming the op ----------------------------------------------------------
def test_an_unsupported_opcode_is_an_error_naming_it(few):
    with pytest.raises(UnsupportedOpcodeError, match=r"^few backend: opcode sine not supported yet \(instruction "
                       r"sn, module mixed\); it also lacks compare, sort; compile with allow_soft_placement=True"):
        xlapy.compile(MIXED, backend="few")


def test_an_opcode_inside_a_called_computation_is_named_with_its_caller(few):
    with pytest.raises(UnsupportedOpcodeError, match=r"opcode compare not supported yet \(instruction clt, in "
                       r"computation cond called by w, module loop\); it also lacks sine, while"):
        xlapy.compile(LOOP, backend="few")


def test_the_error_is_an_unimplemented_error_as_the_cpu_emitters_raise():
    with pytest.raises(xlapy.UnimplementedError, match="cpu backend: opcode rng not supported yet"):
        xlapy.compile(REPLICA, backend="cpu")


def test_dead_instructions_are_not_checked(few):
    exe = xlapy.compile(DEAD_SINE, backend="few")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(exe(x), -x)


# -- with soft placement ------------------------------------------------------------------------------------------
def test_soft_placement_splits_by_backend_and_matches_the_interpreter(few):
    exe, messages = _soft(MIXED)
    assert isinstance(exe, PlacedExecutable)
    assert [name for name, _ in exe.parts] == ["few", "cpu", "few", "cpu", "few"]
    _assert_same_as_interpreter(exe, MIXED, *_args())
    assert messages == ["soft placement in module mixed, backend 'few': it lacks sine (instruction sn): sn runs on "
                        "backend 'cpu'; it lacks compare (instruction lt, in computation less called by srt), sort "
                        "(instruction srt): srt runs on backend 'cpu'"]


def test_the_parts_read_and_write_only_what_crosses_them(few):
    module = xlapy.hlo.parse(MIXED)
    parts = placement.partition(module, few)
    names = [([i.name for i in p.instructions], [i.name for i in p.inputs], [i.name for i in p.outputs])
             for p in parts]
    assert names == [(["s"], ["x", "y"], ["s"]),
                     (["sn"], ["s"], ["sn"]),
                     (["m"], ["sn", "y"], ["m"]),
                     (["srt"], ["m"], ["srt"]),
                     (["d", "t"], ["srt", "x", "s"], ["t"])]
    text = placement.part_module(module, parts[3], 3).to_text()
    assert "HloModule mixed.part3" in text and "to_apply=%less" in text and "ROOT %outputs = (f32[5]) tuple" in text


def test_the_placed_executable_has_the_executable_interface(few):
    exe, _ = _soft(MIXED)
    assert exe.backend == "few" and exe.module.name == "mixed"
    text = exe.as_text()
    assert text.startswith("// part 0: backend few\nHloModule mixed.part0") and "// part 1: backend cpu" in text
    with pytest.raises(xlapy.XlapyError, match="module mixed takes 2 arguments, got 1"):
        exe(np.zeros(5, np.float32))


def test_a_while_loop_moves_whole_with_tuple_values_between_parts(few):
    exe, messages = _soft(LOOP)
    assert [name for name, _ in exe.parts] == ["few", "cpu", "few"]
    _assert_same_as_interpreter(exe, LOOP, np.arange(3, dtype=np.float32))
    assert messages and "w runs on backend 'cpu'" in messages[0] and "in computation body called by w" in messages[0]


def test_the_interpreter_comes_last_and_runs_what_nothing_else_has(few):
    exe, messages = _soft(REPLICA)
    assert [name for name, _ in exe.parts] == ["interpreter", "few"]
    np.testing.assert_array_equal(exe(np.float32(2.5)), np.float32(5.0))      # rng over [x, x] is x
    assert messages == ["soft placement in module replica, backend 'few': it lacks rng (instruction r): r "
                        "runs on backend 'interpreter'"]


def test_the_highest_priority_backend_that_has_the_op_runs_it(few):
    rich = registry.register("rich", builtin.compile_interpreter, priority=200)
    try:
        exe, messages = _soft(MIXED)
        assert [name for name, _ in exe.parts] == ["few", "rich", "few", "rich", "few"]
        assert "sn runs on backend 'rich'" in messages[0]
        _assert_same_as_interpreter(exe, MIXED, *_args())
    finally:
        registry.unregister("rich")
    assert rich.name == "rich"


def test_only_the_chosen_backend_gets_the_options(few):
    _soft(REPLICA, verify=False)
    assert few.factory.calls == [("replica.part1", {"verify": False})]


def test_an_op_no_backend_has_is_an_error_even_with_soft_placement(few):
    with pytest.raises(UnsupportedOpcodeError, match=r"no backend supports opcode rng-get-and-update-state "
                       r"\(instruction r, module nobody\); registered backends: cpu, interpreter, few"):
        xlapy.compile(NO_BACKEND, backend="few", allow_soft_placement=True)


def test_a_called_computation_is_not_split_between_backends(few):
    """A loop whose body needs an op only `state` has and one only the others have runs nowhere."""
    text = LOOP.replace("bsin = f32[3] sine(bv)",
                        "st = u64[2] rng-get-and-update-state(), delta=1\n  bsin = f32[3] sine(bv)")
    registry.register("state", builtin.compile_interpreter, priority=-20,
                      supported_opcodes=FEW | {"rng-get-and-update-state", "while", "compare"})
    try:
        with pytest.raises(UnsupportedOpcodeError, match=r"no backend supports all of the opcodes add, compare, "
                           r"constant, get-tuple-element, parameter, rng-get-and-update-state, sine, tuple, while "
                           r"that instruction w uses \(module loop\); a part of a computation is not split off"):
            xlapy.compile(text, backend="few", allow_soft_placement=True)
    finally:
        registry.unregister("state")


def test_a_module_the_backend_supports_is_compiled_whole(few):
    exe, messages = _soft(DEAD_SINE)
    assert not isinstance(exe, PlacedExecutable) and not messages
    assert few.factory.calls == [("dead", {})]


# -- through jit ---------------------------------------------------------------------------------------------------
def test_jit_with_soft_placement(few):
    def f(x):
        return xnp.sin(x) * 2.0 + x
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    with pytest.raises(UnsupportedOpcodeError, match="few backend: opcode sine not supported yet"):
        xlapy.jit(f, backend="few")(x)
    g = xlapy.jit(f, backend="few", allow_soft_placement=True)
    with pytest.warns(SoftPlacementWarning, match="it lacks sine .*runs on backend 'cpu'"):
        out = g(x)
    np.testing.assert_allclose(out, np.sin(x) * 2 + x, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # compiled once: a warm call does not warn again
        np.testing.assert_allclose(g(x), np.sin(x) * 2 + x, rtol=1e-6)
