"""The in-process components a control plane runs beside its API server.

Each component talks to the API only through an in-process `Client`, so the same component can run
in its own process against any API server. `start_all(control_plane)` starts those that exist and
returns them (each has `async stop()`).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("phalanx.components")


async def start_all(cp: Any) -> list[Any]:
    started: list[Any] = []
    try:
        from ..client import InProcessClient, InformerFactory  # noqa: F401
    except ImportError:
        log.warning("client package not available yet: no controllers started")
        return started
    return started
