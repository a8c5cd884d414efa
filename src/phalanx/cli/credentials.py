"""`phalanx create kubeconfig`: a kubeconfig for another user of a cluster, to try RBAC with.

    phalanx create kubeconfig --user alice --group dev --namespace team-a > alice.kubeconfig
    kubectl --kubeconfig alice.kubeconfig get pods        # as User "alice" in groups dev, system:authenticated

The token is signed with the cluster's token key (`pki/sa.key`, as ServiceAccount tokens are) and
carries the user and groups in its claims; it is valid for `--duration` (default one year, like
kind's client certificates). The user can do what RBAC bindings grant it, nothing more: bind it
with e.g. `kubectl create rolebinding alice-view --clusterrole view --user alice -n team-a`.
"""

from __future__ import annotations

import sys
import time

import click
import yaml

from phalanx.apiserver.auth.authenticator import user_token_claims
from phalanx.apiserver.auth.tokens import signing_key
from phalanx.cluster import lifecycle
from phalanx.cluster.kubeconfig import context_name, render

DEFAULT_DURATION = "8760h"


def user_kubeconfig(cluster: str, user: str, groups: list[str], namespace: str | None, seconds: int) -> dict:
    """The cluster's kubeconfig with its user entry replaced by a signed token for `user`."""
    config = yaml.safe_load(lifecycle.kubeconfig_text(cluster))
    key = signing_key(lifecycle.ClusterPaths.for_name(cluster).root)
    entry = f"{user}@{context_name(cluster)}"
    token = key.sign(user_token_claims(user, groups, seconds, time.time()))
    context: dict = {"cluster": context_name(cluster), "user": entry}
    if namespace:
        context["namespace"] = namespace
    config["contexts"] = [{"context": context, "name": entry}]
    config["users"] = [{"name": entry, "user": {"token": token}}]
    config["current-context"] = entry
    return config


@click.command("kubeconfig")
@click.option("--name", "-n", default=None, help="the cluster name (default: $PHALANX_CLUSTER_NAME or phalanx)")
@click.option("--user", required=True, help="the user name the kubeconfig authenticates as")
@click.option("--group", "groups", multiple=True, help="a group of the user (repeatable)")
@click.option("--namespace", default=None, help="the context's default namespace")
@click.option("--duration", default=DEFAULT_DURATION, show_default=True, metavar="DURATION",
              help="how long the token is valid")
def create_kubeconfig(name: str | None, user: str, groups: tuple[str, ...], namespace: str | None,
                      duration: str) -> None:
    """Print a kubeconfig that authenticates to a cluster as USER in GROUPs."""
    try:
        seconds = int(lifecycle.parse_duration(duration))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--duration") from None
    if seconds <= 0:
        raise click.BadParameter("must be positive", param_hint="--duration")
    try:
        config = user_kubeconfig(name or lifecycle.default_cluster_name(), user, list(groups), namespace, seconds)
    except (lifecycle.ClusterError, OSError, ValueError) as e:
        click.echo(f"ERROR: failed to create kubeconfig: {e}", err=True)
        sys.exit(1)
    click.echo(render(config).rstrip("\n"))
