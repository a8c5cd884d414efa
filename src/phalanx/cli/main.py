"""The `phalanx` command: kind's cluster verbs for a Python control plane.

    phalanx create cluster [--name NAME] [--config FILE] [--wait 60s] [--kubeconfig PATH]
    phalanx create kubeconfig --user USER [--group GROUP...] [--namespace NS]   (RBAC users)
    phalanx delete cluster [--name NAME]        phalanx delete clusters [NAME...] [--all]
    phalanx stop cluster [--name NAME]          phalanx start cluster [--name NAME] [--wait 60s]
    phalanx get clusters [-o json|name]         phalanx get kubeconfig [--name NAME]
    phalanx get featuregates [--name NAME | --config FILE]
    phalanx dashboard [--name NAME] [--kubeconfig PATH] [--port N]   (web UI on 127.0.0.1)
    phalanx fail|recover node NAME... | nodes -l SELECTOR | device --node N DEVICE...  [--name NAME]
    phalanx export kubeconfig [--name NAME] [--kubeconfig PATH]
    phalanx export logs [--name NAME] [DIR]     (control-plane log, config, version, a cluster dump)
    phalanx serve --state-dir DIR               (the control plane itself, in the foreground)
    phalanx simulate SCENARIO.yaml [-o DIR]     (what-if in virtual time: phalanx.cli.simulate)
    phalanx version

Like kind, status lines and errors go to stderr (`ERROR: failed to create cluster: ...`, exit 1)
and data (cluster names, kubeconfigs, tables) to stdout. `--name` defaults to
$PHALANX_CLUSTER_NAME, else the config's `name`, else `phalanx`. Lifecycle work lives in
`phalanx.cluster.lifecycle`; this module only parses flags and prints.
"""

from __future__ import annotations

import os
import platform
import sys

import click

import phalanx
from phalanx.cluster import lifecycle
from phalanx.cluster.config import load_cluster_config
from phalanx.machinery.featuregates import FeatureGates
from phalanx.machinery.releases import PATCH_VERSIONS, RELEASES
from phalanx.cluster.kubeconfig import KubeconfigError, context_name
from phalanx.client.kubeconfig import KubeconfigError as ClientKubeconfigError
from phalanx.machinery.strictyaml import ConfigFileError

MAX_IGNORED_SHOWN = 12
DEBUG_ENV = "PHALANX_DEBUG"


# ---------------------------------------------------------------------------------------------
# output helpers


def _emit(text: str, err: bool = True) -> None:
    """Print, degrading symbols to ASCII when the stream cannot encode them."""
    stream = sys.stderr if err else sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        for fancy, plain in (("✓", "+"), ("✗", "x"), ("•", "*"), ("≤", "<="), ("…", "...")):
            text = text.replace(fancy, plain)
        text = text.encode(encoding, errors="ignore").decode(encoding, errors="ignore")
    click.echo(text, err=err)


def _fail(what: str, error: Exception | str) -> None:
    _emit(f"ERROR: {what}: {error}")
    sys.exit(1)


def _name_option(help_text: str = "the cluster name (default: $PHALANX_CLUSTER_NAME or phalanx)"):
    return click.option("--name", "-n", default=None, help=help_text)


def _resolve_name(name: str | None) -> str:
    return name or lifecycle.default_cluster_name()


def _parse_wait(value: str) -> float:
    try:
        return lifecycle.parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--wait'") from None


# ---------------------------------------------------------------------------------------------
# the command tree


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """phalanx creates and manages local Kubernetes-compatible clusters with workload-aware
    scheduling and Dynamic Resource Allocation. Drive them with kubectl, as kind clusters."""


@cli.group()
def create() -> None:
    """Create a cluster, or a kubeconfig for another user of one."""


@cli.group()
def delete() -> None:
    """Delete clusters."""


@cli.group()
def get() -> None:
    """Get clusters, kubeconfigs and feature gates."""


@cli.group()
def export() -> None:
    """Export a kubeconfig, or a cluster's logs."""


@cli.group()
def stop() -> None:
    """Stop a cluster, keeping its state."""


