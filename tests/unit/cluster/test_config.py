"""Cluster config files: kind's format verbatim, phalanx's own, and errors that name file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.cluster.config import load_cluster_config, parse_cluster_config
from phalanx.cluster.phalanxconfig import compile_template
from phalanx.machinery.strictyaml import ConfigFileError
from phalanx.nodes.dradriver.config import resolve_drivers
from phalanx.machinery.featuregates import KNOWN_GATES, WAS_GATES, FeatureGates, UnknownFeatureGate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "clusters"

# The tutorial's kind.yaml, byte for byte (examples/dra-integration/, as seed/dra-integration.md has it).
TUTORIAL_KIND_YAML = (Path(__file__).resolve().parents[3] / "examples" / "dra-integration" / "kind.yaml").read_text()

KIND_HEAD = "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"
PHALANX_HEAD = "apiVersion: phalanx.dev/v1alpha1\nkind: Cluster\n"


def write(tmp_path: Path, text: str, name: str = "kind.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def problems(text: str, source: str = "kind.yaml") -> str:
    with pytest.raises(ConfigFileError) as info:
        parse_cluster_config(text, source)
    return str(info.value)


# --- the tutorial ------------------------------------------------------------------------------


def test_tutorial_kind_yaml_gives_one_control_plane_and_four_workers(tmp_path):
    spec = load_cluster_config(write(tmp_path, TUTORIAL_KIND_YAML), None)
    assert spec.name == "phalanx"
    assert [(n.name, n.role) for n in spec.nodes] == [
        ("phalanx-control-plane", "control-plane"),
        ("phalanx-worker", "worker"), ("phalanx-worker2", "worker"),
        ("phalanx-worker3", "worker"), ("phalanx-worker4", "worker"),
    ]
    assert spec.feature_gates == {g: True for g in WAS_GATES}
    # The API server's runtime-config comes from the kubeadm patch, as kind would pass it on.
    assert spec.runtime_config == {"api/alpha": "true"}
    assert spec.ignored_fields == ["nodes[0].kubeadmConfigPatches"]


def test_tutorial_nodes_carry_kind_labels_taints_and_default_capacity(tmp_path):
    spec = load_cluster_config(write(tmp_path, TUTORIAL_KIND_YAML), None)
    cp, worker = spec.nodes[0], spec.nodes[1]
    assert cp.labels == {
        "kubernetes.io/hostname": "phalanx-control-plane", "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/control-plane": "",
        "node.kubernetes.io/exclude-from-external-load-balancers": "",
    }
    assert cp.taints == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert worker.labels == {"kubernetes.io/hostname": "phalanx-worker", "kubernetes.io/os": "linux",
                             "kubernetes.io/arch": "amd64"}
    assert worker.taints == []
    assert all(n.capacity == {"cpu": "8", "memory": "32Gi", "pods": "110"} for n in spec.nodes)


def test_tutorial_example_file_is_the_tutorial_config():
    spec = load_cluster_config(str(EXAMPLES / "kind-dra.yaml"), None)
    assert len(spec.nodes) == 5 and spec.feature_gates == {g: True for g in WAS_GATES}


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_config_loads(example):
    spec = load_cluster_config(str(EXAMPLES / example), None)
    assert spec.nodes


# --- defaults and names ------------------------------------------------------------------------


def test_no_config_gives_one_control_plane_and_one_worker():
    spec = load_cluster_config(None, None)
    assert [(n.name, n.role) for n in spec.nodes] == [("phalanx-control-plane", "control-plane"),
                                                       ("phalanx-worker", "worker")]
    assert spec.feature_gates == {} and spec.storage == "sqlite" and spec.port == 0


@pytest.mark.parametrize("config_name, flag, expected", [
    (None, None, "phalanx"),
    ("from-config", None, "from-config"),
    ("from-config", "from-flag", "from-flag"),
    (None, "from-flag", "from-flag"),
])
def test_cluster_name_precedence(tmp_path, config_name, flag, expected):
    text = KIND_HEAD + (f"name: {config_name}\n" if config_name else "")
    spec = load_cluster_config(write(tmp_path, text), flag)
    assert spec.name == expected
    assert spec.nodes[0].name == f"{expected}-control-plane"


def test_kind_names_second_control_plane_and_workers_in_order(tmp_path):
    text = KIND_HEAD + "name: ha\nnodes:\n- role: control-plane\n- role: worker\n- role: control-plane\n- role: worker\n"
    spec = load_cluster_config(write(tmp_path, text), None)
    assert [n.name for n in spec.nodes] == ["ha-control-plane", "ha-worker", "ha-control-plane2", "ha-worker2"]


@pytest.mark.parametrize("nodes", ["", "nodes: []\n", "nodes:\n- role: control-plane\n", "nodes:\n- {}\n"])
def test_single_node_cluster_has_an_untainted_control_plane(nodes):
    spec = parse_cluster_config(KIND_HEAD + nodes, "kind.yaml")
    assert [(n.name, n.role, n.taints) for n in spec.nodes] == [("phalanx-control-plane", "control-plane", [])]


def test_kind_labels_networking_and_runtime_config(tmp_path):
    spec = load_cluster_config(str(EXAMPLES / "kind-labels.yaml"), None)
    assert spec.name == "dev" and spec.port == 6443 and spec.listen_address == "127.0.0.1"
    assert spec.runtime_config == {"api/alpha": "true"}
    assert spec.nodes[1].labels["topology.kubernetes.io/zone"] == "zone-a"
    assert spec.nodes[2].labels["example.com/rack"] == "rack-2"


def test_kind_fields_phalanx_cannot_honour_are_listed_once(tmp_path):
    text = KIND_HEAD + """\
