"""Go durations: what `time.ParseDuration` accepts and what `Duration.String()` writes."""

import pytest

from phalanx.machinery.durations import format_duration, format_duration_ns, parse_duration


@pytest.mark.parametrize("text, seconds", [
    ("30s", 30), ("1m30s", 90), ("5m", 300), ("500ms", 0.5), ("2h", 7200), ("1.5s", 1.5), (".5s", 0.5),
    ("1h2m3s", 3723), ("0", 0), ("-1m", -60), ("+2s", 2), ("100us", 1e-4), ("100µs", 1e-4), ("3ns", 3e-9),
    (" 10s ", 10),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "x", "10", "10 s", "1d", "s", "1m-1s", "-", "1.2.3s"])
def test_parse_duration_rejects_what_go_rejects(text):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (60, "1m0s"), (5, "5s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"), (1.5, "1.5s"),
    (900, "15m0s"), (-90, "-1m30s"),
])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("nanoseconds, text", [(1, "1ns"), (1500, "1.5µs"), (2_000_000, "2ms")])
def test_format_duration_below_a_second(nanoseconds, text):
    assert format_duration_ns(nanoseconds) == text
