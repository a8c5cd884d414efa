// phalanx dashboard, the topology map: nodes grouped by the topology levels (zone → block → rack →
// node), each node a cell coloured by CPU requested ÷ allocatable, its devices as sub-cells, drawn
// on a <canvas>. Drag to pan, wheel to zoom, click a node for its details. Only what is in view is
// drawn; a frame is requested, never drawn synchronously, so a burst of patches costs one frame.
// For the benchmark: dash.startFrames() / dash.stopFrames() record requestAnimationFrame
// timestamps and draw times.
"use strict";

const PAD = 6, LABEL = 14;
const view = dash.mapView = { scale: 1, ox: 0, oy: 0, worldW: 0, worldH: 0, moved: false, cellByName: new Map() };

function cellSize(n) { return n > 1024 ? 12 : n > 256 ? 18 : n > 64 ? 30 : 72; }

function groupTree(nodes, depth, level) {
  if (depth === 0 || !nodes.length) return { nodes: [...nodes].sort((a, b) => natural(a.name, b.name)) };
  const byValue = new Map();
  for (const n of nodes) {
    const v = n.path[level] || "(none)";
    if (!byValue.has(v)) byValue.set(v, []);
    byValue.get(v).push(n);
  }
  const order = (a, b) => (a === "(none)") - (b === "(none)") || natural(a, b);
  return { children: [...byValue.keys()].sort(order).map(label =>
    ({ label, level, ...groupTree(byValue.get(label), depth - 1, level + 1) })) };
}

// Sizes a group to fit `width`; returns {w, h, place(x, y, boxes)} that records cells into dash.layout.
function measure(group, width, cell) {
  if (group.nodes) {
    const cols = Math.max(1, Math.min(group.nodes.length, Math.floor(width / cell)));
    const rows = Math.ceil(group.nodes.length / cols);
    return { w: cols * cell, h: rows * cell, place(x, y) {
      group.nodes.forEach((n, i) => dash.layout.push({ node: n, x: x + (i % cols) * cell,
        y: y + Math.floor(i / cols) * cell, s: cell - 2 }));
    } };
  }
  const inner = group.children.map(c => [c, measure(c, width - 2 * PAD, cell)]);
  let x = 0, y = 0, rowH = 0, w = 0;
  const spots = [];
  for (const [c, m] of inner) {
    const bw = m.w + 2 * PAD, bh = m.h + 2 * PAD + LABEL;
    if (x > 0 && x + bw > width) { y += rowH + PAD; x = 0; rowH = 0; }
    spots.push([c, m, x, y, bw, bh]);
    x += bw + PAD; rowH = Math.max(rowH, bh); w = Math.max(w, x - PAD);
  }
  return { w, h: y + rowH, place(ox, oy, boxes) {
    for (const [c, m, x, y, bw, bh] of spots) {
      boxes.push({ label: c.label, level: c.level, x: ox + x, y: oy + y, w: bw, h: bh });
      m.place(ox + x + PAD, oy + y + PAD + LABEL, boxes);
    }
  } };
}

function canvasSize(canvas) {
  const w = Math.max(200, Math.floor(canvas.clientWidth)), h = Math.max(200, Math.floor(canvas.clientHeight));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  return [w, h];
}

// Lays the nodes out in the shape that lets the whole map show largest, and fits it to the canvas.
function layoutMap() {
  const canvas = document.getElementById("map");
  const nodes = dash.list("nodes"), cell = cellSize(nodes.length);
  const [cw, ch] = canvasSize(canvas);
  const tree = groupTree(nodes, dash.doc.levels.length, 0);
  let best = null;
  for (const k of [1, 1.5, 2, 3, 4, 6, 8, 12]) {
    const m = measure(tree, Math.max(4 * cell, cw * k - 2 * PAD), cell);
    const s = Math.min(1, cw / (m.w + 2 * PAD), ch / (m.h + 2 * PAD));
    if (!best || s > best.s + 1e-9) best = { m, s };
    if (m.h + 2 * PAD <= ch) break;
  }
  dash.layout = []; dash.boxes = [];
  best.m.place(PAD, PAD, dash.boxes);
  view.worldW = best.m.w + 2 * PAD; view.worldH = best.m.h + 2 * PAD;
  view.cellByName = new Map(dash.layout.map(c => [c.node.name, c]));
  if (!view.moved) fitView(best.s, cw);
}

