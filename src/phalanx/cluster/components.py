"""The in-process components a control plane runs beside its API server.

Each component talks to the API only through an in-process `Client`, so the same component can run
in its own process against any API server. `start_all(control_plane)` starts them on one shared
informer factory and returns a handle whose `stop()` stops them all. The control plane's
`RuntimeOptions` (`cp.runtime`) choose the clock every component and client reads (a `VirtualClock`
in `phalanx simulate`; wall-clock time by default), the scheduler's seed and whether Events are
recorded.
"""

from __future__ import annotations

import logging
from typing import Any

from ..client import InformerFactory, InProcessClient
from ..client.controller import Controller
from ..controllers.crdnaming import CRDNamingController
from ..controllers.cronjob import CronJobController
from ..controllers.customresourcecleanup import CustomResourceCleanupController
from ..controllers.daemonset import DaemonSetsController
from ..controllers.deployment import DeploymentController
from ..controllers.disruption import DisruptionController
from ..controllers.endpoints import EndpointsController
from ..controllers.endpointslice import EndpointSliceController
from ..controllers.garbagecollector import GarbageCollector
from ..controllers.job.controller import JobController
from ..controllers.jobset import JobSetController
from ..controllers.namespace import NamespaceController
from ..controllers.podgroupprotection import PodGroupProtectionController
from ..controllers.replicaset import ReplicaSetController
from ..controllers.replicationcontroller import ReplicationControllerController
from ..controllers.crdregistration import CRDRegistrationController
from ..controllers.csrsigning import CSRSigningController
from ..controllers.flowschemastatus import FlowSchemaStatusController
from .pki import pki_paths
from .runtime import RuntimeOptions
from ..controllers.resourceclaim import ResourceClaimController
from ..controllers.serviceaccount import ServiceAccountsController
from ..controllers.statefulset import StatefulSetController
from ..controllers.storageprotection import StorageProtection
from ..controllers.ttlafterfinished import TTLAfterFinishedController
from ..controllers.volumeprovisioner import VolumeProvisioner
from ..nodes.dradriver.reconcile import SimulatedDRADrivers
from ..nodes.kubelet import SimulatedKubelets, StageDelays
from ..nodes.stages import stages_from_config
from ..scheduler.framework.config import load_configuration
from ..scheduler.scheduler import Scheduler

log = logging.getLogger("phalanx.components")


class Components:
    def __init__(self, controllers: list[Any], factory: InformerFactory):
        self.controllers = controllers
        self.factory = factory

    async def stop(self) -> None:
        for c in reversed(self.controllers):
            try:
                await c.stop()
            except Exception:  # pragma: no cover - best effort at shutdown
                log.exception("stopping %s", type(c).__name__)
        await self.factory.stop()


def _cluster_ca(cp: Any) -> dict[str, bytes]:
    """The cluster CA's certificate and key, for the CSR signer (none for a cluster without PKI)."""
    if not cp.state_dir:
        return {}
    paths = pki_paths(cp.state_dir)
    if not (paths.ca_cert_file.exists() and paths.ca_key_file.exists()):
        return {}
    return {"ca_cert_pem": paths.ca_cert_file.read_bytes(), "ca_key_pem": paths.ca_key_file.read_bytes()}


def _scheduler_config(cp: Any) -> Any:
    raw = cp.spec.scheduler.get("config")
    if not raw:
        return None
    return load_configuration(raw, cp.gates)


async def start_all(cp: Any) -> list[Any]:
    """kube-controller-manager's controllers, the scheduler and the simulated kubelets, on one
    informer factory, all on the control plane's clock (`cp.runtime`: wall-clock time by default)."""
    rt: RuntimeOptions = getattr(cp, "runtime", None) or RuntimeOptions()
    clock = rt.clock

    def client_as(field_manager: str) -> InProcessClient:
        return InProcessClient(cp.api, field_manager=field_manager, clock=clock, record_events=rt.record_events)

    client = client_as("kube-controller-manager")
    # read-only caches: no copies
    factory = InformerFactory(InProcessClient(cp.api, shared_reads=True, clock=clock), clock=clock)
    controllers: list[Controller[Any] | Scheduler] = [GarbageCollector(client, factory), NamespaceController(client, factory),
                   ServiceAccountsController(client, factory), SimulatedKubelets(client_as("kubelet"), factory, delays=StageDelays(
                       container_creating=cp.spec.kubelet.get("containerCreatingDelay", 0.0),
                       terminating=cp.spec.kubelet.get("terminatingDelay", 0.0)),
                       stages=stages_from_config(cp.spec.kubelet.get("stages")), lease_period=rt.lease_period,
                       events=rt.record_events),
                   ResourceClaimController(client, factory, gates=cp.gates),
                   JobController(client, factory, feature_gates=cp.gates), TTLAfterFinishedController(client, factory),
                   JobSetController(client_as("jobset"), factory, gates=cp.gates),
                   ReplicaSetController(client, factory), DeploymentController(client, factory),
                   ReplicationControllerController(client, factory),
                   CSRSigningController(client, factory, **_cluster_ca(cp)), CRDRegistrationController(client, factory),
                   FlowSchemaStatusController(client, factory),
                   SimulatedDRADrivers(client_as("dra-driver"), factory, cp.spec.dra_drivers)]
    if cp.spec.scheduler.get("enabled", True):  # off: a scheduler of its own runs against the cluster
        controllers.append(Scheduler(client_as("default-scheduler"), factory, gates=cp.gates,
                                     config=_scheduler_config(cp), seed=rt.seed,
                                     permit_timeout=cp.spec.scheduler.get("permitWaitingTimeout")))
    controllers += [CustomResourceCleanupController(client, factory), CRDNamingController(client, factory)]
    controllers.append(StatefulSetController(client, factory))
    controllers.append(VolumeProvisioner(client_as("persistentvolume-binder"), factory))
    controllers.append(StorageProtection(client, factory))
    controllers.append(DisruptionController(client, factory))
    controllers.append(CronJobController(client, factory))
    controllers.append(DaemonSetsController(client, factory))
    controllers += [EndpointsController(client, factory), EndpointSliceController(client, factory)]
    if cp.gates.enabled("GenericWorkload"):
        controllers.append(PodGroupProtectionController(client, factory, release=cp.gates.release))
    for c in controllers:
        c.start()
    return [Components(controllers, factory)]