@cli.group()
def start() -> None:
    """Start a stopped cluster."""


@create.command("cluster")
@_name_option("cluster name, overrides $PHALANX_CLUSTER_NAME and the config (default: phalanx)")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="a kind (kind.x-k8s.io/v1alpha4) or phalanx (phalanx.dev/v1alpha1) cluster config; - for stdin")
@click.option("--wait", "wait", default="60s", show_default=True, metavar="DURATION",
              help="how long to wait for the control plane to be ready (0 to not wait)")
@click.option("--kubeconfig", default=None, metavar="PATH",
              help="kubeconfig to write (default: first entry of $KUBECONFIG, else ~/.kube/config)")
@click.option("--image", default=None, metavar="IMAGE",
              help="node image whose tag is the cluster's Kubernetes version (kindest/node:v1.37.1 or v1.36.4); "
                   "phalanx runs no node containers")
@click.option("--retain", is_flag=True, help="keep the cluster's state dir if creation fails (for debugging)")
@click.option("--quiet", "-q", is_flag=True, help="print only errors")
def create_cluster(name, config_path, wait, kubeconfig, image, retain, quiet) -> None:
    """Create a local cluster (like `kind create cluster`)."""
    wait_seconds = _parse_wait(wait)
    say = (lambda _: None) if quiet else _emit
    cluster_name = name or os.environ.get(lifecycle.CLUSTER_NAME_ENV) or None
    try:
        spec = load_cluster_config(config_path, cluster_name, image)
    except ConfigFileError as e:
        _fail("failed to create cluster", f"invalid cluster config\n{e}")
        return
    say(f'Creating cluster "{spec.name}" ...')
    say(_version_line(spec))
    _report_ignored(spec.ignored_fields, say)
    try:
        result = lifecycle.create_cluster(spec, wait_seconds=wait_seconds, kubeconfig=kubeconfig,
                                          retain=retain, progress=say)
    except (lifecycle.ClusterError, KubeconfigError, OSError) as e:
        _fail("failed to create cluster", e)
        return
    context = context_name(spec.name)
    say(f'Set kubectl context to "{context}"')
    say(f"You can now use your cluster with:\n\nkubectl cluster-info --context {context}\n")
    if result.ready_after is None:
        say("(not waited for readiness; the API server may need a few more seconds)")
    say("Have a nice day! 👋")


def _version_line(spec) -> str:
    """Which Kubernetes the cluster is, and why when the user did not say."""
    if not spec.version_reason:
        return f" • Kubernetes {spec.kubernetes_version}"
    other = " or ".join(f"kindest/node:{PATCH_VERSIONS[r]}" for r in RELEASES if r != spec.release)
    return (f" • Kubernetes {spec.kubernetes_version} ({spec.version_reason}; choose another with "
            f"--image {other})")


def _report_ignored(ignored: list[str], say) -> None:
    items = list(ignored)
    if not items:
        return
    say("Note: phalanx runs no node containers, images or kubeadm; these settings are accepted and ignored:")
    for item in items[:MAX_IGNORED_SHOWN]:
        say(f"  {item}")
    if len(items) > MAX_IGNORED_SHOWN:
        say(f"  ... and {len(items) - MAX_IGNORED_SHOWN} more")
    if any("kubeadmConfigPatches" in item for item in items):
        say("  (from kubeadm patches phalanx does apply the API server's runtime-config, components' "
            "feature-gates, KubeletConfiguration featureGates and node-labels)")


@delete.command("cluster")
@_name_option()
@click.option("--kubeconfig", default=None, metavar="PATH", help="kubeconfig to remove the cluster's entries from")
def delete_cluster(name, kubeconfig) -> None:
    """Delete a cluster (like `kind delete cluster`); deleting a missing cluster is not an error."""
    _delete([_resolve_name(name)], kubeconfig)


