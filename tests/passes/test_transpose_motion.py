"""Transpose motion (passes/transpose_motion.py, run by reshape-mover): one small module per rule of its table,
HLO text in, CHECK lines out, with the interpreter's results before == after (check_rewrite); must-not-change
cases for what no rule may move; and a GroupNorm between two NCHW convolutions after canonicalization, where
every activation transpose must go."""
import pytest

from xlapy.passes.reshape_mover import ReshapeMover
from xlapy.testing import check_rewrite, hlo_module

ADD = """
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
"""


def check_pass(text, checks=None):
    # a moved reduce adds in another order: equal up to rounding
    exact = " reduce(" not in text
    return check_rewrite(text, [ReshapeMover, "dce"], checks, fixed_point=True, corners=exact,
                         rtol=None if exact else 1e-5, atol=None if exact else 1e-5)


VECTOR_BROADCAST = hlo_module("""
        a = f32[2,3,3,4] parameter(0)
        c = f32[2,3,3,4] parameter(1)
        v = f32[4] parameter(2)
        t = f32[2,4,3,3] transpose(a), dimensions={0,3,1,2}
        u = f32[2,4,3,3] transpose(c), dimensions={0,3,1,2}
        b = f32[2,4,3,3] broadcast(v), dimensions={1}
        s = f32[2,4,3,3] add(t, b)
        ROOT m = f32[2,4,3,3] multiply(s, u)""")

