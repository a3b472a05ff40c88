"""Points in time given on the command line (``--since``, ``--until``), as stored times.

A TIME is an ISO-8601 date or date-time (``2026-12-01``, ``2026-12-01T08:00``,
``2026-12-01T08:00:00Z``, ``2026-12-01 10:00+02:00``; no offset means UTC), a
duration back from now (``24h``, ``7d``, ``1h30m``, ``2 days``, optionally
followed by ``ago``), or ``now``, ``today`` or ``yesterday`` (midnight UTC).
It becomes the text the store keeps times in: ISO-8601 UTC with microseconds
and ``Z``, which orders as the times do.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import click

from knowledge_crawler.cli._common import BadInput
from knowledge_crawler.sources import parse_duration

__all__ = ["TIME_FORMS", "format_time", "parse_time", "time_callback"]

#: what a TIME may look like, for messages and help
TIME_FORMS = "2026-12-01, 2026-12-01T08:00:00Z, 24h, 7d or yesterday"

_HAS_UNIT = re.compile(r"[a-z]")


def format_time(moment: datetime) -> str:
    """``moment`` as a stored time: ISO-8601 UTC, microseconds, ``Z``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(value: str, *, now: datetime | None = None) -> datetime:
    """``value`` as an aware UTC datetime; :class:`ValueError` naming the accepted forms.

    >>> parse_time("2026-12-01T08:00:00+02:00").isoformat()
    '2026-12-01T06:00:00+00:00'
    >>> now = datetime(2026, 12, 2, 12, 30, tzinfo=UTC)
    >>> parse_time("24h", now=now).isoformat(), parse_time("yesterday", now=now).isoformat()
    ('2026-12-01T12:30:00+00:00', '2026-12-01T00:00:00+00:00')
    """
    now = (now or datetime.now(UTC)).astimezone(UTC)
    text = value.strip()
    if not text:
        raise ValueError(f"expected a time such as {TIME_FORMS}, got an empty string")
    for candidate in (text, text.upper()):
        try:
            moment = datetime.fromisoformat(candidate)
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ValueError(f"time {value!r} is out of range") from None
    word = text.lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"now": now, "today": midnight, "yesterday": midnight - timedelta(days=1)}
    if word in named:
        return named[word]
    word = word.removesuffix("ago").strip()
    if _HAS_UNIT.search(word):  # a bare number is no duration here: "2026" is no time
        try:
            return now - parse_duration(word)
        except (ValueError, OverflowError):
            pass
    raise ValueError(f"expected a time such as {TIME_FORMS}, got {value!r}")


def time_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click option callback: the option's TIME as stored-time text (None stays None).

    A bad TIME is :class:`BadInput`: exit 2 and one line naming the option.
    """
    if value is None:
        return None
    try:
        return format_time(parse_time(value))
    except (ValueError, OverflowError) as exc:
        option = param.opts[0] if param.opts else "TIME"
        raise BadInput(f"{option}: {exc}") from None