@delete.command("clusters")
@click.argument("names", nargs=-1)
@click.option("--all", "all_clusters", is_flag=True, help="delete every phalanx cluster")
@click.option("--kubeconfig", default=None, metavar="PATH", help="kubeconfig to remove the clusters' entries from")
def delete_clusters(names, all_clusters, kubeconfig) -> None:
    """Delete the named clusters, or all of them with --all."""
    targets = lifecycle.list_clusters() if all_clusters else list(names)
    if not targets and not all_clusters:
        raise click.UsageError("name at least one cluster, or use --all")
    _delete(targets, kubeconfig)
    if all_clusters:
        _emit("Deleted clusters: [" + " ".join(f'"{t}"' for t in targets) + "]")


def _delete(names: list[str], kubeconfig: str | None) -> None:
    for name in names:
        _emit(f'Deleting cluster "{name}" ...')
        try:
            lifecycle.delete_cluster(name, kubeconfig=kubeconfig)
        except (lifecycle.ClusterError, OSError) as e:
            _fail("failed to delete cluster", e)


@stop.command("cluster")
@_name_option()
def stop_cluster(name) -> None:
    """Stop a cluster's control plane; `phalanx start cluster` brings it back with its state."""
    name = _resolve_name(name)
    try:
        stopped = lifecycle.stop_cluster(name)
    except lifecycle.ClusterError as e:
        _fail("failed to stop cluster", e)
        return
    _emit(f'Stopped cluster "{name}"' if stopped else f'Cluster "{name}" is not running')


@start.command("cluster")
@_name_option()
@click.option("--wait", "wait", default="60s", show_default=True, metavar="DURATION",
              help="how long to wait for the control plane to be ready (0 to not wait)")
def start_cluster(name, wait) -> None:
    """Start a stopped cluster from its state dir (same port when it is still free)."""
    name = _resolve_name(name)
    wait_seconds = _parse_wait(wait)
    _emit(f'Starting cluster "{name}" ...')
    try:
        result = lifecycle.start_cluster(name, wait_seconds=wait_seconds, progress=_emit)
    except (lifecycle.ClusterError, KubeconfigError, OSError) as e:
        _fail("failed to start cluster", e)
        return
    for note in result.notes:
        _emit(note)
    _emit(f"The API server is at {result.server}; context {context_name(name)}")


@get.command("kubeconfig")
@_name_option()
def get_kubeconfig(name) -> None:
    """Print a cluster's kubeconfig."""
    try:
        _emit(lifecycle.kubeconfig_text(_resolve_name(name)).rstrip("\n"), err=False)
    except lifecycle.ClusterError as e:
        _fail("failed to get kubeconfig", e)


@export.command("kubeconfig")
@_name_option()
@click.option("--kubeconfig", default=None, metavar="PATH",
              help="kubeconfig to write (default: first entry of $KUBECONFIG, else ~/.kube/config)")
def export_kubeconfig(name, kubeconfig) -> None:
    """Write a cluster's entries into a kubeconfig file and make its context current."""
    name = _resolve_name(name)
    try:
        lifecycle.export_kubeconfig(name, kubeconfig)
    except (lifecycle.ClusterError, KubeconfigError, OSError) as e:
        _fail("failed to export kubeconfig", e)
        return
    _emit(f'Set kubectl context to "{context_name(name)}"')


@get.command("featuregates")
@_name_option()
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="show the gates a config file would give, without a cluster")
def get_featuregates(name, config_path) -> None:
    """Show the feature gates (NAME STAGE ENABLED); * marks values that differ from upstream's defaults."""
    try:
        if config_path:
            spec = load_cluster_config(config_path, None)
        else:
            spec = lifecycle.load_cluster_spec(_resolve_name(name))
    except (ConfigFileError, lifecycle.ClusterError) as e:
        _fail("failed to get feature gates", e)
        return
    gates = FeatureGates(spec.feature_gates, release=spec.release)
    rows = [("NAME", "STAGE", "ENABLED")]
    marked = False
    extension = False
    for gate in sorted(gates.specs):
        enabled = "true" if gates.enabled(gate) else "false"
        stage = gates.specs[gate].stage
        if gates.specs[gate].phalanx:
            stage += " (phalanx)"
            extension = True
        elif not gates.is_upstream_default(gate):
            enabled += "*"
            marked = True
        rows.append((gate, stage, enabled))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        _emit(f"{row[0]:<{width[0]}}   {row[1]:<{width[1]}}   {row[2]}", err=False)
    if marked:
        _emit(f"* differs from the upstream Kubernetes {spec.release} default", err=False)
    if extension:
        _emit(f"(phalanx) a phalanx extension beyond Kubernetes {spec.release}, not an upstream gate", err=False)


