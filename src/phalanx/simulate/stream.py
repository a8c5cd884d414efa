"""The workload stream of a scenario: inline templates, seeded generators and trace files, read from
the scenario's `workload:` list and merged into one stream of `JobArrival`s in arrival order.

    entries = read_workload(doc["workload"], "workload", reader, base_dir, horizon=86400.0)
    for arrival in merged_stream(entries, seed=7):     # sorted by arrival time, then by entry
        ...

Entries (times are Go durations, `90s`, `2h`):

    - template: {name: train, count: 100, every: 60s, start: 0s, pods: 8, gpusPerPod: 1, duration: 2h,
                 topology: rack, sharedClaim: true, kind: JobSet, priority: 100}
    - generator: {name: burst, arrivals: {poisson: {ratePerHour: 300}}, count: 20000, start: 0s, end: 24h,
                  pods: {choice: [1, 2, 4, 8], weights: [4, 3, 2, 1]},
                  duration: {lognormal: {median: 1h, sigma: 1}}, gpusPerPod: 1, topology: rack}
    - trace: {format: alibaba-pai-2020, path: ./pai, limit: 20000, timeScale: 1.0}

A generator's value fields take a constant or a distribution: `{choice: [...], weights: [...]}`
(weights optional), `{uniform: {min, max}}` (integers for counts), `{lognormal: {median, sigma}}`
and `{exponential: {mean}}` (durations). `sharedClaim` also takes `{probability: p}`. Arrivals are
`{poisson: {ratePerHour}}` (exponential gaps) or `{every: 30s}`; a generator stops after `count`
jobs or at `end` (default: the scenario's horizon). Each generator draws from its own
`random.Random` seeded with the scenario seed and the entry's index, so adding an entry leaves the
others' jobs as they were. Trace entries are read by `phalanx.simulate.traces.read` (imported when a
scenario uses one; docs/simulate-traces.md has the formats and the options: `limit`, `start`,
`end`, `timeScale`, `minGpus`, `includeFailed`, `strict`, `taskTable`), sorted by arrival.
"""

from __future__ import annotations

import bisect
import heapq
import importlib
import itertools
import math
import os
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator

from ..machinery.durations import parse_duration
from ..machinery.quantity import parse_quantity
from ..machinery.strictyaml import DocumentReader, got, is_int, key_path, quote
from .jobs import JobArrival

TEMPLATE_FIELDS = ("name", "count", "every", "start", "pods", "gpusPerPod", "cpuPerPod", "memoryPerPod", "duration",
                   "topology", "sharedClaim", "kind", "priority", "minCount", "labels")
GENERATOR_FIELDS = ("name", "arrivals", "count", "start", "end", "pods", "gpusPerPod", "cpuPerPod", "memoryPerPod",
                    "duration", "topology", "sharedClaim", "kind", "priority", "minCount", "labels")
TRACE_OPTIONS = {"limit": "limit", "timeScale": "time_scale", "start": "start", "end": "end", "minGpus": "min_gpus",
                 "includeFailed": "include_failed", "strict": "strict", "taskTable": "task_table"}
TRACE_FIELDS = ("format", "path", *TRACE_OPTIONS)
ENTRY_KINDS = ("template", "generator", "trace")
TRACES_MODULE = "phalanx.simulate.traces"  # the trace readers: read(format, path, **options) -> JobArrivals
JOB_KINDS = ("Job", "JobSet")
# JobArrival fields a variant may override for every job (`overrides:`), by their scenario names.
OVERRIDE_FIELDS = {"topology": "topology", "sharedClaim": "shared_claim", "priority": "priority", "kind": "kind",
                   "minCount": "min_count", "gpusPerPod": "gpus_per_pod", "cpuPerPod": "cpu_per_pod",
                   "memoryPerPod": "memory_per_pod"}

Sampler = Callable[[random.Random], Any]


# -- values and distributions ------------------------------------------------------------------------

def constant(value: Any) -> Sampler:
    return lambda rng: value


def read_seconds(value: Any, path: str, reader: DocumentReader, *, allow_none: bool = False) -> float | None:
    """A Go duration (`90s`, `1h30m`) or a number of seconds, >= 0."""
    if value is None and allow_none:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError as e:
            reader.error(path, str(e))
            return None
    else:
        reader.error(path, f"expected a duration (e.g. 90s, 1h30m), got {got(value)}")
        return None
    if seconds < 0:
        reader.error(path, f"must not be negative, got {quote(value)}")
        return None
    return seconds


