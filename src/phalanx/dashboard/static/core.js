// phalanx dashboard, core: the cluster document as Maps of rows per collection, the snapshot and
// patch messages that keep it current, and the selection (what is highlighted on the map).
// `window.__dashboard` (here `dash`) exposes all of it for the tests, the benchmark and a curious
// user's console. Loaded first; map.js, panels.js, workloads.js, timeline.js, metrics.js and
// app.js add to `dash`.
"use strict";

const COLLECTIONS = ["nodes", "podGroups", "claims", "pendingPods", "jobSets", "jobs", "compositePodGroups",
  "workloads", "deviceClasses", "drivers", "timeline"];

const dash = window.__dashboard = {
  doc: null, rows: {}, selected: null,
  highlightedNodes: [], highlightedClaims: [], highlightedDomains: [], namedNodes: [],
  layout: [], boxes: [], renders: 0, listeners: [],
  stats: { snapshots: 0, patches: 0, messages: [] },
};
for (const c of COLLECTIONS) dash.rows[c] = new Map();

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

const naturalCollator = new Intl.Collator(undefined, { numeric: true });
const natural = (a, b) => naturalCollator.compare(a, b);

function keyOf(collection, row) {
  if (collection === "nodes" || collection === "deviceClasses" || collection === "drivers") return row.name;
  if (collection === "timeline") return row.uid;
  return `${row.namespace}/${row.name}`;
}

dash.get = (collection, key) => dash.rows[collection].get(key);
dash.list = collection => [...dash.rows[collection].values()];
// Rows in natural key order; the order is kept until a key comes or goes (a patch mostly changes rows).
const orders = {};
dash.sorted = function (collection) {
  const rows = dash.rows[collection];
  if (!orders[collection]) orders[collection] = [...rows.keys()].sort(natural);
  return orders[collection].map(k => rows.get(k));
};
dash.onChange = fn => dash.listeners.push(fn);

// Each view's share of applying messages, in ms (for the benchmark: where an update's time goes).
dash.stats.viewMs = {};
function notify(change) {
  for (const fn of dash.listeners) {
    const t0 = performance.now();
    fn(change);
    dash.stats.viewMs[fn.name] = (dash.stats.viewMs[fn.name] || 0) + performance.now() - t0;
  }
}

// -- messages ----------------------------------------------------------------------------------------
function applySnapshot(doc) {
  dash.doc = { levels: doc.levels, generation: doc.generation, podGroupAPI: doc.podGroupAPI };
  for (const c of COLLECTIONS) dash.rows[c] = new Map((doc[c] || []).map(r => [keyOf(c, r), r]));
  for (const c of COLLECTIONS) delete orders[c];
  dash.stats.snapshots++;
  notify({ snapshot: true, levels: true, collections: new Set(COLLECTIONS), nodes: [], deletedNodes: [] });
}

function applyPatch(patch) {
  const collections = new Set();
  for (const [c, rows] of Object.entries(patch.set || {})) {
    const m = dash.rows[c];
    for (const r of rows) {
      const k = keyOf(c, r);
      if (!m.has(k)) delete orders[c];
      m.set(k, r);
    }
    collections.add(c);
  }
  for (const [c, keys] of Object.entries(patch.delete || {})) {
    const m = dash.rows[c];
    for (const k of keys) m.delete(k);
    delete orders[c];
    collections.add(c);
  }
  dash.doc.generation = patch.generation;
  if (patch.levels) dash.doc.levels = patch.levels;
  dash.stats.patches++;
  notify({ snapshot: false, levels: !!patch.levels, collections,
    nodes: (patch.set || {}).nodes || [], deletedNodes: (patch.delete || {}).nodes || [] });
}

// A message from the stream: applied, timed, and its size kept (the last 500) for the benchmark.
dash.receive = function (kind, data) {
  const t0 = performance.now();
  const msg = JSON.parse(data);
  if (kind === "snapshot") applySnapshot(msg); else applyPatch(msg);
  const ms = performance.now() - t0;
  dash.stats.messages.push({ kind, bytes: data.length, applyMs: ms, generation: msg.generation, at: t0 });
  if (dash.stats.messages.length > 500) dash.stats.messages.shift();
  document.body.dataset.generation = dash.doc.generation;
};

// -- selection ---------------------------------------------------------------------------------------
function union(lists) {
  return [...new Set(lists.flat())].sort();
}

// The PodGroups below a CompositePodGroup, at any depth.
function treeGroups(key, depth) {
  const cpg = dash.get("compositePodGroups", key);
  if (!cpg || depth > 5) return [];
  return cpg.children.flatMap(c => c.kind === "PodGroup" ? [c.key] : treeGroups(c.key, depth + 1));
}

function groupsHighlight(keys) {
  const groups = keys.map(k => dash.get("podGroups", k)).filter(Boolean);
  return { nodes: union(groups.map(g => g.nodes)), claims: union(groups.map(g => g.claims)) };
}

function domainsOf(row) {
  return (row && row.domains || []).filter(d => d.values.length === 1).map(d => ({ key: d.key, value: d.values[0] }));
}

