"""retry_on_conflict: a read-modify-write retried on 409 Conflict, and only on that."""

from __future__ import annotations

import pytest

from phalanx.client.retry import retry_on_conflict
from phalanx.machinery import errors
from phalanx.machinery.errors import StatusError

CONFLICT = errors.conflict("configmaps", "", "c", errors.OBJECT_MODIFIED)
ALREADY_EXISTS = StatusError(409, "AlreadyExists", 'configmaps "c" already exists')
NOT_FOUND = StatusError(404, "NotFound", 'configmaps "c" not found')


def flaky(failures: list[StatusError]):
    """An attempt that raises `failures` in turn, then returns how many calls it took; it records
    the `conflicted` flag of each call."""
    calls: list[bool] = []

    async def attempt(conflicted: bool) -> int:
        calls.append(conflicted)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return len(calls)

    return attempt, calls


@pytest.mark.parametrize("failures, steps, calls", [
    ([], 5, [False]),
    ([CONFLICT], 5, [False, True]),
    ([CONFLICT] * 4, 5, [False, True, True, True, True]),
    ([CONFLICT] * 9, 10, [False] + [True] * 9),
])
async def test_conflicts_are_retried_with_a_fresh_read(failures, steps, calls):
    attempt, seen = flaky(failures)
    assert await retry_on_conflict(attempt, steps=steps) == len(calls)
    assert seen == calls


@pytest.mark.parametrize("failures, steps, raised, calls", [
    ([CONFLICT] * 5, 5, CONFLICT, 5),        # out of attempts: the last conflict
    ([CONFLICT, CONFLICT], 2, CONFLICT, 2),
    ([ALREADY_EXISTS], 5, ALREADY_EXISTS, 1),  # a 409 that is not a conflict is not retried
    ([NOT_FOUND], 5, NOT_FOUND, 1),
    ([CONFLICT, NOT_FOUND], 5, NOT_FOUND, 2),
])
async def test_other_errors_and_exhaustion_raise(failures, steps, raised, calls):
    attempt, seen = flaky(failures)
    with pytest.raises(StatusError) as info:
        await retry_on_conflict(attempt, steps=steps)
    assert info.value is raised
    assert len(seen) == calls