def _read_weights(spec: dict, n: int, path: str, reader: DocumentReader) -> list[float] | None:
    weights = spec.get("weights")
    if weights is None:
        return None
    if not isinstance(weights, list) or len(weights) != n or \
            not all(isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0 for w in weights):
        reader.error(key_path(path, "weights"), f"expected {n} numbers >= 0 (one per choice)")
        return None
    if sum(weights) <= 0:
        reader.error(key_path(path, "weights"), "must not all be 0")
        return None
    return [float(w) for w in weights]


def _choice(spec: dict, path: str, reader: DocumentReader, read_one: Callable[[Any, str], Any]) -> Sampler | None:
    choices = spec.get("choice")
    if not isinstance(choices, list) or not choices:
        reader.error(key_path(path, "choice"), "expected a non-empty list")
        return None
    values = [read_one(v, f"{key_path(path, 'choice')}[{i}]") for i, v in enumerate(choices)]
    weights = _read_weights(spec, len(values), path, reader)
    if weights is None:
        return lambda rng: values[rng.randrange(len(values))]
    cumulative = list(itertools.accumulate(weights))
    total = cumulative[-1]
    return lambda rng: values[min(bisect.bisect_right(cumulative, rng.random() * total), len(values) - 1)]


def _single_key(value: dict, path: str, reader: DocumentReader, allowed: tuple[str, ...]) -> str | None:
    keys = [k for k in value if k != "weights"]
    if len(keys) != 1 or keys[0] not in allowed:
        reader.error(path, f"expected one of: {', '.join(allowed)}; got {', '.join(map(str, value)) or 'nothing'}")
        return None
    return str(keys[0])


def read_count(value: Any, path: str, reader: DocumentReader, minimum: int = 0) -> Sampler | None:
    """An integer, `{choice: [...], weights: [...]}` or `{uniform: {min, max}}`."""
    def one(v: Any, p: str) -> int:
        if not is_int(v) or v < minimum:
            reader.error(p, f"expected an integer >= {minimum}, got {got(v)}")
            return minimum
        return int(v)
    if not isinstance(value, dict):
        return constant(one(value, path))
    kind = _single_key(value, path, reader, ("choice", "uniform"))
    if kind == "choice":
        return _choice(value, path, reader, one)
    if kind == "uniform":
        bounds = value["uniform"] if isinstance(value["uniform"], dict) else {}
        low, high = one(bounds.get("min"), f"{path}.uniform.min"), one(bounds.get("max"), f"{path}.uniform.max")
        if high < low:
            reader.error(f"{path}.uniform.max", f"must be >= min ({low}), got {high}")
        return lambda rng: rng.randint(low, max(low, high))
    return None


def read_duration(value: Any, path: str, reader: DocumentReader) -> Sampler | None:
    """A Go duration, null (runs until the scenario ends), `{choice}`, `{uniform: {min, max}}`,
    `{lognormal: {median, sigma}}` or `{exponential: {mean}}`."""
    if not isinstance(value, dict):
        return constant(read_seconds(value, path, reader, allow_none=True))
    kind = _single_key(value, path, reader, ("choice", "uniform", "lognormal", "exponential"))
    params = value.get(kind) if kind else None
    params = params if isinstance(params, dict) else {}
    where = f"{path}.{kind}"
    if kind == "choice":
        return _choice(value, path, reader, lambda v, p: read_seconds(v, p, reader, allow_none=True))
    if kind == "uniform":
        low = read_seconds(params.get("min"), f"{where}.min", reader) or 0.0
        high = read_seconds(params.get("max"), f"{where}.max", reader) or 0.0
        return lambda rng: rng.uniform(low, max(low, high))
    if kind == "lognormal":
        median = read_seconds(params.get("median"), f"{where}.median", reader) or 1.0
        sigma = params.get("sigma", 1.0)
        if not isinstance(sigma, (int, float)) or isinstance(sigma, bool) or sigma < 0:
            reader.error(f"{where}.sigma", f"expected a number >= 0, got {got(sigma)}")
            sigma = 1.0
        mu = math.log(max(median, 1e-9))
        return lambda rng: rng.lognormvariate(mu, float(sigma))
    if kind == "exponential":
        mean = read_seconds(params.get("mean"), f"{where}.mean", reader) or 1.0
        return lambda rng: rng.expovariate(1.0 / max(mean, 1e-9))
    return None


