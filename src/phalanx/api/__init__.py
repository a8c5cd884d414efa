"""API groups: one module per group, each registering its kinds with `registry.register`.

`load_all()` imports every group module once; after it, `registry.all_types()` lists every
served kind.
"""

from __future__ import annotations

import importlib

GROUP_MODULES = ["core", "events", "coordination", "batch", "apps", "scheduling", "resource", "jobset", "policy",
                 "rbac", "authorization", "authentication", "apiextensions", "storage", "metrics", "networking",
                 "certificates", "apiregistration", "flowcontrol", "discovery"]
_loaded = False


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    for name in GROUP_MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:  # a group module not written yet
            if e.name != f"{__name__}.{name}":
                raise
    _loaded = True
