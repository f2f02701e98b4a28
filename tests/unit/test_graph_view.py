"""The HTML graph page without a browser (tests/browser runs it in Chromium): one self-contained file with the
module's data, dagre and the viewer inlined; which computations are clusters; profile times; and the text
fallback, with its one line, when the layout library is missing."""
from __future__ import annotations

import html as htmllib
import json
import re

import pytest

import xlapy
from xlapy.passes import graph, graph_html, graph_model

MODULE = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused_exp {
  param_0 = f32[8] parameter(0)
  param_1 = f32[8] parameter(1)
  e = f32[8] exponential(param_0)
  ROOT m = f32[8] multiply(e, param_1)
}

cond {
  c = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[8] get-tuple-element(t), index=1
  w = f32[8] negate(v)
  ROOT r = (s32[], f32[8]) tuple(j, w)
}

ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  f = f32[8] fusion(x, y), kind=kLoop, calls=fused_exp
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, f)
  loop = (s32[], f32[8]) while(init), condition=cond, body=body
  out = f32[8] get-tuple-element(loop), index=1
  z = f32[] constant(0)
  ROOT total = f32[] reduce(out, z), dimensions={0}, to_apply=add
}
"""


@pytest.fixture
def module():
    return xlapy.hlo.parse(MODULE)


def graph_data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def test_page_is_one_offline_file_with_dagre_and_the_viewer_inlined(module, monkeypatch):
    monkeypatch.delenv(graph_html.NO_LAYOUT_ENV, raising=False)
    page = graph.to_html(module)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "nothing may load from the network"
    assert "<script src" not in page and "<link" not in page
    assert page.count("<script") == 4          # the data, dagre, graph_layout.js, graph_view.js
    assert graph_html._asset(graph_html.DAGRE_PATH) in page
    assert "hloLayout" in page and 'id="search"' in page and 'id="hlo-text"' in page
    assert "fused_exp" in page and "exponential" in page     # the module's text, fusions included


def test_clusters_are_fusions_and_control_flow_not_reducers(module):
    data = graph_model.module_data(module)
    names = [c["name"] for c in data["computations"]]
    assert names[data["entry"]] == "main"
    assert set(names) == {"main", "fused_exp", "cond", "body"}      # `add`, a reducer, is only named
    by_name = {i["name"]: i for i in data["instructions"]}
    assert by_name["f"]["style"] == "inline" and [names[c] for c in by_name["f"]["clusters"]] == ["fused_exp"]
    assert by_name["loop"]["style"] == "beside"
    assert [names[c] for c in by_name["loop"]["clusters"]] == ["cond", "body"]
    assert by_name["total"]["clusters"] == [] and "to_apply=%add" in by_name["total"]["text"]
    assert by_name["param_1"]["parameter"] == 1 and by_name["total"]["root"]
    assert [data["instructions"][k]["name"] for k in by_name["f"]["operands"]] == ["x", "y"]
    assert len(data["instructions"]) == sum(len(module.computation(n).instructions) for n in names)


def test_times_are_passed_with_the_total_they_are_shares_of(module):
    times = {"f": 3e-3, "loop": 1e-3, "total": 0.5e-3, "e": 2e-3, "w": 1e-3}   # e and w are inside timed ones
    data = graph_data(graph.to_html(module, times=times))
    assert data["times"] == times and data["time_total"] == pytest.approx(4.5e-3)
    assert "times" not in graph_data(graph.to_html(module))
    # a profile times a loop's body kernels, not the loop: they count
    assert graph_model.time_total(module, {"f": 3e-3, "w": 1e-3, "j": 1e-3}) == pytest.approx(5e-3)


def test_nothing_in_the_module_can_close_the_data_script_early(monkeypatch):
    monkeypatch.delenv(graph_html.NO_LAYOUT_ENV, raising=False)
    hostile = xlapy.hlo.parse('HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), '
                              'metadata={op_name="</script><script>alert(1)</script>"}\n}\n')
    page = graph.to_html(hostile)
    assert page.count("</script>") == page.count("<script")
    assert "</script><script>alert" in graph_data(page)["instructions"][0]["text"]


def test_without_the_layout_library_the_page_is_the_text_and_one_line(module, monkeypatch):
    monkeypatch.setenv(graph_html.NO_LAYOUT_ENV, "1")
    page = graph.to_html(module)
    status = re.findall(r'<p id="status"[^>]*>(.*?)</p>', page)
    assert len(status) == 1 and status[0].startswith("No graph:") and graph_html.NO_LAYOUT_ENV in status[0]
    assert "<script" not in page
    text = re.search(r"<pre>(.*?)</pre>", page, re.S).group(1)
    assert htmllib.unescape(text) == module.to_text(print_large_constants=False)


def test_a_deleted_vendor_file_gives_the_text_and_says_what_to_reinstall(module, monkeypatch, tmp_path):
    monkeypatch.delenv(graph_html.NO_LAYOUT_ENV, raising=False)
    monkeypatch.setattr(graph_html, "DAGRE_PATH", tmp_path / "vendor" / "dagre" / "dagre.min.js")
    page = graph.to_html(module)
    status = re.search(r'<p id="status"[^>]*>(.*?)</p>', page).group(1)
    assert "missing" in status and "dagre.min.js" in status and "reinstall xlapy" in status
    assert "<script" not in page and "fused_exp" in page


def test_vendored_files_are_read_once_per_process(module, monkeypatch):
    monkeypatch.delenv(graph_html.NO_LAYOUT_ENV, raising=False)
    graph.to_html(module)
    reads = graph_html._asset.cache_info().misses
    graph.to_html(module)
    graph.to_html(module, times={"f": 1.0})
    assert graph_html._asset.cache_info().misses == reads


def test_vendored_dagre_has_its_licence_and_version_note():
    vendor = graph_html.DAGRE_PATH.parent
    assert "Permission is hereby granted, free of charge" in (vendor / "LICENSE").read_text()
    note = (vendor / "README.md").read_text()
    version = re.search(r"dagre (\d+\.\d+\.\d+)", note).group(1)
    assert f'"{version}"' in graph_html.DAGRE_PATH.read_text()     # the file is the version the note names


def test_dot_output_still_draws_fusions_as_clusters(module):
    dot = graph.to_dot(module)
    assert dot.startswith('digraph "m"') and 'label="fused_exp"' in dot and "style=dashed" in dot
    assert dot.count("->") >= sum(len(i.operands) for i in module.instructions())
