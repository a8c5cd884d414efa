// phalanx dashboard: receives the cluster document over Server-Sent Events (/api/stream) and draws
// the topology map on a <canvas>, the PodGroup and ResourceClaim tables and the pending pods.
// `window.__dashboard` exposes the state (document, selection, highlighted nodes) for tests and
// for a curious user's console.
"use strict";

const dash = window.__dashboard = {
  doc: null, selected: null, highlightedNodes: [], highlightedDevices: [], layout: [], renders: 0,
};

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// -- layout: groups by topology level, nodes as cells ----------------------------------------------
const PAD = 6, LABEL = 14;

function cellSize(n) { return n > 1024 ? 12 : n > 256 ? 18 : n > 64 ? 30 : 72; }

function groupTree(nodes, depth) {
  if (depth === 0 || !nodes.length) {
    return { nodes: [...nodes].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true })) };
  }
  const byValue = new Map();
  for (const n of nodes) {
    const v = n.path[n.path.length - depth] || "(none)";
    if (!byValue.has(v)) byValue.set(v, []);
    byValue.get(v).push(n);
  }
  const order = (a, b) => (a === "(none)") - (b === "(none)") || a.localeCompare(b, undefined, { numeric: true });
  const labels = [...byValue.keys()].sort(order);
  return { children: labels.map(label => ({ label, ...groupTree(byValue.get(label), depth - 1) })) };
}

// Sizes a group to fit `width`; returns {w, h, place(x, y)} that records cells into dash.layout.
function measure(group, width, cell) {
  if (group.nodes) {
    const cols = Math.max(1, Math.min(group.nodes.length, Math.floor(width / cell)));
    const rows = Math.ceil(group.nodes.length / cols);
    return { w: cols * cell, h: rows * cell, place(x, y, boxes) {
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
      boxes.push({ label: c.label, x: ox + x, y: oy + y, w: bw, h: bh });
      m.place(ox + x + PAD, oy + y + PAD + LABEL, boxes);
    }
  } };
}

function layout(canvas) {
  const nodes = dash.doc.nodes, cell = cellSize(nodes.length);
  const width = canvas.clientWidth || canvas.width;
  const tree = groupTree(nodes, dash.doc.levels.length);
  const m = measure(tree, width - 2 * PAD, cell);
  dash.layout = []; dash.boxes = [];
  m.place(PAD, PAD, dash.boxes);
  canvas.width = width;
  canvas.height = Math.max(120, m.h + 2 * PAD);
}

// -- drawing ----------------------------------------------------------------------------------------
function cpuColour(f) { return `hsl(${Math.round(140 - 140 * Math.min(1, f))}, 55%, ${38 + 10 * Math.min(1, f)}%)`; }

function drawDevices(ctx, c, selectedClaim) {
  const devs = c.node.devices;
  if (!devs.length) return;
  const per = Math.ceil(Math.sqrt(devs.length)), d = Math.max(2, Math.floor((c.s * 0.6) / per));
  const x0 = c.x + c.s - per * d - 1, y0 = c.y + c.s - Math.ceil(devs.length / per) * d - 1;
  devs.forEach((dev, i) => {
    ctx.fillStyle = dev.claim && dev.claim === selectedClaim ? "#4fc3f7" : dev.claim ? "#e8a33d" : "#3a4350";
    ctx.fillRect(x0 + (i % per) * d, y0 + Math.floor(i / per) * d, d - 1, d - 1);
  });
}

function draw() {
  const canvas = document.getElementById("map"), ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = "11px system-ui"; ctx.textBaseline = "top";
  for (const b of dash.boxes) {
    ctx.strokeStyle = "#2f3945"; ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w, b.h);
    ctx.fillStyle = "#8b96a3"; ctx.fillText(b.label, b.x + 4, b.y + 3);
  }
  const hl = new Set(dash.highlightedNodes), any = hl.size > 0;
  const claim = dash.selected && dash.selected.kind === "claim" ? dash.selected.key : null;
  for (const c of dash.layout) {
    const n = c.node;
    ctx.globalAlpha = any && !hl.has(n.name) ? 0.3 : 1;
    ctx.fillStyle = n.ready ? cpuColour(n.cpuFraction) : "#555";
    ctx.fillRect(c.x, c.y, c.s, c.s);
    if (n.unschedulable || n.taints.length) { ctx.strokeStyle = "#ff7b72"; ctx.strokeRect(c.x + 1.5, c.y + 1.5, c.s - 3, c.s - 3); }
    drawDevices(ctx, c, claim);
    if (c.s >= 60) { ctx.fillStyle = "#e6edf3"; ctx.fillText(n.name.length > 11 ? "…" + n.name.slice(-10) : n.name, c.x + 3, c.y + 3); }
    if (hl.has(n.name)) { ctx.lineWidth = 2; ctx.strokeStyle = "#4fc3f7"; ctx.strokeRect(c.x - 1, c.y - 1, c.s + 2, c.s + 2); ctx.lineWidth = 1; }
  }
  ctx.globalAlpha = 1;
  canvas.dataset.highlighted = dash.highlightedNodes.join(",");
  dash.renders++;
}

// -- selection --------------------------------------------------------------------------------------
function highlightFor(sel) {
  if (!sel || !dash.doc) return [];
  if (sel.kind === "podgroup") {
    const g = dash.doc.podGroups.find(g => `${g.namespace}/${g.name}` === sel.key);
    return g ? g.nodes : [];
  }
  const c = dash.doc.claims.find(c => `${c.namespace}/${c.name}` === sel.key);
  return c ? c.nodes : [];
}

