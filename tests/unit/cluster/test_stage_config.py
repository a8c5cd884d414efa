"""`kubelet.stages` in phalanx's cluster config: KWOK Stage files read, checked and kept in the spec."""

from __future__ import annotations

import pytest

from phalanx.cluster.config import load_cluster_config
from phalanx.cluster.spec import ClusterSpec
from phalanx.machinery.strictyaml import ConfigFileError
from phalanx.nodes.stages import stages_from_config

STAGE = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: {name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .status.phase
      operator: {op}
      values: [Pending]
  next:
    delete: true
"""

CONFIG = """\
apiVersion: phalanx.dev/v1alpha1
kind: Cluster
kubelet:
  terminatingDelay: 2s
  stages:
{entries}
"""


def write(tmp_path, entries, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(CONFIG.format(entries="\n".join(f"  - {e}" for e in entries)))
    return str(cfg)


def test_stage_files_and_directories_relative_to_the_config(tmp_path):
    cfg = write(tmp_path, ["one.yaml", "more"], {
        "one.yaml": STAGE.format(name="a", op="In"),
        "more/b.yaml": STAGE.format(name="b", op="NotIn"), "more/c.yml": STAGE.format(name="c", op="In"),
        "more/notes.txt": "not a stage"})
    spec = load_cluster_config(cfg)
    assert spec.kubelet["terminatingDelay"] == 2.0
    assert [s.name for s in stages_from_config(spec.kubelet["stages"])] == ["a", "b", "c"]
    # kept in the spec: a restarted cluster runs the same stages without the files
    again = ClusterSpec.from_dict(__import__("json").loads(spec.to_json()))
    assert [s.name for s in stages_from_config(again.kubelet["stages"])] == ["a", "b", "c"]


def test_a_bad_stage_names_the_config_the_field_and_the_stage_file(tmp_path):
    cfg = write(tmp_path, ["bad.yaml"], {"bad.yaml": STAGE.format(name="broken", op="Matches")})
    with pytest.raises(ConfigFileError) as e:
        load_cluster_config(cfg)
    text = str(e.value)
    assert "cluster.yaml: kubelet.stages[0]:" in text and "bad.yaml" in text and "operator" in text


def test_a_missing_stage_file_is_named(tmp_path):
    cfg = write(tmp_path, ["nowhere.yaml"], {})
    with pytest.raises(ConfigFileError, match=r"kubelet.stages\[0\]: cannot read stage file .*nowhere.yaml"):
        load_cluster_config(cfg)