@cli.command("serve")
@click.option("--state-dir", required=True, type=click.Path(file_okay=False), help="the cluster's state dir")
def serve(state_dir) -> None:
    """Run a cluster's control plane in the foreground (`phalanx create cluster` starts this)."""
    from phalanx.cluster.controlplane import serve as serve_control_plane
    serve_control_plane(state_dir)


@cli.command("scheduler")
@click.option("--kubeconfig", default=None, metavar="PATH", help="kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)")
@click.option("--context", default=None, help="kubeconfig context to use")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="a KubeSchedulerConfiguration (profiles, plugins, weights, percentageOfNodesToScore)")
@click.option("--scheduler-name", default=None,
              help="serve pods with this spec.schedulerName (sets the first profile's name)")
@click.option("--feature-gates", default="", metavar="A=true,B=false", help="feature gates for the scheduler")
@click.option("--permit-timeout", default=None, type=float, metavar="SECONDS",
              help="how long gang pods wait at Permit for their group (default 300)")
def scheduler_cmd(kubeconfig, context, config_path, scheduler_name, feature_gates, permit_timeout) -> None:
    """Run the phalanx scheduler against any Kubernetes API server (as a second scheduler)."""
    import asyncio
    import logging
    import signal

    import yaml

    from phalanx.client import HTTPClient, InformerFactory
    from phalanx.scheduler.framework.config import load_configuration
    from phalanx.scheduler.scheduler import Scheduler

    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        gates = FeatureGates.from_config({k.strip(): v.strip().lower() == "true" for k, v in
                                          (kv.split("=", 1) for kv in feature_gates.split(",") if kv.strip())})
    except (ValueError, Exception) as e:
        _fail("invalid --feature-gates", e)
        return
    try:
        config = None
        if config_path:
            with open(config_path) as f:
                config = load_configuration(yaml.safe_load(f), gates)
        if config is None:
            from phalanx.scheduler.framework.config import KubeSchedulerConfiguration
            config = KubeSchedulerConfiguration()
        if scheduler_name:
            config.profiles[0].scheduler_name = scheduler_name
    except (OSError, ValueError, TypeError) as e:
        _fail(f"cannot load {config_path}", e)
        return

    async def run() -> None:
        client = HTTPClient.from_kubeconfig(kubeconfig, context, field_manager="phalanx-scheduler")
        factory = InformerFactory(client)
        sched = Scheduler(client, factory, config=config, gates=gates, permit_timeout=permit_timeout)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        sched.start()
        await stop.wait()
        await sched.stop()
        await factory.stop()
        await client.close()

    try:
        asyncio.run(run())
    except (ClientKubeconfigError, OSError) as e:
        _fail("cannot read the kubeconfig", e)


@cli.group()
def explain() -> None:
    """Why a pod or a PodGroup is (not) scheduled: the scheduler's last decision, per plugin and node."""


def _explain(kind: str, name: str, namespace: str, kubeconfig: str | None, context: str | None) -> None:
    import asyncio

    from phalanx.client import HTTPClient
    from phalanx.machinery.errors import StatusError
    from phalanx.scheduler import explain as explaining

    async def run() -> str:
        client = HTTPClient.from_kubeconfig(kubeconfig, context)
        try:
            fn = explaining.explain_pod if kind == "pod" else explaining.explain_podgroup
            return await fn(client, namespace, name)
        finally:
            await client.close()
    try:
        _emit(asyncio.run(run()), err=False)
    except StatusError as e:
        _fail(f"Error from server ({e.reason})", e.message)
    except (ClientKubeconfigError, OSError) as e:
        _fail("cannot read the kubeconfig", e)


