"""The CPU compile plan: small modules skip LLVM's optimizer and share one O0 engine ("quick"), others get O3
("optimized"). Both levels agree (bit for bit where the IR allows no freedom); the choice follows the module's size; many quick modules with
same-named symbols live side by side in the shared engine."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import compile_module, compile_plan, llvm_jit
from xlapy.testing import assert_same

ELEMENTWISE = """HloModule m
ENTRY main {
  x = f32[48] parameter(0)
  y = f32[48] parameter(1)
  e = f32[48] exponential(x)
  l = f32[48] log(y)
  t = f32[48] tanh(x)
  d = f32[48] divide(x, y)
  r = f32[48] remainder(x, y)
  p = f32[48] power(y, x)
  c = f64[48] convert(x)
  s = f64[48] sqrt(c)
  ROOT out = (f32[48], f32[48], f32[48], f32[48], f32[48], f32[48], f64[48]) tuple(e, l, t, d, r, p, s)
}"""

INTS = """HloModule m
ENTRY main {
  a = s32[6,8] parameter(0)
  b = s32[6,8] parameter(1)
  q = s32[6,8] divide(a, b)
  m = s32[6,8] remainder(a, b)
  sh = s32[6,8] shift-right-arithmetic(a, b)
  t = s32[8,6] transpose(q), dimensions={1,0}
  z = s32[] constant(0)
  sum = s32[8] reduce(m, z), dimensions={0}, to_apply=add
  ROOT out = (s32[8,6], s32[8], s32[6,8]) tuple(t, sum, sh)
}
add {
  u = s32[] parameter(0)
  v = s32[] parameter(1)
  ROOT w = s32[] add(u, v)
}"""

DOT_CONST = """HloModule m
ENTRY main {
  a = f32[4,3] parameter(0)
  k = f32[3,5] constant({{1,2,3,4,5},{0.5,0.25,-1,-2,3},{7,0,0,1,-1}})
  d = f32[4,5] dot(a, k), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = f32[5,4] transpose(d), dimensions={1,0}
}"""


def _args(module_text, seed=0):
    rng = np.random.default_rng(seed)
    module = xlapy.hlo.parse(module_text)
    out = []
    for p in module.entry.parameters:
        dt, dims = p.shape.dtype, p.shape.dims
        if dt.kind == "f":
            vals = rng.standard_normal(dims).astype(dt) * 3
            vals.reshape(-1)[:6] = [np.nan, -0.0, np.inf, -np.inf, 1e-39, 0.5]
        else:
            vals = rng.integers(-20, 20, dims).astype(dt)
            vals[vals == 0] = 3
        out.append(vals)
    return module, out


@pytest.mark.parametrize("text,bitwise", [(ELEMENTWISE, True), (INTS, True), (DOT_CONST, False)],
                         ids=["elementwise", "ints", "dot_const"])
def test_quick_and_optimized_agree(text, bitwise):
    """Elementwise code gives the same bits at both levels. Dot loops carry `contract` (and reassociable
    accumulations), which O3 may turn into FMAs or reorder: there the levels agree to rounding."""
    module, args = _args(text)
    quick = compile_module(module, llvm_level="quick")
    optimized = compile_module(module, llvm_level="optimized")
    assert (quick.llvm_level, optimized.llvm_level) == ("quick", "optimized")
    reference = xlapy.backends.compile(module, backend="interpreter", pipeline="cpu")(*args)
    for q, o, r in zip(_leaves(quick(*args)), _leaves(optimized(*args)), _leaves(reference)):
        if bitwise:
            np.testing.assert_array_equal(q, o)              # the same bits (NaN equal to NaN)
            np.testing.assert_array_equal(np.signbit(q), np.signbit(o))
        else:
            assert_same(q, o, rtol=1e-6, atol=1e-6)
        assert_same(q, r, rtol=1e-6, atol=1e-6)               # transcendentals: approximations, an ulp apart


def _leaves(value):
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, tuple) else [np.asarray(value)]


def test_level_follows_module_size():
    small = xlapy.hlo.parse(ELEMENTWISE)
    assert compile_plan.choose_level(small) == compile_plan.QUICK
    assert compile_module(small).llvm_level == "quick"
    big = xlapy.hlo.parse("""HloModule big
