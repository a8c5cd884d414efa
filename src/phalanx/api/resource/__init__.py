"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClass, ResourceSlice, ResourceClaim,
ResourceClaimTemplate.

Importing this package registers the four kinds. Modules: `constants` (names, limits, gates),
`fields` (shared field validators), `claim_validation`, `slice_validation`, `status_validation`,
`gated_fields` (defaults and fields dropped when a gate is off) and `strategies` (the four
strategies and their registration). Behaviour follows kube-apiserver 1.36
(`pkg/apis/resource/validation`, `pkg/registry/resource/*/strategy.go`, printers):

- defaults: a request's `allocationMode` is `ExactCount` and its `count` 1; a toleration's
  `operator` is `Equal`; a device taint's `timeAdded` is now;
- validation of requests (exactly one of `exactly`/`firstAvailable`), selectors (CEL expressions
  are compiled and type-checked at admission by `phalanx.dra.cel.validation`), constraints and config
  naming existing requests (`req` or `req/sub`), slices (one node-selection mode, pool names,
  device names, attributes and capacities), claim status (allocation set once, reservedFor unique
  by uid and at most 256, device statuses for allocated devices only);
- fields behind DRAAdminAccess, DRAPrioritizedList, DRADeviceTaints, DRAPartitionableDevices,
  DRAConsumableCapacity, DRADeviceBindingConditions and DRAExtendedResource are dropped when the
  gate is off, unless the old object already used them;
- `adminAccess: true` needs the `resource.kubernetes.io/admin-access: "true"` label on the namespace;
- tables: ResourceClaim NAME STATE AGE (`pending`, `allocated,reserved`, `deleted`, ...),
  ResourceSlice NAME NODE DRIVER POOL AGE; ResourceSlice field selectors `spec.nodeName`,
  `spec.driver`.
"""

from . import strategies  # noqa: F401 - importing the package registers the four kinds
