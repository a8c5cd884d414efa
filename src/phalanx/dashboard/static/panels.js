// phalanx dashboard, the "Gangs & DRA" view: PodGroups (policy, minCount, counts, condition,
// topology and the domain chosen), ResourceClaims (state, devices, reservedFor), the pods waiting
// for a node with `phalanx explain`'s diagnosis ("Why it waits"), DeviceClasses and the drivers'
// pools. Tables are updated row by row, and only for the collections a patch touched.
"use strict";

const PENDING_SHOWN = 200;

function conditionText(c) {
  return c ? `${c.type}=${c.status}${c.reason ? " (" + c.reason + ")" : ""}` : "";
}

// The domain a group landed in, per topology key ("—" before any pod is placed).
function domainText(row) {
  if (!row.topology || !row.topology.length) return "";
  return row.domains.map(d => d.values.length ? d.values.join("|") : "—").join(" / ");
}

function renderPodGroups() {
  syncRows(document.querySelector("#podgroups tbody"), "podgroup", dash.sorted("podGroups"),
    g => `${g.namespace}/${g.name}`,
    g => [`${g.namespace}/${g.name}`, g.policy, g.minCount ?? "", g.scheduled, g.pending, conditionText(g.condition), domainText(g)],
    g => ({ scheduled: g.scheduled, pending: g.pending, condition: g.condition ? g.condition.status : "",
      domain: g.domains.map(d => d.values.join("|")).join(",") }));
}

function renderClaims() {
  syncRows(document.querySelector("#claims tbody"), "claim", dash.sorted("claims"),
    c => `${c.namespace}/${c.name}`,
    c => [`${c.namespace}/${c.name}`, c.state, c.devices.join(", "), c.reservedFor.map(r => `${r.resource}/${r.name}`).join(", ")],
    c => ({ state: c.state, reservedFor: c.reservedFor.map(r => `${r.resource}/${r.name}`).join(", ") }));
}

function renderPending() {
  const pending = document.getElementById("pending");
  const all = dash.sorted("pendingPods");
  pending.replaceChildren(...all.slice(0, PENDING_SHOWN).map(p => {
    const li = el("li", `${p.namespace}/${p.name}${p.podGroup ? " (group " + p.podGroup + ")" : ""}`, { "data-pod": `${p.namespace}/${p.name}` });
    li.addEventListener("click", () => dash.explain("pod", p.namespace, p.name));
    return li;
  }));
  if (all.length > PENDING_SHOWN) pending.appendChild(el("li", `… and ${all.length - PENDING_SHOWN} more`, { class: "more" }));
  if (!all.length) pending.appendChild(el("li", "no pod is waiting", { class: "none" }));
}

function renderDRA() {
  syncRows(document.querySelector("#device-classes tbody"), "deviceclass", dash.sorted("deviceClasses"),
    d => d.name, d => [d.name, d.selectors.join(" && ")]);
  syncRows(document.querySelector("#drivers tbody"), "driver", dash.sorted("drivers"),
    d => d.name, d => [d.name, d.pools, d.devices, d.allocated],
    d => ({ devices: d.devices, allocated: d.allocated }));
}

dash.onChange(function gangsView(change) {
  const c = change.collections;
  if (c.has("podGroups")) renderPodGroups();
  if (c.has("claims")) renderClaims();
  if (c.has("pendingPods")) renderPending();
  if (c.has("deviceClasses") || c.has("drivers")) renderDRA();
});