networking:
  podSubnet: 10.244.0.0/16
  disableDefaultCNI: true
containerdConfigPatches:
- |-
  [plugins."io.containerd.grpc.v1.cri".registry]
nodes:
- role: control-plane
  image: kindest/node:v1.36.0
  extraPortMappings:
  - containerPort: 80
    hostPort: 8080
  extraMounts:
  - hostPath: /tmp
    containerPath: /data
"""
    spec = parse_cluster_config(text, "kind.yaml")
    assert spec.ignored_fields == ["containerdConfigPatches", "networking.podSubnet", "networking.disableDefaultCNI",
                                   "nodes[0].extraMounts", "nodes[0].extraPortMappings"]
    assert spec.kubernetes_version == "v1.36.0"  # the image's tag is the version


def test_kubeadm_patches_supply_feature_gates_runtime_config_and_node_labels():
    text = KIND_HEAD + """\
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  apiServer:
    extraArgs:
    - name: runtime-config
      value: scheduling.k8s.io/v1alpha2=true,resource.k8s.io/v1beta2
  scheduler:
    extraArgs:
      feature-gates: DRADeviceTaintRules=true,GangScheduling=false
nodes:
- role: control-plane
  kubeadmConfigPatches:
  - |
    kind: InitConfiguration
    nodeRegistration:
      kubeletExtraArgs:
        node-labels: "ingress-ready=true"
- role: worker
  kubeadmConfigPatches:
  - |
    kind: JoinConfiguration
    nodeRegistration:
      kubeletExtraArgs:
        node-labels: "example.com/pool=a,example.com/empty="
