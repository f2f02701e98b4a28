"""Counter-based pins of the HLO passes' repeated work (issue 11: the pipeline is on the compile's critical path):
what a pass walks is counted, never timed. Each test fails on the form it replaced (tests/passes/test_pass_costs.py
holds the earlier ones)."""
from xlapy.hlo import Computation, Instruction, parse
from xlapy.passes import while_loop_analysis as wla
from xlapy.passes.while_loop_constant_sinking import WhileLoopConstantSinking
from xlapy.passes.while_loop_simplifier import WhileLoopSimplifier


def _loops(n_loops: int, chain: int, start: str = "s32[] constant(0)") -> str:
    """n_loops whiles in the entry, each with its own body and condition; a body is a counter (element 0), a
    chain of `chain` sines on element 1, and element 2 (a constant the body passes through)."""
    parts = ["HloModule loops"]
    for k in range(n_loops):
        sines = [f"  s0 = f32[4] get-tuple-element(p), index=1"]
        sines += [f"  s{j} = f32[4] sine(s{j - 1})" for j in range(1, chain + 1)]
        parts.append(f"""
body{k} {{
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
{chr(10).join(sines)}
  c = f32[4] get-tuple-element(p), index=2
  x = f32[4] add(s{chain}, c)
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, x, c)
}}

cond{k} {{
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT
}}""")
    entry = ["  a = f32[4] parameter(0)", f"  start = {start}",
             "  c = f32[4] constant({1, 2, 3, 4})"]
    outs = []
    for k in range(n_loops):
        entry.append(f"  init{k} = (s32[], f32[4], f32[4]) tuple(start, a, c)")
        entry.append(f"  w{k} = (s32[], f32[4], f32[4]) while(init{k}), condition=cond{k}, body=body{k}")
        entry.append(f"  r{k} = f32[4] get-tuple-element(w{k}), index=1")
        outs.append(f"r{k}")
    entry.append(f"  ROOT out = ({', '.join(['f32[4]'] * n_loops)}) tuple({', '.join(outs)})")
    parts.append("\nENTRY e {\n" + "\n".join(entry) + "\n}\n")
    return "\n".join(parts)


def test_constant_sinking_counts_the_module_calls_once(monkeypatch):
    """Whether a loop's body and condition have one caller is read from one count of the module's calls, not a
    walk of the whole module per loop (two per loop: O(loops x module))."""
    n_loops = 8
    module = parse(_loops(n_loops, chain=4))
    size = sum(len(c.instructions) for c in module.computations)
    asked = []
    real = Instruction.called_computations
    monkeypatch.setattr(Instruction, "called_computations", lambda self: asked.append(1) or real(self))
    assert WhileLoopConstantSinking().run(module)        # element 2 is constant c: sunk into every body
    assert len(asked) <= 2 * size                        # (it was 2 * n_loops * size)


def test_trip_count_of_a_loop_with_an_unknown_counter_walks_no_body(monkeypatch):
    """A counter that does not start constant has no trip count: the body's dependencies are not computed."""
    module = parse(_loops(1, chain=50, start="s32[] parameter(1)"))
    walked = []
    real = wla.element_deps
    monkeypatch.setattr(wla, "element_deps", lambda comp, args: walked.append(comp.name) or real(comp, args))
    loop = next(i for i in module.entry.instructions if i.opcode == "while")
    assert wla.trip_count(loop, max_trips=1) is None
    assert "body0" not in walked


def test_trip_count_evaluates_what_the_counter_reads_only(monkeypatch):
    """Running the body for a trip count evaluates the counter's instructions and walks nothing else: the body's
    post order is made once (for its dependencies), not again to run it beside the 50 sines."""
    module = parse(_loops(1, chain=50))
    evaluated, walked = [], []
    real_eval, real_order = wla._eval_one, Computation.post_order
    monkeypatch.setattr(wla, "_eval_one", lambda inst, *a: evaluated.append(inst.opcode) or real_eval(inst, *a))
    monkeypatch.setattr(Computation, "post_order", lambda self: walked.append(self.name) or real_order(self))
    loop = next(i for i in module.entry.instructions if i.opcode == "while")
    assert wla.trip_count(loop, max_trips=1) is None     # 100 trips, more than 1
    assert "sine" not in evaluated
    assert len(evaluated) < 20
    assert walked.count("body0") == 1


def test_while_simplifier_analyses_a_body_once_per_loop(monkeypatch):
    """The trip-count rule and the dead-element rule share one analysis of the loop's body (each made its own)."""
    module = parse(_loops(1, chain=10))
    walked = []
    real = wla.element_deps
    monkeypatch.setattr(wla, "element_deps", lambda comp, args: walked.append(comp.name) or real(comp, args))
    WhileLoopSimplifier().run(module)
    assert walked.count("body0") == 1


def test_module_walks_ask_only_calling_instructions_for_their_callees(monkeypatch):
    """computation_post_order and reachable_computations (DCE's dead computations, every pass visiting callees
    first) ask called_computations() only of the instructions that can call one, not of every instruction."""
    from xlapy.hlo.ir import reachable_computations
    from xlapy.testing import reducer
    adds = "\n".join(f"  x{i} = f32[8] add(x{i - 1}, x{i - 1})" for i in range(1, 101))
    module = parse(f"""HloModule m
{reducer("add")}
ENTRY e {{
  x0 = f32[8] parameter(0)
{adds}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x100, z), dimensions={{0}}, to_apply=add
}}""")
    asked = []
    real = Instruction.called_computations
    monkeypatch.setattr(Instruction, "called_computations", lambda self: asked.append(self.opcode) or real(self))
    assert len(module.computation_post_order()) == 2
    assert len(list(reachable_computations([module.entry]))) == 2
    assert asked == ["reduce", "reduce"]


def test_constant_folding_walks_no_computation_without_a_candidate(monkeypatch):
    """A computation where no instruction reads only constants is not walked in post order (most computations
    in most runs of the simplification fixed point); one where one does is."""
    from xlapy.passes.constant_folding import HloConstantFolding
    module = parse(_loops(2, chain=20))
    walked = []
    real = Computation.post_order
    monkeypatch.setattr(Computation, "post_order", lambda self: walked.append(self.name) or real(self))
    HloConstantFolding().run(module)
    assert walked == []
    module = parse(_loops(1, chain=2).replace("one = s32[] constant(1)\n",
                                              "one0 = s32[] constant(1)\n  one = s32[] negate(one0)\n"))
    assert HloConstantFolding().run(module)
    assert walked == ["body0"]


def test_control_edge_questions_scan_a_computation_without_python_calls():
    """orders_others, has_control_edges and post_order_of ask about every loop, sort, conditional and computation
    each run: on a computation with no control edges and no such op they run no Python code per instruction."""
    import sys

    from xlapy.passes.control_util import has_control_edges, orders_others
    module = parse(_loops(1, chain=300))
    body = module.computation("body0")
    inst = body.root
    calls = []

    def count(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)
    sys.setprofile(count)
    try:
        assert not orders_others(inst)
        assert not has_control_edges(body)
        assert body.post_order_of("while") == []
    finally:
        sys.setprofile(None)
    assert len(calls) < 10, calls
