"""Simulated DRA drivers: the DeviceClasses and ResourceSlices that dra-example-driver publishes, for
every simulated node, without kubelet plugins.

    from phalanx.nodes.dradriver.reconcile import SimulatedDRADrivers
    drivers = SimulatedDRADrivers(client, factory, drivers=spec.dra_drivers, clock=clock)
    drivers.start()
    ...
    await drivers.stop()

Modules: `model` (driver, class, pool, taint and partition specs; value templates), `config` (the
`draDrivers` section of a cluster config → specs), `render` (specs and nodes → slice contents, pure
functions), `reconcile` (the controller that writes them).

`drivers` is what `ClusterSpec.dra_drivers` holds: None for the default (dra-example-driver's `gpu`
profile on every worker), `[]` for none, or the `draDrivers` entries of a phalanx cluster config
(plain mappings, validated by `config.parse_dra_drivers`; `DRADriverSpec`s work too).

What gets published, per driver (docs/cluster-config.md, "Simulated DRA drivers", has the format):

- its DeviceClasses, created at start when missing; a class that exists is left as it is, even
  when a user changed it (like a Helm-installed class);
- for every node it serves, one pool named after the node, published by the helper library's
  rules: slices `<5-hex-digit index>-<driver>-<node>-<random>` (generateName), `spec.nodeName`,
  an ownerReference to the Node (controller: true) so the garbage collector removes them with
  the node, `pool.generation` 1 for a new pool and one more whenever the pool's content changes;
  devices `gpu-0` ... with dra-example-driver's attributes (`index`, `uuid`, `model`,
  `driverVersion`) and capacity (`memory: 80Gi`), or partitionable devices
  (`gpu-i-partition-j`, `gpu-i-full` consuming the shared counter set `gpu-i-counters`, published in
  a slice of its own before the devices' slice);
- network-attached pools (`spec.nodeSelector` with one term, or `spec.allNodes`), for example one
  pool per distinct value of a node label; their slices have no owner.

A node is served when it is simulated (`spec.providerID` starts with `phalanx://`), is not a
control-plane node (unless it is an untainted control plane, as in a single-node cluster, where
dra-example-driver's DaemonSet runs too) and matches the driver's `nodeSelector`. A node that stops
being served, or is deleted, loses its slices (the garbage collector would remove them too).

Allocated claims get no `status.devices` entries: dra-example-driver writes none by default.

A node annotated `fault.phalanx.dev/devices: gpu-0,gpu-3` (`phalanx fail device`; `*` for all, a
GPU's name covering its partitions) has those devices published with the taint
`<driver>/unhealthy:NoExecute`, its `timeAdded` kept while the device stays failed; node-local pools
only (`phalanx.api.faults`, docs/failures.md).

One controller serves every node and driver: queue keys are pools, not nodes, so 5,000 nodes cost
one Node and one ResourceSlice informer (shared with the scheduler) and no task per node. Existing
slices are found again from the informer by `spec.driver` and `spec.nodeName` (node-local pools) or
by `spec.driver` without a node name (network pools), so a restarted controller creates nothing.
Writes not yet seen by the informer are remembered (client-go's mutation cache), so a quick second
sync does not publish a pool twice. Fields the API server drops (a feature gate off) are learnt from
its answer and no longer compared, as the helper library does, so a pool is not rewritten forever.

Slice content is the dra-example-driver's; UUIDs are derived from driver, pool (node) name and
device index with SHA-256, not with Go's math/rand, so they are stable but differ from a real
driver's.
"""
