"""Revalidation policy: validators to send, and revisit intervals that adapt within bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge_crawler.sync.policy import conditional_headers, iso_utc, next_interval, revisit

HOUR, DAY = timedelta(hours=1), timedelta(days=1)


@pytest.mark.parametrize(
    ("etag", "last_modified", "headers"),
    [
        ('"a"', None, {"If-None-Match": '"a"'}),
        (
            None,
            "Mon, 01 Jan 2026 00:00:00 GMT",
            {"If-Modified-Since": "Mon, 01 Jan 2026 00:00:00 GMT"},
        ),
        ('W/"a"', "x", {"If-None-Match": 'W/"a"', "If-Modified-Since": "x"}),
        (None, None, {}),
        ("  ", "", {}),
    ],
)
def test_conditional_headers(
    etag: str | None, last_modified: str | None, headers: dict[str, str]
) -> None:
    assert conditional_headers(etag, last_modified) == headers


def test_intervals_halve_on_change_and_stretch_without() -> None:
    first = next_interval(None, changed=True, min_interval=HOUR, max_interval=4 * DAY)
    assert 3600 < first < 4 * 86400
    assert next_interval(first, changed=True, min_interval=HOUR, max_interval=4 * DAY) == round(
        first / 2
    )
    assert next_interval(first, changed=False, min_interval=HOUR, max_interval=4 * DAY) == round(
        first * 1.5
    )


@given(
    previous=st.one_of(st.none(), st.integers(min_value=-10, max_value=10**9)),
    changed=st.booleans(),
    low=st.integers(min_value=1, max_value=10**6),
    span=st.integers(min_value=0, max_value=10**7),
)
def test_intervals_stay_within_the_source_bounds(
    previous: int | None, changed: bool, low: int, span: int
) -> None:
    got = next_interval(
        previous,
        changed=changed,
        min_interval=timedelta(seconds=low),
        max_interval=timedelta(seconds=low + span),
    )
    assert low <= got <= low + span


def test_revisit_gives_the_time_of_the_next_check() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    plan = revisit(now, 7200, changed=False, min_interval=HOUR, max_interval=DAY)
    assert plan.interval == 10800 and plan.next_check_at == "2026-01-01T03:00:00.000000Z"
    with pytest.raises(ValueError):
        iso_utc(datetime(2026, 1, 1))
