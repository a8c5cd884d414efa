"""Cron schedules as a CronJob reads them: five fields or a `@` descriptor, in a time zone.

Parsing and iteration are croniter's; this module adds what upstream's CronJob adds around
robfig/cron's standard parser: exactly five fields, `TZ=`/`CRON_TZ=` prefixes recognised (and
refused by validation), a `timeZone` from the tz database, and the schedule times in a window.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class ScheduleError(ValueError):
    """A schedule or time zone that cannot be used."""


def has_tz_prefix(schedule: str) -> bool:
    return schedule.startswith("TZ=") or schedule.startswith("CRON_TZ=")


def load_zone(name: str | None) -> tzinfo:
    """The tz database zone `name` (UTC when unset or empty)."""
    if not name:
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ScheduleError(f"unknown time zone {name}") from e


def check(schedule: str) -> None:
    """Raises ScheduleError unless `schedule` parses as upstream's standard cron parser would."""
    text = schedule.strip()
    if has_tz_prefix(text):
        text = text.split(None, 1)[1] if " " in text else ""
    if not text:
        raise ScheduleError("empty spec string")
    if text.startswith("@"):
        if text not in _DESCRIPTORS and not text.startswith("@every "):
            raise ScheduleError(f"unrecognized descriptor: {text}")
        if text.startswith("@every "):
            raise ScheduleError("@every is not supported")
        return
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {text}")
    if not croniter.is_valid(text):
        raise ScheduleError(f"failed to parse schedule: {text}")


class Schedule:
    """A parsed schedule in a zone; times are aware datetimes."""

    def __init__(self, schedule: str, zone: str | None = None):
        check(schedule)
        text = schedule.strip()
        if has_tz_prefix(text):
            prefix, text = text.split(None, 1)
            zone = zone or prefix.split("=", 1)[1]
        self.text = text
        self.zone = load_zone(zone)

    def next_after(self, t: datetime) -> datetime:
        it = croniter(self.text, t.astimezone(self.zone))
        nxt: datetime = it.get_next(datetime)
        return nxt.astimezone(timezone.utc)

    def prev_at_or_before(self, t: datetime) -> datetime:
        """The latest schedule time not after `t`."""
        it = croniter(self.text, (t + timedelta(microseconds=1)).astimezone(self.zone))
        prev: datetime = it.get_prev(datetime)
        return prev.astimezone(timezone.utc)