def _explain_options(fn):
    fn = click.option("--context", default=None, help="kubeconfig context to use")(fn)
    fn = click.option("--kubeconfig", default=None, metavar="PATH", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)")(fn)
    fn = click.option("-n", "--namespace", default="default", show_default=True)(fn)
    return click.argument("name")(fn)


@explain.command("pod")
@_explain_options
def explain_pod(name, namespace, kubeconfig, context) -> None:
    """The last scheduling decision for a pod."""
    _explain("pod", name, namespace, kubeconfig, context)


@explain.command("podgroup")
@_explain_options
def explain_podgroup(name, namespace, kubeconfig, context) -> None:
    """The last group scheduling decision for a PodGroup, with each failing pod's reasons."""
    _explain("podgroup", name, namespace, kubeconfig, context)


@cli.command("dashboard")
@click.option("--name", "-n", default=None,
              help="the phalanx cluster to show (its context phalanx-NAME); default: the kubeconfig's current context")
@click.option("--kubeconfig", default=None, metavar="PATH", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
@click.option("--context", default=None, help="kubeconfig context to use (instead of --name)")
@click.option("--port", default=0, type=click.IntRange(0, 65535), help="port on 127.0.0.1 (default: a free one)")
def dashboard_cmd(name, kubeconfig, context, port) -> None:
    """Serve a live web dashboard of a cluster on 127.0.0.1 (topology, workloads, timeline,
    scheduler metrics, claims, why pods wait).

    Reads the cluster with the kubeconfig's credentials; prints the URL with a one-time login token."""
    import asyncio

    from phalanx.client import HTTPClient
    from phalanx.dashboard import serve

    if name and context:
        raise click.UsageError("--name and --context choose the same thing; give one")
    try:
        client = HTTPClient.from_kubeconfig(kubeconfig, context or (context_name(name) if name else None),
                                            field_manager="phalanx-dashboard")
    except (ClientKubeconfigError, OSError) as e:
        _fail("cannot read the kubeconfig", e)

    def announce(url: str) -> None:
        _emit(f"phalanx dashboard for {client.server}\nopen {url}\n(the token works once; "
              "the page keeps a session cookie)", err=False)
        sys.stdout.flush()
    try:
        asyncio.run(serve(client, port=port, announce=announce))
    except KeyboardInterrupt:
        pass


@cli.command("version")
def version() -> None:
    """Print the phalanx version."""
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    served = " ".join(PATCH_VERSIONS[r] for r in RELEASES)
    _emit(f"phalanx v{phalanx.__version__} kubernetes {served} "
          f"python{platform.python_version()} {sys.platform}/{machine}", err=False)


from phalanx.cli.bench import bench  # noqa: E402  (phalanx bench WORKLOAD.yaml)
from phalanx.cli.clusters import export_logs_command, get_clusters  # noqa: E402  (get clusters, export logs)
from phalanx.cli.credentials import create_kubeconfig  # noqa: E402  (phalanx create kubeconfig --user U)
from phalanx.cli.failures import fail, recover  # noqa: E402  (phalanx fail|recover node|nodes|device)
from phalanx.cli.simulate import simulate_cmd  # noqa: E402  (phalanx simulate SCENARIO.yaml)
from phalanx.cli.stages import get_stages  # noqa: E402  (phalanx get stages)

cli.add_command(bench)
cli.add_command(simulate_cmd)
for _group in (fail, recover):
    cli.add_command(_group)
create.add_command(create_kubeconfig)
get.add_command(get_clusters)
get.add_command(get_stages)
export.add_command(export_logs_command)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="phalanx")
    except Exception as e:  # an input no command checks yet: one ERROR line, not a traceback
        if os.environ.get(DEBUG_ENV):
            raise
        _emit(f"ERROR: {type(e).__name__}: {e}\n(unexpected: please report it; {DEBUG_ENV}=1 shows the traceback)")
        sys.exit(1)


if __name__ == "__main__":
    main()
