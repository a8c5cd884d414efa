"""ClusterIP allocation for Services, from the service CIDR 10.96.0.0/12 (kind's default).

Upstream allocates a random free address; phalanx derives it from the Service's uid, so it needs no
allocation table. With 2^20 addresses a collision is unlikely (about 0.05% at 1,000 Services); the
simulated cluster has no data plane where one would matter. `kubernetes` in `default` keeps
10.96.0.1. NodePorts come from 30000-32767 the same way.

`ServiceIPAllocator` is the Service kind's storage work in `rest.API` (`apiserver.build_api` connects
it): it runs after the Service strategy's `prepare_for_create` / `prepare_for_update`, where
upstream's Service REST storage allocates.
"""

from __future__ import annotations

import hashlib
import ipaddress

_BASE = int(ipaddress.IPv4Address("10.96.0.0"))
_SIZE = 1 << 20


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def cluster_ip_for(uid: str) -> str:
    offset = 10 + _hash(uid) % (_SIZE - 20)  # keep .0-.9 for well-known addresses
    return str(ipaddress.IPv4Address(_BASE + offset))


def allocate(service: dict, old: dict | None) -> None:
    spec = service.get("spec")
    if not isinstance(spec, dict):
        return
    stype = spec.get("type", "ClusterIP")
    if stype == "ExternalName":
        return
    if not spec.get("clusterIP"):
        spec["clusterIP"] = cluster_ip_for(service["metadata"].get("uid") or service["metadata"].get("name", ""))
    if not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    if spec["clusterIP"] != "None":
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    else:
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    if stype in ("NodePort", "LoadBalancer"):
        for i, p in enumerate(spec.get("ports") or []):
            if isinstance(p, dict) and not p.get("nodePort"):
                p["nodePort"] = 30000 + _hash(f"{service['metadata'].get('uid')}/{i}") % 2768


class ServiceIPAllocator:
    """Allocates `clusterIP(s)`, IP families and node ports of Services as they are written."""

    def before_create(self, obj: dict) -> None:
        allocate(obj, None)

    def before_update(self, new: dict, old: dict) -> None:
        allocate(new, old)
