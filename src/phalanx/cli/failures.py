"""`phalanx fail` and `phalanx recover`: fail simulated nodes and DRA devices of a running cluster,
and bring them back, to rehearse what a workload does when hardware goes away.

    phalanx fail node NAME... [--name CLUSTER]          the nodes' kubelets stop (no heartbeats, no pod work)
    phalanx fail nodes -l rack=r1 [--name CLUSTER]      every node the label selector matches (a rack, a zone)
    phalanx fail device --node N DEVICE... [--name CLUSTER]   the devices get a NoExecute taint (`*`: all)
    phalanx recover node|nodes|device ...               the same shapes, undone

A failure is an annotation on the Node (`fault.phalanx.dev/node: down`,
`fault.phalanx.dev/devices: gpu-0,gpu-3`; `phalanx.api.faults`), written through the API with the
cluster's own credentials, so it survives a control-plane restart and `kubectl get node -o yaml`
shows it. What follows is upstream's: the node lifecycle controller marks a failed node Unknown and
taints it, the taint eviction controller evicts its pods after their tolerations, the device taint
eviction controller evicts the pods whose claims use a failed device. See docs/failures.md.

Errors name what is wrong and change nothing: an unknown cluster or node, a cluster that is not
running, a bad selector or one that matches no node, a device the node does not publish.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Awaitable, Callable

import click
import yaml

from phalanx.api.faults import ALL_DEVICES, annotations_with_device_faults, annotations_with_node_fault, device_matches
from phalanx.client import HTTPClient
from phalanx.client.kubeconfig import KubeconfigError, parse_kubeconfig
from phalanx.cluster import lifecycle
from phalanx.machinery.errors import StatusError
from phalanx.machinery.selectors import parse_label_selector

Obj = dict[str, Any]
FIELD_MANAGER = "phalanx-failures"
PROVIDER_PREFIX = "phalanx://"
RESOURCE_API = "resource.k8s.io/v1"


class FailureError(Exception):
    """What the user reads after `ERROR: `."""


def _client(cluster: str) -> HTTPClient:
    """An HTTP client with the cluster's own kubeconfig (the one `phalanx get kubeconfig` prints)."""
    if lifecycle.cluster_status(cluster) != "Running":
        raise FailureError(f'cluster "{cluster}" is not running; start it with `phalanx start cluster --name {cluster}`')
    cfg = parse_kubeconfig(yaml.safe_load(lifecycle.kubeconfig_text(cluster)))
    return HTTPClient(cfg.server, token=cfg.token, ssl_context=cfg.ssl_context(), tls_server_name=cfg.tls_server_name,
                      field_manager=FIELD_MANAGER)


def _run(action: str, cluster: str | None, work: Callable[[HTTPClient], Awaitable[list[str]]]) -> None:
    """Run `work` against the cluster and print its lines; errors end in `ERROR: failed to ...`."""
    name = cluster or lifecycle.default_cluster_name()

    async def go() -> list[str]:
        client = _client(name)
        try:
            return await work(client)
        finally:
            await client.close()
    try:
        lines = asyncio.run(go())
    except (FailureError, lifecycle.ClusterError, KubeconfigError, OSError) as e:
        click.echo(f"ERROR: failed to {action}: {e}", err=True)
        sys.exit(1)
    except StatusError as e:
        click.echo(f"ERROR: failed to {action}: Error from server ({e.reason}): {e.message}", err=True)
        sys.exit(1)
    for line in lines:
        click.echo(line)


async def _nodes_named(client: HTTPClient, names: tuple[str, ...]) -> list[Obj]:
    nodes, missing = [], []
    for n in dict.fromkeys(names):
        try:
            nodes.append(await client.get("v1", "Node", None, n))
        except StatusError as e:
            if e.code != 404:
                raise
            missing.append(n)
    if missing:
        raise FailureError("; ".join(f'nodes "{n}" not found' for n in missing) + " (nothing was changed)")
    return _simulated(nodes)


async def _nodes_selected(client: HTTPClient, selector: str) -> list[Obj]:
    try:
        parse_label_selector(selector)
    except ValueError as e:
        raise FailureError(f"invalid label selector {selector!r}: {e}") from None
    nodes, _ = await client.list("v1", "Node", label_selector=selector)
    if not nodes:
        raise FailureError(f"no nodes match the label selector {selector!r}")
    return _simulated(sorted(nodes, key=lambda n: n["metadata"]["name"]))


