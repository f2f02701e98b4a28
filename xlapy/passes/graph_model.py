"""The module as plain data for the HTML graph page (graph_view.js lays it out and draws it).

Python decides what each box says and which computations are clusters; the page decides where boxes go
(the layout library) and what is collapsed. Everything here is JSON-ready: lists, strings, numbers.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module
from ..hlo.printer import instruction_to_text

# opcode -> how the page draws the computations the instruction calls. Computations of any other opcode
# (reducers, sort comparators, scatter combiners) are small and shared: the hover text names them.
CLUSTER_STYLE = {
    "fusion": "inline",        # expanded, the cluster replaces the instruction: operand k feeds parameter k,
    "call": "inline",          # the cluster's root feeds the instruction's users
    "while": "beside",         # the instruction stays; body and condition are clusters whose roots feed it
    "conditional": "beside",
}

# opcode family -> fill colour (XLA's hlo_graph_dumper uses similar families); first match wins
FILL_RULES = [
    (lambda i: i.opcode == "parameter", "#fff3c4"),
    (lambda i: i.opcode == "constant", "#eeeeee"),
    (lambda i: i.opcode == "fusion", "#d6e4ff"),
    (lambda i: i.opcode in ("dot", "convolution"), "#ffd6d6"),
    (lambda i: i.opcode in ("reduce", "reduce-window", "select-and-scatter", "scatter", "gather", "sort"), "#e3d6ff"),
    (lambda i: i.opcode in ("while", "conditional", "call", "custom-call"), "#d6f5e3"),
    (lambda i: i.info.is_elementwise, "#ffffff"),
    (lambda i: True, "#f5f5f5"),
]

HOVER_TEXT_LIMIT = 4000     # characters of an instruction's HLO text shown on hover


def fill(inst: Instruction) -> str:
    return next(colour for applies, colour in FILL_RULES if applies(inst))


def opcode_label(inst: Instruction) -> str:
    return f"{inst.opcode} {inst.attrs['kind']}" if inst.opcode == "fusion" and "kind" in inst.attrs else inst.opcode


def cluster_computations(inst: Instruction) -> list[Computation]:
    """The computations drawn as clusters for `inst` (none for reducers and comparators)."""
    return inst.called_computations() if inst.opcode in CLUSTER_STYLE else []


def drawn_computations(module: Module) -> list[Computation]:
    """The entry and, transitively, every computation drawn as a cluster, callers before callees."""
    order, seen = [], set()

    def visit(comp: Computation) -> None:
        if id(comp) in seen:
            return
        seen.add(id(comp))
        order.append(comp)
        for inst in comp.instructions:
            for called in cluster_computations(inst):
                visit(called)
    visit(module.entry)
    return order


def _hover_text(inst: Instruction) -> str:
    text = instruction_to_text(inst, print_large_constants=False)
    return text if len(text) <= HOVER_TEXT_LIMIT else text[:HOVER_TEXT_LIMIT] + " ..."


def module_data(module: Module, times: dict[str, float] | None = None) -> dict:
    """{module, computations, instructions, entry, times?}: instructions are indexed by position; each
    names its computation, operands (indices), clusters (computation indices) and how they are drawn."""
    comps = drawn_computations(module)
    comp_index = {id(c): k for k, c in enumerate(comps)}
    inst_index: dict[int, int] = {}
    for comp in comps:
        for inst in comp.instructions:
            inst_index[id(inst)] = len(inst_index)
    instructions = []
    for comp in comps:
        for inst in comp.instructions:
            clusters = [comp_index[id(c)] for c in cluster_computations(inst)]
            instructions.append({
                "name": inst.name, "opcode": opcode_label(inst),
                "shape": inst.shape.to_text(print_layout=False), "fill": fill(inst),
                "comp": comp_index[id(comp)], "operands": [inst_index[id(o)] for o in inst.operands],
                "parameter": inst.parameter_number if inst.opcode == "parameter" else None,
                "root": inst.is_root, "text": _hover_text(inst),
                "clusters": clusters, "style": CLUSTER_STYLE.get(inst.opcode) if clusters else None})
    data = {"module": module.name, "entry": comp_index[id(module.entry)], "instructions": instructions,
            "computations": [{"name": c.name, "root": inst_index[id(c.root)],
                              "instructions": [inst_index[id(i)] for i in c.instructions]} for c in comps]}
    if times:
        data["times"] = {name: float(seconds) for name, seconds in times.items()}
        data["time_total"] = time_total(module, times)
    return data


def time_total(module: Module, times: dict[str, float]) -> float:
    """What a share of time is a share of: every given time except those inside an instruction that has one
    itself (a timed fusion's fused instructions, the body of a timed loop). A loop without a time of its own
    (a profile times the kernels of its body) counts through its body's times."""
    total = 0.0

    def walk(comp: Computation, inside_timed: bool) -> None:
        nonlocal total
        for inst in comp.instructions:
            timed = inst.name in times
            if timed and not inside_timed:
                total += times[inst.name]
            for called in inst.called_computations():
                walk(called, inside_timed or timed)
    walk(module.entry, False)
    return float(total)