function fitView(scale, cw) {
  view.scale = scale;
  view.ox = Math.max(0, (cw - view.worldW * scale) / 2);
  view.oy = 0;
}
dash.fitMap = () => { view.moved = false; layoutMap(); dash.requestDraw(); };

// After a patch: new or moved nodes need a new layout; others only their cell's row.
function onNodesChanged(change) {
  if (!dash.doc) return;
  const relayout = change.snapshot || change.levels || change.deletedNodes.length ||
    change.nodes.some(n => { const c = view.cellByName.get(n.name); return !c || c.node.path.join("\u0000") !== n.path.join("\u0000"); });
  if (relayout) layoutMap();
  else for (const n of change.nodes) view.cellByName.get(n.name).node = n;
  if (change.snapshot || change.collections.has("nodes")) dash.requestDraw(true);
}

// -- drawing ----------------------------------------------------------------------------------------
function cpuColour(f) { return `hsl(${Math.round(140 - 140 * Math.min(1, f))}, 55%, ${38 + 10 * Math.min(1, f)}%)`; }
const colourCache = new Map();
function cpuFill(f) {
  const q = Math.round(Math.min(1, f) * 40);
  if (!colourCache.has(q)) colourCache.set(q, cpuColour(q / 40));
  return colourCache.get(q);
}

// What a cell's colour measures: CPU or memory requested ÷ allocatable, or devices allocated ÷ devices.
dash.colourBy = "cpu";
const MEASURES = {
  cpu: n => n.cpuFraction,
  memory: n => n.memoryFraction,
  devices: n => n.devices.length ? n.devices.filter(d => d.claim).length / n.devices.length : 0,
};
const MEASURE_TEXT = { cpu: "CPU requested ÷ allocatable", memory: "memory requested ÷ allocatable",
  devices: "devices allocated ÷ devices" };

function drawDevices(ctx, c, claims) {
  const devs = c.node.devices;
  if (!devs.length) return;
  const per = Math.ceil(Math.sqrt(devs.length)), d = Math.max(2, Math.floor((c.s * 0.6) / per));
  const x0 = c.x + c.s - per * d - 1, y0 = c.y + c.s - Math.ceil(devs.length / per) * d - 1;
  devs.forEach((dev, i) => {
    ctx.fillStyle = dev.claim && claims.has(dev.claim) ? "#4fc3f7" : dev.claim ? "#e8a33d" : "#3a4350";
    ctx.fillRect(x0 + (i % per) * d, y0 + Math.floor(i / per) * d, d - 1, d - 1);
  });
}

function domainBoxes() {
  const levels = dash.doc.levels, want = new Set(dash.highlightedDomains.map(d => `${d.key}\u0000${d.value}`));
  return new Set(dash.boxes.filter(b => want.has(`${levels[b.level]}\u0000${b.label}`)));
}

function drawBoxes(ctx, visible, s) {
  const domains = domainBoxes();
  ctx.font = `${11 / s}px system-ui`; ctx.textBaseline = "top";
  for (const b of dash.boxes) {
    if (!visible(b.x, b.y, b.w, b.h)) continue;
    const hot = domains.has(b);
    ctx.lineWidth = (hot ? 3 : 1) / s;
    ctx.strokeStyle = hot ? "#4fc3f7" : "#2f3945";
    ctx.strokeRect(b.x, b.y, b.w, b.h);
    if (b.h * s > 24 && b.w * s > 30) { ctx.fillStyle = hot ? "#4fc3f7" : "#8b96a3"; ctx.fillText(b.label, b.x + 4 / s, b.y + 3 / s); }
  }
  return domains.size;
}

