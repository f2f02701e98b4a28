"""The HTML graph page of the demo's training steps (examples/digits_demo.py), opened in headless Chromium:
every box is drawn, no two boxes overlap (their rectangles read from the DOM), the MLP step's page is at most
2,000 px wide at the default zoom, search and hover work, profile times colour the boxes, and the page falls
back to the module's text with one line when the layout library is missing or fails, or waits for a click when
the view is too big to lay out quickly. Screenshots go to $XLAPY_SCREENSHOT_DIR (default
/tmp/xlapy_graph_screenshots)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.hlo import Computation
from xlapy.passes import graph, graph_html

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MAX_WIDTH_PX = 2000


def demo_step_module(model: str):
    """The demo's jitted training step for `model`, optimized as the demo compiles it (cpu backend)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import demo_models as dm
    finally:
        sys.path.remove(str(EXAMPLES))
    init, variants = dm.MODELS[model]
    params, _ = init(seed=0)
    velocity = dm.zeros_like_tree(params)
    images, labels = np.zeros((32, 8, 8, 1), np.float32), np.zeros(32, np.int32)
    step = dm.make_step(next(iter(variants.values())), 0.9)
    compiled = xlapy.jit(step).lower(params, velocity, images, labels, np.float32(0.1)).compile()
    module = getattr(compiled.executable, "module", None)
    return module if module is not None else xlapy.hlo.parse(compiled.as_text())


def drawn_with_every_cluster_open(comp: Computation) -> tuple[int, int]:
    """(boxes, cluster frames): one box per instruction, except that an open fusion is drawn as the boxes of its
    fused computation in a frame, and a while loop's condition and body are frames beside its box."""
    boxes = clusters = 0
    for inst in comp.instructions:
        if inst.opcode in ("fusion", "while"):
            for called in inst.called_computations():
                inner = drawn_with_every_cluster_open(called)
                boxes, clusters = boxes + inner[0], clusters + inner[1] + 1
        boxes += inst.opcode != "fusion"
    return boxes, clusters


@pytest.fixture(scope="module", params=["mlp", "cnn"])
def step(request, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.delenv(graph_html.NO_LAYOUT_ENV, raising=False)
    module = demo_step_module(request.param)
    page = tmp_path_factory.mktemp("pages") / f"{request.param}_train_step.html"
    page.write_text(graph.to_html(module))
    return request.param, module, page


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def assert_drawn_apart(check: dict) -> None:
    assert check["overlapping_pairs"] == 0, check
    assert check["title_overlaps"] == 0, check


def test_default_view_draws_every_box_apart_and_fits_the_width(browser, step):
    name, module, page = step
    check = browser.self_check(page)
    print(name, "default view:", check)
    assert check["clusters"] == 0 and check["nodes"] == len(module.entry.instructions), check
    assert_drawn_apart(check)
    assert check["parameter_gap_max_px"] <= 40, "a parameter is not just above its first user"
    if name == "mlp":
        assert check["svg_width"] <= MAX_WIDTH_PX and check["page_width"] <= MAX_WIDTH_PX, check
    browser.screenshot(page, browser.screenshots / f"{name}_train_step.png")


def test_every_cluster_open_draws_every_instruction_apart(browser, step):
    name, module, page = step
    check = browser.self_check(page, "&expand=all", window="1600,1200")
    print(name, "every cluster open:", check)
    assert (check["nodes"], check["clusters"]) == drawn_with_every_cluster_open(module.entry), check
    assert_drawn_apart(check)
    browser.screenshot(page, browser.screenshots / f"{name}_train_step.expanded.png", "#expand=all", window="1600,2400")


def test_search_opens_the_fusion_around_a_match_and_hover_shows_the_hlo(browser, step):
    name, module, page = step
    fusion = next(i for i in module.entry.instructions if i.opcode == "fusion")
    inner = fusion.attrs["calls"].root
    check = browser.self_check(page, f"&find={inner.name}&hover={fusion.name}")
    assert check["current"] == inner.name, check
    assert check["clusters"] == 1 and check["nodes"] > len(module.entry.instructions), check
    assert check["hover"].startswith(fusion.to_text()[:40]), check["hover"]
    assert_drawn_apart(check)


def test_profile_times_colour_the_boxes(browser, step, tmp_path):
    name, module, page = step
    timed = [i for i in module.entry.instructions if i.opcode != "parameter"]
    times = {inst.name: 1e-5 * (k + 1) for k, inst in enumerate(timed)}
    page = tmp_path / f"{name}_train_step.profile.html"
    page.write_text(graph.to_html(module, times=times))
    check = browser.self_check(page, f"&hover={timed[-1].name}")
    assert check["timed_boxes"] == len(timed), check
    assert f"of {sum(times.values()) * 1e3:.2f} ms" in check["hover"], check["hover"]
    assert "share of time" in browser.dom(page)
    assert_drawn_apart(check)
    if name == "mlp":
        browser.screenshot(page, browser.screenshots / f"{name}_train_step.profile.png")


def test_without_the_library_the_browser_shows_the_text_and_one_line(browser, step, tmp_path, monkeypatch):
    name, module, _ = step
    monkeypatch.setenv(graph_html.NO_LAYOUT_ENV, "1")
    page = tmp_path / "no_layout.html"
    page.write_text(graph.to_html(module))
    dom = browser.dom(page)
    assert browser.status_line(dom).startswith("No graph:") and "<pre>HloModule" in dom


def test_a_library_that_fails_in_the_browser_leaves_the_text_and_says_so(browser, step, tmp_path, monkeypatch):
    name, module, _ = step
    monkeypatch.setattr(graph_html, "layout_library", lambda: ("throw new Error('broken on purpose');", ""))
    page = tmp_path / "broken_layout.html"
    page.write_text(graph.to_html(module))
    dom = browser.dom(page)
    assert browser.status_line(dom).startswith("The graph could not be drawn in this browser"), browser.status_line(dom)
    assert '<details id="hlo-text" open' in dom


def test_a_view_too_big_to_lay_out_at_once_waits_for_a_click(browser, tmp_path, monkeypatch):
    monkeypatch.delenv(graph_html.NO_LAYOUT_ENV, raising=False)
    chain = [f"n{k} = f32[4] negate(n{k - 1})" for k in range(1, 900)]
    module = xlapy.hlo.parse("HloModule chain\nENTRY e {\n  n0 = f32[4] parameter(0)\n  "
                             + "\n  ".join(chain) + "\n  ROOT r = f32[4] negate(n899)\n}\n")
    page = tmp_path / "chain.html"
    page.write_text(graph.to_html(module))
    dom = browser.dom(page)
    assert "901 boxes, more than the 800" in browser.status_line(dom) and "lay it out anyway</button>" in dom
    assert '<details id="hlo-text" open' in dom
