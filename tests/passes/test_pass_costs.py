"""Counter-based pins of the passes' algorithmic costs (issue 11: compile time flat per instruction): what a pass
does per instruction is counted, never timed. Each test fails on the quadratic form it replaced."""
from xlapy.hlo import Computation, parse, verify
from xlapy.passes import cse as cse_module
from xlapy.passes.cse import HloCSE
from xlapy.passes.dce import HloDCE


def _chain(n: int, dup_every: int = 0) -> str:
    """x_i = add(x_(i-1), c_i): n distinct adds (each reads its own constant); with dup_every, every such add
    also has a twin y_i = add(x_(i-1), c_i), read by z_i = multiply(x_i, y_i), that CSE merges into x_i."""
    lines = ["  x0 = f32[8] parameter(0)"]
    for i in range(1, n + 1):
        lines.append(f"  c{i} = f32[8] constant({{{', '.join([str(i)] * 8)}}})")
        lines.append(f"  x{i} = f32[8] add(x{i - 1}, c{i})")
        if dup_every and i % dup_every == 0:
            lines.append(f"  y{i} = f32[8] add(x{i - 1}, c{i})")
            lines.append(f"  z{i} = f32[8] multiply(x{i}, y{i})")
    return "HloModule chain\nENTRY main {\n" + "\n".join(lines) + f"\n  ROOT r = f32[8] negate(x{n})\n}}\n"


def test_cse_makes_full_keys_only_where_operands_collide(monkeypatch):
    """Instructions are bucketed by (opcode, operands) first: only the constants (no operands: one bucket) and
    the twins need their full key (shape, attributes, literal), not every add."""
    n = 60
    module = parse(_chain(n, dup_every=10))
    calls = []
    real = cse_module.instruction_key
    monkeypatch.setattr(cse_module, "instruction_key", lambda inst, *a: calls.append(inst.opcode) or real(inst, *a))
    assert HloCSE().run(module)
    verify(module)
    assert calls.count("add") == 2 * (n // 10)
    assert sum(i.opcode == "add" for i in module.entry.instructions) == n


def test_dce_removes_a_dead_chain_with_one_pass_over_the_list(monkeypatch):
    """A dead chain of n instructions leaves the list in one filtering, not one position search per removal."""
    n = 400
    text = _chain(n).replace(f"ROOT r = f32[8] negate(x{n})", "ROOT r = f32[8] negate(x0)")
    module = parse(text)
    searches = []
    real = Computation.position
    monkeypatch.setattr(Computation, "position", lambda self, inst: searches.append(1) or real(self, inst))
    assert HloDCE().run(module)
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "negate"]
    assert not searches


def test_multi_output_fusion_updates_only_what_lies_below_a_merge(monkeypatch):
    """A sibling merge at the end of a long chain reads and updates the reachability masks of the merged fusion's
    users, not of every instruction of the computation."""
    from xlapy.passes.fusion import multi_output_fusion as mof
    from xlapy.testing import reducer
    n = 200
    chain = _chain(n).split("\n")
    body = [line for line in chain[2:] if line.strip() and not line.startswith(("  ROOT", "}"))]
    text = f"""HloModule siblings
{reducer("add")}{reducer("max")}
ENTRY main {{
  x0 = f32[8] parameter(0)
""" + "\n".join(body[1:]) + f"""
  zero = f32[] constant(0)
  s = f32[] reduce(x{n}, zero), dimensions={{0}}, to_apply=add
  m = f32[] reduce(x{n}, zero), dimensions={{0}}, to_apply=max
  ROOT t = (f32[], f32[]) tuple(s, m)
}}
"""
    module = parse(text)
    touched = []

    class Counting(dict):
        def __getitem__(self, key):
            touched.append(key)
            return super().__getitem__(key)

        def __setitem__(self, key, value):
            touched.append(key)
            super().__setitem__(key, value)

        def items(self):
            touched.extend(self)
            return super().items()
    real_init = mof.Reachability.__init__

    def init(self, order):
        real_init(self, order)
        self.ancestors = Counting(self.ancestors)         # what merges touch, not what building the masks does
    monkeypatch.setattr(mof.Reachability, "__init__", init)
    assert mof.MultiOutputFusion().run(module)
    verify(module)
    assert sum(i.opcode == "fusion" for i in module.entry.instructions) == 1
    assert 0 < len(touched) <= 20


def test_constant_folding_makes_no_literal_for_an_instruction_with_a_variable_operand(monkeypatch):
    """multiply(x_i, broadcast(c)): x_i is no constant, so the broadcast's literal is never made (it was, for every
    such instruction of every simplification round)."""
    from xlapy.passes import constant_folding as cf
    n = 50
    lines = ["  x0 = f32[8,8] parameter(0)", "  c = f32[] constant(2)", "  b = f32[8,8] broadcast(c), dimensions={}"]
    lines += [f"  x{i} = f32[8,8] multiply(x{i - 1}, b)" for i in range(1, n + 1)]
    module = parse("HloModule m\nENTRY main {\n" + "\n".join(lines) + f"\n  ROOT r = f32[8,8] negate(x{n})\n}}\n")
    made = []
    real = cf._constant_value
    monkeypatch.setattr(cf, "_constant_value", lambda op: made.append(op.name) or real(op))
    assert not cf.HloConstantFolding().run(module)
    assert not made