const HIGHLIGHTS = {
  podgroup: key => { const g = dash.get("podGroups", key); return g ? { nodes: g.nodes, claims: g.claims, domains: domainsOf(g) } : null; },
  claim: key => { const c = dash.get("claims", key); return c ? { nodes: c.nodes, claims: [key] } : null; },
  job: key => { const j = dash.get("jobs", key); return j ? { nodes: j.nodes, claims: j.claims } : null; },
  jobset: key => {
    const s = dash.get("jobSets", key);
    if (!s) return null;
    const jobs = s.jobs.map(k => dash.get("jobs", k)).filter(Boolean);
    return { nodes: union(jobs.map(j => j.nodes)), claims: union(jobs.map(j => j.claims)) };
  },
  cpg: key => {
    const c = dash.get("compositePodGroups", key);
    return c ? { ...groupsHighlight(treeGroups(key, 0)), nodes: c.nodes, domains: domainsOf(c) } : null;
  },
  workload: key => { const w = dash.get("workloads", key); return w ? groupsHighlight(w.podGroups) : null; },
  node: key => dash.get("nodes", key) ? { nodes: [key], claims: [] } : null,
  pod: (key, sel) => sel.found || { nodes: sel.fallbackNodes || [], claims: [] },
};

function highlightFor(sel) {
  const empty = { nodes: [], claims: [], domains: [] };
  if (!sel || !dash.doc) return empty;
  const h = HIGHLIGHTS[sel.kind] ? HIGHLIGHTS[sel.kind](sel.key, sel) : null;
  return { ...empty, ...(h || {}) };
}

async function lookUpPod(sel) {
  const [namespace, name] = sel.key.split("/");
  const r = await fetch(`/api/pod?${new URLSearchParams({ namespace, name })}`, { credentials: "same-origin" });
  if (r.ok && dash.selected === sel) {
    sel.found = await r.json();
    refreshSelection();
  }
}

// Select (or, selecting it again, unselect) a thing; `extra` may carry fallbackNodes for a pod.
dash.select = function (kind, key, extra) {
  const same = dash.selected && dash.selected.kind === kind && dash.selected.key === key;
  dash.selected = same ? null : { kind, key, ...(extra || {}) };
  dash.namedNodes = [];
  refreshSelection();
  if (dash.selected && kind === "pod") lookUpPod(dash.selected);
  if (dash.selected && kind === "podgroup") {
    const g = dash.get("podGroups", key);
    if (g && (g.pending > 0 || (g.condition && g.condition.status === "False"))) dash.explain("podgroup", g.namespace, g.name);
  }
};

function refreshSelection(now = true) {
  const h = highlightFor(dash.selected);
  dash.highlightedNodes = h.nodes;
  dash.highlightedClaims = h.claims;
  dash.highlightedDomains = h.domains;
  const sel = dash.selected;
  document.getElementById("selection").textContent = sel
    ? `${sel.kind} ${sel.key}: ${h.nodes.length} node(s)` + (h.domains.length ? ` in ${h.domains.map(d => d.value).join(" / ")}` : "")
    : "";
  document.body.dataset.selected = sel ? `${sel.kind}:${sel.key}` : "";
  // Only the elements whose state changes are touched: a style recalculation of every row costs frames.
  const wanted = sel ? document.querySelectorAll(`[data-kind="${CSS.escape(sel.kind)}"][data-key="${CSS.escape(sel.key)}"]`) : [];
  const keep = new Set(wanted);
  for (const e of document.querySelectorAll(".selected")) if (!keep.has(e)) e.classList.remove("selected");
  for (const e of wanted) if (!e.classList.contains("selected")) e.classList.add("selected");
  if (dash.requestDraw) dash.requestDraw(now);
}
dash.refreshSelection = refreshSelection;

// `phalanx explain` for a pod or PodGroup, shown under "Why it waits"; the nodes it names are
// outlined on the map.
dash.explain = async function (kind, namespace, name) {
  const why = document.getElementById("why");
  const q = new URLSearchParams({ kind, namespace, name });
  const r = await fetch(`/api/explain?${q}`, { credentials: "same-origin" });
  const body = await r.json();
  why.textContent = body.text || body.error;
  why.dataset.pod = kind === "pod" ? `${namespace}/${name}` : "";
  why.dataset.podgroup = kind === "podgroup" ? `${namespace}/${name}` : "";
  dash.namedNodes = body.nodes || [];
  if (dash.requestDraw) dash.requestDraw(true);
};

// Keeps a <tbody> in step with `rows` (sorted): one <tr> per key, updated in place, so a row is not
// replaced under the pointer; `cells(row)` gives the texts, `data(row)` the data-* attributes.
function syncRows(tbody, kind, rows, key, cells, data) {
  for (const extra of [...tbody.children].filter(tr => tr.dataset.key === undefined)) extra.remove();
  const keep = new Map([...tbody.children].filter(tr => tr.dataset.key !== undefined).map(tr => [tr.dataset.key, tr]));
  const wanted = new Set();
  rows.forEach((row, i) => {
    const k = key(row);
    wanted.add(k);
    let tr = keep.get(k);
    if (!tr) {
      tr = el("tr", undefined, { "data-kind": kind, "data-key": k });
      tr.addEventListener("click", () => dash.select(kind, k));
    }
    const texts = cells(row).map(String);
    while (tr.children.length < texts.length) tr.appendChild(el("td"));
    texts.forEach((t, j) => { if (tr.children[j].textContent !== t) tr.children[j].textContent = t; });
    for (const [dk, dv] of Object.entries(data ? data(row) : {})) if (tr.dataset[dk] !== String(dv)) tr.dataset[dk] = String(dv);
    const selected = !!dash.selected && dash.selected.kind === kind && dash.selected.key === k;
    if (tr.classList.contains("selected") !== selected) tr.classList.toggle("selected", selected);
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
  });
  for (const [k, tr] of keep) if (!wanted.has(k)) tr.remove();
}