def read_optional_text(value: Any, path: str, reader: DocumentReader) -> Sampler | None:
    """A string, null, or `{choice: [...], weights}` of strings and nulls (topology levels)."""
    def one(v: Any, p: str) -> str | None:
        if v is not None and not isinstance(v, str):
            reader.error(p, f"expected a string or null, got {got(v)}")
            return None
        return v
    if isinstance(value, dict):
        if not _single_key(value, path, reader, ("choice",)):
            return None
        sampler = _choice(value, path, reader, one)
        if sampler is not None:
            sampler.values = [v for v in value["choice"] if isinstance(v, str)]  # type: ignore[attr-defined]
        return sampler
    sampler = constant(one(value, path))
    sampler.values = [value] if isinstance(value, str) else []  # type: ignore[attr-defined]
    return sampler


def read_flag(value: Any, path: str, reader: DocumentReader) -> Sampler | None:
    """A boolean or `{probability: p}`."""
    if isinstance(value, bool):
        return constant(value)
    if isinstance(value, dict) and _single_key(value, path, reader, ("probability",)):
        p = value["probability"]
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
            reader.error(f"{path}.probability", f"expected a number between 0 and 1, got {got(p)}")
            return constant(False)
        return lambda rng: rng.random() < p
    if not isinstance(value, dict):
        reader.error(path, f"expected a boolean or {{probability: p}}, got {got(value)}")
    return None


def read_quantity(value: Any, path: str, reader: DocumentReader) -> str | None:
    text = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(text, str):
        reader.error(path, f"expected a quantity (e.g. 500m, 4Gi), got {got(value)}")
        return None
    try:
        parse_quantity(text)
    except ValueError as e:
        reader.error(path, f"invalid quantity {quote(text)}: {e}")
        return None
    return text


def read_kind(value: Any, path: str, reader: DocumentReader) -> str:
    if value not in JOB_KINDS:
        reader.error(path, f"supported values: {', '.join(map(quote, JOB_KINDS))}; got {quote(value)}")
        return "Job"
    return str(value)


def read_labels(value: Any, path: str, reader: DocumentReader) -> dict[str, str]:
    return reader.labels(value, path) if value is not None else {}


# -- the job shape shared by templates and generators ------------------------------------------------

@dataclass
class JobShape:
    """How to draw one job's attributes (constants for templates, distributions for generators)."""

    pods: Sampler = constant(1)
    gpus_per_pod: Sampler = constant(0)
    duration: Sampler = constant(None)
    topology: Sampler = constant(None)
    shared_claim: Sampler = constant(False)
    priority: Sampler = constant(None)
    min_count: Sampler = constant(None)
    cpu_per_pod: str = "1"
    memory_per_pod: str = "1Gi"
    kind: str = "Job"
    labels: dict[str, str] = field(default_factory=dict)

    def draw(self, rng: random.Random, name: str, arrival: float, source: str) -> JobArrival:
        pods = self.pods(rng)
        min_count = self.min_count(rng)
        return JobArrival(name=name, arrival=arrival, duration=self.duration(rng), pods=pods,
                          gpus_per_pod=self.gpus_per_pod(rng), cpu_per_pod=self.cpu_per_pod,
                          memory_per_pod=self.memory_per_pod, priority=self.priority(rng),
                          kind=self.kind, topology=self.topology(rng),  # type: ignore[arg-type]
                          shared_claim=self.shared_claim(rng),
                          min_count=None if min_count is None else min(min_count, pods),
                          source=source, labels=dict(self.labels))


def read_shape(entry: dict, path: str, reader: DocumentReader, *, distributions: bool) -> JobShape:
    """The job fields of a template (constants) or a generator (constants or distributions)."""
    shape = JobShape()

    def value(key: str, read: Callable[[Any, str, DocumentReader], Sampler | None], default: Sampler) -> Sampler:
        if key not in entry:
            return default
        raw = entry[key]
        if isinstance(raw, dict) and not distributions:
            reader.error(key_path(path, key), "a template takes a single value; distributions are for generators")
            return default
        return read(raw, key_path(path, key), reader) or default

    shape.pods = value("pods", lambda v, p, r: read_count(v, p, r, minimum=1), shape.pods)
    shape.gpus_per_pod = value("gpusPerPod", read_count, shape.gpus_per_pod)
    shape.duration = value("duration", read_duration, shape.duration)
    shape.topology = value("topology", read_optional_text, shape.topology)
    shape.shared_claim = value("sharedClaim", read_flag, shape.shared_claim)
    shape.priority = value("priority", lambda v, p, r: read_count(v, p, r, minimum=-2_000_000_000), shape.priority)
    shape.min_count = value("minCount", lambda v, p, r: read_count(v, p, r, minimum=1), shape.min_count)
    if "cpuPerPod" in entry:
        shape.cpu_per_pod = read_quantity(entry["cpuPerPod"], key_path(path, "cpuPerPod"), reader) or "1"
    if "memoryPerPod" in entry:
        shape.memory_per_pod = read_quantity(entry["memoryPerPod"], key_path(path, "memoryPerPod"), reader) or "1Gi"
    if "kind" in entry:
        shape.kind = read_kind(entry["kind"], key_path(path, "kind"), reader)
    shape.labels = read_labels(entry.get("labels"), key_path(path, "labels"), reader)
    return shape


