"""One shared copy of what thousands of pods have alike, so a cluster of 150,000 pods holds their
common parts once (`machinery.interning.share_json`).

The pods of one template repeat most of their spec (the ServiceAccount token volume's sources,
tolerations, resources, probes), and pods started in the same second on one node repeat their
status conditions and host IPs. The Pod strategy passes a new pod's spec and every status write
through here, after admission and before validation; what the store holds is never changed in
place, so sharing is invisible to every reader.
"""

from __future__ import annotations

from ..machinery.interning import share_json
from .common import Obj, _list

_SPEC_FIELDS = ("tolerations", "affinity", "nodeSelector", "securityContext", "topologySpreadConstraints",
                "dnsConfig", "readinessGates", "imagePullSecrets", "resourceClaims", "resources")
_CONTAINER_FIELDS = ("resources", "env", "envFrom", "ports", "securityContext", "command", "args",
                     "readinessProbe", "livenessProbe", "startupProbe", "lifecycle", "resizePolicy")
_STATUS_LISTS = ("conditions", "hostIPs")
_CONTAINER_STATUS_FIELDS = ("state", "lastState", "resources", "allocatedResources")


def share_spec_parts(spec: Obj) -> None:
    """A new pod's spec with its commonly repeated parts replaced by shared copies."""
    for f in _SPEC_FIELDS:
        if f in spec:
            spec[f] = share_json(spec[f])
    for v in _list(spec.get("volumes")):
        if isinstance(v, dict):
            for k, source in v.items():
                if k != "name":
                    v[k] = share_json(source)
    for key in ("initContainers", "containers"):
        for c in _list(spec.get(key)):
            if isinstance(c, dict):
                for f in _CONTAINER_FIELDS:
                    if f in c:
                        c[f] = share_json(c[f])


def share_status_parts(status: Obj) -> None:
    """A pod status about to be stored, with its repeated parts replaced by shared copies."""
    for f in _STATUS_LISTS:
        items = status.get(f)
        if isinstance(items, list):
            status[f] = [share_json(x) for x in items]
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in _list(status.get(key)):
            if isinstance(cs, dict):
                for f in _CONTAINER_STATUS_FIELDS:
                    if f in cs:
                        cs[f] = share_json(cs[f])