def _simulated(nodes: list[Obj]) -> list[Obj]:
    real = [n["metadata"]["name"] for n in nodes
            if not str((n.get("spec") or {}).get("providerID", "")).startswith(PROVIDER_PREFIX)]
    if real:
        raise FailureError(f"node {', '.join(real)} is not simulated by phalanx (spec.providerID is not "
                           f"{PROVIDER_PREFIX}...); only simulated nodes can be failed")
    return nodes


async def _write_annotations(client: HTTPClient, node: Obj, change: Callable[[Obj], dict | None]) -> bool:
    """Apply `change` (new annotations, or None for no change) with a conflict retry; True when written."""
    for attempt in range(5):
        annotations = change(node)
        if annotations is None:
            return False
        new = dict(node, metadata=dict(node["metadata"], annotations=annotations))
        try:
            await client.update(new)
            return True
        except StatusError as e:
            if e.code != 409 or attempt == 4:
                raise
            node = await client.get("v1", "Node", None, node["metadata"]["name"])
    return False


async def _set_nodes(client: HTTPClient, nodes: list[Obj], down: bool) -> list[str]:
    lines = []
    for node in nodes:
        name = node["metadata"]["name"]
        written = await _write_annotations(client, node, lambda n: annotations_with_node_fault(n, down))
        verb = "failed" if down else "recovered"
        lines.append(f"node/{name} {verb}" if written else f"node/{name} already {verb}")
    return lines


async def _published_devices(client: HTTPClient, node: str) -> list[str]:
    slices, _ = await client.list(RESOURCE_API, "ResourceSlice", field_selector=f"spec.nodeName={node}")
    return sorted({d.get("name", "") for s in slices for d in (s.get("spec") or {}).get("devices") or []})


async def _set_devices(client: HTTPClient, node_name: str, devices: tuple[str, ...], failed: bool) -> list[str]:
    [node] = await _nodes_named(client, (node_name,))
    published = await _published_devices(client, node_name)
    if not published:
        raise FailureError(f"node {node_name} publishes no DRA devices (no ResourceSlice names it)")
    unknown = [d for d in devices if d != ALL_DEVICES and not any(device_matches([d], p) for p in published)]
    if unknown:
        raise FailureError(f"node {node_name} publishes no device {', '.join(repr(d) for d in unknown)} "
                           f"(its devices: {', '.join(published)}) (nothing was changed)")
    written = await _write_annotations(
        client, node, lambda n: annotations_with_device_faults(n, devices, failed, published))
    listed = ",".join(dict.fromkeys(devices))
    verb = "failed" if failed else "recovered"
    if not written:
        return [f"node/{node_name} devices already {verb}: {listed}"]
    return [f"node/{node_name} devices {verb}: {listed}"]


# ---------------------------------------------------------------------------------------------
# the commands

def _name_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--name", "-n", "cluster", default=None,
                        help="the cluster name (default: $PHALANX_CLUSTER_NAME or phalanx)")(fn)


def _verbs(down: bool) -> click.Group:
    verb = "fail" if down else "recover"

    @click.group(verb, help=("Fail simulated nodes or DRA devices: they stay failed until `phalanx recover`."
                             if down else "Recover nodes or DRA devices failed with `phalanx fail`."))
    def group() -> None:
        pass

    @group.command("node", help=f"{verb.capitalize()} the named nodes.")
    @click.argument("names", nargs=-1, required=True)
    @_name_option
    def node(names: tuple[str, ...], cluster: str | None) -> None:
        async def work(client: HTTPClient) -> list[str]:
            return await _set_nodes(client, await _nodes_named(client, names), down)
        _run(f"{verb} node", cluster, work)

    @group.command("nodes", help=f"{verb.capitalize()} every node a label selector matches (a rack, a zone).")
    @click.option("-l", "--selector", required=True, metavar="SELECTOR", help="a label selector, e.g. rack=r1")
    @_name_option
    def nodes(selector: str, cluster: str | None) -> None:
        async def work(client: HTTPClient) -> list[str]:
            return await _set_nodes(client, await _nodes_selected(client, selector), down)
        _run(f"{verb} nodes", cluster, work)

    @group.command("device", help=f"{verb.capitalize()} DRA devices of a node (names as in its ResourceSlices; "
                                  f"* for all; a GPU's name covers its partitions).")
    @click.option("--node", "node_name", required=True, metavar="NODE", help="the node whose devices these are")
    @click.argument("devices", nargs=-1, required=True)
    @_name_option
    def device(node_name: str, devices: tuple[str, ...], cluster: str | None) -> None:
        async def work(client: HTTPClient) -> list[str]:
            return await _set_devices(client, node_name, devices, down)
        _run(f"{verb} device", cluster, work)

    return group


fail = _verbs(True)
recover = _verbs(False)