function drawCells(ctx, visible, s) {
  const hl = new Set(dash.highlightedNodes), named = new Set(dash.namedNodes), any = hl.size > 0;
  const claims = new Set(dash.highlightedClaims);
  const details = 12 / s, labels = 60 / s, measure = MEASURES[dash.colourBy] || MEASURES.cpu;
  for (const c of dash.layout) {
    if (!visible(c.x, c.y, c.s, c.s)) continue;
    const n = c.node;
    ctx.globalAlpha = any && !hl.has(n.name) ? 0.3 : 1;
    ctx.fillStyle = n.ready ? cpuFill(measure(n)) : "#555";
    ctx.fillRect(c.x, c.y, c.s, c.s);
    if (c.s >= details) {
      if (n.unschedulable || n.taints.length) { ctx.lineWidth = 1 / s; ctx.strokeStyle = "#ff7b72"; ctx.strokeRect(c.x + 1.5 / s, c.y + 1.5 / s, c.s - 3 / s, c.s - 3 / s); }
      drawDevices(ctx, c, claims);
    }
    if (c.s >= labels) { ctx.fillStyle = "#e6edf3"; ctx.fillText(n.name.length > 11 ? "…" + n.name.slice(-10) : n.name, c.x + 3, c.y + 3); }
  }
  ctx.globalAlpha = 1;
  const tiny = dash.layout.length && dash.layout[0].s * s < 8;  // cells of a few pixels: ring them too
  for (const [set, colour] of [[hl, "#4fc3f7"], [named, "#ffb454"]]) {
    ctx.lineWidth = 2 / s; ctx.strokeStyle = colour;
    for (const name of set) {
      const c = view.cellByName.get(name);
      if (!c) continue;
      ctx.strokeRect(c.x - 1 / s, c.y - 1 / s, c.s + 2 / s, c.s + 2 / s);
      if (tiny) { ctx.beginPath(); ctx.arc(c.x + c.s / 2, c.y + c.s / 2, 9 / s, 0, 2 * Math.PI); ctx.stroke(); }
    }
  }
}

function draw() {
  const t0 = performance.now();
  const canvas = document.getElementById("map"), ctx = canvas.getContext("2d");
  const [cw, ch] = canvasSize(canvas);
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, cw, ch);
  if (!dash.doc) return;
  const s = view.scale;
  ctx.setTransform(s, 0, 0, s, view.ox, view.oy);
  const x0 = -view.ox / s, y0 = -view.oy / s, x1 = (cw - view.ox) / s, y1 = (ch - view.oy) / s;
  const visible = (x, y, w, h) => x + w >= x0 && x <= x1 && y + h >= y0 && y <= y1;
  canvas.dataset.domains = drawBoxes(ctx, visible, s);
  drawCells(ctx, visible, s);
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  canvas.dataset.highlighted = dash.highlightedNodes.join(",");
  canvas.dataset.scale = s.toFixed(4);
  dash.renders++;
  dash.lastDrawMs = performance.now() - t0;
  if (dash.firstRenderAt === undefined && dash.layout.length) {
    dash.firstRenderAt = performance.now();  // ms since navigation start
    document.body.dataset.firstRender = "1";
  }
  if (frames) frames.draws.push(dash.lastDrawMs);
}

let drawRequested = false;
dash.requestDraw = function (now) {
  if (now) { draw(); return; }
  if (drawRequested) return;
  drawRequested = true;
  requestAnimationFrame(() => { drawRequested = false; draw(); });
};

