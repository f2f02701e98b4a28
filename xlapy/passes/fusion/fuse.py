"""The mechanics of fusion: creating a `fusion` instruction and growing its fused computation.

A fusion instruction F = fusion(o_0, ..., o_n), kind=kLoop, calls=%fused_computation evaluates its fused
computation, whose parameter `param_i` stands for operand o_i. Invariants kept here:
  * operands are distinct (an operand used twice is one parameter read twice);
  * parameter numbers are 0..n in operand order (renumbered, and renamed `param_i`, after a removal);
  * the fused computation sits in the module just before the computation that holds F (callees first).

    fusion = fuse_into(consumer, producer)    # consumer may already be a fusion; returns the fusion

A producer that still has users outside the fusion is copied in (duplicated), otherwise it is moved in,
keeping its name. A producer that is itself a fusion has its fused computation inlined.
"""
from __future__ import annotations

from ...hlo import Computation, Instruction, Module, Shape

KINDS = ("kLoop", "kInput", "kOutput", "kCustom")


def is_fusion(inst: Instruction) -> bool:
    return inst.opcode == "fusion"


def fused_computation(fusion: Instruction) -> Computation:
    return fusion.attrs["calls"]


def fused_instructions(fusion: Instruction) -> list[Instruction]:
    """The instructions of a fusion's computation other than its parameters, in post order."""
    return [i for i in fused_computation(fusion).post_order() if i.opcode != "parameter"]


def fused_parameter(fusion: Instruction, index: int) -> Instruction:
    return fused_computation(fusion).parameter(index)


def fused_size(fusion: Instruction) -> int:
    """How many instructions besides its parameters a fusion's computation holds, without walking it: it has one
    parameter per operand (the verifier's check of a call's signature, kept by everything here)."""
    return len(fused_computation(fusion).instructions) - len(fusion.operands)


# -- creating a fusion -----------------------------------------------------------------------------------
def wrap_in_fusion(inst: Instruction, kind: str = "kLoop", name: str | None = None) -> Instruction:
    """Replace `inst` by a fusion whose computation holds `inst` alone, reading its (distinct) operands as
    parameters. Returns the fusion, which takes over inst's users, rootness and metadata."""
    comp = inst.parent
    module = comp.parent
    fused = Computation("fused_computation")
    _place_computation(module, fused, comp)
    attrs = {"kind": kind, "calls": fused}
    if "metadata" in inst.attrs:
        attrs["metadata"] = inst.attrs["metadata"]
    fusion = Instruction("fusion", inst.shape, (), attrs, name or "fusion")
    comp.add_instruction(fusion)
    mapped = [_parameter_for(fusion, op) for op in inst.operands]
    inst.replace_all_uses_with(fusion)
    _take_place(comp, fusion, inst)
    clone = inst.clone_with(mapped, name=inst.name)
    _add(fused, clone, keep_name=True)
    fused.root = clone
    return fusion


def _place_computation(module: Module, fused: Computation, before: Computation) -> None:
    module.add_computation(fused)
    comps = module.computations
    assert comps[-1] is fused
    comps.pop()
    # `before` is most often the entry, last: found without a scan (two scans of a list that grows by one
    # computation per fusion, per fusion, were quadratic in a module's fusions)
    comps.insert(len(comps) - 1 if comps and comps[-1] is before else comps.index(before), fused)


def _take_place(comp: Computation, fusion: Instruction, inst: Instruction) -> None:
    """Keep the instruction list in a def-before-use order: the fusion (just added, so last) takes the place of
    `inst`, which is removed (one scan of the list where moving the fusion and removing inst took three)."""
    insts = comp.instructions
    if inst.users:
        raise ValueError(f"cannot remove {inst.name}: still used by {[u.name for u in inst.users]}")
    if inst is comp.root:
        raise ValueError(f"cannot remove root {inst.name} of {comp.name}")
    assert insts[-1] is fusion
    insts.pop()
    insts[comp.position(inst)] = fusion
    inst.detach()
    inst.parent = None


def _add(comp: Computation, inst: Instruction, keep_name: bool) -> Instruction:
    """Add `inst` to `comp`, keeping its name when asked and free there; else a module-unique one."""
    if keep_name and inst.name not in [i.name for i in comp.instructions]:
        inst.parent = comp
        comp.instructions.append(inst)
        return inst
    comp.add_instruction(inst)
    return inst


def _parameter_for(fusion: Instruction, operand: Instruction) -> Instruction:
    """The fused parameter reading `operand`, added (as the last operand) when the fusion lacks one."""
    comp = fused_computation(fusion)
    operands = fusion.operands
    if operand in operands:             # Instruction compares by identity
        return comp.parameter(operands.index(operand))
    number = len(operands)
    operands.append(operand)
    if fusion not in operand.users:
        operand.users.append(fusion)
    param = Instruction("parameter", operand.shape, (), {}, f"param_{number}", parameter_number=number)
    comp.add_instruction(param)
    return param


def _remove_operand(fusion: Instruction, index: int, rename: bool = True) -> None:
    """Drop operand `index` and its (now unused) parameter; renumber the later parameters, and rename them unless
    the caller renames them once when done (rename_parameters)."""
    comp = fused_computation(fusion)
    module = comp.parent
    comp.remove_parameter(index, None if not rename else
                          lambda p: module.unique_name(f"param_{p.parameter_number}") if module
                          else f"param_{p.parameter_number}")
    op = fusion.operands.pop(index)
    if op not in fusion.operands and fusion in op.users:
        op.users.remove(fusion)


