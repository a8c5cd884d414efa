// phalanx dashboard, the "Workloads" view: JobSets → Jobs → PodGroups (→ pod counts), Jobs of
// no JobSet, CompositePodGroup trees (scheduling.k8s.io/v1alpha3, Kubernetes 1.37) down to their
// PodGroups, and Workloads. Every line is selectable: the map then highlights the nodes and
// devices of everything below it. Rebuilt only while the view is open and only when what it shows
// changed.
"use strict";

const WORKLOAD_COLLECTIONS = ["jobSets", "jobs", "podGroups", "compositePodGroups", "workloads"];
let workloadsShown = "";

const joined = (...parts) => parts.filter(Boolean).join(" · ");

function item(kind, key, label, details, children) {
  const node = el("div", undefined, { class: "tree-item", "data-kind": kind, "data-key": key });
  const line = el("div", undefined, { class: "tree-line" });
  line.appendChild(el("span", label, { class: "tree-label" }));
  if (details) line.appendChild(el("span", details, { class: "tree-details" }));
  line.addEventListener("click", ev => { ev.stopPropagation(); dash.select(kind, key); });
  node.appendChild(line);
  for (const child of children || []) node.appendChild(child);
  if (dash.selected && dash.selected.kind === kind && dash.selected.key === key) node.classList.add("selected");
  return node;
}

function groupItem(key) {
  const g = dash.get("podGroups", key);
  if (!g) return item("podgroup", key, `PodGroup ${key.split("/")[1]}`, "(not created yet)");
  const policy = g.policy === "Gang" ? `Gang minCount ${g.minCount}` : "Basic";
  const node = item("podgroup", key, `PodGroup ${g.name}`,
    joined(policy, `${g.scheduled}/${g.pods} pods scheduled, ${g.pending} pending`, conditionText(g.condition), domainText(g) && `in ${domainText(g)}`));
  Object.assign(node.dataset, { scheduled: g.scheduled, pending: g.pending, pods: g.pods });
  return node;
}

function jobItem(key) {
  const j = dash.get("jobs", key);
  if (!j) return item("job", key, `Job ${key.split("/")[1]}`, "(not created yet)");
  const conds = j.conditions.map(c => c.type).join(", ");
  const node = item("job", key, `Job ${j.name}`,
    joined(`${j.active} active, ${j.succeeded} succeeded, ${j.failed} failed`, `${j.scheduled}/${j.pods} pods on nodes`, conds),
    j.podGroups.map(groupItem));
  Object.assign(node.dataset, { active: j.active, pods: j.pods });
  return node;
}

function jobSetItem(s) {
  const key = `${s.namespace}/${s.name}`;
  const replicated = s.replicatedJobs.map(r => `${r.name} ×${r.replicas}`).join(", ");
  const conds = s.conditions.map(c => c.type).join(", ");
  const node = item("jobset", key, `JobSet ${key}`, joined(replicated, `${s.jobs.length} Job(s)`, conds), s.jobs.map(jobItem));
  node.dataset.jobs = s.jobs.length;
  return node;
}

function compositeItem(key, depth) {
  const c = dash.get("compositePodGroups", key);
  if (!c || depth > 5) return item("cpg", key, `CompositePodGroup ${key}`, "(not created yet)");
  const policy = c.policy === "Gang" ? `Gang minGroupCount ${c.minGroupCount}` : "Basic";
  const children = c.children.map(ch => ch.kind === "PodGroup" ? groupItem(ch.key) : compositeItem(ch.key, depth + 1));
  const node = item("cpg", key, `CompositePodGroup ${c.name}`, joined(policy, conditionText(c.condition), domainText(c) && `in ${domainText(c)}`), children);
  node.dataset.children = c.children.length;
  node.dataset.domain = c.domains.map(d => d.values.join("|")).join(",");
  return node;
}

function workloadItem(w) {
  const key = `${w.namespace}/${w.name}`;
  return item("workload", key, `Workload ${key}`,
    joined(w.controller && `controlled by ${w.controller}`, `templates: ${w.templates.join(", ")}`),
    w.podGroups.map(groupItem));
}

function section(title, items) {
  const s = el("div", undefined, { class: "tree-section" });
  s.appendChild(el("h3", `${title} (${items.length})`));
  for (const i of items) s.appendChild(i);
  return s;
}

function renderWorkloads(force) {
  const shown = JSON.stringify(WORKLOAD_COLLECTIONS.map(c => dash.sorted(c)));
  if (!force && shown === workloadsShown) return;
  workloadsShown = shown;
  const jobSets = dash.sorted("jobSets");
  const loneJobs = dash.sorted("jobs").filter(j => !j.jobSet);
  const roots = dash.sorted("compositePodGroups").filter(c => !c.parent || !dash.get("compositePodGroups", `${c.namespace}/${c.parent}`));
  const tree = document.getElementById("workload-tree");
  tree.replaceChildren(
    section("JobSets", jobSets.map(jobSetItem)),
    section("Jobs not in a JobSet", loneJobs.map(j => jobItem(`${j.namespace}/${j.name}`))),
    section("CompositePodGroups", roots.map(c => compositeItem(`${c.namespace}/${c.name}`, 0))),
    section("Workloads", dash.sorted("workloads").map(workloadItem)));
}
dash.renderWorkloads = renderWorkloads;

dash.onChange(function workloadsView(change) {
  if (dash.activeTab !== "workloads") { workloadsShown = ""; return; }
  if (WORKLOAD_COLLECTIONS.some(c => change.collections.has(c))) renderWorkloads(false);
});
