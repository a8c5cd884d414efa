"""Retrying a read-modify-write that lost a race: client-go's `retry.RetryOnConflict`.

    async def set_finalizers(conflicted: bool) -> None:
        obj = await client.get(...) if conflicted else cached    # re-read after a conflict
        obj["metadata"]["finalizers"] = [...]
        await client.update(obj)

    await retry_on_conflict(set_finalizers)                      # 5 attempts, as DefaultRetry

`attempt(conflicted)` runs until it returns, raises anything but a 409 Conflict, or has hit
`steps` conflicts (the last conflict is raised). `conflicted` is False on the first call and True
after a conflict, so an attempt can start from a cached object and read the latest version only
when that was stale. There is no pause between attempts: a conflict means a newer version exists,
and reading it is the wait. An `AlreadyExists` (also 409) is not a conflict and is raised at once.
"""

from __future__ import annotations

from typing import Awaitable, Callable, TypeVar

from ..machinery.errors import StatusError

T = TypeVar("T")

# client-go's retry.DefaultRetry makes 5 attempts.
DEFAULT_STEPS = 5


def is_conflict(error: StatusError) -> bool:
    """A 409 whose reason is Conflict (a stale resourceVersion or a failed precondition)."""
    return error.code == 409 and error.reason == "Conflict"


async def retry_on_conflict(attempt: Callable[[bool], Awaitable[T]], *, steps: int = DEFAULT_STEPS) -> T:
    """`await attempt(conflicted)` until it does not raise a Conflict, at most `steps` times."""
    for n in range(steps):
        try:
            return await attempt(n > 0)
        except StatusError as e:
            if not is_conflict(e) or n == steps - 1:
                raise
    raise ValueError(f"steps must be at least 1, got {steps}")