CASES = [
    # add(transpose(a, p), broadcast(v, {1})) => transpose(add(a, broadcast(v, {p[1]})), p): a bias; the sum of
    # two of them takes one transpose instead of two
    ("vector_broadcast", VECTOR_BROADCAST,
     "CHECK: f32[2,3,3,4] broadcast(f32[4] %v), dimensions={3}\n"
     "CHECK: %s.1 = f32[2,3,3,4] add(f32[2,3,3,4] %a\n"
     "CHECK: %m.1 = f32[2,3,3,4] multiply(f32[2,3,3,4] %s.1, f32[2,3,3,4] %c)\n"
     "CHECK: ROOT %m.2 = f32[2,4,3,3] transpose(f32[2,3,3,4] %m.1), dimensions={0,3,1,2}"),
    # a broadcast operand's unit dims are left out, so that its one real dim maps alone: [C,1] to [N,C,1,W]
    ("unit_dims_bias", hlo_module("""
        a = f32[2,1,3,4] parameter(0)
        c = f32[2,1,3,4] parameter(1)
        v = f32[4,1] parameter(2)
        t = f32[2,4,1,3] transpose(a), dimensions={0,3,1,2}
        u = f32[2,4,1,3] transpose(c), dimensions={0,3,1,2}
        b = f32[2,4,1,3] broadcast(v), dimensions={1,2}
        s = f32[2,4,1,3] add(t, b)
        ROOT m = f32[2,4,1,3] subtract(s, u)"""),
     "CHECK: f32[4] reshape(f32[4,1] %v)\n"
     "CHECK: f32[2,1,3,4] broadcast(f32[4] %{{.*}}), dimensions={3}\n"
     "CHECK: ROOT %m.2 = f32[2,4,1,3] transpose"),
    # GroupNorm's statistics: reshape(transpose(a)) splits C into (G, C/G); the reduce over (C/G, H, W) keeps
    # (N, G) in order: no transpose is left
    ("reshape_reduce", hlo_module("""
        a = f32[2,3,3,4] parameter(0)
        z = f32[] constant(0)
        t = f32[2,4,3,3] transpose(a), dimensions={0,3,1,2}
        r = f32[2,2,2,3,3] reshape(t)
        ROOT s = f32[2,2] reduce(r, z), dimensions={2,3,4}, to_apply=add""", ADD),
     "CHECK: %r.1 = f32[2,3,3,2,2] reshape(f32[2,3,3,4] %a)\n"
     "CHECK: ROOT %s.1 = f32[2,2] reduce(f32[2,3,3,2,2] %r.1, f32[] %z), dimensions={1,2,4}"),
    # a reduce whose kept dims change order leaves a transpose of its (smaller) result
    ("reduce_reordered", hlo_module("""
        a = f32[2,3,4] parameter(0)
        z = f32[] constant(0)
        t = f32[4,3,2] transpose(a), dimensions={2,1,0}
        ROOT s = f32[4,2] reduce(t, z), dimensions={1}, to_apply=add""", ADD),
     "CHECK: f32[2,4] reduce(f32[2,3,4] %a, f32[] %z), dimensions={1}\n"
     "CHECK: ROOT %s.2 = f32[4,2] transpose(f32[2,4] %s.1), dimensions={1,0}"),
    # concatenate(transpose(a, p), transpose(b, p), d) => transpose(concatenate(a, b, p[d]), p): a skip connection
    ("concatenate", hlo_module("""
        a = f32[2,3,3,4] parameter(0)
        b = f32[2,3,3,2] parameter(1)
        ta = f32[2,4,3,3] transpose(a), dimensions={0,3,1,2}
        tb = f32[2,2,3,3] transpose(b), dimensions={0,3,1,2}
        ROOT c = f32[2,6,3,3] concatenate(ta, tb), dimensions={1}"""),
     "CHECK: f32[2,3,3,6] concatenate(f32[2,3,3,4] %a, f32[2,3,3,2] %b), dimensions={3}\n"
     "CHECK: ROOT %c.2 = f32[2,6,3,3] transpose"),
    # the transposes of two convolutions meet through the activation and cancel: none is left
    ("cancel", hlo_module("""
        a = f32[2,3,3,4] parameter(0)
        v = f32[4] parameter(1)
        t = f32[2,4,3,3] transpose(a), dimensions={0,3,1,2}
        b = f32[2,4,3,3] broadcast(v), dimensions={1}
        s = f32[2,4,3,3] add(t, b)
        e = f32[2,4,3,3] exponential(s)
        m = f32[2,4,3,3] multiply(s, e)
        ROOT u = f32[2,3,3,4] transpose(m), dimensions={0,2,3,1}"""),
     "CHECK-NOT: transpose\nCHECK: ROOT %m.1 = f32[2,3,3,4] multiply(f32[2,3,3,4] %s.1, f32[2,3,3,4] %e.1)"),
    # slice, pad and reverse take their ranges / padding / dims permuted
    ("slice_pad_reverse", hlo_module("""
        a = f32[2,5,4] parameter(0)
        z = f32[] constant(0)
        t = f32[4,2,5] transpose(a), dimensions={2,0,1}
        s = f32[2,2,3] slice(t), slice={[1:3], [0:2], [0:5:2]}
        p = f32[3,2,5] pad(s, z), padding=1_0x0_0x1_1
        ROOT r = f32[3,2,5] reverse(p), dimensions={0,2}"""),
     "CHECK: f32[2,3,2] slice(f32[2,5,4] %a), slice={[0:2:1], [0:5:2], [1:3:1]}\n"
     "CHECK: f32[2,5,3] pad(f32[2,3,2] %s.1, f32[] %z), padding=0_0x1_1x1_0\n"
     "CHECK: f32[2,5,3] reverse(f32[2,5,3] %p.1), dimensions={1,2}\n"
     "CHECK: ROOT %r.2 = f32[3,2,5] transpose(f32[2,5,3] %r.1), dimensions={2,0,1}"),
    # a ConvTranspose's interleave: reshapes that add a unit dim or merge dims adjacent under p, a concatenate
    ("interleave", hlo_module("""
        a = f32[2,2,2,3] parameter(0)
        b = f32[2,2,2,3] parameter(1)
        ta = f32[2,3,2,2] transpose(a), dimensions={0,3,1,2}
        tb = f32[2,3,2,2] transpose(b), dimensions={0,3,1,2}
        ra = f32[2,3,2,2,1] reshape(ta)
        rb = f32[2,3,2,2,1] reshape(tb)
        c = f32[2,3,2,2,2] concatenate(ra, rb), dimensions={4}
        r = f32[2,3,2,4] reshape(c)
        v = f32[3] parameter(2)
        k = f32[2,3,2,4] broadcast(v), dimensions={1}
        ROOT m = f32[2,3,2,4] multiply(r, k)"""),
     "CHECK: f32[2,2,2,1,3] reshape(f32[2,2,2,3] %a)\n"
     "CHECK: f32[2,2,2,2,3] concatenate\nCHECK-SAME: dimensions={3}\n"
     "CHECK: f32[2,2,4,3] reshape(f32[2,2,2,2,3] %c.1)\n"
     "CHECK: ROOT %m.2 = f32[2,3,2,4] transpose(f32[2,2,4,3] %m.1), dimensions={0,3,1,2}"),
]


@pytest.mark.parametrize("name, text, checks", CASES, ids=[c[0] for c in CASES])
def test_transpose_motion(name, text, checks):
    check_pass(text, checks)


