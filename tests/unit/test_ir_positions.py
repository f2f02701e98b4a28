"""Computation.position and remove_instruction on big computations: the position hints (kept across removals,
stale after edits made straight to the list) always give the list's own answer."""
import random

from xlapy.hlo import Computation, Instruction, Module, Shape

F32 = Shape.scalar("f32")


def _big(n: int) -> tuple[Computation, list[Instruction]]:
    module = Module("m")
    comp = module.add_computation(Computation("entry"), entry=True)
    insts = [comp.add_instruction(Instruction("parameter", F32, (), {}, "p", parameter_number=0))]
    for k in range(n):
        insts.append(comp.add_instruction(Instruction("negate", F32, (insts[k // 2],), {}, "n")))
    root = comp.add_instruction(Instruction("tuple", Shape.tuple_of((F32,)), (insts[-1],), {}, "t"))
    comp.root = root
    return comp, insts


def test_positions_match_the_list_through_removals_and_direct_edits():
    comp, insts = _big(3 * Computation._HINTED)
    rng = random.Random(0)
    leaves = [i for i in insts if not i.users and i.opcode != "parameter"]
    for step in range(400):
        if step % 50 == 7:          # an edit behind the hints' back: move an instruction one place down
            lst = comp.instructions
            k = rng.randrange(1, len(lst) - 1)
            lst.insert(k + 1, lst.pop(k))
        if step % 30 == 11:         # a new instruction the hints have never seen
            comp.add_instruction(Instruction("negate", F32, (insts[0],), {}, "late"))
        for inst in rng.sample(comp.instructions, 5):
            assert comp.position(inst) == comp.instructions.index(inst)
        dead = rng.choice(leaves)
        leaves.remove(dead)
        operand = dead.operands[0]
        before = list(comp.instructions)
        comp.remove_instruction(dead)
        before.remove(dead)
        assert comp.instructions == before and dead.parent is None
        if not operand.users and operand.opcode != "parameter":
            leaves.append(operand)
    late = [i for i in comp.instructions if i.name.startswith("late")]
    assert late and all(comp.position(i) == comp.instructions.index(i) for i in late)