def test_removing_instructions_added_after_the_position_hints_keeps_the_hints():
    """Fusions made by a pass are added after the hints were made; removing them (a sibling merge) found each by
    remaking the hints of the whole computation (O(n) per removal), where one scan of the list does."""
    n = 1000
    module = parse(_chain(n))
    comp = module.entry
    comp.position(comp.instructions[1])                 # the hints are made
    x = comp.instructions[0]
    made = [comp._positions]                            # kept alive: each one made is a distinct object
    for _ in range(100):                                # made, then merged away, one after the other
        comp.remove_instruction(comp.add_instruction(type(x)("negate", x.shape, (x,), {}, "late")))
        if comp._positions is not made[-1]:
            made.append(comp._positions)
    assert len(made) <= 3                               # remade once per n/32 removals at most
    assert len(comp.instructions) == 2 * n + 2


def test_multi_output_fusion_export_leaves_the_producers_other_readers_alone(monkeypatch):
    """A producer exported by its consumer (c = fusion(x, p) takes p as an output): p's other readers, a long chain,
    already read a part of the merged fusion and everything it reads (x), so no mask below them changes. (With a
    new bit for the merged fusion, every mask of the chain took it: O(n) a merge, a training step's backward
    layers O(n^2).)"""
    from xlapy.passes.fusion import multi_output_fusion as mof
    n = 200
    chain = "\n".join(f"  y{i} = f32[8] add(y{i - 1}, x)" for i in range(1, n + 1))
    module = parse(f"""HloModule export
fp {{
  a = f32[8] parameter(0)
  ROOT s = f32[8] negate(a)
}}
fc {{
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  ROOT d = f32[8] subtract(a, b)
}}
ENTRY main {{
  x = f32[8] parameter(0)
  y0 = f32[8] fusion(x), kind=kLoop, calls=fp
  c = f32[8] fusion(x, y0), kind=kLoop, calls=fc
{chain}
  ROOT t = (f32[8], f32[8]) tuple(c, y{n})
}}
""")
    set_masks = []

    class Counting(dict):
        def __setitem__(self, key, value):
            set_masks.append(key)
            super().__setitem__(key, value)
    real_init = mof.Reachability.__init__

    def init(self, order):
        real_init(self, order)
        self.ancestors = Counting(self.ancestors)
    monkeypatch.setattr(mof.Reachability, "__init__", init)
    pass_ = mof.MultiOutputFusion()
    assert pass_.run(module)
    verify(module)
    assert pass_.decisions == [("y0", "c", "producer-consumer")]
    assert len(set_masks) <= 4          # the merged fusion's and its get-tuple-elements'


def test_transpose_folding_asks_once_per_computation_for_control_edges(monkeypatch):
    """Each fold replaced its dot asking whether any instruction of the computation had a control edge (a scan of
    the computation per fold); it is asked once per computation."""
    from xlapy.passes import transpose_folding as tf
    n = 40
    lines = ["  x0 = f32[8,8] parameter(0)", "  w = f32[8,8] parameter(1)"]
    for i in range(1, n + 1):
        lines.append(f"  t{i} = f32[8,8] transpose(x{i - 1}), dimensions={{1,0}}")
        lines.append(f"  x{i} = f32[8,8] dot(t{i}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
    module = parse("HloModule m\nENTRY main {\n" + "\n".join(lines) + f"\n  ROOT r = f32[8,8] negate(x{n})\n}}\n")
    asked = []
    real = tf.has_control_edges
    monkeypatch.setattr(tf, "has_control_edges", lambda comp: asked.append(comp.name) or real(comp))
    assert tf.TransposeFolding().run(module)
    verify(module)
    assert not any(i.opcode == "transpose" for i in module.entry.instructions)
    assert asked == ["main"]


def test_fusion_does_not_scan_a_shared_broadcasts_readers_per_reader(monkeypatch):
    """A constant broadcast read by every layer is a producer for each reader: asking whether it is fusible scanned
    all its readers for control edges each time (quadratic in depth); in a computation without control edges
    the scan is skipped."""
    from xlapy.passes.fusion import fusible as F
    from xlapy.passes.fusion.instruction_fusion import InstructionFusion
    n = 50
    lines = ["  x0 = f32[8,8] parameter(0)", "  c = f32[] constant(2)", "  b = f32[8,8] broadcast(c), dimensions={}"]
    lines += [f"  x{i} = f32[8,8] multiply(x{i - 1}, b)" for i in range(1, n + 1)]
    module = parse("HloModule m\nENTRY main {\n" + "\n".join(lines) + f"\n  ROOT r = f32[8,8] negate(x{n})\n}}\n")
    scans = []
    real = F.is_fusible
    monkeypatch.setattr(F, "is_fusible", lambda inst, control_edges=True: (
        control_edges and inst.users and scans.append(inst.name)) or real(inst, control_edges))
    assert InstructionFusion().run(module)
    verify(module)
    assert "b" not in scans


def test_a_new_fusion_computation_is_placed_before_the_entry_without_a_scan():
    """Each fusion's computation goes just before the computation holding it: finding that one in the module's
    list (and removing the new one from it) scanned a list that grows by one per fusion, per fusion."""
    from xlapy.passes.fusion.fuse import wrap_in_fusion
    n = 30
    module = parse(_chain(n))
    scans = []

    class Watched(list):
        def index(self, *a):
            scans.append("index")
            return super().index(*a)

        def remove(self, x):
            scans.append("remove")
            super().remove(x)
    module.computations = Watched(module.computations)
    for inst in [i for i in module.entry.instructions if i.opcode == "add"]:
        wrap_in_fusion(inst)
    verify(module)
    assert len(module.computations) == n + 1 and module.computations[-1] is module.entry
    assert not scans