UNCHANGED = [
    # the broadcast's dims map to {1,0} under p: not sorted, so no broadcast can take them
    ("unsorted_broadcast", hlo_module("""
        a = f32[3,2] parameter(0)
        v = f32[2,3] parameter(1)
        t = f32[2,3] transpose(a), dimensions={1,0}
        b = f32[2,3] broadcast(v), dimensions={0,1}
        ROOT s = f32[2,3] add(t, b)""")),
    # the transpose also feeds a dot: moving it would leave it there and add another one
    ("shared_with_dot", hlo_module("""
        a = f32[3,2] parameter(0)
        v = f32[3] parameter(1)
        t = f32[2,3] transpose(a), dimensions={1,0}
        b = f32[2,3] broadcast(v), dimensions={1}
        s = f32[2,3] add(t, b)
        d = f32[2,2] dot(t, s), lhs_contracting_dims={1}, rhs_contracting_dims={1}
        ROOT r = (f32[2,3], f32[2,2]) tuple(s, d)""")),
    # a move alone: the bias add would take the transpose's place, as many elements in as many transposes
    ("move_only", hlo_module("""
        a = f32[2,3,3,4] parameter(0)
        v = f32[4] parameter(1)
        t = f32[2,4,3,3] transpose(a), dimensions={0,3,1,2}
        b = f32[2,4,3,3] broadcast(v), dimensions={1}
        ROOT s = f32[2,4,3,3] add(t, b)""")),
    # two exits from one transpose: two transposes of the same size instead of one
    ("two_exits", hlo_module("""
        a = f32[3,2] parameter(0)
        v = f32[3] parameter(1)
        w = f32[3] parameter(2)
        t = f32[2,3] transpose(a), dimensions={1,0}
        b = f32[2,3] broadcast(v), dimensions={1}
        c = f32[2,3] broadcast(w), dimensions={1}
        s = f32[2,3] add(t, b)
        m = f32[2,3] multiply(t, c)
        ROOT r = (f32[2,3], f32[2,3]) tuple(s, m)""")),
    # the reshape merges dims that p does not keep adjacent and in order
    ("reshape_across_permutation", hlo_module("""
        a = f32[2,3,4] parameter(0)
        z = f32[] constant(0)
        t = f32[4,2,3] transpose(a), dimensions={2,0,1}
        r = f32[8,3] reshape(t)
        ROOT s = f32[3] reduce(r, z), dimensions={0}, to_apply=add""", ADD)),
    # a transpose of unit dims only (an effective scalar), and a rank-0 reduce result
    ("effective_scalar", hlo_module("""
        a = f32[1,1] parameter(0)
        z = f32[] constant(0)
        t = f32[1,1] transpose(a), dimensions={1,0}
        ROOT s = f32[] reduce(t, z), dimensions={0,1}, to_apply=add""", ADD)),
    # a sharding describes the instruction as it is (without it, vector_broadcast's rewrite)
    ("sharding", VECTOR_BROADCAST.replace("add(t, b)", "add(t, b), sharding={replicated}")),
    # a transpose that is the root stays
    ("root", hlo_module("""
        a = f32[3,2] parameter(0)
        ROOT t = f32[2,3] transpose(a), dimensions={1,0}""")),
]


@pytest.mark.parametrize("name, text", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_transpose_motion_must_not_change(name, text):
    check_pass(text)


def test_group_norm_between_nchw_convolutions():
    """conv -> bias -> GroupNorm -> SiLU -> conv in NCHW, after convolution-canonicalization: every activation
    transpose cancels; only the weights' stay (they feed the convolutions)."""
    module = check_rewrite(hlo_module("""
        x = f32[2,4,4,4] parameter(0)
        w = f32[3,3,4,4] parameter(1)
        bias = f32[4] parameter(2)
        w2 = f32[3,3,4,4] parameter(3)
        z = f32[] constant(0)
        n = f32[] constant(0.03125)
        c1 = f32[2,4,4,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
        t1 = f32[2,4,4,4] transpose(c1), dimensions={0,3,1,2}
        b = f32[2,4,4,4] broadcast(bias), dimensions={1}
        h = f32[2,4,4,4] add(t1, b)
        g = f32[2,2,2,4,4] reshape(h)
        sum = f32[2,2] reduce(g, z), dimensions={2,3,4}, to_apply=add
        nb = f32[2,2] broadcast(n), dimensions={}
        mean = f32[2,2] multiply(sum, nb)
        mb = f32[2,2,2,4,4] broadcast(mean), dimensions={0,1}
        d = f32[2,2,2,4,4] subtract(g, mb)
        back = f32[2,4,4,4] reshape(d)
        e = f32[2,4,4,4] exponential(back)
        s = f32[2,4,4,4] multiply(back, e)
        t2 = f32[2,4,4,4] transpose(s), dimensions={0,2,3,1}
        ROOT c2 = f32[2,4,4,4] convolution(t2, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f""",
        ADD), [ReshapeMover, "algsimp", "dce"], "CHECK-NOT: transpose", fixed_point=True, corners=False,
        rtol=2e-4, atol=1e-3)      # outputs up to ~2e4 from sums that cancel (-868 from terms of 1e4: 5e-5 apart)
    assert not [i for i in module.instructions() if i.opcode == "transpose"]


@pytest.mark.parametrize("src, dst, groups", [
    ((4, 32, 1, 1), (4, 32), [([0], [0]), ([1, 2, 3], [1])]),                  # trailing unit dims join the last
    ((2, 3, 4), (6, 4), [([0, 1], [0]), ([2], [1])]),
    ((2, 4, 2), (2, 1, 8), [([0], [0]), ([1, 2], [1, 2])]),
    ((6,), (4,), None),                                                          # not a reshape: no grouping
    ((1, 1), (), None), ((), (1,), None),                                        # rank 0 on a side
    ((0, 3), (3, 0), None),                                                      # zero-sized
])
def test_reshape_groups(src, dst, groups):
    from xlapy.passes.transpose_motion import _groups
    assert _groups(src, dst) == groups
