"""The in-process components a control plane runs beside its API server.

Each component talks to the API only through an in-process `Client`, so the same component can run
in its own process against any API server. `start_all(control_plane)` starts them on one shared
informer factory and returns a handle whose `stop()` stops them all.
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
from ..controllers.devicetainteviction import DeviceTaintEvictionController
from ..controllers.failureschedule import FailureSchedule
from ..controllers.deployment import DeploymentController
from ..controllers.disruption import DisruptionController
from ..controllers.endpoints import EndpointsController
from ..controllers.endpointslice import EndpointSliceController
from ..controllers.garbagecollector import GarbageCollector
from ..controllers.job.controller import JobController
from ..controllers.jobset import JobSetController
from ..controllers.namespace import NamespaceController
from ..controllers.nodelifecycle import NodeLifecycleConfig, NodeLifecycleController
from ..controllers.podgc import DEFAULT_TERMINATED_POD_THRESHOLD, PodGCController
from ..controllers.podgroupprotection import PodGroupProtectionController
from ..controllers.replicaset import ReplicaSetController
from ..controllers.replicationcontroller import ReplicationControllerController
from ..controllers.crdregistration import CRDRegistrationController
from ..controllers.csrsigning import CSRSigningController
from ..controllers.flowschemastatus import FlowSchemaStatusController
from .pki import pki_paths
from ..controllers.resourceclaim import ResourceClaimController
from ..controllers.serviceaccount import ServiceAccountsController
from ..controllers.statefulset import StatefulSetController
from ..controllers.tainteviction import TaintEvictionController
from ..controllers.storageprotection import StorageProtection
from ..controllers.ttlafterfinished import TTLAfterFinishedController
from ..controllers.volumeprovisioner import VolumeProvisioner
from ..nodes.dradriver.reconcile import SimulatedDRADrivers
from ..nodes.heartbeat import DEFAULT_LEASE_DURATION
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


def node_lifecycle_config(controller_manager: dict[str, Any]) -> NodeLifecycleConfig:
    """The node lifecycle controller's settings from the config's `controllerManager:` section."""
    names = {"nodeMonitorPeriod": "node_monitor_period", "nodeMonitorGracePeriod": "node_monitor_grace_period",
             "nodeStartupGracePeriod": "node_startup_grace_period", "nodeEvictionRate": "node_eviction_rate",
             "secondaryNodeEvictionRate": "secondary_node_eviction_rate",
             "largeClusterSizeThreshold": "large_cluster_size_threshold",
             "unhealthyZoneThreshold": "unhealthy_zone_threshold"}
    return NodeLifecycleConfig(**{names[k]: v for k, v in controller_manager.items() if k in names})


def _failure_components(cp: Any, client: InProcessClient, factory: InformerFactory) -> list[Controller[Any]]:
    """What makes failures visible: node lifecycle, taint eviction, device taint eviction, pod GC and
    the config's failure schedule."""
    cm = cp.spec.controller_manager
    out: list[Controller[Any]] = [
        NodeLifecycleController(client, factory, config=node_lifecycle_config(cm)),
        TaintEvictionController(client, factory),
        PodGCController(client, factory,
                        terminated_pod_threshold=cm.get("terminatedPodGCThreshold", DEFAULT_TERMINATED_POD_THRESHOLD))]
    if cp.gates.enabled("DRADeviceTaints"):
        out.append(DeviceTaintEvictionController(client, factory, gates=cp.gates))
    if cp.spec.failures:
        out.append(FailureSchedule(InProcessClient(cp.api, field_manager="phalanx-failures"), factory,
                                   failures=cp.spec.failures))
    return out


async def start_all(cp: Any) -> list[Any]:
    """kube-controller-manager's controllers, the scheduler and the simulated kubelets, on one
    informer factory."""
    client = InProcessClient(cp.api, field_manager="kube-controller-manager")
    factory = InformerFactory(InProcessClient(cp.api, shared_reads=True))  # read-only caches: no copies
    kubelet_client = InProcessClient(cp.api, field_manager="kubelet")
    scheduler_client = InProcessClient(cp.api, field_manager="default-scheduler")
    controllers: list[Controller[Any] | Scheduler] = [GarbageCollector(client, factory), NamespaceController(client, factory),
                   ServiceAccountsController(client, factory), SimulatedKubelets(kubelet_client, factory, delays=StageDelays(
                       container_creating=cp.spec.kubelet.get("containerCreatingDelay", 0.0),
                       terminating=cp.spec.kubelet.get("terminatingDelay", 0.0)),
                       stages=stages_from_config(cp.spec.kubelet.get("stages")),
                       lease_duration=cp.spec.kubelet.get("nodeLeaseDurationSeconds", DEFAULT_LEASE_DURATION)),
                   ResourceClaimController(client, factory, gates=cp.gates),
                   JobController(client, factory, feature_gates=cp.gates), TTLAfterFinishedController(client, factory),
                   JobSetController(InProcessClient(cp.api, field_manager="jobset"), factory, gates=cp.gates),
                   ReplicaSetController(client, factory), DeploymentController(client, factory),
                   ReplicationControllerController(client, factory),
                   CSRSigningController(client, factory, **_cluster_ca(cp)), CRDRegistrationController(client, factory),
                   FlowSchemaStatusController(client, factory),
                   SimulatedDRADrivers(InProcessClient(cp.api, field_manager="dra-driver"), factory,
                                       cp.spec.dra_drivers)]
    if cp.spec.scheduler.get("enabled", True):  # off: a scheduler of its own runs against the cluster
        controllers.append(Scheduler(scheduler_client, factory, gates=cp.gates, config=_scheduler_config(cp),
                                     permit_timeout=cp.spec.scheduler.get("permitWaitingTimeout")))
    controllers += [CustomResourceCleanupController(client, factory), CRDNamingController(client, factory)]
    controllers.append(StatefulSetController(client, factory))
    controllers.append(VolumeProvisioner(InProcessClient(cp.api, field_manager="persistentvolume-binder"), factory))
    controllers.append(StorageProtection(client, factory))
    controllers.append(DisruptionController(client, factory))
    controllers.append(CronJobController(client, factory))
    controllers.append(DaemonSetsController(client, factory))
    controllers += [EndpointsController(client, factory), EndpointSliceController(client, factory)]
    if cp.gates.enabled("GenericWorkload"):
        controllers.append(PodGroupProtectionController(client, factory, release=cp.gates.release))
    controllers += _failure_components(cp, client, factory)
    for c in controllers:
        c.start()
    return [Components(controllers, factory)]