function select(kind, key) {
  const same = dash.selected && dash.selected.kind === kind && dash.selected.key === key;
  dash.selected = same ? null : { kind, key };
  refreshSelection();
}
dash.select = select;

function refreshSelection() {
  dash.highlightedNodes = highlightFor(dash.selected);
  const sel = dash.selected;
  document.getElementById("selection").textContent = sel ? `${sel.kind} ${sel.key}: ${dash.highlightedNodes.length} node(s)` : "";
  document.body.dataset.selected = sel ? `${sel.kind}:${sel.key}` : "";
  for (const tr of document.querySelectorAll("tr[data-key]")) {
    tr.classList.toggle("selected", !!sel && tr.dataset.kind === sel.kind && tr.dataset.key === sel.key);
  }
  draw();
}

// -- panels -----------------------------------------------------------------------------------------
function row(kind, key, cells) {
  const tr = el("tr", undefined, { "data-kind": kind, "data-key": key });
  for (const c of cells) tr.appendChild(el("td", String(c)));
  tr.addEventListener("click", () => select(kind, key));
  return tr;
}

let tablesShown = "";

// Rebuilds the tables only when what they show changed, so a row is not replaced under the pointer.
function renderTables() {
  const shown = JSON.stringify([dash.doc.podGroups, dash.doc.claims, dash.doc.pendingPods]);
  if (shown === tablesShown) return;
  tablesShown = shown;
  const pgBody = document.querySelector("#podgroups tbody"), clBody = document.querySelector("#claims tbody");
  pgBody.replaceChildren(...dash.doc.podGroups.map(g => {
    const cond = g.condition ? `${g.condition.type}=${g.condition.status}${g.condition.reason ? " (" + g.condition.reason + ")" : ""}` : "";
    const tr = row("podgroup", `${g.namespace}/${g.name}`, [`${g.namespace}/${g.name}`, g.policy, g.minCount ?? "", g.scheduled, g.pending, cond]);
    tr.dataset.scheduled = g.scheduled; tr.dataset.pending = g.pending;
    tr.dataset.condition = g.condition ? g.condition.status : "";
    return tr;
  }));
  clBody.replaceChildren(...dash.doc.claims.map(c => {
    const reserved = c.reservedFor.map(r => `${r.resource}/${r.name}`).join(", ");
    const tr = row("claim", `${c.namespace}/${c.name}`, [`${c.namespace}/${c.name}`, c.state, c.devices.join(", "), reserved]);
    tr.dataset.state = c.state; tr.dataset.reservedFor = reserved;
    return tr;
  }));
  const pending = document.getElementById("pending");
  pending.replaceChildren(...dash.doc.pendingPods.map(p => {
    const li = el("li", `${p.namespace}/${p.name}${p.podGroup ? " (group " + p.podGroup + ")" : ""}`, { "data-pod": `${p.namespace}/${p.name}` });
    li.addEventListener("click", () => explain("pod", p.namespace, p.name));
    return li;
  }));
  if (!dash.doc.pendingPods.length) pending.appendChild(el("li", "no pod is waiting"));
}

async function explain(kind, namespace, name) {
  const why = document.getElementById("why");
  const q = new URLSearchParams({ kind, namespace, name });
  const r = await fetch(`/api/explain?${q}`, { credentials: "same-origin" });
  const body = await r.json();
  why.textContent = body.text || body.error;
  why.dataset.pod = `${namespace}/${name}`;
}
dash.explain = explain;

function showNode(ev) {
  const canvas = ev.target, r = canvas.getBoundingClientRect();
  const x = (ev.clientX - r.left) * canvas.width / r.width, y = (ev.clientY - r.top) * canvas.height / r.height;
  const hit = dash.layout.find(c => x >= c.x && x <= c.x + c.s && y >= c.y && y <= c.y + c.s);
  const info = document.getElementById("node-info");
  if (!hit) { info.textContent = ""; return; }
  const n = hit.node;
  const devs = n.devices.map(d => `  ${d.driver} ${d.pool}/${d.name}: ${d.claim || "free"}`).join("\n");
  info.textContent = `${n.name}  ${n.path.join(" / ")}\n  cpu ${n.cpuRequestedMilli}m of ${n.cpuAllocatableMilli}m` +
    `${n.ready ? "" : "  NotReady"}${n.unschedulable ? "  cordoned" : ""}${n.taints.length ? "  taints: " + n.taints.join(", ") : ""}` +
    (devs ? "\n" + devs : "");
}

// -- the stream -------------------------------------------------------------------------------------
function onDocument(doc) {
  dash.doc = doc;
  document.getElementById("levels").textContent = doc.levels.length ? doc.levels.join(" → ") + " → node" : "(no topology labels: nodes)";
  layout(document.getElementById("map"));
  renderTables();
  refreshSelection();
  document.body.dataset.generation = doc.generation;
}

function connect() {
  const status = document.getElementById("status");
  const source = new EventSource("/api/stream");
  source.addEventListener("snapshot", e => {
    onDocument(JSON.parse(e.data));
    status.textContent = `live · ${dash.doc.nodes.length} nodes`; status.dataset.state = "live";
  });
  source.onerror = () => { status.textContent = "connection lost, retrying…"; status.dataset.state = "lost"; };
}

document.getElementById("map").addEventListener("click", showNode);
window.addEventListener("resize", () => { if (dash.doc) { layout(document.getElementById("map")); draw(); } });
connect();
