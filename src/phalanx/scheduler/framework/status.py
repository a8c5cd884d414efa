"""Plugin results: the `Status` every extension point returns, with upstream's codes.

A plugin returns `None` for success (the fast path, as a nil `*Status` upstream) or a `Status`:

    Status.new(Code.Unschedulable, "Insufficient cpu")
    Status.new(Code.Skip)                        # PreFilter/PreScore: skip my Filter/Score
    as_status(err)                               # an internal error (Code.Error)

`status.plugin` names the plugin that produced a rejection; the framework fills it in.

`Status` objects are plain values: plugins may return one shared instance for a given verdict
(NodeResourcesFit returns the same "Insufficient cpu" status for every node) as long as they
set `plugin` on it themselves (`Status.new(...).with_plugin(NAME)`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Iterable, Optional, overload


class Code(IntEnum):
    """Status codes in upstream's order (k8s.io/kube-scheduler/framework Code)."""

    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5
    Pending = 6

    def __str__(self) -> str:  # "Unschedulable", as Code.String() upstream
        return self.name


_REJECTED = frozenset((Code.Unschedulable, Code.UnschedulableAndUnresolvable, Code.Pending))


class Status:
    """The result of running a plugin: a code, reasons, an optional error and the plugin name."""

    __slots__ = ("code", "_reasons", "err", "plugin")

    def __init__(self, code: Code = Code.Success, reasons: Iterable[str] = (), err: Optional[BaseException] = None,
                 plugin: Optional[str] = None):
        self.code = code
        self._reasons = list(reasons)
        self.err = err
        self.plugin = plugin

    @classmethod
    def new(cls, code: Code, *reasons: str) -> "Status":
        return cls(code, reasons)

    # -- upstream accessors ------------------------------------------------------------------
    def reasons(self) -> list[str]:
        if self.err is not None:
            return [str(self.err), *self._reasons]
        return list(self._reasons)

    def message(self) -> str:
        """The reasons joined with ", " (Status.Message())."""
        return ", ".join(self.reasons())

    def append_reason(self, reason: str) -> None:
        self._reasons.append(reason)

    def with_plugin(self, plugin: str) -> "Status":
        self.plugin = plugin
        return self

    def with_error(self, err: BaseException) -> "Status":
        self.err = err
        return self

    def is_success(self) -> bool:
        return self.code == Code.Success

    def is_wait(self) -> bool:
        return self.code == Code.Wait

    def is_skip(self) -> bool:
        return self.code == Code.Skip

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTED

    def as_error(self) -> Optional[Exception]:
        """None for Success/Wait/Skip; otherwise an exception carrying the message."""
        if self.code in (Code.Success, Code.Wait, Code.Skip):
            return None
        if isinstance(self.err, Exception):
            return self.err
        return StatusAsError(self)

    def __eq__(self, other: object) -> bool:
        if other is None:
            return self.code == Code.Success
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code == other.code and self.reasons() == other.reasons()
                and (self.plugin or "") == (other.plugin or ""))

    def __hash__(self) -> int:
        return hash((self.code, tuple(self.reasons())))

    def __repr__(self) -> str:
        plugin = f", plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({self.code}, {self.reasons()!r}{plugin})"

    def __str__(self) -> str:
        return self.message()


class StatusAsError(Exception):
    """A non-success Status seen as an error (Status.AsError())."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


@overload
def as_status(err: BaseException | str) -> Status: ...
@overload
def as_status(err: None) -> None: ...
@overload
def as_status(err: Optional[BaseException | str]) -> Optional[Status]: ...
def as_status(err: Optional[BaseException | str]) -> Optional[Status]:
    """Wrap an error in a Status with Code.Error (AsStatus); None stays None."""
    if err is None:
        return None
    if isinstance(err, str):
        err = RuntimeError(err)
    return Status(Code.Error, err=err)


def go_quote(name: str) -> str:
    """Go's %q for a plain name, as upstream quotes plugin names in its messages."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
