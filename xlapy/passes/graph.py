"""Graphs of a module for people: Graphviz DOT, and a self-contained HTML page (inline SVG, no scripts
from the network) that opens in any browser. Fusions are drawn as clusters holding their fused computation.
"""
from __future__ import annotations

import html

from ..hlo import Computation, Instruction, Module

# opcode family -> fill colour (XLA's hlo_graph_dumper uses similar families)
_COLOURS = [
    (lambda i: i.opcode == "parameter", "#fff3c4"),
    (lambda i: i.opcode == "constant", "#eeeeee"),
    (lambda i: i.opcode == "fusion", "#d6e4ff"),
    (lambda i: i.opcode in ("dot", "convolution"), "#ffd6d6"),
    (lambda i: i.opcode in ("reduce", "reduce-window", "select-and-scatter", "scatter", "gather", "sort"), "#e3d6ff"),
    (lambda i: i.opcode in ("while", "conditional", "call", "custom-call"), "#d6f5e3"),
    (lambda i: i.info.is_elementwise, "#ffffff"),
    (lambda i: True, "#f5f5f5"),
]


def _colour(inst: Instruction) -> str:
    return next(c for pred, c in _COLOURS if pred(inst))


def _label(inst: Instruction) -> str:
    extra = f" {inst.attrs['kind']}" if inst.opcode == "fusion" else ""
    return f"{inst.name}\n{inst.opcode}{extra}\n{inst.shape.to_text(print_layout=False)}"


def _node_id(inst: Instruction) -> str:
    return "n" + str(id(inst))


def _dot_computation(comp: Computation, lines: list[str], indent: str) -> None:
    for inst in comp.instructions:
        label = _label(inst).replace('"', "'").replace("\n", "\\n")
        lines.append(f'{indent}{_node_id(inst)} [label="{label}", style=filled, fillcolor="{_colour(inst)}"'
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


# -- HTML: a layered layout drawn as inline SVG ------------------------------------------------------------
_W, _H, _GAP_X, _GAP_Y = 190, 46, 24, 40


def _layout(comp: Computation) -> tuple[dict[int, tuple[int, int]], int, int]:
    depth: dict[int, int] = {}
    for inst in comp.post_order():
        depth[id(inst)] = 1 + max((depth[id(o)] for o in inst.operands if id(o) in depth), default=-1)
    rows: dict[int, list[Instruction]] = {}
    for inst in comp.post_order():
        rows.setdefault(depth[id(inst)], []).append(inst)
    pos = {}
    width = max((len(r) for r in rows.values()), default=1)
    for d, row in rows.items():
        for k, inst in enumerate(row):
            pos[id(inst)] = (10 + k * (_W + _GAP_X), 10 + d * (_H + _GAP_Y))
    return pos, 20 + width * (_W + _GAP_X), 20 + len(rows) * (_H + _GAP_Y)


def _svg(comp: Computation) -> str:
    pos, w, h = _layout(comp)
    parts = [f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" font-family="monospace" '
             f'font-size="10">']
    for inst in comp.instructions:
        x2, y2 = pos[id(inst)]
        for op in inst.operands:
            x1, y1 = pos[id(op)]
            parts.append(f'<line x1="{x1 + _W / 2}" y1="{y1 + _H}" x2="{x2 + _W / 2}" y2="{y2}" stroke="#888" '
                         f'marker-end="url(#arrow)"/>')
    parts.append('<defs><marker id="arrow" markerWidth="8" markerHeight="8" refX="8" refY="4" orient="auto">'
                 '<path d="M0,0 L8,4 L0,8 z" fill="#888"/></marker></defs>')
    for inst in comp.instructions:
        x, y = pos[id(inst)]
        stroke = "#000" if inst.is_root else "#555"
        box = (f'<rect x="{x}" y="{y}" width="{_W}" height="{_H}" rx="4" fill="{_colour(inst)}" stroke="{stroke}" '
               f'stroke-width="{2 if inst.is_root else 1}"/>')
        text = "".join(f'<text x="{x + 5}" y="{y + 13 + 13 * k}">{html.escape(line[:30])}</text>'
                       for k, line in enumerate(_label(inst).splitlines()))
        title = f"<title>{html.escape(inst.to_text())}</title>"
        if inst.opcode == "fusion":
            parts.append(f'<a href="#c{id(inst.attrs["calls"])}"><g>{title}{box}{text}</g></a>')
        else:
            parts.append(f"<g>{title}{box}{text}</g>")
    parts.append("</svg>")
    return "".join(parts)


def to_html(module: Module) -> str:
    """A self-contained page: the entry and every other computation as an SVG graph; fused computations are
    drawn inside a dashed frame (the fusion's cluster) and linked from their fusion node."""
    fused = {id(i.attrs["calls"]) for i in module.instructions() if i.opcode == "fusion"}
    order = sorted(module.computations, key=lambda c: (not c.is_entry, id(c) in fused))
    body = []
    for comp in order:
        kind = "ENTRY " if comp.is_entry else ("fusion cluster " if id(comp) in fused else "")
        frame = "border:2px dashed #3366cc;" if id(comp) in fused else "border:1px solid #ccc;"
        body.append(f'<section id="c{id(comp)}" style="{frame}margin:12px;padding:8px;overflow:auto">'
                    f"<h2>{kind}{html.escape(comp.name)}</h2>{_svg(comp)}</section>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(module.name)}</title></head><body style='font-family:sans-serif'>"
            f"<h1>HLO module {html.escape(module.name)}</h1>"
            "<p>Hover a node for its HLO text; click a fusion to jump to its fused computation.</p>"
            + "".join(body) + "<details><summary>HLO text</summary><pre>"
            + html.escape(module.to_text()) + "</pre></details></body></html>\n")