// -- frames (benchmark) -------------------------------------------------------------------------------
let frames = null;
dash.startFrames = function () {
  const mine = frames = { stamps: [], draws: [] };
  const tick = ts => { if (frames !== mine) return; mine.stamps.push(ts); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
};
dash.stopFrames = function () {
  const f = frames || { stamps: [], draws: [] };
  frames = null;
  return { intervals: f.stamps.slice(1).map((t, i) => t - f.stamps[i]), draws: f.draws };
};

// -- pan, zoom, click ---------------------------------------------------------------------------------
function worldAt(canvas, ev) {
  const r = canvas.getBoundingClientRect();
  const x = (ev.clientX - r.left) * canvas.width / r.width, y = (ev.clientY - r.top) * canvas.height / r.height;
  return [x, y, (x - view.ox) / view.scale, (y - view.oy) / view.scale];
}

dash.panBy = function (dx, dy) { view.ox += dx; view.oy += dy; view.moved = true; dash.requestDraw(); };
dash.zoomAt = function (x, y, factor) {
  const s = Math.min(8, Math.max(0.02, view.scale * factor)), k = s / view.scale;
  view.ox = x - (x - view.ox) * k; view.oy = y - (y - view.oy) * k; view.scale = s; view.moved = true;
  dash.requestDraw();
};

// Zooms to the box of topology level `level` (0: outermost) holding the first of `names`, or to the
// nodes themselves when there are no levels.
dash.zoomToNodes = function (names, level) {
  const cells = names.map(n => view.cellByName.get(n)).filter(Boolean);
  if (!cells.length) return;
  const c = cells[0];
  const box = dash.boxes.find(b => b.level === level && c.x >= b.x && c.x <= b.x + b.w && c.y >= b.y && c.y <= b.y + b.h);
  const xs = cells.map(k => k.x), ys = cells.map(k => k.y);
  const r = box || { x: Math.min(...xs), y: Math.min(...ys), w: Math.max(...xs) - Math.min(...xs) + c.s,
    h: Math.max(...ys) - Math.min(...ys) + c.s };
  const canvas = document.getElementById("map"), m = 8;
  const s = Math.min(4, (canvas.width - 2 * m) / r.w, (canvas.height - 2 * m) / r.h);
  view.scale = s; view.ox = (canvas.width - r.w * s) / 2 - r.x * s; view.oy = m - r.y * s; view.moved = true;
  dash.requestDraw(true);
};

function showNode(hit) {
  const info = document.getElementById("node-info");
  if (!hit) { info.textContent = ""; delete info.dataset.node; return; }
  const n = hit.node;
  const devs = n.devices.map(d => `  ${d.driver} ${d.pool}/${d.name}: ${d.claim || "free"}`).join("\n");
  info.dataset.node = n.name;
  info.textContent = `${n.name}  ${n.path.join(" / ")}\n  cpu ${n.cpuRequestedMilli}m of ${n.cpuAllocatableMilli}m` +
    `${n.ready ? "" : "  NotReady"}${n.unschedulable ? "  cordoned" : ""}${n.taints.length ? "  taints: " + n.taints.join(", ") : ""}` +
    (devs ? "\n" + devs : "");
}

dash.showNode = name => showNode(view.cellByName.get(name));

function installMapControls() {
  const canvas = document.getElementById("map");
  let drag = null;
  canvas.addEventListener("mousedown", ev => { drag = { x: ev.clientX, y: ev.clientY, moved: 0 }; });
  window.addEventListener("mousemove", ev => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    drag.moved += Math.abs(dx) + Math.abs(dy); drag.x = ev.clientX; drag.y = ev.clientY;
    if (drag.moved > 3) dash.panBy(dx, dy);
  });
  window.addEventListener("mouseup", ev => {
    if (drag && drag.moved <= 3 && ev.target === canvas) {
      const [, , wx, wy] = worldAt(canvas, ev);
      showNode(dash.layout.find(c => wx >= c.x && wx <= c.x + c.s && wy >= c.y && wy <= c.y + c.s));
    }
    drag = null;
  });
  canvas.addEventListener("wheel", ev => {
    ev.preventDefault();
    const [x, y] = worldAt(canvas, ev);
    dash.zoomAt(x, y, Math.exp(-ev.deltaY * 0.0015));
  }, { passive: false });
  document.getElementById("zoom-in").addEventListener("click", () => dash.zoomAt(canvas.width / 2, canvas.height / 2, 1.5));
  document.getElementById("zoom-out").addEventListener("click", () => dash.zoomAt(canvas.width / 2, canvas.height / 2, 1 / 1.5));
  document.getElementById("zoom-fit").addEventListener("click", () => dash.fitMap());
  document.getElementById("colour-by").addEventListener("change", ev => {
    dash.colourBy = ev.target.value;
    document.getElementById("legend-measure").textContent = MEASURE_TEXT[dash.colourBy];
    dash.requestDraw(true);
  });
  window.addEventListener("resize", () => { if (dash.doc) { layoutMap(); dash.requestDraw(); } });
}

dash.onChange(onNodesChanged);
installMapControls();
