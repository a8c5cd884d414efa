"""The in-process components a control plane runs beside its API server.

Each component talks to the API only through an in-process `Client`, so the same component can run
in its own process against any API server. `start_all(control_plane)` starts them on one shared
informer factory and returns a handle whose `stop()` stops them all. The control plane's
`RuntimeOptions` (`cp.runtime`) choose the clock every component and client reads (a `VirtualClock`
in `phalanx simulate`; wall-clock time by default), the scheduler's seed, whether Events are
recorded and which components are off (by kube-controller-manager's `--controllers` names).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..client import InformerFactory, InProcessClient
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
from .runtime import RuntimeOptions
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


def _constructors(cp: Any, rt: RuntimeOptions, factory: InformerFactory) -> list[tuple[str, Callable[[], Any]]]:
    """Every component by name (kube-controller-manager's `--controllers` names; `kubelet`,
    `dra-driver`, `scheduler` and phalanx's own for the rest), in start order, built only when called."""
    def client_as(field_manager: str) -> InProcessClient:
        return InProcessClient(cp.api, field_manager=field_manager, clock=rt.clock, record_events=rt.record_events)

    client = client_as("kube-controller-manager")
    delays = StageDelays(container_creating=cp.spec.kubelet.get("containerCreatingDelay", 0.0),
                         terminating=cp.spec.kubelet.get("terminatingDelay", 0.0))
    made: list[tuple[str, Callable[[], Any]]] = [
        ("garbage-collector-controller", lambda: GarbageCollector(client, factory)),
        ("namespace-controller", lambda: NamespaceController(client, factory)),
        ("serviceaccount-controller", lambda: ServiceAccountsController(client, factory)),
        ("kubelet", lambda: SimulatedKubelets(
            client_as("kubelet"), factory, delays=delays, stages=stages_from_config(cp.spec.kubelet.get("stages")),
            lease_period=rt.lease_period, events=rt.record_events,
            lease_duration=cp.spec.kubelet.get("nodeLeaseDurationSeconds", DEFAULT_LEASE_DURATION))),
        ("resourceclaim-controller", lambda: ResourceClaimController(client, factory, gates=cp.gates)),
        ("job-controller", lambda: JobController(client, factory, feature_gates=cp.gates)),
        ("ttl-after-finished-controller", lambda: TTLAfterFinishedController(client, factory)),
        ("jobset-controller", lambda: JobSetController(client_as("jobset"), factory, gates=cp.gates)),
        ("replicaset-controller", lambda: ReplicaSetController(client, factory)),
        ("deployment-controller", lambda: DeploymentController(client, factory)),
        ("replicationcontroller-controller", lambda: ReplicationControllerController(client, factory)),
        ("certificatesigningrequest-signing-controller",
         lambda: CSRSigningController(client, factory, **_cluster_ca(cp))),
        ("crd-autoregister", lambda: CRDRegistrationController(client, factory)),
        ("flowschema-status", lambda: FlowSchemaStatusController(client, factory)),
        ("dra-driver", lambda: SimulatedDRADrivers(client_as("dra-driver"), factory, cp.spec.dra_drivers))]
    if cp.spec.scheduler.get("enabled", True):  # off: a scheduler of its own runs against the cluster
        made.append(("scheduler", lambda: Scheduler(client_as("default-scheduler"), factory, gates=cp.gates,
                                                    config=_scheduler_config(cp), seed=rt.seed,
                                                    permit_timeout=cp.spec.scheduler.get("permitWaitingTimeout"))))
    made += [
        ("crd-finalizer", lambda: CustomResourceCleanupController(client, factory)),
        ("crd-naming", lambda: CRDNamingController(client, factory)),
        ("statefulset-controller", lambda: StatefulSetController(client, factory)),
        ("persistentvolume-binder-controller",
         lambda: VolumeProvisioner(client_as("persistentvolume-binder"), factory)),
        ("persistentvolume-protection-controller", lambda: StorageProtection(client, factory)),
        ("disruption-controller", lambda: DisruptionController(client, factory)),
        ("cronjob-controller", lambda: CronJobController(client, factory)),
        ("daemonset-controller", lambda: DaemonSetsController(client, factory)),
        ("endpoints-controller", lambda: EndpointsController(client, factory)),
        ("endpointslice-controller", lambda: EndpointSliceController(client, factory))]
    if cp.gates.enabled("GenericWorkload"):
        made.append(("podgroup-protection-controller",
                     lambda: PodGroupProtectionController(client, factory, release=cp.gates.release)))
    return made + _failure_components(cp, client, factory, client_as)


def _failure_components(cp: Any, client: InProcessClient, factory: InformerFactory,
                        client_as: Callable[[str], InProcessClient]) -> list[tuple[str, Callable[[], Any]]]:
    """What makes failures visible: node lifecycle, taint eviction, device taint eviction, pod GC and
    the config's failure schedule."""
    cm = cp.spec.controller_manager
    out: list[tuple[str, Callable[[], Any]]] = [
        ("node-lifecycle-controller",
         lambda: NodeLifecycleController(client, factory, config=node_lifecycle_config(cm))),
        ("taint-eviction-controller", lambda: TaintEvictionController(client, factory)),
        ("pod-garbage-collector-controller", lambda: PodGCController(
            client, factory, terminated_pod_threshold=cm.get("terminatedPodGCThreshold",
                                                             DEFAULT_TERMINATED_POD_THRESHOLD)))]
    if cp.gates.enabled("DRADeviceTaints"):
        out.append(("device-taint-eviction-controller",
                    lambda: DeviceTaintEvictionController(client, factory, gates=cp.gates)))
    if cp.spec.failures:
        out.append(("failure-schedule", lambda: FailureSchedule(client_as("phalanx-failures"), factory,
                                                                failures=cp.spec.failures)))
    return out


async def start_all(cp: Any) -> list[Any]:
    """kube-controller-manager's controllers, the scheduler and the simulated kubelets, on one
    informer factory, all on the control plane's clock (`cp.runtime`: wall-clock time by default),
    but for those `cp.runtime.disabled_controllers` names."""
    rt: RuntimeOptions = getattr(cp, "runtime", None) or RuntimeOptions()
    factory = InformerFactory(InProcessClient(cp.api, shared_reads=True, clock=rt.clock), clock=rt.clock)  # read-only caches
    controllers = [make() for name, make in _constructors(cp, rt, factory) if name not in rt.disabled_controllers]
    for c in controllers:
        c.start()
    return [Components(controllers, factory)]