"""
    spec = parse_cluster_config(text, "kind.yaml")
    assert spec.runtime_config == {"scheduling.k8s.io/v1alpha2": "true", "resource.k8s.io/v1beta2": "true"}
    assert spec.feature_gates == {"DRADeviceTaintRules": True, "GangScheduling": False}
    assert spec.nodes[0].labels["ingress-ready"] == "true"
    assert spec.nodes[1].labels["example.com/pool"] == "a" and spec.nodes[1].labels["example.com/empty"] == ""
    assert "ingress-ready" not in spec.nodes[1].labels
    assert spec.ignored_fields == ["kubeadmConfigPatches", "nodes[0].kubeadmConfigPatches",
                                   "nodes[1].kubeadmConfigPatches"]


def test_disabling_generic_workload_turns_off_the_was_gates_that_depend_on_it():
    spec = parse_cluster_config(KIND_HEAD + "featureGates:\n  GenericWorkload: false\n", "kind.yaml")
    gates = FeatureGates(spec.feature_gates)
    assert spec.feature_gates == {"GenericWorkload": False}
    assert [g for g in WAS_GATES if gates.enabled(g)] == []


# --- errors: file, field path, what is allowed --------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    (KIND_HEAD + "nodes:\n- role: control-plane\n- rolez: worker\n",
     "kind.yaml: nodes[1].rolez: unknown field; allowed: role, image, labels, extraMounts, extraPortMappings, "
     "gpus, kubeadmConfigPatches, kubeadmConfigPatchesJSON6902"),
    (KIND_HEAD + "nodes:\n- role: master\n",
     'kind.yaml: nodes[0].role: unsupported value "master"; allowed: control-plane, worker'),
    (KIND_HEAD + "nodes:\n- role: worker\n",
     "kind.yaml: nodes: must contain at least one control-plane node"),
    (KIND_HEAD + "featureGates:\n  GangScheduling: \"yes\"\n",
     'kind.yaml: featureGates.GangScheduling: expected a boolean, got string "yes"'),
    (KIND_HEAD + "featureGates:\n  NoSuchGate: true\n",
     "kind.yaml: featureGates.NoSuchGate: unrecognized feature gate: NoSuchGate"),
    (KIND_HEAD + "featureGates:\n  DynamicResourceAllocation: false\n",
     "kind.yaml: featureGates.DynamicResourceAllocation: cannot set feature gate DynamicResourceAllocation to false, "
     "feature is locked to true"),
    (KIND_HEAD + "featureGates:\n  GenericWorkload: false\n  GangScheduling: true\n",
     "kind.yaml: featureGates: GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"),
    (KIND_HEAD + "nodes: {role: worker}\n", "kind.yaml: nodes: expected a list, got mapping"),
    (KIND_HEAD + "runtimeConfig:\n  api/alpha: maybe\n",
     'kind.yaml: runtimeConfig[api/alpha]: expected "true" or "false", got string "maybe"'),
    (KIND_HEAD + "name: Not_Valid\n", 'kind.yaml: name: invalid cluster name "Not_Valid": a lowercase RFC 1123 subdomain'),
    (KIND_HEAD + "nodes:\n- role: worker\n  labels:\n    bad key: x\n", "kind.yaml: nodes[0].labels[bad key]: invalid label key"),
    (KIND_HEAD + "networking:\n  apiServerPort: 70000\n", "kind.yaml: networking.apiServerPort: invalid port 70000"),
    (KIND_HEAD + "networking:\n  mtu: 1500\n", "kind.yaml: networking.mtu: unknown field; allowed: ipFamily, apiServerPort"),
    (KIND_HEAD + "nodes:\n- role: control-plane\n  image: 42\n", "kind.yaml: nodes[0].image: expected a string, got integer 42"),
    (KIND_HEAD + "nodez: []\n", "kind.yaml: nodez: unknown field; allowed: kind, apiVersion, name, nodes, networking"),
    ("apiVersion: kind.x-k8s.io/v1alpha4\n", "kind.yaml: kind: required; allowed: Cluster"),
    ("kind: Cluster\n", "kind.yaml: apiVersion: required; allowed: kind.x-k8s.io/v1alpha4, phalanx.dev/v1alpha1"),
    ("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha3\n",
     'kind.yaml: apiVersion: unsupported value "kind.x-k8s.io/v1alpha3"'),
    ("", "kind.yaml: empty config"),
    ("- a\n- b\n", "kind.yaml: expected a mapping at the top level, got list"),
    (KIND_HEAD + "nodes:\n- role: worker\n  role: control-plane\n",
     "kind.yaml: line 5, column 3: invalid YAML: found duplicate key \"role\""),
    (KIND_HEAD + "nodes:\n- role: worker\n   labels: x\n",
     "kind.yaml: line 5, column 10: invalid YAML: mapping values are not allowed"),
])
def test_kind_config_errors_name_the_file_and_field(text, expected):
    assert expected in problems(text)


@pytest.mark.parametrize("pools, expected", [
    ("- {name: gpu, count: 2, rolez: worker}", "nodePools[0].rolez: unknown field; allowed: name, count, role, labels, capacity, taints"),
    ("- {count: 2}", "nodePools[0].name: required"),
    ("- {name: Gpu}", 'nodePools[0].name: invalid pool name "Gpu"'),
    ("- {name: a}\n- {name: a}", 'nodePools[1].name: duplicate pool name "a"'),
    ("- {name: a, count: -1}", "nodePools[0].count: invalid count -1"),
    ("- {name: a, count: true}", "nodePools[0].count: expected an integer, got boolean"),
    ("- {name: a, count: 3, labels: {rack: 'r-{j}'}}", 'nodePools[0].labels.rack: invalid placeholder "{j}"'),
    ("- {name: a, count: 3, labels: {rack: 'r-{i//0}'}}", "nodePools[0].labels.rack: division by zero"),
    ("- {name: a, count: 3, labels: {rack: 'r-{i'}}", 'nodePools[0].labels.rack: unbalanced "{"'),
    ("- {name: a, count: 3, labels: {rack: 'r/{i}'}}",
     'nodePools[0].labels.rack: template gives invalid label value "r/0" for node 0'),
    ("- {name: a, capacity: {cpu: lots}}", 'nodePools[0].capacity.cpu: invalid quantity "lots"'),
    ("- {name: a, taints: [{key: k, effect: Never}]}",
     'nodePools[0].taints[0].effect: unsupported value "Never"; allowed: NoSchedule, PreferNoSchedule, NoExecute'),
    ("- {name: a, taints: [{key: k}]}", "nodePools[0].taints[0].effect: required"),
    ("- {name: a, role: master}", 'nodePools[0].role: unsupported value "master"'),
])
def test_phalanx_pool_errors_name_the_field(pools, expected):
    assert f"cluster.yaml: {expected}" in problems(PHALANX_HEAD + "nodePools:\n" + pools + "\n", "cluster.yaml")


@pytest.mark.parametrize("body, expected", [
    ("storage: etcd\n", 'storage: unsupported value "etcd"; allowed: sqlite, memory'),
    ("port: 99999\n", "port: invalid port 99999"),
    ("port: \"6443\"\n", 'port: expected an integer, got string "6443"'),
    ("listenAddress: my-host\n", 'listenAddress: invalid address "my-host"'),
    ("draDrivers: {name: gpu}\n", "draDrivers: expected a list, got mapping"),
    ("draDrivers: [gpu.example.com]\n", 'draDrivers[0]: expected a mapping, got string "gpu.example.com"'),
    ("nodes: []\n", "nodes: unknown field; allowed: apiVersion, kind, name, kubernetesVersion, featureGates, runtimeConfig, nodePools"),
])
def test_phalanx_config_errors_name_the_field(body, expected):
    assert f"cluster.yaml: {expected}" in problems(PHALANX_HEAD + body, "cluster.yaml")


def test_every_problem_is_reported_at_once():
    text = KIND_HEAD + "featureGates:\n  Nope: true\nnodes:\n- role: control-plane\n- rolez: worker\n- role: boss\n"
    lines = problems(text).splitlines()
    assert len(lines) == 3 and all(line.startswith("kind.yaml: ") for line in lines)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigFileError) as info:
        load_cluster_config(str(tmp_path / "nope.yaml"), None)
    assert str(info.value).startswith(f"{tmp_path / 'nope.yaml'}: cannot read config")


def test_invalid_name_flag_is_an_error(tmp_path):
    with pytest.raises(ConfigFileError) as info:
        load_cluster_config(write(tmp_path, KIND_HEAD), "Bad_Name")
    assert str(info.value).startswith('--name: invalid cluster name "Bad_Name"')


# --- phalanx's own format ------------------------------------------------------------------------


def test_phalanx_pools_build_templated_nodes():
    text = PHALANX_HEAD + """\
