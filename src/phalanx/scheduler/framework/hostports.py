"""Host ports: the (ip, protocol, port) triples a node's pods use and a pod asks for (NodePorts).
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, NamedTuple

from .constants import DEFAULT_BIND_ALL_HOST_IP


# -- host ports ------------------------------------------------------------------------------------

class HostPortInfo:
    """ip -> {(protocol, port)}, with upstream's conflict rule: 0.0.0.0 conflicts with any IP."""

    __slots__ = ("_by_ip",)

    def __init__(self) -> None:
        self._by_ip: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self._by_ip.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        s = self._by_ip.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self._by_ip[ip]

    def __len__(self) -> int:
        return sum(len(s) for s in self._by_ip.values())

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in s for s in self._by_ip.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            s = self._by_ip.get(key)
            if s is not None and pp in s:
                return True
        return False

    def clone(self) -> "HostPortInfo":
        c = HostPortInfo()
        c._by_ip = {ip: set(s) for ip, s in self._by_ip.items()}
        return c

    def as_dict(self) -> dict[str, set[tuple[str, int]]]:
        return {ip: set(s) for ip, s in self._by_ip.items()}


class HostPort(NamedTuple):
    host_ip: str
    protocol: str
    host_port: int


def get_host_ports(pod: Mapping[str, Any]) -> tuple[HostPort, ...]:
    spec = pod.get("spec") or {}
    out = []
    for c in itertools.chain(spec.get("initContainers") or (), spec.get("containers") or ()):
        for p in c.get("ports") or ():
            hp = p.get("hostPort") or 0
            if hp > 0:
                out.append(HostPort(p.get("hostIP") or "", p.get("protocol") or "TCP", int(hp)))
    return tuple(out)


