"""TIME on the command line (`changes --since`, `export --since`): forms, and clear errors."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime

import pytest

from knowledge_crawler.cli import _time as time_module
from knowledge_crawler.cli._time import format_time, parse_time

NOW = datetime(2026, 12, 2, 12, 30, 15, 250000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("2026-12-01", "2026-12-01T00:00:00.000000Z"),
        ("2026-12-01T08:00", "2026-12-01T08:00:00.000000Z"),  # naive: UTC
        ("2026-12-01T08:00:00Z", "2026-12-01T08:00:00.000000Z"),
        ("2026-12-01t08:00:00z", "2026-12-01T08:00:00.000000Z"),
        ("2026-12-01 10:00:00+02:00", "2026-12-01T08:00:00.000000Z"),
        ("2026-11-30T20:00:00-05:00", "2026-12-01T01:00:00.000000Z"),
        ("2026-12-01T08:00:00.5Z", "2026-12-01T08:00:00.500000Z"),
        ("  2026-12-01  ", "2026-12-01T00:00:00.000000Z"),
        ("24h", "2026-12-01T12:30:15.250000Z"),
        ("7d", "2026-11-25T12:30:15.250000Z"),
        ("1h30m", "2026-12-02T11:00:15.250000Z"),
        ("2 days ago", "2026-11-30T12:30:15.250000Z"),
        ("30 MIN", "2026-12-02T12:00:15.250000Z"),
        ("now", "2026-12-02T12:30:15.250000Z"),
        ("today", "2026-12-02T00:00:00.000000Z"),
        ("Yesterday", "2026-12-01T00:00:00.000000Z"),
    ],
)
def test_accepted_forms(text: str, stored: str) -> None:
    assert format_time(parse_time(text, now=NOW)) == stored


@pytest.mark.parametrize(
    "text", ["", "   ", "nope", "2026", "3600", "-5h", "24x", "2026-13-01", "99999999999d", "ago"]
)
def test_bad_times_name_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected a time such as 2026-12-01, .* yesterday"):
        parse_time(text, now=NOW)


def test_out_of_range_offset_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_time("0001-01-01T00:00+02:00")


def test_stored_form_orders_as_time_does() -> None:
    early = format_time(datetime(999, 1, 1, tzinfo=UTC))
    assert early == "0999-01-01T00:00:00.000000Z"
    day = format_time(parse_time("2026-01-01"))
    assert early < day < format_time(parse_time("2026-01-01T00:00:00.000001Z"))
    assert format_time(datetime(2026, 1, 1)) == "2026-01-01T00:00:00.000000Z"  # naive: UTC


def test_doctests() -> None:
    assert doctest.testmod(time_module).failed == 0
