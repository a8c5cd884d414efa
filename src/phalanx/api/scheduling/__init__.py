"""scheduling.k8s.io: PriorityClass, and the workload API of each Kubernetes release.

- `v1alpha2`: PriorityClass (v1, every release) and Workload/PodGroup as Kubernetes 1.36 serves them.
- `v1beta1`: Workload/PodGroup (`v1beta1`, and the same shapes at `v1alpha3`) and CompositePodGroup
  (`v1alpha3`) as Kubernetes 1.37 serves them.
- `fields`: reading a Workload or PodGroup of either release without caring which one it is.
- `common`: what the strategies of both releases share (declarative-validation words, formats,
  conditions, resource claims, the Priority admission plugin's class lookup).

Importing the package registers every kind; `build_api(release=...)` serves the ones of its release.
"""

from __future__ import annotations

from . import v1beta1  # noqa: F401  (registers the 1.37 kinds)
from .v1alpha2 import *  # noqa: F401,F403
from .v1alpha2 import validate_conditions  # noqa: F401