# -- entries ------------------------------------------------------------------------------------------

@dataclass
class StreamEntry:
    """One `workload:` item: `arrivals(seed)` yields its jobs in arrival order."""

    kind: str  # template | generator | trace
    name: str
    path: str  # its field path in the scenario (`workload[2]`), for messages
    arrivals: Callable[[int], Iterator[JobArrival]]
    topologies: list[str] = field(default_factory=list)  # the levels its jobs may ask for (templates, generators)


def _entry_name(entry: dict, path: str, reader: DocumentReader, default: str) -> str:
    name = entry.get("name", default)
    if not isinstance(name, str) or not name:
        reader.error(key_path(path, "name"), f"expected a non-empty string, got {got(name)}")
        return default
    return name


def _levels(shape: JobShape) -> list[str]:
    return list(getattr(shape.topology, "values", []))


def read_template(entry: dict, path: str, reader: DocumentReader, index: int) -> StreamEntry:
    reader.fields(entry, path, TEMPLATE_FIELDS)
    name = _entry_name(entry, path, reader, f"template-{index}")
    count = entry.get("count", 1)
    if not is_int(count) or count < 0:
        reader.error(key_path(path, "count"), f"expected an integer >= 0, got {got(count)}")
        count = 0
    every = read_seconds(entry.get("every", 0), key_path(path, "every"), reader) or 0.0
    start = read_seconds(entry.get("start", 0), key_path(path, "start"), reader) or 0.0
    shape = read_shape(entry, path, reader, distributions=False)
    source = path

    def arrivals(seed: int) -> Iterator[JobArrival]:
        rng = random.Random(f"{seed}:{index}")
        for i in range(count):
            yield shape.draw(rng, f"{name}-{i}", start + i * every, f"{source} #{i}")
    return StreamEntry("template", name, path, arrivals, _levels(shape))


def _read_arrival_process(value: Any, path: str, reader: DocumentReader) -> Callable[[random.Random], float] | None:
    """The gap to the next arrival: `{poisson: {ratePerHour}}` or `{every: 30s}`."""
    if not isinstance(value, dict):
        reader.error(path, f"expected {{poisson: {{ratePerHour: N}}}} or {{every: DURATION}}, got {got(value)}")
        return None
    kind = _single_key(value, path, reader, ("poisson", "every"))
    if kind == "every":
        gap = read_seconds(value["every"], f"{path}.every", reader)
        if gap is not None and gap <= 0:
            reader.error(f"{path}.every", "must be > 0")
            return None
        return None if gap is None else constant(gap)
    if kind == "poisson":
        params = value["poisson"] if isinstance(value["poisson"], dict) else {}
        rate = params.get("ratePerHour")
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
            reader.error(f"{path}.poisson.ratePerHour", f"expected a number > 0, got {got(rate)}")
            return None
        per_second = float(rate) / 3600.0
        return lambda rng: rng.expovariate(per_second)
    return None


def read_generator(entry: dict, path: str, reader: DocumentReader, index: int, horizon: float) -> StreamEntry:
    reader.fields(entry, path, GENERATOR_FIELDS)
    name = _entry_name(entry, path, reader, f"generator-{index}")
    if "arrivals" not in entry:
        reader.error(key_path(path, "arrivals"), "required: {poisson: {ratePerHour: N}} or {every: DURATION}")
    gap = _read_arrival_process(entry.get("arrivals"), key_path(path, "arrivals"), reader) if "arrivals" in entry \
        else None
    count = entry.get("count")
    if count is not None and (not is_int(count) or count < 0):
        reader.error(key_path(path, "count"), f"expected an integer >= 0, got {got(count)}")
        count = 0
    start = read_seconds(entry.get("start", 0), key_path(path, "start"), reader) or 0.0
    end = read_seconds(entry.get("end"), key_path(path, "end"), reader, allow_none=True)
    end = horizon if end is None else end
    shape = read_shape(entry, path, reader, distributions=True)
    source = path

    def arrivals(seed: int) -> Iterator[JobArrival]:
        if gap is None:
            return
        rng = random.Random(f"{seed}:{index}")
        t = start + gap(rng)
        for i in itertools.count():
            if (count is not None and i >= count) or t >= end:
                return
            yield shape.draw(rng, f"{name}-{i}", t, f"{source} #{i}")
            t += gap(rng)
    return StreamEntry("generator", name, path, arrivals, _levels(shape))


