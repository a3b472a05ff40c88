"""What discovery yields: :class:`Candidate` URLs with a normalised ``lastmod`` (pure).

Every adapter (sitemaps, feeds, robots.txt, APIs) turns untrusted bytes into
candidates through the helpers here, so they agree on three things:

* which URLs are kept: absolute ``http``/``https`` only, relative ones resolved
  against a base (:func:`absolute_http_url`);
* how a date reads: W3C datetime (sitemaps, Atom, ``dc:date``) or RFC 822 (RSS
  ``pubDate``), normalised to ISO-8601 UTC text ending in ``Z`` at whole seconds
  (:func:`normalise_lastmod`); what does not parse is ``None``, never an error;
* which ``lastmod`` is kept: one in the future beyond :data:`FUTURE_TOLERANCE` of
  an injected ``now`` is dropped (:func:`plausible_lastmod`), since a bogus
  ``2099-01-01`` would otherwise push an incremental cursor past every real
  change. ``lastmod`` only prioritises work; it never replaces validation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Literal
from urllib.parse import urljoin, urlsplit

from knowledge_crawler.errors import KcError

__all__ = [
    "DEFAULT_MAX_SIZE",
    "FUTURE_TOLERANCE",
    "ApiError",
    "Candidate",
    "CandidateKind",
    "Deletion",
    "DiscoveryError",
    "NotAFeed",
    "NotASitemap",
    "NotDiscoverable",
    "absolute_http_url",
    "format_utc",
    "merge_candidates",
    "normalise_lastmod",
    "parse_datetime",
    "plausible_lastmod",
]

CandidateKind = Literal["page", "sitemap"]

#: Largest body (after gzip decompression) any parser reads: the sitemap protocol's 50 MiB.
DEFAULT_MAX_SIZE = 50 * 1024 * 1024

#: How far in the future a ``lastmod`` may be (clock skew, time zones) and still be believed.
FUTURE_TOLERANCE = timedelta(days=1)


class DiscoveryError(KcError, ValueError):
    """A discovery input cannot be used; ``str(err)`` is one line saying why."""


class NotDiscoverable(DiscoveryError):
    """The bytes are not a sitemap, a feed or a robots.txt."""


class NotASitemap(NotDiscoverable):
    """The bytes are not an XML sitemap, a sitemap index or a plain-text sitemap."""


class NotAFeed(NotDiscoverable):
    """The bytes are not an RSS (0.9x, 1.0, 2.0) or Atom feed."""


class ApiError(DiscoveryError):
    """A page of a paginated JSON API cannot be read (bad JSON, items not a list, ...)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One URL found by discovery, not fetched yet.

    ``kind`` says what fetching it yields: a ``"page"`` to crawl or another
    ``"sitemap"`` to read. ``lastmod`` is ISO-8601 UTC text ending in ``Z``, or
    ``None`` when the source gave none (or an unusable one).

    >>> Candidate("https://example.com/a", "page", "2024-05-01T08:00:00Z").kind
    'page'
    """

    url: str
    kind: CandidateKind
    lastmod: str | None = None


@dataclass(frozen=True, slots=True)
class Deletion:
    """A page that discovery says its publisher deleted (an authoritative signal): an
    Atom ``at:deleted-entry`` (RFC 6721), an API item flagged deleted.

    ``at`` is when it was deleted (ISO-8601 UTC, ``Z``), None when not said; ``ref`` the
    source's own name for it (the Atom entry id), None when it has none.
    """

    url: str
    at: str | None = None
    ref: str | None = None


# W3C datetime (https://www.w3.org/TR/NOTE-datetime), leniently: a space for the
# ``T``, an offset without a colon or minutes, a comma before the fraction.
_W3C = re.compile(
    r"""
    (?P<year>\d{4})
    (?:-(?P<month>\d{1,2})
      (?:-(?P<day>\d{1,2})
        (?:[Tt\ ]+(?P<hour>\d{1,2}):(?P<minute>\d{2})
          (?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?
          \s*(?P<tz>[Zz]|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?
        )?
      )?
    )?
    """,
    re.VERBOSE,
)


def _w3c(text: str) -> datetime | None:
    m = _W3C.fullmatch(text)
    if m is None:
        return None
    g = m.groupdict()
    tz: timezone = UTC
    raw_tz = g["tz"]
    if raw_tz and raw_tz[0] in "+-":
        digits = raw_tz[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        tz = timezone(-offset if raw_tz[0] == "-" else offset)
    second = min(int(g["second"] or 0), 59)  # a leap second reads as :59
    micro = int((g["fraction"] or "0")[:6].ljust(6, "0"))
    return datetime(
        int(g["year"]),
        int(g["month"] or 1),
        int(g["day"] or 1),
        int(g["hour"] or 0),
        int(g["minute"] or 0),
        second,
        micro,
        tzinfo=tz,
    )


def parse_datetime(text: str | None) -> datetime | None:
    """Read a W3C datetime or an RFC 822 date as an aware UTC datetime; ``None`` if neither.

    A time without a zone is taken as UTC. Never raises.

    >>> parse_datetime("2024-05-01T10:00:00+02:00")
    datetime.datetime(2024, 5, 1, 8, 0, tzinfo=datetime.timezone.utc)
    >>> parse_datetime("Wed, 01 May 2024 10:00:00 GMT").isoformat()
    '2024-05-01T10:00:00+00:00'
    >>> parse_datetime("last tuesday") is None
    True
    """
    if not text:
        return None
    text = text.strip()
    if not text or len(text) > 100:
        return None
    try:
        parsed = _w3c(text)
        if parsed is None:
            parsed = parsedate_to_datetime(text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, TypeError, OverflowError, IndexError):
        return None


def format_utc(moment: datetime) -> str:
    """ISO-8601 UTC text ending in ``Z``, at whole seconds (so the text sorts as the time).

    >>> format_utc(datetime(2024, 5, 1, 8, 0, 0, 500000, tzinfo=UTC))
    '2024-05-01T08:00:00Z'
    """
    u = moment.astimezone(UTC) if moment.tzinfo else moment
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}Z"


def normalise_lastmod(text: str | None) -> str | None:
    """A sitemap ``lastmod`` or feed date as ISO-8601 UTC text (``...Z``), ``None`` if unusable.

    >>> normalise_lastmod("2024-05-01")
    '2024-05-01T00:00:00Z'
    >>> normalise_lastmod("2024-05-01T10:00:00.123+02:00")
    '2024-05-01T08:00:00Z'
    >>> normalise_lastmod("Tue, 30 Apr 2024 22:00:00 -0200")
    '2024-05-01T00:00:00Z'
    >>> normalise_lastmod("2024-13-45") is None
    True
    """
    if text is None or len(text) > 200:
        return None
    return _normalise(text.strip())


@lru_cache(maxsize=4096)  # a sitemap repeats the same few dates thousands of times
def _normalise(text: str) -> str | None:
    parsed = parse_datetime(text)
    return None if parsed is None else format_utc(parsed)


def plausible_lastmod(lastmod: str | None, now: datetime | None) -> str | None:
    """``lastmod`` unless it lies more than :data:`FUTURE_TOLERANCE` after ``now``.

    ``now`` is injected (``None`` keeps every value).

    >>> now = datetime(2024, 5, 1, tzinfo=UTC)
    >>> plausible_lastmod("2024-05-01T20:00:00Z", now)
    '2024-05-01T20:00:00Z'
    >>> plausible_lastmod("2099-01-01T00:00:00Z", now) is None
    True
    """
    if lastmod is None or now is None:
        return lastmod
    limit = now.astimezone(UTC) + FUTURE_TOLERANCE if now.tzinfo else now + FUTURE_TOLERANCE
    return None if lastmod > format_utc(limit) else lastmod


def absolute_http_url(raw: str | None, base: str | None = None) -> str | None:
    """``raw`` made absolute against ``base``, if it is then an ``http(s)`` URL with a host.

    Surrounding whitespace is dropped; anything else (``mailto:``, ``javascript:``,
    a relative URL without a base, a malformed one) is ``None``.

    >>> absolute_http_url(" /a?b=1 ", "https://example.com/dir/")
    'https://example.com/a?b=1'
    >>> absolute_http_url("mailto:x@example.com", "https://example.com/") is None
    True
    """
    if raw is None:
        return None
    raw = raw.strip()
    if not raw or len(raw) > 8192:
        return None
    try:
        url = urljoin(base, raw) if base else raw
        parts = urlsplit(url)
    except ValueError:  # e.g. a broken IPv6 literal
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return url


def merge_candidates(candidates: Iterable[Candidate]) -> tuple[Candidate, ...]:
    """Each ``(url, kind)`` once, in first-seen order, with the latest ``lastmod`` given for it.

    >>> merge_candidates([Candidate("https://e.com/", "page", "2024-01-01T00:00:00Z"),
    ...                   Candidate("https://e.com/", "page", "2024-02-01T00:00:00Z")])
    (Candidate(url='https://e.com/', kind='page', lastmod='2024-02-01T00:00:00Z'),)
    """
    merged: dict[tuple[str, str], Candidate] = {}
    for cand in candidates:
        key = (cand.url, cand.kind)
        seen = merged.get(key)
        if seen is None:
            merged[key] = cand
        elif cand.lastmod is not None and (seen.lastmod is None or cand.lastmod > seen.lastmod):
            merged[key] = Candidate(cand.url, cand.kind, cand.lastmod)
    return tuple(merged.values())
