// What the HLO graph page draws, and where: no DOM here (graph_view.js draws). Defines the global `hloLayout`.
//
// An instruction may be drawn more than once (a computation called from two places), so boxes are
// instances keyed by their call path: "12" is entry instruction 12, "12/3" instruction 3 of the computation
// instruction 12 calls (a fusion drawn as a cluster), "5:1/7" instruction 7 of the second computation that
// instruction 5 (a while) calls.
//
// Layout is nested: each open cluster is laid out alone by dagre (its parameters in its top row), then
// is one big box in its parent's layout. dagre's own compound layout spreads clusters over twice the width
// (5,350 px against 3,100 px for the demo's MLP step) and one layout per cluster keeps every dagre graph flat.
const hloLayout = (function () {
  "use strict";
  const GRAPH = {rankdir: "TB", nodesep: 14, ranksep: 34, edgesep: 6};
  const MARGIN = 10, CLUSTER_PAD = 8, CLUSTER_TITLE = 18;

  // The boxes, cluster frames and edges when `isOpen(key, inst)` says which clusters are expanded.
  // Each edge belongs to the scope (a cluster key, or null for the entry) holding the instruction it feeds.
  function build(data, isOpen) {
    const insts = data.instructions, comps = data.computations;
    const paramOf = comps.map(c => {
      const byNumber = {};
      for (const i of c.instructions) if (insts[i].parameter !== null) byNumber[insts[i].parameter] = i;
      return byNumber;
    });
    const nodes = [], clusters = [], edges = [];
    const open = (key, inst) => inst.clusters.length > 0 && isOpen(key, inst);
    function out(prefix, i) {                   // the instance holding instruction i's value
      const key = prefix + i, inst = insts[i];
      return inst.style === "inline" && open(key, inst) ? out(key + "/", comps[inst.clusters[0]].root) : key;
    }
    function walk(c, prefix, scope) {
      for (const i of comps[c].instructions) {
        const key = prefix + i, inst = insts[i];
        if (inst.style === "inline" && open(key, inst)) {
          const called = inst.clusters[0];
          clusters.push({key, inst: i, comp: called, parent: scope, toggle: key});
          walk(called, key + "/", key);
          inst.operands.forEach((op, k) => {
            const param = paramOf[called][k];
            if (param !== undefined) edges.push({from: out(prefix, op), to: key + "/" + param, call: false, scope});
          });
          continue;
        }
        nodes.push({key, inst: i, parent: scope});
        for (const op of inst.operands) edges.push({from: out(prefix, op), to: key, call: false, scope});
        if (inst.style === "beside" && open(key, inst)) {
          inst.clusters.forEach((called, j) => {
            const ckey = key + ":" + j;
            clusters.push({key: ckey, inst: i, comp: called, parent: scope, toggle: key});
            walk(called, ckey + "/", ckey);
            edges.push({from: out(ckey + "/", comps[called].root), to: key, call: true, scope});
          });
        }
      }
    }
    walk(data.entry, "", null);
    return {nodes, clusters, edges};
  }

  // The member of `scope` that contains instance `key` (itself, or the cluster around it).
  function memberOf(scope, key) {
    const rest = scope === null ? key : key.slice(scope.length + 1);
    const cut = rest.indexOf("/");
    return (scope === null ? "" : scope + "/") + (cut < 0 ? rest : rest.slice(0, cut));
  }

  // dagre centres every box on its rank's middle line; a rank holding a tall cluster would leave a parameter
  // or constant far above its users, so a box that nothing feeds moves down to one rank gap above its
  // nearest user when nothing is in the way, else to the bottom of its own rank.
  function hugUsers(g, top) {
    const bottomOfRank = {};
    for (const key of g.nodes()) {
      const b = g.node(key);
      bottomOfRank[b.y] = Math.max(bottomOfRank[b.y] ?? -Infinity, b.y + b.height / 2);
    }
    const gap = g.graph().ranksep, moved = new Set();
    const clear = (key, b, y) => g.nodes().every(other => {
      const o = g.node(other);
      return other === key || Math.abs(o.x - b.x) * 2 >= o.width + b.width || Math.abs(o.y - y) * 2 >= o.height + b.height + gap;
    });
    for (const key of g.nodes()) {
      const b = g.node(key);
      if (key === top || g.predecessors(key).length || !g.successors(key).length) continue;   // cluster parameters stay on top
      const low = bottomOfRank[b.y] - b.height / 2;
      const nearest = Math.min(...g.successors(key).map(s => g.node(s).y - g.node(s).height / 2)) - gap - b.height / 2;
      const y = nearest > low && clear(key, b, nearest) ? nearest : low;
      if (y !== b.y) { b.y = y; moved.add(key); }
    }
    for (const e of g.edges()) {
      if (!moved.has(e.v)) continue;
      const b = g.node(e.v), pts = g.edge(e).points;
      while (pts.length > 2 && pts[1].y <= b.y + b.height / 2) pts.splice(1, 1);   // bends now above the box
      pts[0] = borderPoint(b, pts[1]);
    }
  }
  // From the bottom of box a to the top of box b (the next rank down), each end leaning towards the other.
  function across(a, b) {
    const dx = b.x - a.x, lean = (box, d) => Math.max(4 - box.width / 2, Math.min(box.width / 2 - 4, d / 4));
    return [{x: a.x + lean(a, dx), y: a.y + a.height / 2}, {x: b.x - lean(b, dx), y: b.y - b.height / 2}];
  }
  // Where the line from the centre of box b towards point p leaves the box.
  function borderPoint(b, p) {
    const dx = p.x - b.x, dy = p.y - b.y;
    const t = Math.min(dx ? b.width / 2 / Math.abs(dx) : Infinity, dy ? b.height / 2 / Math.abs(dy) : Infinity);
    return {x: b.x + dx * t, y: b.y + dy * t};
  }

  // Lay out one scope; returns its size and members' boxes (top-left corners, relative to the scope).
  function layoutScope(view, scope, measure) {
    const g = new dagre.graphlib.Graph({multigraph: true});
    g.setGraph(Object.assign({marginx: 0, marginy: 0}, GRAPH));
    g.setDefaultEdgeLabel(() => ({}));
    const inner = {};
    for (const cl of view.clusters) if (cl.parent === scope) {
      inner[cl.key] = layoutScope(view, cl.key, measure);
      g.setNode(cl.key, {width: inner[cl.key].width, height: inner[cl.key].height});
    }
    const members = view.nodes.filter(n => n.parent === scope);
    for (const n of members) g.setNode(n.key, measure.size(n));
    const top = "\u0000top";
    view.edges.forEach((e, k) => {
      if (e.scope === scope) g.setEdge(memberOf(scope, e.from), memberOf(scope, e.to), {}, "e" + k);
    });
    if (scope !== null) {                       // a cluster's parameters go in its top row: an anchor above
      const params = new Set(members.filter(measure.isParameter).map(n => n.key));    // every source pulls
      const sources = g.nodes().filter(key => !g.predecessors(key).length);            // them up to it
      g.setNode(top, {width: 0, height: 0});
      for (const key of sources) g.setEdge(top, key, {weight: params.has(key) ? 100 : 0}, top + key);
    }
    dagre.layout(g);
    hugUsers(g, top);
    for (const e of g.edges()) {                // between neighbouring ranks dagre bends the edge through a
      const edge = g.edge(e);                   // point of its own between them, often far to one side
      if (edge.points.length === 3) edge.points = across(g.node(e.v), g.node(e.w));
    }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;   // around every box and bend
    const grow = (x, y, w, h) => {
      x0 = Math.min(x0, x - w / 2); x1 = Math.max(x1, x + w / 2); y0 = Math.min(y0, y - h / 2); y1 = Math.max(y1, y + h / 2);
    };
    for (const key of g.nodes()) if (key !== top) { const b = g.node(key); grow(b.x, b.y, b.width, b.height); }
    for (const e of g.edges()) if (e.v !== top) for (const p of g.edge(e).points) grow(p.x, p.y, 0, 0);
    const pad = scope === null ? MARGIN : CLUSTER_PAD, title = scope === null ? 0 : CLUSTER_TITLE;
    const width = Math.max(x1 - x0 + 2 * pad, scope === null ? 0 : measure.titleWidth(scope));
    const dx = (width - (x1 - x0)) / 2 - x0, dy = pad + title - y0;
    const boxes = {};
    for (const key of g.nodes()) {
      if (key === top) continue;
      const b = g.node(key);
      boxes[key] = {x: b.x - b.width / 2 + dx, y: b.y - b.height / 2 + dy, width: b.width, height: b.height};
    }
    const paths = {};
    for (const e of g.edges()) {
      if (e.v === top) continue;
      paths[e.name] = g.edge(e).points.map(p => ({x: p.x + dx, y: p.y + dy}));
    }
    return {width, height: y1 - y0 + 2 * pad + title, boxes, inner, paths};
  }

  // Absolute boxes of every instance and cluster, and every edge's points (ending on the boxes it joins).
  // measure: {size(node) -> {width, height}, isParameter(node), titleWidth(cluster key)}.
  function place(view, measure) {
    const root = layoutScope(view, null, measure);
    const boxes = {}, scopePaths = {};
    (function flatten(layout, scope, ox, oy) {
      scopePaths[scope] = {layout, ox, oy};
      for (const key in layout.boxes) {
        const b = layout.boxes[key];
        boxes[key] = {x: b.x + ox, y: b.y + oy, width: b.width, height: b.height};
        if (layout.inner[key]) flatten(layout.inner[key], key, boxes[key].x, boxes[key].y);
      }
    })(root, null, 0, 0);
    const edges = view.edges.map((e, k) => {
      const {layout, ox, oy} = scopePaths[e.scope];
      const points = layout.paths["e" + k].map(p => ({x: p.x + ox, y: p.y + oy}));
      const src = boxes[e.from], dst = boxes[e.to];
      const srcMember = boxes[memberOf(e.scope, e.from)], dstMember = boxes[memberOf(e.scope, e.to)];
      if (srcMember !== src) {                  // leaves a cluster: from the box, straight down to the frame
        const bottom = srcMember.y + srcMember.height;
        while (points.length > 2 && points[1].y <= bottom) points.splice(1, 1);
        points[0] = {x: src.x + src.width / 2, y: bottom};
        points.unshift({x: src.x + src.width / 2, y: src.y + src.height});
      }
      if (dstMember !== dst) {                  // enters a cluster: through the frame's top, down to the box
        while (points.length > 2 && points[points.length - 2].y >= dstMember.y) points.splice(points.length - 2, 1);
        points[points.length - 1] = {x: dst.x + dst.width / 2, y: dstMember.y};
        points.push({x: dst.x + dst.width / 2, y: dst.y});
      }
      return Object.assign({points}, e);
    });
    return {width: root.width, height: root.height, boxes, edges};
  }

  return {build, place, memberOf};
})();
