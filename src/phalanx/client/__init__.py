"""How components talk to the API: one `Client` protocol, two transports, informers, a work queue.

    from phalanx.client import InProcessClient, HTTPClient, InformerFactory, WorkQueue, VirtualClock

- `Client` (protocol, `interface.py`): get/list/watch/create/update/update_status/patch/delete/
  bind/finalize/create_event/served_resources, resources named by apiVersion + Kind or plural.
- `InProcessClient(api)`: direct calls on a `rest.API`; `HTTPClient.from_kubeconfig()`: any
  Kubernetes API server.
- `Informer` / `InformerFactory`: list+watch caches with indexers and handlers, shared per kind.
- `WorkQueue`: keyed, deduplicating, rate-limited queue for level-triggered controllers.
- `Controller` (`controller.py`): the informer → queue → `sync(key)` base of every controller and
  of the simulated kubelets and DRA drivers.
- `Clock`, `RealClock`, `VirtualClock`: the time every component reads.
"""

from .clock import REAL_CLOCK, Clock, RealClock, VirtualClock, settle, to_datetime
from .events import EventRecorder, object_reference
from .informer import (Informer, InformerFactory, index_by_namespace, index_by_owner_uid, index_pod_by_node_name,
                       index_pod_by_pod_group, object_key, split_key)
from .inprocess import InProcessClient
from .interface import (APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, Client, ResourceInfo,
                        is_no_kind_match)
from .workqueue import WorkQueue, default_controller_rate_limiter


def __getattr__(name: str):
    # The HTTP client pulls in aiohttp's client side; import it only when asked for.
    if name == "HTTPClient":
        from .http import HTTPClient
        return HTTPClient
    raise AttributeError(name)


__all__ = ["Client", "ResourceInfo", "InProcessClient", "HTTPClient", "Informer", "InformerFactory", "WorkQueue",
           "Clock", "RealClock", "VirtualClock", "REAL_CLOCK", "settle", "to_datetime", "EventRecorder",
           "object_reference", "object_key", "split_key", "index_by_namespace", "index_by_owner_uid",
           "index_pod_by_node_name", "index_pod_by_pod_group", "default_controller_rate_limiter",
           "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "JSON_PATCH", "APPLY_PATCH", "is_no_kind_match"]
