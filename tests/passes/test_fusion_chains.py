"""Fusion never recomputes a chain of multi-user values in each user (instruction_fusion._links_a_chain): a
residual stream x_l = x_(l-1) + a_l read by every layer's reduction stays materialized link by link, so the
fused module grows linearly with depth, not quadratically."""
import numpy as np
import pytest

import xlapy
from xlapy.passes.fusion import cpu_fusion_passes
from xlapy.passes import Pipeline
from xlapy.passes.dce import HloDCE
from xlapy.testing import assert_same


def residual_module(depth: int, gap: int = 0) -> str:
    """x_l = x_(l-1) + a_l, read by layer l's reduction; `gap` single-user adds between two links, as in the
    gradient of a residual stream (g_l = ((g_(l+1) + a) + b) + c)."""
    lines = ["  x0 = f32[16,32]{1,0} parameter(0)", "  z = f32[] constant(0)"]
    outs = []
    for layer in range(1, depth + 1):
        prev = f"x{layer - 1}"
        for g in range(gap):
            lines.append(f"  h{layer}_{g} = f32[16,32]{{1,0}} add({prev}, {prev})")
            prev = f"h{layer}_{g}"
        lines += [f"  a{layer} = f32[16,32]{{1,0}} parameter({layer})",
                  f"  x{layer} = f32[16,32]{{1,0}} add({prev}, a{layer})",
                  f"  s{layer} = f32[16]{{0}} reduce(x{layer}, z), dimensions={{1}}, to_apply=sum",
                  f"  b{layer} = f32[16,32]{{1,0}} broadcast(s{layer}), dimensions={{0}}",
                  f"  n{layer} = f32[16,32]{{1,0}} multiply(x{layer}, b{layer})"]
        outs.append(f"n{layer}")
    shapes = ", ".join(["f32[16,32]{1,0}"] * (depth + 1))
    lines.append(f"  ROOT t = ({shapes}) tuple({', '.join(outs)}, x{depth})")
    return ("HloModule residual\n\nsum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n"
            "  ROOT r = f32[] add(p, q)\n}\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n")


def fused_adds(module) -> int:
    """Adds of two [16,32] arrays anywhere in the module: each link of the chain, wherever it is computed."""
    return sum(1 for c in module.computations for i in c.instructions
               if i.opcode == "add" and i.shape.dims == (16, 32))


@pytest.mark.parametrize("depth, gap", [(4, 0), (8, 0), (8, 2)])
def test_residual_chain_is_not_recomputed_per_layer(depth, gap):
    module = xlapy.hlo.parse(residual_module(depth, gap))
    Pipeline("fusion", [*cpu_fusion_passes(), HloDCE()], check_invariants=True).run(module)
    # each link at most twice (materialized, or duplicated into one neighbour); recomputing the chain from x0
    # in every layer's users would hold depth*(depth+1)/2 links or more
    assert fused_adds(module) <= 2 * depth * (gap + 1)
    assert not Pipeline("again", cpu_fusion_passes()).run(module), "a second fusion run changed the module"
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((16, 32)).astype(np.float32) for _ in range(depth + 1)]
    want = xlapy.compile(xlapy.hlo.parse(residual_module(depth, gap)), backend="interpreter")(*args)
    got = xlapy.compile(module, backend="interpreter")(*args)
    for g, w in zip(got, want):
        assert_same(g, w, rtol=1e-6)


def test_reuse_check_walks_each_fused_value_once(monkeypatch):
    """A chain of expensive ops fused one by one asks, per producer, whether the fusion re-reads its elements:
    the fused values already found to re-read nothing are not walked again (linear, not quadratic, in length)."""
    from xlapy.passes.fusion import InstructionFusion, fusible
    n = 60
    lines = ["  x = f32[8]{0} parameter(0)", "  y0 = f32[8]{0} exponential(x)"]
    lines += [f"  y{k} = f32[8]{{0}} divide(y{k - 1}, x)" for k in range(1, n)]
    lines.append(f"  ROOT r = f32[8]{{0}} negate(y{n - 1})")
    module = xlapy.hlo.parse("HloModule chain\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n")
    calls = []
    real = fusible.element_use
    monkeypatch.setattr(fusible, "element_use", lambda *a: calls.append(1) or real(*a))
    assert InstructionFusion().run(module)
    fusion = module.entry.root
    assert fusion.opcode == "fusion" and len(fusion.attrs["calls"].instructions) == n + 2   # x, y0..y(n-1), r
    assert len(calls) < 8 * n, len(calls)
