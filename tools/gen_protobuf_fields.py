#!/usr/bin/env python3
"""Generate `src/phalanx/api/schemas/protobuf.json`: the Kubernetes protobuf field table that
`phalanx.apiserver.protobuf` decodes request bodies with.

Run by a developer when the kubectl version or the set of covered API packages changes; the
output is committed:

    .venv/bin/python tools/gen_protobuf_fields.py                 # writes the JSON file
    .venv/bin/python tools/gen_protobuf_fields.py --check         # exits 1 if it is stale
    .venv/bin/python tools/gen_protobuf_fields.py --kubectl PATH  # read another kubectl binary

Where the facts come from: the kubectl binary itself. A Go binary keeps the runtime type
descriptors of every type that reflection can reach, and the API types are all reachable (they
are registered in kubectl's scheme). Each struct descriptor lists its fields with their Go type
and their full struct tag, so the field `Containers []Container` of `k8s.io/api/core/v1.PodSpec`
comes out with `json:"containers" ... protobuf:"bytes,2,rep,name=containers"`. From those tags
and Go types this script derives, per OpenAPI schema name (`io.k8s.api.core.v1.PodSpec`, the
same names as `components.json`), field number -> JSON name, wire kind, repeated / map, value
type, and the Go JSON facts needed to rebuild the exact JSON document Go would print for the
decoded object (pointer or not, `omitempty`, `omitzero`, embedded-inline).

How the descriptors are found (Go 1.26 layout, checked at run time where possible): the
`.go.module` section holds `runtime.firstmoduledata`, whose `types` field is the base address
for name and type offsets and whose `typelinks` slice lists the composite types. Starting from
those, the walk follows pointer/slice/array/map element types and struct field types, reading
`abi.Type` (48 bytes: kind at +23, tflag at +20, name offset at +40), `abi.StructType` (package
path at +48, fields slice at +56), `abi.UncommonType` (package path offset) and
`abi.Name` (flag byte, varint length, bytes, optional varint-prefixed tag).

Value types in the table are either scalars (`string`, `bytes`, `bool`, `int32`, `int64`,
`uint32`, `uint64`, `double`) or a schema name. Seven schema names are well-known types
with their own encoding: `...meta.v1.Time`, `MicroTime`, `Duration`, `FieldsV1`,
`...api.resource.Quantity`, `...util.intstr.IntOrString`, `...runtime.RawExtension`.

The script cross-checks every covered schema against `components.json` and stops if a property
of a served schema has no protobuf field.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "phalanx" / "api" / "schemas" / "protobuf.json"
COMPONENTS = ROOT / "src" / "phalanx" / "api" / "schemas" / "components.json"
DEFAULT_KUBECTL = ROOT / ".venv" / "bin" / "kubectl"

# Go packages whose every struct is tabulated (plus everything they reach), and the API group
# each package's kinds belong to.
PACKAGE_GROUPS = {
    "k8s.io/api/core/v1": "",
    "k8s.io/api/apps/v1": "apps",
    "k8s.io/api/batch/v1": "batch",
    "k8s.io/api/autoscaling/v1": "autoscaling",
    "k8s.io/api/policy/v1": "policy",
    "k8s.io/api/coordination/v1": "coordination.k8s.io",
    "k8s.io/api/events/v1": "events.k8s.io",
    "k8s.io/api/scheduling/v1": "scheduling.k8s.io",
    "k8s.io/api/scheduling/v1alpha2": "scheduling.k8s.io",
    "k8s.io/api/resource/v1": "resource.k8s.io",
    "k8s.io/api/rbac/v1": "rbac.authorization.k8s.io",
    "k8s.io/api/storage/v1": "storage.k8s.io",
    "k8s.io/api/discovery/v1": "discovery.k8s.io",
    "k8s.io/api/authorization/v1": "authorization.k8s.io",
    "k8s.io/api/authentication/v1": "authentication.k8s.io",
    "k8s.io/api/networking/v1": "networking.k8s.io",
    "k8s.io/api/certificates/v1": "certificates.k8s.io",
    "k8s.io/api/flowcontrol/v1": "flowcontrol.apiserver.k8s.io",
    "k8s.io/apimachinery/pkg/apis/meta/v1": None,  # kinds valid in every group-version
}
META_PKG = "k8s.io/apimachinery/pkg/apis/meta/v1"
TYPE_META = (META_PKG, "TypeMeta")
# Kinds without an embedded TypeMeta that every group-version registers anyway
# (metav1.AddToGroupVersion): the watch event frame.
EXTRA_META_KINDS = {"WatchEvent"}

# Go types with a hand-written protobuf and JSON encoding.
WELL_KNOWN = {
    (META_PKG, "Time"), (META_PKG, "MicroTime"), (META_PKG, "Duration"), (META_PKG, "FieldsV1"),
    ("k8s.io/apimachinery/pkg/api/resource", "Quantity"),
    ("k8s.io/apimachinery/pkg/util/intstr", "IntOrString"),
    ("k8s.io/apimachinery/pkg/runtime", "RawExtension"),
}

# abi.Kind values.
BOOL, INT, INT8, INT16, INT32, INT64 = 1, 2, 3, 4, 5, 6
UINT, UINT8, UINT16, UINT32, UINT64 = 7, 8, 9, 10, 11
FLOAT32, FLOAT64 = 13, 14
ARRAY, CHAN, FUNC, INTERFACE, MAP, POINTER, SLICE, STRING, STRUCT = 17, 18, 19, 20, 21, 22, 23, 24, 25
SCALARS = {BOOL: "bool", INT32: "int32", INT64: "int64", UINT32: "uint32", UINT64: "uint64",
           FLOAT64: "double", STRING: "string", INT: "int64", UINT: "uint64"}
# Size of the kind-specific descriptor, after which abi.UncommonType follows.
DESCRIPTOR_SIZE = {POINTER: 56, SLICE: 56, STRUCT: 80, ARRAY: 72, MAP: 112, INTERFACE: 80, FUNC: 56, CHAN: 64}
# Wire type of each scalar value type (messages, strings and bytes are length-delimited).
SCALAR_WIRE = {"bool": "varint", "int32": "varint", "int64": "varint", "uint32": "varint", "uint64": "varint",
               "double": "fixed64"}
TFLAG_UNCOMMON, TFLAG_EXTRA_STAR = 1, 2
NAME_HAS_TAG, NAME_EMBEDDED = 2, 8


# ---------------------------------------------------------------------------------------------
# Reading Go type descriptors out of an ELF binary
# ---------------------------------------------------------------------------------------------
class GoBinary:
    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        self.sections = self._sections()
        self.segments = [(addr, off, size) for (typ, addr, off, size) in self.sections.values()
                         if typ == 1 and addr]  # PROGBITS mapped in memory
        self.types_base, self.typelinks = self._moduledata()

    def _sections(self) -> dict[str, tuple[int, int, int, int]]:
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2:
            raise SystemExit("not a 64-bit ELF binary")
        shoff = struct.unpack_from("<Q", d, 0x28)[0]
        entsize, count, names_index = struct.unpack_from("<HHH", d, 0x3A)
        raw = [struct.unpack_from("<IIQQQQ", d, shoff + i * entsize) for i in range(count)]
        names_off = raw[names_index][4]
        out = {}
        for name, typ, _flags, addr, off, size in raw:
            end = d.index(b"\0", names_off + name)
            out[d[names_off + name:end].decode()] = (typ, addr, off, size)
        return out

    def offset(self, addr: int) -> int:
        for start, off, size in self.segments:
            if start <= addr < start + size:
                return off + addr - start
        raise ValueError(f"address {addr:#x} is not in a loaded section")

    def u8(self, addr: int) -> int:
        return self.data[self.offset(addr)]

    def u64(self, addr: int) -> int:
        return struct.unpack_from("<Q", self.data, self.offset(addr))[0]

    def i32(self, addr: int) -> int:
        return struct.unpack_from("<i", self.data, self.offset(addr))[0]

    def _moduledata(self) -> tuple[int, list[int]]:
        for needed in (".go.module", ".rodata", ".typelink"):
            if needed not in self.sections:
                raise SystemExit(f"section {needed} not found: not a Go 1.26-era binary?")
        _, _, off, size = self.sections[".go.module"]
        words = struct.unpack_from(f"<{size // 8}Q", self.data, off)
        rodata = self.sections[".rodata"][1]
        rodata_end = rodata + self.sections[".rodata"][3]
        typelink_addr = self.sections[".typelink"][1]
        # moduledata: ..., types, etypes, rodata, ... and typelinks []int32 (ptr, len, cap).
        base = next((words[i] for i in range(len(words) - 2)
                     if words[i] == rodata and words[i + 2] == rodata and rodata < words[i + 1] <= rodata_end),
                    None)
        link = next((i for i in range(len(words) - 2) if words[i] == typelink_addr and words[i + 1] == words[i + 2]),
                    None)
        if base is None or link is None:
            raise SystemExit("runtime.firstmoduledata not recognised in .go.module")
        count = words[link + 1]
        return base, [base + self.i32(typelink_addr + 4 * j) for j in range(count)]

    def varint(self, addr: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            b = self.u8(addr)
            addr += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value, addr

    def name(self, addr: int) -> tuple[int, str, str]:
        """abi.Name at `addr`: (flags, name, tag)."""
        flags = self.u8(addr)
        length, p = self.varint(addr + 1)
        start = self.offset(p)
        text = self.data[start:start + length].decode()
        tag = ""
        if flags & NAME_HAS_TAG:
            tag_len, q = self.varint(p + length)
            tag_start = self.offset(q)
            tag = self.data[tag_start:tag_start + tag_len].decode()
        return flags, text, tag


@dataclass
class GoField:
    name: str
    tag: str
    embedded: bool
    type: "GoType"


@dataclass
class GoType:
    addr: int
    kind: int
    name: str = ""        # "PodSpec" for named types
    pkg: str = ""         # "k8s.io/api/core/v1"
    elem: "GoType | None" = None
    key: "GoType | None" = None
    fields: list[GoField] = field(default_factory=list)

    @property
    def qualified(self) -> tuple[str, str]:
        return (self.pkg, self.name)


class TypeReader:
    def __init__(self, binary: GoBinary) -> None:
        self.bin = binary
        self.cache: dict[int, GoType] = {}

    def read(self, addr: int) -> GoType:
        if addr in self.cache:
            return self.cache[addr]
        b = self.bin
        kind = b.u8(addr + 23) & 0x1F
        tflag = b.u8(addr + 20)
        t = GoType(addr, kind)
        self.cache[addr] = t
        _, text, _ = b.name(b.types_base + b.i32(addr + 40))
        if tflag & TFLAG_EXTRA_STAR:
            text = text[1:]
        if tflag & TFLAG_UNCOMMON:
            uncommon = addr + DESCRIPTOR_SIZE.get(kind, 48)
            pkg_off = b.i32(uncommon)
            if pkg_off:
                t.pkg = b.name(b.types_base + pkg_off)[1]
            t.name = text.rsplit(".", 1)[-1]
        if kind in (POINTER, SLICE, ARRAY):
            t.elem = self.read(b.u64(addr + 48))
        elif kind == MAP:
            t.key = self.read(b.u64(addr + 48))
            t.elem = self.read(b.u64(addr + 56))
        elif kind == STRUCT:
            fields_ptr, count = b.u64(addr + 56), b.u64(addr + 64)
            for j in range(count):
                entry = fields_ptr + 24 * j
                flags, fname, tag = b.name(b.u64(entry))
                t.fields.append(GoField(fname, tag, bool(flags & NAME_EMBEDDED), self.read(b.u64(entry + 8))))
        return t

    def all_structs(self) -> dict[tuple[str, str], GoType]:
        out: dict[tuple[str, str], GoType] = {}
        todo = [self.read(a) for a in self.bin.typelinks]
        seen: set[int] = set()
        while todo:
            t = todo.pop()
            if t.addr in seen:
                continue
            seen.add(t.addr)
            for child in (t.elem, t.key):
                if child is not None:
                    todo.append(child)
            if t.kind == STRUCT:
                todo.extend(f.type for f in t.fields)
                if t.name and t.pkg:
                    out.setdefault(t.qualified, t)
        return out


# ---------------------------------------------------------------------------------------------
# From Go types and tags to the table
# ---------------------------------------------------------------------------------------------
def schema_name(pkg: str, name: str) -> str:
    """`k8s.io/api/core/v1`, `PodSpec` -> `io.k8s.api.core.v1.PodSpec` (upstream's OpenAPI naming)."""
    domain, _, path = pkg.partition("/")
    return ".".join(list(reversed(domain.split("."))) + path.split("/") + [name])


def parse_tag(tag: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+):"([^"]*)"', tag))


