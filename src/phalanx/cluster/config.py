"""Cluster config files → `ClusterSpec`: kind's `Cluster` format and phalanx's own.

    spec = load_cluster_config("kind.yaml", name=None)   # ConfigFileError on any problem
    spec = load_cluster_config(None, name="dev")         # no file: 1 control-plane + 1 worker

Two formats, told apart by `apiVersion`:

- `kind.x-k8s.io/v1alpha4`, `kind: Cluster` — the file a kind user already has, accepted verbatim
  (`kindconfig`). Fields kind knows but phalanx cannot honour (node images, mounts, port mappings,
  CNI settings, containerd patches, most kubeadm patches) are accepted, type-checked and listed in
  `ClusterSpec.ignored_fields` so the CLI can say once that they have no effect.
- `phalanx.dev/v1alpha1`, `kind: Cluster` — what kind's format cannot say (`phalanxconfig`): node
  pools of any size with templated labels, capacity, taints, storage, listen address, port and
  simulated DRA drivers. See docs/cluster-config.md.

Both are strict (`machinery.strictyaml`): an unknown field, a wrong type or a bad value is an error
naming the file, the field path and what is allowed (`kind.yaml: nodes[1].rolez: unknown field;
allowed: role, ...`); every problem in the file is reported at once. Malformed YAML names the line
and column.
"""

from __future__ import annotations

import sys

from phalanx.cluster.configparse import (DEFAULT_CLUSTER_NAME, DEFAULT_ROLES, build_kind_nodes, check_cluster_name,
                                         decide_version, image_version)
from phalanx.cluster.kindconfig import KIND_API_VERSION, parse_kind
from phalanx.cluster.phalanxconfig import PHALANX_API_VERSION, parse_phalanx
from phalanx.cluster.spec import ClusterSpec
from phalanx.machinery.strictyaml import ConfigFileError, DocumentReader, load_strict_yaml, quote, type_name


def load_cluster_config(path: str | None, name: str | None = None, image: str | None = None) -> ClusterSpec:
    """Read a kind or phalanx config file (`-` for stdin; None for the default cluster).

    `name`, when given, overrides the config's `name` (like `kind create cluster --name`); `image`
    (`kindest/node:v1.37.1`, the `--image` flag) chooses the Kubernetes version.
    """
    if path is None:
        cluster_name = name or DEFAULT_CLUSTER_NAME
        check_cluster_name(cluster_name, "--name")
        spec = ClusterSpec(name=cluster_name, nodes=build_kind_nodes(cluster_name, DEFAULT_ROLES))
        reader = DocumentReader("--image")
        decide_version(spec, _image_flag(image, reader), {}, reader)
        reader.raise_problems()
        return spec
    source = "<stdin>" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as e:
        raise ConfigFileError(source, [("", f"cannot read config: {e.strerror or e}")]) from None
    except UnicodeDecodeError as e:
        raise ConfigFileError(source, [("", f"cannot read config: not UTF-8 text (byte {e.start}: "
                                            f"{e.object[e.start:e.start + 1]!r})")]) from None
    return parse_cluster_config(text, source, name, image)


def _image_flag(image: str | None, reader: DocumentReader) -> tuple[str, str] | None:
    """(version, where) from `--image`; without a config file the message names the flag alone."""
    where = "" if reader.source == "--image" else "--image"
    return None if image is None else image_version(image, where, reader)


def parse_cluster_config(text: str, source: str, name: str | None = None, image: str | None = None) -> ClusterSpec:
    """Parse config text; `source` names the file in error messages, `image` is `--image`."""
    doc = load_strict_yaml(text, source)
    if doc is None:
        raise ConfigFileError(source, [("", "empty config; expected a kind.x-k8s.io/v1alpha4 or "
                                             "phalanx.dev/v1alpha1 Cluster")])
    if not isinstance(doc, dict):
        raise ConfigFileError(source, [("", f"expected a mapping at the top level, got {type_name(doc)}")])
    api_version = doc.get("apiVersion")
    reader = DocumentReader(source)
    override = _image_flag(image, reader)
    if api_version == KIND_API_VERSION:
        spec = parse_kind(doc, reader, name, override)
    elif api_version == PHALANX_API_VERSION:
        spec = parse_phalanx(doc, reader, name, override)
    else:
        what = "required" if api_version is None else f"unsupported value {quote(api_version)}"
        raise ConfigFileError(source, [("apiVersion", f"{what}; allowed: {KIND_API_VERSION}, {PHALANX_API_VERSION}")])
    reader.raise_problems()
    return spec


def default_cluster_spec(name: str = DEFAULT_CLUSTER_NAME) -> ClusterSpec:
    """What `phalanx create cluster` builds with no config: one control-plane and one worker."""
    return load_cluster_config(None, name)
