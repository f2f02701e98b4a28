"""Computation.remove_dead (a worklist) removes exactly what sweeping until nothing changes removes, control
predecessors pinning their instructions until the instruction naming them is removed."""
import random

from xlapy.hlo import Computation, Instruction, Module, Shape

F32 = Shape.scalar("f32")


def _sweep(comp: Computation) -> int:
    """The definition: sweep until nothing changes (O(n^2) per sweep; the old implementation)."""
    removed, changed = 0, True
    while changed:
        changed = False
        for inst in reversed(list(comp.instructions)):
            if (inst.users or inst is comp.root or inst.opcode == "parameter" or inst.has_side_effect
                    or any(inst in u.control_predecessors for u in comp.instructions)):
                continue
            comp.remove_instruction(inst)
            removed, changed = removed + 1, True
    return removed


def _random_computation(seed: int) -> Computation:
    rng = random.Random(seed)
    comp = Module("m").add_computation(Computation("entry"), entry=True)
    insts = [comp.add_instruction(Instruction("parameter", F32, (), {}, "p", parameter_number=0))]
    for _ in range(50):
        ops = rng.sample(insts, min(len(insts), rng.choice([1, 2])))
        inst = comp.add_instruction(Instruction("add" if len(ops) == 2 else "negate", F32, ops, {}, "x"))
        if rng.random() < 0.15:
            inst.control_predecessors.append(rng.choice(insts))
        insts.append(inst)
    comp.root = rng.choice(insts[25:])
    return comp


def test_remove_dead_matches_the_sweep():
    for seed in range(100):
        want, got = _random_computation(seed), _random_computation(seed)
        assert got.remove_dead() == _sweep(want)
        assert [i.name for i in got.instructions] == [i.name for i in want.instructions]
        assert [[u.name for u in i.users] for i in got.instructions] == \
            [[u.name for u in i.users] for i in want.instructions]
