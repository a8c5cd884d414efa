"""Pod volumes and pod-level resource claims: names, one volume source each, the required
references of the common sources."""

from __future__ import annotations

from ..machinery.errors import FieldError, duplicate, forbidden, invalid, required
from ..machinery.names import dns1123_label_errors, dns1123_subdomain_errors
from .common import _dict

VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI",
    "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk",
    "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)


def validate_volumes(volumes: list, path: str) -> tuple[set[str], list[FieldError]]:
    """The volume names (for the containers' mounts) and what is wrong with the volumes."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, v in enumerate(volumes):
        vp = f"{path}[{i}]"
        v = _dict(v)
        name = v.get("name") or ""
        if not name:
            errs.append(required(f"{vp}.name"))
        else:
            errs += [invalid(f"{vp}.name", name, m) for m in dns1123_label_errors(name)]
            if name in names:
                errs.append(duplicate(f"{vp}.name", name))
            names.add(name)
        srcs = [k for k in VOLUME_SOURCES if v.get(k) is not None]
        if not srcs:
            errs.append(required(vp, "must specify a volume type"))
        for extra in srcs[1:]:
            errs.append(forbidden(f"{vp}.{extra}", "may not specify more than 1 volume type"))
        pvc = _dict(v.get("persistentVolumeClaim"))
        if v.get("persistentVolumeClaim") is not None and not pvc.get("claimName"):
            errs.append(required(f"{vp}.persistentVolumeClaim.claimName"))
        if v.get("configMap") is not None and not _dict(v["configMap"]).get("name"):
            errs.append(required(f"{vp}.configMap.name"))
        if v.get("secret") is not None and not _dict(v["secret"]).get("secretName"):
            errs.append(required(f"{vp}.secret.secretName"))
    return names, errs


def validate_pod_resource_claims(claims: list, path: str) -> list[FieldError]:
    """`spec.resourceClaims`: unique DNS-label names, each naming a claim or a claim template."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, claim in enumerate(claims):
        cp = f"{path}[{i}]"
        claim = _dict(claim)
        name = claim.get("name") or ""
        if not name:
            errs.append(required(f"{cp}.name"))
        elif name in names:
            errs.append(duplicate(f"{cp}.name", name))
        else:
            errs += [invalid(f"{cp}.name", name, m) for m in dns1123_label_errors(name)]
            names.add(name)
        has_claim = claim.get("resourceClaimName") is not None
        has_tmpl = claim.get("resourceClaimTemplateName") is not None
        if has_claim and has_tmpl:
            errs.append(invalid(cp, claim, "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                                           "may be specified"))
        if not has_claim and not has_tmpl:
            errs.append(invalid(cp, claim, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            val = claim.get(key)
            if val is not None:
                errs += [invalid(f"{cp}.{key}", val, m) for m in dns1123_subdomain_errors(str(val))]
    return errs