def read_trace(entry: dict, path: str, reader: DocumentReader, index: int, base_dir: str) -> StreamEntry:
    reader.fields(entry, path, TRACE_FIELDS)
    fmt, file = entry.get("format"), entry.get("path")
    if reader.expect(fmt, key_path(path, "format"), "string"):
        formats = _trace_formats(key_path(path, "format"), reader)
        if formats is not None and fmt not in formats:
            reader.error(key_path(path, "format"), f"unsupported value {quote(fmt)}; allowed: {', '.join(formats)}")
    if reader.expect(file, key_path(path, "path"), "string") and isinstance(file, str):
        file = os.path.join(base_dir, os.path.expanduser(file))
        if not os.path.exists(file):  # a file, or a directory of a trace's tables
            reader.error(key_path(path, "path"), f"no such file or directory: {file}")
    options: dict[str, Any] = {}
    for key, option in TRACE_OPTIONS.items():
        if key not in entry:
            continue
        value = entry[key]
        if key in ("start", "end"):
            value = read_seconds(value, key_path(path, key), reader)
        elif key == "taskTable" and isinstance(value, str):
            value = os.path.join(base_dir, os.path.expanduser(value))
        options[option] = value
    name = f"{fmt}:{os.path.basename(str(file))}"

    def arrivals(seed: int) -> Iterator[JobArrival]:
        read = importlib.import_module(TRACES_MODULE).read
        jobs = sorted(read(str(fmt), str(file), **options), key=lambda a: a.arrival)
        yield from jobs
    return StreamEntry("trace", name, path, arrivals)


def _trace_formats(path: str, reader: DocumentReader) -> tuple[str, ...] | None:
    try:
        traces = importlib.import_module(TRACES_MODULE)
    except ImportError:
        reader.error(path, "trace files need phalanx.simulate.traces, which this installation does not have")
        return None
    return tuple(getattr(traces, "FORMATS", ())) or None


def read_workload(value: Any, path: str, reader: DocumentReader, base_dir: str, horizon: float) -> list[StreamEntry]:
    """The `workload:` list; every problem goes to `reader`."""
    entries: list[StreamEntry] = []
    if not reader.expect(value, path, "list"):
        return entries
    if not value:
        reader.error(path, "must list at least one template, generator or trace")
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in ENTRY_KINDS:
            reader.error(where, f"expected one of: {', '.join(ENTRY_KINDS)} (a mapping with one key)")
            continue
        kind, body = next(iter(item.items()))
        inner = f"{where}.{kind}"
        if not reader.expect(body, inner, "mapping"):
            continue
        if kind == "template":
            entries.append(read_template(body, inner, reader, i))
        elif kind == "generator":
            entries.append(read_generator(body, inner, reader, i, horizon))
        else:
            entries.append(read_trace(body, inner, reader, i, base_dir))
    return entries


# -- the merged stream --------------------------------------------------------------------------------

def merged_stream(entries: Iterable[StreamEntry], seed: int, overrides: dict[str, Any] | None = None,
                  horizon: float | None = None) -> Iterator[JobArrival]:
    """Every entry's jobs in arrival order (ties: the earlier entry first), with a variant's
    `overrides` applied and jobs arriving at or after `horizon` left out."""
    lazy = [_keyed(e.arrivals(seed), i) for i, e in enumerate(entries)]
    changes = {OVERRIDE_FIELDS[k]: v for k, v in (overrides or {}).items()}
    for _, arrival in heapq.merge(*lazy, key=lambda item: item[0]):
        if horizon is not None and arrival.arrival >= horizon:
            continue
        yield replace(arrival, **changes) if changes else arrival


def _keyed(arrivals: Iterator[JobArrival], index: int) -> Iterator[tuple[tuple[float, int, int], JobArrival]]:
    for n, a in enumerate(arrivals):
        yield (a.arrival, index, n), a