# -- fusing a producer ----------------------------------------------------------------------------------
def fusion_name(producer: Instruction, consumer: Instruction) -> str:
    """XLA's name for a new fusion: `<producer opcode>_<consumer opcode>_fusion`."""
    return f"{producer.opcode}_{consumer.opcode}_fusion"


def rename_parameters(fusion: Instruction) -> None:
    """Name each parameter of a fusion's computation `param_<its number>` (made unique), where it is not yet."""
    comp = fused_computation(fusion)
    module = comp.parent
    for n in range(len(fusion.operands)):
        p = comp.parameter(n)
        stem = f"param_{n}"
        if p.name != stem and p.name.rpartition(".")[0] != stem:
            p.name = module.unique_name(stem) if module else stem


def fuse_into(consumer: Instruction, producer: Instruction, kind: str = "kLoop",
              rename: bool = True) -> Instruction:
    """Fuse `producer` (an operand of `consumer`) into `consumer`, which becomes (or already is) a fusion.
    Returns the fusion. The producer is removed from its computation when nothing else uses it. rename=False:
    the parameters that move down a number keep their names until the caller's rename_parameters."""
    if producer not in consumer.operands:
        raise ValueError(f"{producer.name} is not an operand of {consumer.name}")
    if producer.shape.is_tuple:
        raise ValueError(f"cannot fuse {producer.name}: its result is a tuple")
    if is_fusion(consumer):
        fusion = consumer
        if kind == "kOutput":
            fusion.attrs["kind"] = kind
    else:
        fusion = wrap_in_fusion(consumer, kind, fusion_name(producer, consumer))
    fuse_producer(fusion, producer, rename)
    return fusion


def fuse_producer(fusion: Instruction, producer: Instruction, rename: bool = True) -> Instruction:
    """Move (or copy, when it has other users) `producer`, an operand of `fusion`, into the fused computation;
    returns the value that now stands for it there. A fusion producer is inlined, and deleted with its
    computation when nothing else uses it."""
    comp = fused_computation(fusion)
    index = fusion.operands.index(producer)
    old_param = comp.parameter(index)
    duplicate = producer.is_root or any(u is not fusion for u in producer.users)
    if is_fusion(producer):
        value = _inline(fusion, producer)
    else:
        mapped = [_parameter_for(fusion, op) for op in producer.operands]
        value = _add(comp, producer.clone_with(mapped, name=producer.name), keep_name=not duplicate)
    old_param.replace_all_uses_with(value)
    _remove_operand(fusion, fusion.operands.index(producer), rename)
    if not producer.users and not producer.is_root:
        producer.parent.remove_instruction(producer)
        if is_fusion(producer):
            remove_fusion_computation(comp.parent, producer)
    return value


def _inline(fusion: Instruction, producer: Instruction) -> Instruction:
    """Copy producer's fused computation into fusion's; returns the copy of its root."""
    inner = fused_computation(producer)
    return inline_computation(fusion, inner, producer.operands)[id(inner.root)]


def inline_computation(fusion: Instruction, inner: Computation, operands) -> dict[int, Instruction]:
    """Copy `inner` (a fused computation whose parameter i reads operands[i]) into fusion's computation;
    returns the map id(inner instruction) -> its copy."""
    comp = fused_computation(fusion)
    mapping: dict[int, Instruction] = {}
    for p in inner.parameters:
        mapping[id(p)] = _parameter_for(fusion, operands[p.parameter_number])
    for inst in inner.post_order():
        if inst.opcode != "parameter":
            clone = inst.clone_with([mapping[id(o)] for o in inst.operands])
            mapping[id(inst)] = _add(comp, clone, keep_name=False)
    return mapping


# -- multi-output fusions ---------------------------------------------------------------------------------
def outputs(fusion: Instruction) -> list[Instruction]:
    """The values a fusion returns: the elements of a tuple root, else the root alone."""
    root = fused_computation(fusion).root
    return list(root.operands) if root.opcode == "tuple" else [root]


def get_tuple_element(fusion: Instruction, index: int) -> Instruction:
    comp = fusion.parent
    gte = Instruction("get-tuple-element", fusion.shape.tuple_shapes[index], [fusion], {"index": index},
                      "get-tuple-element")
    return comp.add_instruction(gte)


def add_output(fusion: Instruction, value: Instruction) -> int:
    """Make `value` (inside the fused computation) one more result of `fusion`, whose root becomes a tuple
    (its users then read element 0). Returns the tuple index of `value`."""
    comp = fused_computation(fusion)
    if fusion.shape.is_tuple:
        old_root = comp.root
        elements = list(old_root.operands) + [value]
    else:
        old_root = None
        elements = [comp.root, value]
    root = Instruction("tuple", Shape.tuple_of(tuple(e.shape for e in elements)), elements, {}, "tuple")
    comp.add_instruction(root)
    comp.root = root
    if old_root is not None:
        comp.remove_instruction(old_root)
    was_array = not fusion.shape.is_tuple
    fusion.shape = root.shape
    if was_array:
        users, was_root = list(fusion.users), fusion.is_root
        first = get_tuple_element(fusion, 0)
        for u in users:
            u.replace_uses_of(fusion, first)
        if was_root:
            fusion.parent.root = first
    return len(elements) - 1


def remove_fusion_computation(module: Module, fusion: Instruction) -> None:
    """Drop the fused computation of a fusion that was deleted (nothing else calls it)."""
    comp = fused_computation(fusion)
    if comp in module.computations:
        module.remove_computation(comp)