class TableBuilder:
    def __init__(self, structs: dict[tuple[str, str], GoType]) -> None:
        self.structs = structs
        self.messages: dict[str, dict] = {}
        self.problems: list[str] = []

    def value_type(self, t: GoType, where: str) -> tuple[str, GoType | None]:
        """The table's value type for a (non-pointer, non-repeated) Go type, and the struct to
        tabulate next, if any."""
        if t.kind == POINTER:
            return self.value_type(t.elem, where)
        if t.kind == STRUCT:
            if not t.name:
                self.problems.append(f"{where}: anonymous struct")
                return "?", None
            name = schema_name(t.pkg, t.name)
            return name, None if t.qualified in WELL_KNOWN else t
        if t.kind == SLICE and t.elem.kind == UINT8:
            return "bytes", None
        if t.kind in SCALARS:
            return SCALARS[t.kind], None
        self.problems.append(f"{where}: unsupported Go kind {t.kind} ({t.pkg}.{t.name})")
        return "?", None

    def build(self, root: GoType) -> None:
        todo = [root]
        while todo:
            t = todo.pop()
            name = schema_name(t.pkg, t.name)
            if name in self.messages or t.qualified in WELL_KNOWN:
                continue
            self.messages[name] = msg = {"fields": {}}
            if any(f.embedded and f.type.qualified == TYPE_META for f in t.fields):
                msg["typeMeta"] = True
            for f in t.fields:
                entry, follow = self.field_entry(f, f"{name}.{f.name}")
                if entry is None:
                    continue
                number = entry.pop("number")
                if str(number) in msg["fields"]:
                    self.problems.append(f"{name}: field number {number} used twice")
                msg["fields"][str(number)] = entry
                todo.extend(follow)

    def field_entry(self, f: GoField, where: str) -> tuple[dict | None, list[GoType]]:
        tags = parse_tag(f.tag)
        proto = tags.get("protobuf")
        json_tag = tags.get("json")
        if proto is None or proto == "-":
            # Not on the wire. Harmless unless Go's JSON would print it even when zero (TypeMeta
            # comes from the envelope; untagged fields are unexported helpers).
            printed_when_zero = json_tag not in (None, "-") and "omitempty" not in json_tag.split(",")[1:]
            if printed_when_zero and f.type.qualified != TYPE_META:
                self.problems.append(f"{where}: JSON field without protobuf tag")
            return None, []
        parts = proto.split(",")
        number = int(parts[1])
        opts = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
        json_parts = (json_tag or "").split(",")
        json_name = json_parts[0]
        entry: dict = {"number": number}
        if json_name == "-":
            entry["name"] = None  # on the wire, not in JSON
        elif json_name == "" and f.embedded:
            entry["inline"] = True
            entry["name"] = opts.get("name", f.name)
        else:
            entry["name"] = json_name or f.name
        if "omitempty" in json_parts[1:]:
            entry["omitempty"] = True
        if "omitzero" in json_parts[1:]:
            entry["omitzero"] = True
        # The Go type, not the tag, decides the encoding: go-to-protobuf takes only the field
        # number (and name) from an existing tag, and some hand-written tags carry a stale wire
        # word (scheduling/v1 PriorityClass.Value says "bytes" for an int32 sent as a varint).
        t = f.type
        follow: list[GoType] = []
        if t.kind == POINTER:
            entry["pointer"] = True
            t = t.elem
        if t.kind == MAP and t.elem.kind == SLICE and t.elem.name and t.elem.elem.kind != UINT8:
            # map[string]ExtraValue (the `extra` of UserInfo and SubjectAccessReviewSpec): values are
            # wrapper messages the decoder does not read; the field is skipped on the wire, as an
            # unknown field is.
            return None, []
        if t.kind == MAP:
            key, _ = self.value_type(t.key, where)
            value, nxt = self.value_type(t.elem, where)
            if t.elem.kind == SLICE and t.elem.elem.kind != UINT8:
                self.problems.append(f"{where}: map of slices needs a wrapper message")
            entry.update(map=True, key=key, type=value)
        elif t.kind == SLICE and t.elem.kind != UINT8:
            if t.name:
                # A named slice type (meta/v1 Verbs) is its own message: `repeated items = 1`.
                entry["wrapped"] = True
            entry["repeated"] = True
            value, nxt = self.value_type(t.elem, where)
            entry["type"] = value
        else:
            value, nxt = self.value_type(t, where)
            entry["type"] = value
        if nxt is not None:
            follow.append(nxt)
        scalar_wire = SCALAR_WIRE.get(entry["type"], "bytes")
        entry["wire"] = "bytes" if entry.get("map") or entry.get("wrapped") else scalar_wire
        return entry, follow


