"""The ReplicationController controller (kube-controller-manager's `replicationcontroller`), through
`Client`.

    ReplicationControllerController(client, factory).start()

Upstream runs the ReplicaSet controller's code for core/v1 ReplicationControllers (converting each
one to a ReplicaSet on the way); so does this one: the same slow-start pod creation, adoption,
deletion order and status, for the kind `v1/ReplicationController`. The one difference is the
selector: a ReplicationController's `spec.selector` is a plain label map (equality only), and
defaults to the template's labels.
"""

from __future__ import annotations

from typing import Any

from ..machinery.selectors import LabelSelector, label_selector_from_object
from .replicaset import ReplicaSetController

COMPONENT = "replication-controller"


class ReplicationControllerController(ReplicaSetController):
    name = "replicationcontroller"
    api_version = "v1"
    kind = "ReplicationController"
    component = COMPONENT

    def selector_of(self, rc: dict[str, Any]) -> Any:
        labels = (rc.get("spec") or {}).get("selector")
        if not isinstance(labels, dict) or not labels:
            return LabelSelector.nothing()
        try:
            return label_selector_from_object({"matchLabels": labels})
        except ValueError:
            return LabelSelector.nothing()


__all__ = ["ReplicationControllerController"]
