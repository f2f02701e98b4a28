"""The HTML graph page: one self-contained file that works offline from a file:// URL.

The page carries the module as JSON (graph_model.py), the layout library (dagre, vendored under
vendor/dagre/ with its licence) and the viewer (graph_view.js, graph_view.css), all inlined. Its static part
is the module's HLO text under one status line, so without the library, without JavaScript, or when the
layout fails in the browser, the reader still gets the module and one line saying what is missing.
"""
from __future__ import annotations

import functools
import html
import json
import os
from pathlib import Path

from ..hlo import Module
from . import graph_model

HERE = Path(__file__).resolve().parent
DAGRE_PATH = HERE / "vendor" / "dagre" / "dagre.min.js"
VIEWER_PATHS = [HERE / "graph_layout.js", HERE / "graph_view.js"]     # inlined in this order, after dagre
CSS_PATH = HERE / "graph_view.css"
NO_LAYOUT_ENV = "XLAPY_GRAPH_NO_LAYOUT"      # set to 1: pages leave the layout library out (the text fallback)

STATUS_WITH_SCRIPTS = "This page draws its graph with JavaScript; the module's HLO text is below."


@functools.cache
def _asset(path: Path) -> str | None:
    """A file inlined into pages, read once per process; None when it is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    lowered = text.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise ValueError(f"{path} cannot be inlined into a <script> element as it is")
    return text.replace("//# sourceMappingURL=dagre.min.js.map", "")


def layout_library() -> tuple[str | None, str]:
    """(the layout library's source, '') or (None, the one line saying why the page has no graph)."""
    if os.environ.get(NO_LAYOUT_ENV, "") not in ("", "0"):
        return None, (f"No graph: {NO_LAYOUT_ENV} is set, so the layout library is left out (unset it to get "
                      "the graph). The module's HLO text follows.")
    source = _asset(DAGRE_PATH)
    if source is None:
        return None, (f"No graph: the layout library {DAGRE_PATH} is missing; reinstall xlapy with its package "
                      "data (pip install --force-reinstall xlapy). The module's HLO text follows.")
    return source, ""


def _json_for_script(value: object) -> str:
    # '<' only occurs inside JSON strings, where \u003c means the same: nothing can close the element early
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


_CONTROLS = """<input id="search" type="search" placeholder="find by name, Enter: next">
<span id="search-info"></span>
<button id="expand-all">expand all</button><button id="collapse-all">collapse all</button>
<span><button id="zoom-out">&minus;</button> <span id="zoom-level">100%</span> <button id="zoom-in">+</button>
<button id="zoom-fit">fit width</button></span>
<span id="legend"></span>"""


def page(module: Module, times: dict[str, float] | None = None) -> str:
    """The page for `module`; `times` (instruction name -> seconds, e.g. from a profile) colours the boxes."""
    library, problem = layout_library()
    viewer, css = [_asset(path) for path in VIEWER_PATHS], _asset(CSS_PATH)
    if library is not None and (None in viewer or css is None):
        library, problem = None, (f"No graph: the viewer's files in {HERE} are missing; reinstall xlapy with "
                                  "its package data. The module's HLO text follows.")
    title = html.escape(module.name)
    parts = ["<!DOCTYPE html>\n<html><head><meta charset='utf-8'>", f"<title>{title}</title>",
             f"<style>{css or ''}</style></head><body>",
             f"<header><h1>HLO module {title}</h1>{_CONTROLS if library else ''}</header>"]
    if library is None:
        parts.append(f'<p id="status" class="problem">{html.escape(problem)}</p>')
    else:
        parts.append(f'<p id="status">{STATUS_WITH_SCRIPTS}</p>')
        parts.append('<svg id="graph" xmlns="http://www.w3.org/2000/svg"></svg><div id="tip"></div>')
    text = module.to_text(print_large_constants=False)
    parts.append(f'<details id="hlo-text" open><summary>HLO text</summary><pre>{html.escape(text)}</pre></details>')
    if library is not None:
        data = graph_model.module_data(module, times)
        parts.append(f'<script type="application/json" id="graph-data">{_json_for_script(data)}</script>')
        parts += [f"<script>{source}</script>" for source in (library, *viewer)]
    parts.append("</body></html>\n")
    return "\n".join(parts)
