"""The Kubernetes releases a phalanx cluster can be: 1.36 and 1.37.

A cluster is one release: it serves that release's API versions, feature gates and behaviour.
`release_of("v1.37.1")` is "1.37"; `git_version("1.37")` is what `/version` reports. The patch
version of each release is the one whose kubectl phalanx is tested with.
"""

from __future__ import annotations

import re

RELEASES = ("1.36", "1.37")
NEWEST = RELEASES[-1]
# The full version phalanx reports for each release (`/version`, `phalanx get clusters`).
PATCH_VERSIONS = {"1.36": "v1.36.4", "1.37": "v1.37.1"}

_VERSION_RE = re.compile(r"v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?(?P<rest>[-+][0-9A-Za-z.+-]*)?\Z")


class UnsupportedVersion(ValueError):
    pass


def parse_version(text: str) -> tuple[str, str]:
    """(release, full version) of `v1.37`, `1.37`, `v1.37.0` or `v1.37.0-rc.1`; raises
    UnsupportedVersion for anything else and for releases phalanx does not serve."""
    m = _VERSION_RE.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise UnsupportedVersion(f"invalid Kubernetes version {text!r}: expected vMAJOR.MINOR[.PATCH], e.g. v1.37.1")
    release = f"{int(m['major'])}.{int(m['minor'])}"
    if release not in RELEASES:
        raise UnsupportedVersion(f"Kubernetes {release} is not supported: phalanx serves "
                                 f"{' and '.join(RELEASES)}")
    if m["patch"] is None:
        return release, PATCH_VERSIONS[release]
    return release, f"v{release}.{int(m['patch'])}{m['rest'] or ''}"


def release_of(version: str) -> str:
    """"1.37" for "v1.37.1"."""
    return parse_version(version)[0]


def git_version(version: str) -> str:
    """What `/version` reports for a cluster of `version`: phalanx says it is phalanx."""
    return f"{version}-phalanx" if "-" not in version else version