ENTRY main {
  x = f32[512,512] parameter(0)
  ROOT y = f32[512,512] add(x, x)
}""")
    assert compile_plan.choose_level(big) == compile_plan.OPTIMIZED
    dot = xlapy.hlo.parse("""HloModule d
ENTRY main {
  a = f32[64,64] parameter(0)
  ROOT d = f32[64,64] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}""")
    assert compile_plan.work_estimate(dot) >= 64 ** 3       # small arrays, but a quarter million multiply-adds
    assert compile_plan.choose_level(dot) == compile_plan.OPTIMIZED


def test_while_is_never_quick():
    loop = xlapy.hlo.parse("""HloModule w
cond {
  c = s32[] parameter(0)
  n = s32[] constant(10)
  ROOT lt = pred[] compare(c, n), direction=LT
}
body {
  b = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT inc = s32[] add(b, one)
}
ENTRY main {
  i = s32[] parameter(0)
  ROOT r = s32[] while(i), condition=cond, body=body
}""")
    assert compile_plan.work_estimate(loop) == float("inf")
    exe = compile_module(loop)
    assert exe.llvm_level == "optimized"
    assert int(exe(np.int32(3))) == 10


def test_bad_level_is_an_error():
    with pytest.raises(xlapy.errors.XlapyError, match="llvm_level"):
        compile_module(xlapy.hlo.parse(ELEMENTWISE), llvm_level="fast")


def test_many_quick_modules_share_engines_without_clashes(monkeypatch):
    """Every module has an entry and a constant of the same name; each must still see its own. A small engine
    size forces engine turnover: executables of a retired engine keep working."""
    monkeypatch.setattr(llvm_jit, "QUICK_MODULES_PER_ENGINE", 4)
    exes = []
    for k in range(11):
        module = xlapy.hlo.parse(f"""HloModule same_name
ENTRY main {{
  x = f32[3] parameter(0)
  c = f32[3] constant({{{k}, {k + 1}, {k + 2}}})
  ROOT y = f32[3] add(x, c)
}}""")
        exes.append(compile_module(module, llvm_level="quick"))
    engines = {id(e._engine) for e in exes}
    assert len(engines) >= 3
    x = np.array([0.5, 1.5, 2.5], np.float32)
    for k, exe in enumerate(exes):
        np.testing.assert_array_equal(exe(x), x + np.array([k, k + 1, k + 2], np.float32))


def test_eager_ops_compile_quick_and_hit_the_cache():
    from xlapy.frontend import eager
    prev = xlapy.config.default_backend
    xlapy.config.default_backend = "cpu"
    try:
        eager.clear_eager_cache()
        a = xlapy.numpy.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
        r1 = xlapy.numpy.exp(a) * 2.0
        r2 = xlapy.numpy.exp(a) * 3.0                 # same op signatures: cache hits, no new compiles
        stats = eager.eager_stats()
        assert stats["hits"] >= 2 and stats["compiles"] == stats["entries"]
        assert all(getattr(e, "llvm_level", None) == "quick" for e in eager._CACHE.values())
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        np.testing.assert_allclose(np.asarray(r1), np.exp(x) * 2, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(r2), np.exp(x) * 3, rtol=1e-6)
    finally:
        xlapy.config.default_backend = prev
        eager.clear_eager_cache()


def test_environment_override(monkeypatch):
    small = xlapy.hlo.parse(ELEMENTWISE)
    monkeypatch.setenv("XLAPY_LLVM_LEVEL", "optimized")
    assert compile_plan.choose_level(small) == compile_plan.OPTIMIZED
    monkeypatch.setenv("XLAPY_LLVM_LEVEL", "O7")
    with pytest.raises(xlapy.errors.XlapyError, match="XLAPY_LLVM_LEVEL must be one of"):
        compile_plan.choose_level(small)
