"""RFC 3339 timestamps: `metav1.Time` and `MicroTime` both parse; what cannot be read is None."""

from datetime import datetime, timezone

import pytest

from phalanx.machinery.timestamps import now_rfc3339, now_rfc3339_micro, parse_rfc3339, rfc3339_seconds

T0 = datetime(2026, 12, 2, 16, 20, 20, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("text, seconds", [
    ("2026-12-02T16:20:20Z", T0),
    ("2026-12-02T16:20:20.5Z", T0 + 0.5),
    ("2026-12-02T16:20:20.123456789Z", T0 + 0.123456),
    ("2026-12-02T17:20:20+01:00", T0),
    ("2026-12-02T16:20:20.250000-00:00", T0 + 0.25),
])
def test_parse(text, seconds):
    assert rfc3339_seconds(text) == pytest.approx(seconds)
    assert parse_rfc3339(text).tzinfo is not None


@pytest.mark.parametrize("text", [None, "", 12, "2026-12-02", "2026-12-02 16:20:20Z", "2026-12-02T16:20:20",
                                  "2026-13-02T16:20:20Z", "yesterday"])
def test_unreadable_is_none(text):
    assert parse_rfc3339(text) is None
    assert rfc3339_seconds(text) is None


def test_format_round_trips():
    t = datetime(2026, 12, 2, 16, 20, 20, 500000, tzinfo=timezone.utc)
    assert now_rfc3339(t) == "2026-12-02T16:20:20Z"
    assert now_rfc3339_micro(t) == "2026-12-02T16:20:20.500000Z"
    assert rfc3339_seconds(now_rfc3339_micro(t)) == t.timestamp()


@pytest.mark.parametrize("text", ["2026-12-02T16:20:20Z\n", "2026-12-02", "2026-12-02 16:20:20Z", "2026-12-02T24:00:00Z"])
def test_what_is_not_rfc3339_is_none(text):
    assert parse_rfc3339(text) is None
