"""Revalidation policies: what to send with a request for a known page, when to check it next.

Pure module (standard library only): decisions are functions of stored state and
an injected ``now``; the middleware and pipelines only connect them to Scrapy
and the store.

Conditional requests follow RFC 9110 13.1: the stored entity tag goes out as
``If-None-Match`` and the stored ``Last-Modified`` as ``If-Modified-Since``; a
server that knows both evaluates ``If-None-Match`` and ignores the date, so the
tag is preferred whenever there is one. A ``304 Not Modified`` then means the
stored content is still what the page says (15.4.5): nothing is parsed or
rewritten.

Revisit intervals adapt to each page's observed changes, within the source's
``min_interval`` and ``max_interval``: a page seen changed is checked twice as
often, one seen unchanged half again less often; a new page starts at the
geometric mean of the bounds.

>>> conditional_headers('"v7"', "Mon, 01 Jan 2026 00:00:00 GMT")
{'If-None-Match': '"v7"', 'If-Modified-Since': 'Mon, 01 Jan 2026 00:00:00 GMT'}
>>> from datetime import timedelta as td
>>> next_interval(None, changed=True, min_interval=td(hours=1), max_interval=td(days=4))
35273
>>> next_interval(3600, changed=False, min_interval=td(hours=1), max_interval=td(days=4))
5400
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = [
    "CHANGED_FACTOR",
    "UNCHANGED_FACTOR",
    "Revisit",
    "conditional_headers",
    "iso_utc",
    "next_interval",
    "revisit",
]

#: A change halves the interval; an unchanged check stretches it by half.
CHANGED_FACTOR = 0.5
UNCHANGED_FACTOR = 1.5


def conditional_headers(etag: str | None, last_modified: str | None) -> dict[str, str]:
    """The validators to send for a stored page (empty when it has none)."""
    headers: dict[str, str] = {}
    if etag and etag.strip():
        headers["If-None-Match"] = etag.strip()
    if last_modified and last_modified.strip():
        headers["If-Modified-Since"] = last_modified.strip()
    return headers


def next_interval(
    previous: int | None, *, changed: bool, min_interval: timedelta, max_interval: timedelta
) -> int:
    """Seconds until the next check, from the previous interval and what this check saw.

    ``previous`` None (a page never scheduled) starts from the geometric mean of the
    bounds. The result is always within ``[min_interval, max_interval]``.
    """
    low = max(1, round(min_interval.total_seconds()))
    high = max(low, round(max_interval.total_seconds()))
    if previous is None or previous <= 0:
        base = math.sqrt(low * high)
        return min(high, max(low, round(base)))
    factor = CHANGED_FACTOR if changed else UNCHANGED_FACTOR
    return min(high, max(low, round(previous * factor)))


@dataclass(frozen=True, slots=True)
class Revisit:
    """When to check a page next, and the interval that gives it."""

    interval: int
    next_check_at: str


def revisit(
    now: datetime,
    previous: int | None,
    *,
    changed: bool,
    min_interval: timedelta,
    max_interval: timedelta,
) -> Revisit:
    """The next check of a page checked at ``now`` (an aware UTC datetime)."""
    interval = next_interval(
        previous, changed=changed, min_interval=min_interval, max_interval=max_interval
    )
    return Revisit(interval, iso_utc(now + timedelta(seconds=interval)))


def iso_utc(moment: datetime) -> str:
    """ISO-8601 UTC text ending in ``Z``, as every stored time (microseconds kept).

    >>> iso_utc(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    '2026-01-02T03:04:05.000000Z'
    """
    if moment.tzinfo is None:
        raise ValueError("iso_utc() needs an aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