def kubectl_version(path: Path) -> str:
    try:
        out = subprocess.run([str(path), "version", "--client", "-o", "json"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
        return json.loads(out)["clientVersion"]["gitVersion"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return "unknown"


def generate(kubectl: Path) -> tuple[dict, list[str]]:
    binary = GoBinary(kubectl)
    structs = TypeReader(binary).all_structs()
    builder = TableBuilder(structs)
    roots = sorted(k for k in structs if k[0] in PACKAGE_GROUPS)
    for key in roots:
        if any(f.tag and "protobuf:" in f.tag for f in structs[key].fields):
            builder.build(structs[key])
    kinds: dict[str, dict[str, str]] = {}
    for pkg, name in roots:
        t = structs[(pkg, name)]
        is_kind = any(f.embedded and f.type.qualified == TYPE_META for f in t.fields)
        if not is_kind and not (pkg == META_PKG and name in EXTRA_META_KINDS):
            continue
        if schema_name(pkg, name) not in builder.messages:
            continue
        group = PACKAGE_GROUPS[pkg]
        api_version = "*" if group is None else (pkg.rsplit("/", 1)[1] if group == "" else
                                                 f"{group}/{pkg.rsplit('/', 1)[1]}")
        kinds.setdefault(api_version, {})[name] = schema_name(pkg, name)
    problems = builder.problems + cross_check(builder.messages)
    table = {
        "source": {"kubectl": kubectl_version(kubectl),
                   "sha256": hashlib.sha256(binary.data).hexdigest()},
        "kinds": {v: dict(sorted(k.items())) for v, k in sorted(kinds.items())},
        "messages": dict(sorted(builder.messages.items())),
    }
    return table, problems


def json_names(msg: dict, messages: dict) -> set[str]:
    names = set()
    for f in msg["fields"].values():
        if f.get("inline"):
            names |= json_names(messages[f["type"]], messages)
        elif f["name"]:
            names.add(f["name"])
    return names


# Served schemas kubectl never sends as protobuf, so a missing Go struct or field is no gap:
# - the scheduling.k8s.io/v1alpha3 building blocks 1.36's components hold only because JobSet's
#   spec.scheduling embeds them (JobSet is not in kubectl's scheme: it goes as JSON; kubectl 1.36.4
#   has no Go type for them);
# - kube-aggregator's types (APIService) are not in kubectl either.
JSON_ONLY_PREFIXES = ("io.k8s.kube-aggregator.", "io.k8s.api.scheduling.v1alpha3.")
# Fields kubectl's Go types carry in a shape the table cannot hold (a map of slices needs a wrapper
# message): requests using them should come as JSON; the table records the rest of the type.
KNOWN_MISSING_FIELDS = {"io.k8s.api.certificates.v1.CertificateSigningRequestSpec": {"extra"}}


def cross_check(messages: dict) -> list[str]:
    """Every property of a schema phalanx serves must have a protobuf field (apiVersion and kind
    come from the envelope), but for what kubectl only ever sends as JSON (above)."""
    components = json.loads(COMPONENTS.read_text())
    problems = []
    for name, schema in sorted(components.items()):
        props = set(schema.get("properties", {})) - {"apiVersion", "kind"}
        if name not in messages:
            if props and name.startswith("io.k8s.") and not name.startswith(JSON_ONLY_PREFIXES):
                problems.append(f"{name}: no Go struct in the binary")
            continue
        missing = props - json_names(messages[name], messages) - KNOWN_MISSING_FIELDS.get(name, set())
        if missing:
            problems.append(f"{name}: properties without a protobuf field: {sorted(missing)}")
    return problems


def render(table: dict) -> str:
    return json.dumps(table, sort_keys=False, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed output is stale")
    parser.add_argument("--kubectl", type=Path, default=DEFAULT_KUBECTL, help="kubectl binary to read")
    parser.add_argument("--write-despite-problems", action="store_true",
                        help="write the table even if some served schemas lack protobuf fields "
                             "(the 1.37 kinds a 1.36 kubectl does not have; CSR spec.extra)")
    args = parser.parse_args(argv)
    table, problems = generate(args.kubectl)
    for p in problems:
        print("problem:", p, file=sys.stderr)
    if problems and not args.write_despite_problems:
        return 1
    text = render(table)
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"stale: {OUT}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {len(table['messages'])} messages, "
          f"{sum(len(k) for k in table['kinds'].values())} kinds to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
