// The HLO graph page's viewer: reads the module data (#graph-data, written by graph_model.py), places it
// with hloLayout (graph_layout.js, on top of dagre) and draws it as SVG. A click on a cluster's title
// collapses it, a click on a blue-edged box expands it; every toggle lays the graph out again.
// Opened with #selfcheck (optionally &expand=all|none) it measures itself and writes JSON to <pre id=selfcheck>.
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const FONT_PX = 10, LINE_PX = 13, PAD_X = 6, PAD_Y = 5, MAX_CHARS = 34;
  const AUTO_EXPAND_LIMIT = 60;     // open every cluster at load when that draws at most this many boxes
  const LAYOUT_LIMIT = 800;         // dagre takes about 10 s for 900 boxes of a long chain, 100 s for 2,700
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const insts = data.instructions, comps = data.computations, times = data.times || null;
  const status = document.getElementById("status"), svg = document.getElementById("graph");
  let expanded = new Set(), zoom = 1, charPx = 6.02, shown = null;

  const build = all => hloLayout.build(data, all ? () => true : key => expanded.has(key));
  const allClusterKeys = () => Array.from(new Set(build(true).clusters.map(cl => cl.toggle)));

  // -- what a box says --------------------------------------------------------------------------------
  function clip(s, n) { return s.length <= n ? s : s.slice(0, n - 1) + "\u2026"; }
  function fmtTime(s) {
    return s >= 1 ? s.toFixed(2) + " s" : s >= 1e-3 ? (s * 1e3).toFixed(2) + " ms" : (s * 1e6).toFixed(1) + " \u00b5s";
  }
  function share(name) { return times && name in times && data.time_total > 0 ? times[name] / data.time_total : null; }
  const maxShare = times ? Math.max(1e-12, ...insts.map(i => share(i.name) || 0)) : 1;
  function heat(s) {                    // share of time -> white .. yellow .. red, scaled to the largest share
    const t = Math.min(1, s / maxShare), stops = [[255, 255, 255], [255, 214, 102], [215, 48, 39]];
    const [a, b, u] = t < 0.5 ? [stops[0], stops[1], t * 2] : [stops[1], stops[2], t * 2 - 1];
    return "rgb(" + a.map((x, k) => Math.round(x + (b[k] - x) * u)).join(",") + ")";
  }
  function timeText(inst) {
    const s = share(inst.name);
    return s === null ? "no time" : fmtTime(times[inst.name]) + "  " + (100 * s).toFixed(1) + "%";
  }
  function lines(inst) {
    const out = [clip(inst.name, MAX_CHARS), clip(inst.opcode, MAX_CHARS), clip(inst.shape, MAX_CHARS)];
    if (times) out.push(timeText(inst));
    return out;
  }
  function fillOf(inst) {
    if (!times) return inst.fill;
    const s = share(inst.name);
    return s === null ? "#f7f7f7" : heat(s);
  }
  function sizeOf(node) {
    const ls = lines(insts[node.inst]);
    return {width: Math.ceil(Math.max(...ls.map(l => l.length)) * charPx) + 2 * PAD_X, height: ls.length * LINE_PX + 2 * PAD_Y};
  }
  function clusterTitle(cl) {           // a fusion's own name (its computation's is in the hover text)
    const inst = insts[cl.inst], own = inst.style === "inline" ? inst.name : comps[cl.comp].name;
    return "\u25be " + own + (times && share(inst.name) !== null ? "  " + timeText(inst) : "");
  }

  // -- drawing ----------------------------------------------------------------------------------------
  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function pathOf(points) {             // two points: an S-curve; more: through them, corners rounded
    const [a, b] = points, my = (a.y + b.y) / 2;
    if (points.length === 2) return "M" + a.x + "," + a.y + " C" + a.x + "," + my + " " + b.x + "," + my + " " + b.x + "," + b.y;
    let d = "M" + points[0].x + "," + points[0].y;
    for (let k = 1; k < points.length - 1; k++) {
      const last = k === points.length - 2, next = points[k + 1];
      const end = last ? next : {x: (points[k].x + next.x) / 2, y: (points[k].y + next.y) / 2};
      d += " Q" + points[k].x + "," + points[k].y + " " + end.x + "," + end.y;
    }
    return d;
  }

  function draw() {
    const {view, placed} = shown;
    svg.textContent = "";
    const marker = el("marker", {id: "arrow", markerWidth: 8, markerHeight: 8, refX: 7, refY: 4, orient: "auto"}, el("defs", {}, svg));
    el("path", {d: "M0,0 L8,4 L0,8 z", fill: "#777"}, marker);
    svg.setAttribute("viewBox", "0 0 " + placed.width + " " + placed.height);
    svg.setAttribute("width", Math.ceil(placed.width * zoom));
    svg.setAttribute("height", Math.ceil(placed.height * zoom));
    const frames = el("g", {}, svg), wires = el("g", {}, svg), boxes = el("g", {}, svg);
    const depth = cl => cl.key.split("/").length;           // outer frames first, inner ones on top
    for (const cl of view.clusters.slice().sort((a, b) => depth(a) - depth(b))) {
      const b = placed.boxes[cl.key], inst = insts[cl.inst], s = times ? share(inst.name) : null;
      const frame = el("g", {class: "cluster", "data-key": cl.key}, frames);
      el("rect", {x: b.x, y: b.y, width: b.width, height: b.height, rx: 6,
                  fill: s === null ? "rgba(51,102,204,0.05)" : heat(s), "fill-opacity": s === null ? 1 : 0.35}, frame);
      el("text", {x: b.x + 6, y: b.y + 13, class: "title"}, frame).textContent =
        clip(clusterTitle(cl), Math.max(6, Math.floor((b.width - 12) / charPx)));
      frame.addEventListener("click", ev => { ev.stopPropagation(); toggle(cl.toggle); });
      hoverable(frame, inst);
    }
    for (const e of placed.edges) el("path", {d: pathOf(e.points), class: e.call ? "edge call" : "edge", "marker-end": "url(#arrow)"}, wires);
    for (const n of view.nodes) {
      const b = placed.boxes[n.key], inst = insts[n.inst];
      const node = el("g", {class: "node" + (inst.root ? " root" : "") + (inst.clusters.length ? " toggles" : ""),
                            "data-key": n.key, "data-name": inst.name}, boxes);
      el("rect", {x: b.x, y: b.y, width: b.width, height: b.height, rx: 4, fill: fillOf(inst)}, node);
      lines(inst).forEach((line, k) => {
        el("text", {x: b.x + PAD_X, y: b.y + PAD_Y + FONT_PX + k * LINE_PX}, node).textContent = line;
      });
      if (inst.clusters.length) node.addEventListener("click", () => toggle(n.key));
      hoverable(node, inst);
    }
  }

  // Lay out and draw what is expanded; a view of more than LAYOUT_LIMIT boxes waits for a click, as dagre
  // would keep the browser busy for minutes. Returns whether it drew.
  function render(force) {
    const view = build(false);
    if (view.nodes.length > LAYOUT_LIMIT && !force) {
      say("This view has " + view.nodes.length + " boxes, more than the " + LAYOUT_LIMIT + " this page lays out " +
          "without asking (it can take minutes); the module's HLO text is below. ", true, "lay it out anyway", () => {
        if (render(true)) document.getElementById("hlo-text").open = false;
      });
      return false;
    }
    const titles = {};
    for (const cl of view.clusters) titles[cl.key] = clusterTitle(cl);
    const measure = {size: sizeOf, isParameter: n => insts[n.inst].parameter !== null,
                     titleWidth: key => (titles[key].length + 2) * charPx + 12};
    shown = {view, placed: hloLayout.place(view, measure)};
    draw();
    search(false);
    say((allClusterKeys().length ? "Click a blue-edged box to open its cluster, a cluster's title to close it. " : "") +
        "Hover a box for its HLO text.", false);
    return true;
  }
  // The status line: one sentence, optionally with a button.
  function say(text, problem, button, action) {
    status.textContent = text;
    status.className = problem ? "problem" : "";
    if (button) {
      const b = document.createElement("button");
      b.textContent = button;
      b.addEventListener("click", action);
      status.appendChild(b);
    }
  }

  // -- interaction: collapse/expand, hover, search, zoom ----------------------------------------------
  function toggle(key) {
    if (expanded.has(key)) expanded.delete(key); else expanded.add(key);
    render(false);
  }
  function setAll(open) {
    expanded = new Set(open ? allClusterKeys() : []);
    render(false);
  }

  const tip = document.getElementById("tip");
  function hoverable(target, inst) {
    target.addEventListener("mousemove", ev => {
      ev.stopPropagation();
      let text = inst.text;
      if (times) text += "\n\n" + (share(inst.name) === null ? "no time recorded"
                                    : "time " + timeText(inst) + " of " + fmtTime(data.time_total));
      if (tip.textContent !== text) tip.textContent = text;
      tip.style.display = "block";
      tip.style.left = Math.max(0, Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8)) + "px";
      tip.style.top = Math.max(0, Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8)) + "px";
    });
    target.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  }

  function hoverFor(name) {             // what hovering the first box called `name` shows (self-check)
    const node = Array.from(svg.querySelectorAll("g.node")).find(n => n.dataset.name === name);
    if (node) node.dispatchEvent(new MouseEvent("mousemove", {clientX: 10, clientY: 10, bubbles: true}));
  }

  const searchBox = document.getElementById("search"), searchInfo = document.getElementById("search-info");
  let current = -1;
  // Highlight the drawn boxes whose name contains the query; `next` moves to the next one and scrolls to
  // it, first opening the clusters around a match hidden in a collapsed one.
  function search(next) {
    const q = searchBox.value.trim().toLowerCase();
    const drawn = Array.from(svg.querySelectorAll("g.node"));
    drawn.forEach(n => n.classList.remove("match", "current"));
    if (!q) { searchInfo.textContent = ""; return; }
    const hits = drawn.filter(n => n.dataset.name.toLowerCase().includes(q));
    const visible = new Set(drawn.map(n => n.dataset.key));
    const hidden = build(true).nodes.filter(n => !visible.has(n.key) && insts[n.inst].name.toLowerCase().includes(q));
    hits.forEach(n => n.classList.add("match"));
    if (next && hidden.length && (hits.length === 0 || current >= hits.length - 1)) {
      openAround(hidden[0].key);
      current = hits.length - 1;
      render(false);
      return search(true);
    }
    if (next && hits.length) {
      current = (current + 1) % hits.length;
      hits[current].classList.add("current");
      hits[current].scrollIntoView({block: "center", inline: "center"});
    }
    searchInfo.textContent = hits.length + " found" + (hidden.length ? ", " + hidden.length + " more in collapsed clusters" : "") +
                             (hits.length || hidden.length ? " (Enter: next)" : "");
  }
  function openAround(key) {            // expand every cluster on the call path of an instance key
    const parts = key.split("/");
    for (let k = 1; k < parts.length; k++) expanded.add(parts.slice(0, k).join("/").replace(/:\d+$/, ""));
  }
  searchBox.addEventListener("input", () => { current = -1; search(false); });
  searchBox.addEventListener("keydown", ev => { if (ev.key === "Enter") search(true); });

  function setZoom(z) {
    zoom = Math.max(0.1, Math.min(3, z));
    draw();
    search(false);
    document.getElementById("zoom-level").textContent = Math.round(zoom * 100) + "%";
  }
  document.getElementById("zoom-in").addEventListener("click", () => setZoom(zoom * 1.25));
  document.getElementById("zoom-out").addEventListener("click", () => setZoom(zoom / 1.25));
  document.getElementById("zoom-fit").addEventListener("click", () =>
    setZoom(Math.min(1, (document.documentElement.clientWidth - 24) / shown.placed.width)));
  document.getElementById("expand-all").addEventListener("click", () => setAll(true));
  document.getElementById("collapse-all").addEventListener("click", () => setAll(false));

  function drawLegend() {
    const legend = document.getElementById("legend");
    if (!times) { legend.style.display = "none"; return; }
    const bar = document.createElement("span"), lo = document.createElement("span"), hi = document.createElement("span");
    bar.className = "ramp";
    bar.style.background = "linear-gradient(to right," + [0, 0.25, 0.5, 0.75, 1].map(t => heat(t * maxShare)).join(",") + ")";
    lo.textContent = "share of time: 0%";
    hi.textContent = (100 * maxShare).toFixed(1) + "% of " + fmtTime(data.time_total) + " (grey: not timed)";
    legend.append(lo, bar, hi);
  }

  // -- self-check for the browser test: what a reader would see, measured from the DOM -----------------
  function overlaps(a, b) {
    return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  }
  function countOverlaps(xs, ys) {
    let n = 0;
    xs.forEach((a, i) => ys.forEach((b, j) => { if ((xs !== ys || j > i) && overlaps(a, b)) n++; }));
    return n;
  }
  function selfCheck(layoutMs) {
    const rectOf = e => e.getBoundingClientRect();
    const boxes = Array.from(svg.querySelectorAll("g.node > rect")).map(rectOf).filter(b => b.width > 0 && b.height > 0);
    const titles = Array.from(svg.querySelectorAll("g.cluster > text")).map(rectOf);
    const byKey = {};
    svg.querySelectorAll("g.node").forEach(n => { byKey[n.dataset.key] = rectOf(n.querySelector("rect")); });
    // parameters next to their first use: the gap from each entry parameter down to its nearest user
    let gap = 0;
    for (const n of shown.view.nodes) {
      if (n.parent !== null || insts[n.inst].parameter === null) continue;
      const users = shown.view.edges.filter(e => e.from === n.key).map(e => byKey[hloLayout.memberOf(null, e.to)] ||
                                                                             rectOf(svg.querySelector('g.cluster[data-key="' + hloLayout.memberOf(null, e.to) + '"] > rect')));
      if (users.length) gap = Math.max(gap, Math.min(...users.map(u => u.top - byKey[n.key].bottom)));
    }
    const result = {nodes: boxes.length, clusters: shown.view.clusters.length, edges: svg.querySelectorAll("path.edge").length,
                    overlapping_pairs: countOverlaps(boxes, boxes), title_overlaps: countOverlaps(titles, boxes),
                    svg_width: Math.round(rectOf(svg).width), svg_height: Math.round(rectOf(svg).height),
                    page_width: document.documentElement.scrollWidth, window_width: window.innerWidth,
                    parameter_gap_max_px: Math.round(gap), layout_ms: Math.round(layoutMs),
                    timed_boxes: times ? shown.view.nodes.filter(n => share(insts[n.inst].name) !== null).length : 0,
                    hover: tip.style.display === "block" ? tip.textContent : null, search: searchInfo.textContent,
                    current: (svg.querySelector("g.node.current") || {dataset: {}}).dataset.name || null,
                    status: status.textContent};
    const out = document.createElement("pre");
    out.id = "selfcheck";
    out.textContent = JSON.stringify(result);
    document.body.appendChild(out);
  }

  // -- start ------------------------------------------------------------------------------------------
  function start() {
    if (typeof dagre === "undefined") throw new Error("the layout library (dagre) did not load");
    const probe = el("text", {}, svg);
    probe.textContent = "M".repeat(20);
    charPx = probe.getComputedTextLength() / 20 || charPx;
    const hash = new URLSearchParams(location.hash.slice(1)), want = hash.get("expand");
    if (want === "all" || (want !== "none" && build(true).nodes.length <= AUTO_EXPAND_LIMIT)) expanded = new Set(allClusterKeys());
    drawLegend();
    const t0 = performance.now();
    if (!render(false)) return;
    const layoutMs = performance.now() - t0;
    document.getElementById("hlo-text").open = false;
    if (hash.has("hover")) hoverFor(hash.get("hover"));
    if (hash.has("find")) { searchBox.value = hash.get("find"); search(true); }
    if (hash.has("selfcheck")) selfCheck(layoutMs);
  }
  try {
    start();
  } catch (err) {
    svg.textContent = "";
    say("The graph could not be drawn in this browser (" + err.message + "); the module's HLO text follows.", true);
  }
})();