name: sim
storage: memory
listenAddress: 0.0.0.0
port: 7443
draDrivers:
- name: gpu.example.com
  devicesPerNode: 8
nodePools:
- name: cp
  role: control-plane
- name: gpu
  count: 40
  labels:
    example.com/rack: "rack-{i//16}"
    example.com/slot: "{i%16:02}"
    example.com/global: "n{n}"
  capacity:
    cpu: 96
    nvidia.com/gpu: "8"
  taints:
  - {key: example.com/gpu, effect: NoSchedule}
"""
    spec = parse_cluster_config(text, "cluster.yaml")
    assert (spec.name, spec.storage, spec.listen_address, spec.port) == ("sim", "memory", "0.0.0.0", 7443)
    assert spec.dra_drivers == [{"name": "gpu.example.com", "devicesPerNode": 8}]
    assert [n.name for n in spec.nodes[:3]] == ["cp-0", "gpu-0", "gpu-1"] and spec.nodes[-1].name == "gpu-39"
    gpu17 = next(n for n in spec.nodes if n.name == "gpu-17")
    assert gpu17.labels["example.com/rack"] == "rack-1"
    assert gpu17.labels["example.com/slot"] == "01"
    assert gpu17.labels["example.com/global"] == "n18"  # cp-0 is node 0 of the cluster
    assert gpu17.capacity == {"cpu": "96", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}
    assert gpu17.taints == [{"key": "example.com/gpu", "effect": "NoSchedule"}]
    assert spec.nodes[0].taints == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]


def test_phalanx_config_without_pools_gets_the_default_nodes():
    spec = parse_cluster_config(PHALANX_HEAD + "name: bare\n", "cluster.yaml")
    assert [n.name for n in spec.nodes] == ["bare-control-plane", "bare-worker"]
    assert spec.dra_drivers is None


def test_large_topology_example_has_unique_racks_per_sixteen_nodes():
    spec = load_cluster_config(str(EXAMPLES / "phalanx-gpu-topology.yaml"), None)
    gpus = [n for n in spec.nodes if n.name.startswith("gpu-")]
    assert len(gpus) == 4096
    racks = {n.labels["example.com/rack"] for n in gpus}
    zones = {n.labels["topology.kubernetes.io/zone"] for n in gpus}
    assert len(racks) == 256 and zones == {"zone-0", "zone-1", "zone-2", "zone-3"}
    assert gpus[4095].labels["example.com/block"] == "block-15"


@pytest.mark.parametrize("template, i, n, expected", [
    ("rack-{i//16}", 33, 0, "rack-2"),
    ("slot-{i%16}", 33, 0, "slot-1"),
    ("{i//4%2}", 6, 0, "1"),
    ("gpu-{i:04}", 7, 0, "gpu-0007"),
    ("{ n + 1 }", 0, 9, "10"),
    ("{i*2-1}", 3, 0, "5"),
    ("plain", 5, 5, "plain"),
    ("{{i}}", 1, 1, "{i}"),
])
def test_label_templates(template, i, n, expected):
    assert compile_template(template)(i, n) == expected


# --- feature gates ------------------------------------------------------------------------------


def test_feature_gate_table_defaults_and_was_defaults():
    gates = FeatureGates()
    assert all(gates.enabled(g) for g in WAS_GATES)
    assert not FeatureGates(was_defaults=False).enabled("GangScheduling")
    assert KNOWN_GATES["DRADeviceTaints"].stage == "BETA" and gates.enabled("DRADeviceTaints")
    assert not gates.enabled("WorkloadWithJob")
    assert gates.enabled("PodDisruptionConditions")  # removed upstream after GA: always on
    with pytest.raises(UnknownFeatureGate, match="unrecognized feature gate: PodDisruptionConditions"):
        FeatureGates({"PodDisruptionConditions": True})
    with pytest.raises(UnknownFeatureGate, match="unrecognized feature gate: Bogus"):
        gates.enabled("Bogus")


def test_explicit_gates_are_kept_and_validated():
    gates = FeatureGates({"GenericWorkload": False, "GangScheduling": True})
    assert gates.explicit == {"GenericWorkload": False, "GangScheduling": True}
    assert gates.validate() == [
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"]
    assert FeatureGates({"GangScheduling": False}).validate() == []
    assert not FeatureGates({"GangScheduling": False}).enabled("WorkloadAwarePreemption")


# --- draDrivers: simulated DRA drivers -----------------------------------------------------------


def dra(body: str, gates: str = "") -> str:
    return PHALANX_HEAD + gates + "draDrivers:\n" + body


@pytest.mark.parametrize("body, expected", [
    ("- {devicesPerNode: 2}\n", "draDrivers[0].name: required"),
    ("- {name: GPU}\n", 'draDrivers[0].name: invalid driver name "GPU"'),
    ("- {name: a.example.com, colour: red}\n",
     "draDrivers[0].colour: unknown field; allowed: name, deviceClasses, nodeSelector, devicesPerNode, "
     "devicePrefix, attributes, capacity, partitions, taints, pools"),
    ("- {name: a.example.com}\n- {name: a.example.com}\n", 'draDrivers[1].name: duplicate driver name "a.example.com"'),
    ("- {name: a.example.com, devicesPerNode: '8'}\n",
     'draDrivers[0].devicesPerNode: expected an integer, got string "8"'),
    ("- {name: a.example.com, devicesPerNode: -1}\n", "draDrivers[0].devicesPerNode: invalid count -1"),
    ("- {name: a.example.com, devicePrefix: GPU}\n", 'draDrivers[0].devicePrefix: invalid device prefix "GPU"'),
    ("- {name: a.example.com, devicePrefix: " + "g" * 62 + "}\n",
     'draDrivers[0]: device name "' + "g" * 62 + '-7" is invalid: must be no more than 63 characters'),
    ("- {name: a.example.com, nodeSelector: {'bad key!': x}}\n",
     "draDrivers[0].nodeSelector[bad key!]: invalid label key"),
    ("- {name: a.example.com, attributes: {driverVersion: {version: '1.0'}}}\n",
     'draDrivers[0].attributes.driverVersion: version: invalid version "1.0": must be a string compatible with '
     'semver.org spec 2.0.0'),
    ("- {name: a.example.com, attributes: {speed: 1.5}}\n",
     "draDrivers[0].attributes.speed: expected an integer, a boolean, a string or a typed mapping"),
    ("- {name: a.example.com, attributes: {9lives: 1}}\n", "draDrivers[0].attributes[9lives]: invalid attribute name"),
    ("- {name: a.example.com, attributes: {slot: 'x{j}'}}\n",
     'draDrivers[0].attributes.slot: invalid placeholder "{j}"'),
    ("- {name: a.example.com, attributes: {slot: {int: '{pool}'}}}\n",
     'draDrivers[0].attributes.slot: attribute slot: "{pool}" gives "phalanx-worker", not an integer'),
    ("- {name: a.example.com, attributes: {id: '{uuid}-{uuid}'}}\n",
     "draDrivers[0].attributes.id: gives"),
    ("- {name: a.example.com, capacity: {memory: lots}}\n", 'draDrivers[0].capacity.memory: invalid quantity "lots"'),
    ("- {name: a.example.com, partitions: -1}\n", "draDrivers[0].partitions: invalid partition count -1"),
    ("- {name: a.example.com, partitions: {counters: {memory: 1Gi}}}\n", "draDrivers[0].partitions.count: required"),
    ("- {name: a.example.com, partitions: {count: 2, counters: {Memory: 1Gi}}}\n",
     "draDrivers[0].partitions.counters.Memory: invalid counter name"),
    ("- {name: a.example.com, taints: [{key: k, effect: Never}]}\n",
     'draDrivers[0].taints[0].effect: unsupported value "Never"; allowed: NoSchedule, NoExecute, None'),
    ("- {name: a.example.com, taints: [{key: k}]}\n", "draDrivers[0].taints[0].effect: required"),
    ("- {name: a.example.com, taints: [{key: k, effect: NoSchedule, devices: [9]}]}\n",
     "draDrivers[0].taints[0].devices: device index 9 is out of range: devices are numbered 0 to 7"),
    ("- {name: a.example.com, deviceClasses: [{name: c.example.com, selectors: ['device.driver ==']}]}\n",
     "draDrivers[0].deviceClasses[0].selectors[0]: invalid CEL expression"),
    ("- {name: a.example.com, deviceClasses: [{selectors: ['true']}]}\n",
     "draDrivers[0].deviceClasses[0].name: required"),
    ("- {name: a.example.com}\n- {name: b.example.com, deviceClasses: [{name: a.example.com}]}\n",
     'draDrivers[1].deviceClasses[0].name: DeviceClass "a.example.com" is already defined by draDrivers[0]'),
    ("- {name: a.example.com, pools: [{name: p}]}\n",
     "draDrivers[0].pools[0]: one of allNodes: true, nodeSelector or perValueOf is required"),
    ("- {name: a.example.com, pools: [{name: p, allNodes: true, perValueOf: rack}]}\n",
     "draDrivers[0].pools[0]: allNodes: true cannot be combined with nodeSelector or perValueOf"),
    ("- {name: a.example.com, pools: [{name: 'p-{value}', allNodes: true}]}\n",
     "draDrivers[0].pools[0].name: the {value} placeholder needs perValueOf"),
    ("- {name: a.example.com, pools: [{name: 'p-{i}', allNodes: true}]}\n",
     "draDrivers[0].pools[0].name: a pool name can only use the {value} placeholder"),
    ("- {name: a.example.com, pools: [{name: P, allNodes: true}]}\n",
     'draDrivers[0].pools[0].name: invalid pool name "P"'),
    ("- {name: a.example.com, pools: [{name: p, allNodes: true}, {name: p, allNodes: true}]}\n",
     'draDrivers[0].pools[1].name: duplicate pool name "p"'),
    ("- {name: a.example.com, pools: [{name: p, allNodes: true, devices: many}]}\n",
     'draDrivers[0].pools[0].devices: expected an integer, got string "many"'),
    ("- {name: a.example.com, pools: [{name: p, allNodes: true, size: 3}]}\n",
     "draDrivers[0].pools[0].size: unknown field; allowed: name, nodeSelector, allNodes, perValueOf, devices"),
])
def test_dra_driver_errors_name_the_field(body, expected):
    assert f"cluster.yaml: {expected}" in problems(dra(body), "cluster.yaml")


@pytest.mark.parametrize("gate, body, expected", [
    ("DRAPartitionableDevices", "- {name: a.example.com, partitions: 2}\n",
     "draDrivers[0].partitions: partitionable devices need the feature gate DRAPartitionableDevices, "
     "which featureGates disables"),
    ("DRADeviceTaints", "- {name: a.example.com, taints: [{key: k, effect: NoSchedule}]}\n",
     "draDrivers[0].taints: device taints need the feature gate DRADeviceTaints, which featureGates disables"),
])
def test_dra_driver_features_need_their_gates(gate, body, expected):
    text = dra(body, gates=f"featureGates:\n  {gate}: false\n")
    assert f"cluster.yaml: {expected}" in problems(text, "cluster.yaml")


def test_dra_drivers_empty_list_disables_the_default():
    spec = parse_cluster_config(PHALANX_HEAD + "draDrivers: []\n", "cluster.yaml")
    assert spec.dra_drivers == []


def test_dra_drivers_are_kept_as_written():
    body = ("- name: nic.example.com\n  devicesPerNode: 2\n  attributes: {index: '{i}', firmware: {version: 1.2.3}}\n"
            "  pools:\n  - {name: 'fabric-{value}', perValueOf: example.com/rack, devices: 4}\n")
    spec = parse_cluster_config(dra(body), "cluster.yaml")
    assert spec.dra_drivers == [{"name": "nic.example.com", "devicesPerNode": 2,
                                 "attributes": {"index": "{i}", "firmware": {"version": "1.2.3"}},
                                 "pools": [{"name": "fabric-{value}", "perValueOf": "example.com/rack",
                                            "devices": 4}]}]


def test_dra_drivers_example_parses():
    spec = load_cluster_config(str(EXAMPLES / "phalanx-dra-drivers.yaml"), None)
    gpu, nic = resolve_drivers(spec.dra_drivers)
    assert gpu.partitions is not None and gpu.partitions.count == 2
    assert [c.name for c in gpu.device_classes] == ["gpu.example.com", "full-gpu.example.com"]
    assert [p.per_value_of for p in nic.pools] == ["example.com/rack", None]
    assert len([n for n in spec.nodes if n.name.startswith("gpu-")]) == 16


def test_phalanx_kubelet_delays_and_scheduler_settings():
    spec = parse_cluster_config(PHALANX_HEAD + "kubelet:\n  containerCreatingDelay: 2s\n  terminatingDelay: 500ms\n"
                                "scheduler:\n  permitWaitingTimeout: 10m\n  config:\n"
                                "    apiVersion: kubescheduler.config.k8s.io/v1\n    kind: KubeSchedulerConfiguration\n"
                                "    percentageOfNodesToScore: 50\n", "c.yaml")
    assert spec.kubelet == {"containerCreatingDelay": 2.0, "terminatingDelay": 0.5}
    assert spec.scheduler["permitWaitingTimeout"] == 600.0
    assert spec.scheduler["config"]["percentageOfNodesToScore"] == 50
    assert spec.scheduler.get("enabled", True) is True
    off = parse_cluster_config(PHALANX_HEAD + "scheduler:\n  enabled: false\n", "c.yaml")
    assert off.scheduler["enabled"] is False
    assert off.event_ttl == 3600.0
    assert parse_cluster_config(PHALANX_HEAD + "apiServer:\n  eventTTL: 10m\n", "c.yaml").event_ttl == 600.0


@pytest.mark.parametrize("body, expected", [
    ("kubelet:\n  slowness: 1s\n", "kubelet.slowness: unknown field; allowed: containerCreatingDelay, terminatingDelay"),
    ("kubelet:\n  containerCreatingDelay: soon\n", 'kubelet.containerCreatingDelay: invalid duration "soon"'),
    ("scheduler:\n  permitWaitingTimeout: never\n", 'scheduler.permitWaitingTimeout: invalid duration "never"'),
    ("scheduler:\n  enabled: nope\n", "scheduler.enabled: expected a boolean, got"),
    ("scheduler:\n  replicas: 2\n", "scheduler.replicas: unknown field; allowed: enabled, permitWaitingTimeout, config"),
    ("apiServer:\n  eventTTL: 0s\n", 'apiServer.eventTTL: invalid duration "0s": must be a Go duration > 0, e.g. 1h'),
    ("apiServer:\n  auditLog: on\n", "apiServer.auditLog: unknown field; allowed: eventTTL"),
])
def test_phalanx_kubelet_and_scheduler_errors(body, expected):
    assert f"c.yaml: {expected}" in problems(PHALANX_HEAD + body, "c.yaml")


# -- the cluster's Kubernetes version ------------------------------------------------------------

def test_no_config_gives_the_newest_release_and_says_why():
    from phalanx.cluster.config import load_cluster_config
    spec = load_cluster_config(None, "dev")
    assert (spec.kubernetes_version, spec.release) == ("v1.37.1", "1.37")
    assert spec.version_reason == "the newest release phalanx serves"
    assert load_cluster_config(None, "dev", image="kindest/node:v1.36.4").kubernetes_version == "v1.36.4"


def test_a_config_with_a_gate_1_37_merged_is_a_1_36_cluster():
    spec = parse_cluster_config(KIND_HEAD + "featureGates:\n  GangScheduling: true\n", "kind.yaml")
    assert spec.release == "1.36"
    assert spec.version_reason == "the config sets GangScheduling, which Kubernetes 1.37 merged into GenericWorkload"


def test_a_1_37_image_with_a_merged_gate_names_the_replacement():
    text = KIND_HEAD + "featureGates:\n  WorkloadAwarePreemption: true\nnodes:\n- role: control-plane\n  image: kindest/node:v1.37.1\n"
    with pytest.raises(ConfigFileError) as e:
        parse_cluster_config(text, "kind.yaml")
    assert str(e.value) == ("kind.yaml: featureGates.WorkloadAwarePreemption: feature gate WorkloadAwarePreemption "
                            "was removed in Kubernetes 1.37: it was merged into GenericWorkload; set "
                            "GenericWorkload instead")


def test_node_images_must_agree_on_the_release():
    text = KIND_HEAD + ("nodes:\n- role: control-plane\n  image: kindest/node:v1.37.1\n"
                        "- role: worker\n  image: kindest/node:v1.36.4@sha256:abc\n")
    with pytest.raises(ConfigFileError) as e:
        parse_cluster_config(text, "kind.yaml")
    assert str(e.value) == ("kind.yaml: nodes[1].image: Kubernetes 1.36 differs from nodes[0].image (Kubernetes "
                            "1.37): a phalanx cluster runs one Kubernetes release")


def test_image_flag_wins_over_the_config():
    text = KIND_HEAD + "nodes:\n- role: control-plane\n  image: kindest/node:v1.37.1\n"
    assert parse_cluster_config(text, "kind.yaml", image="kindest/node:v1.36.4").release == "1.36"


def test_phalanx_config_kubernetes_version():
    head = "apiVersion: phalanx.dev/v1alpha1\nkind: Cluster\n"
    assert parse_cluster_config(head + "kubernetesVersion: v1.36\n", "c.yaml").kubernetes_version == "v1.36.4"
    with pytest.raises(ConfigFileError) as e:
        parse_cluster_config(head + "kubernetesVersion: v1.38.0\n", "c.yaml")
    assert str(e.value) == "c.yaml: kubernetesVersion: Kubernetes 1.38 is not supported: phalanx serves 1.36 and 1.37"
