"""Graphs of a module for people: Graphviz DOT (to_dot), and a self-contained HTML page (to_html) laid out
in the browser by dagre, a vendored layout library, with collapsible fusion clusters, hover text, search and
optional profile times; without the library the page is the module's text (graph_html.py).
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module
from . import graph_html
from .graph_model import fill, opcode_label


def _label(inst: Instruction) -> str:
    return f"{inst.name}\n{opcode_label(inst)}\n{inst.shape.to_text(print_layout=False)}"


def _node_id(inst: Instruction) -> str:
    return "n" + str(id(inst))


def _dot_computation(comp: Computation, lines: list[str], indent: str) -> None:
    for inst in comp.instructions:
        label = _label(inst).replace('"', "'").replace("\n", "\\n")
        lines.append(f'{indent}{_node_id(inst)} [label="{label}", style=filled, fillcolor="{fill(inst)}"'
                     f'{", penwidth=2" if inst.is_root else ""}];')
        if inst.opcode == "fusion":
            fused = inst.attrs["calls"]
            lines.append(f'{indent}subgraph cluster_{id(inst)} {{')
            lines.append(f'{indent}  label="{fused.name}"; style=dashed; color="#3366cc";')
            _dot_computation(fused, lines, indent + "  ")
            lines.append(f"{indent}}}")
            lines.append(f'{indent}{_node_id(fused.root)} -> {_node_id(inst)} [style=dashed, color="#3366cc"];')
    for inst in comp.instructions:
        for op in inst.operands:
            lines.append(f"{indent}{_node_id(op)} -> {_node_id(inst)};")


def to_dot(module: Module) -> str:
    """A Graphviz digraph: one cluster per non-fused computation, fusions as nested clusters."""
    fused = {id(i.attrs["calls"]) for i in module.instructions() if i.opcode == "fusion"}
    lines = [f'digraph "{module.name}" {{', "  rankdir=TB; node [shape=box, fontname=monospace, fontsize=10];"]
    for comp in module.computations:
        if id(comp) in fused:
            continue
        lines.append(f'  subgraph cluster_{id(comp)} {{ label="{comp.name}{" (ENTRY)" if comp.is_entry else ""}";')
        _dot_computation(comp, lines, "    ")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_html(module: Module, times: dict[str, float] | None = None) -> str:
    """A self-contained page (works offline from a file:// URL): the module's graph laid out by dagre, fusions
    and other called computations as clusters a click collapses, hover for the HLO text, search by name.
    `times` (instruction name -> seconds, e.g. from a profile) colours each box by its share of the time."""
    return graph_html.page(module, times)
