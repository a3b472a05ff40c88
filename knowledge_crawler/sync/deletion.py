"""Deletions: the status of a stored page as its URL answers 404, 410 or 200 over time.

Pure module (standard library only): :func:`on_response` is a function of the
page's current :class:`PageStatus`, the HTTP status a check of it got and an
injected ``now`` (an aware UTC datetime). The caller stores what it answers; the
page's content is never touched here (a missing page keeps its content).

The machine (SPEC F-FETCH "Deletions"), per source ``missing_after`` and
``missing_window``:

* ``active`` --404--> ``suspected_missing``, with the observation as evidence;
* ``suspected_missing`` --404--> ``tombstoned`` once there are at least
  ``missing_after`` missing observations and the first and last of them are at
  least ``missing_window`` apart (else it stays suspected, with one more piece of
  evidence); the tombstone gets a reason such as ``missing (404) 3 times over 2 days``;
* 410, or a signal the caller knows to be authoritative (``signal``, what it was:
  an Atom feed's ``at:deleted-entry``, an API item flagged deleted; or
  ``authoritative=True``): ``tombstoned`` at once when ``gone_is_final`` (the
  default), else counted like a 404. The signal is the evidence (no HTTP status)
  and the reason (``deleted (SIGNAL)``);
* 2xx or 304, from any state: ``active``, evidence and reason cleared. Nothing
  else brings a tombstoned page back;
* anything else (no response, timeouts, 5xx, 429, 401/403, other 4xx, 3xx) is no
  evidence that the page is gone: the status stays exactly as it is. A transient
  failure is never mistaken for a deletion.

A tombstoned page that is still missing collects more evidence; its reason and
``tombstoned_at`` keep the first verdict.

When to check a missing page next (:func:`next_check`, within the source's
``min_interval`` and ``max_interval``): a first 404 brings the check forward to
``min_interval`` (an early verification: a page that was only briefly away comes
back soon, one that is gone is confirmed soon); a page still suspected is checked
when its window can close, never sooner than ``min_interval``; a tombstoned page
keeps being checked, at ``max_interval``, so one that comes back is restored. Evidence is bounded by
:func:`evidence_bound`: the first observation (it anchors the window) and the
most recent ones are kept. When some were dropped, a reason says "at least".

>>> from datetime import UTC, datetime, timedelta
>>> day = timedelta(days=1)
>>> t = on_response(PageStatus(), 404, datetime(2026, 1, 1, tzinfo=UTC),
...                 missing_after=2, missing_window=day)
>>> t.new_status, [e.status for e in t.evidence], t.created_tombstone
('suspected_missing', [404], False)
>>> t = on_response(t.page, 404, datetime(2026, 1, 3, tzinfo=UTC),
...                 missing_after=2, missing_window=day)
>>> t.new_status, t.reason, t.tombstoned_at
('tombstoned', 'missing (404) 2 times over 2 days', '2026-01-03T00:00:00.000000Z')
>>> t = on_response(t.page, 200, datetime(2026, 1, 4, tzinfo=UTC),
...                 missing_after=2, missing_window=day)
>>> t.new_status, t.evidence, t.reason, t.tombstoned_at
('active', (), None, None)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from knowledge_crawler.sync.policy import iso_utc

__all__ = [
    "ACTIVE",
    "MAX_EVIDENCE",
    "STATES",
    "SUSPECTED_MISSING",
    "TOMBSTONED",
    "Evidence",
    "PageStatus",
    "Transition",
    "evidence_bound",
    "evidence_from_json",
    "evidence_to_json",
    "json_objects",
    "next_check",
    "on_response",
    "span_words",
]

ACTIVE: Final = "active"
SUSPECTED_MISSING: Final = "suspected_missing"
TOMBSTONED: Final = "tombstoned"
#: The values of ``pages.status``.
STATES: tuple[str, ...] = (ACTIVE, SUSPECTED_MISSING, TOMBSTONED)

#: Observations kept as evidence (at least ``missing_after`` are always kept).
MAX_EVIDENCE = 10

_MISSING_STATUSES = frozenset({404, 410})


@dataclass(frozen=True, slots=True)
class Evidence:
    """One observation that a page is missing: the status its URL answered, and when;
    or, for an authoritative deletion signal, no status and the ``signal``."""

    status: int | None
    at: str
    signal: str | None = None


@dataclass(frozen=True, slots=True)
class PageStatus:
    """A page's deletion status as stored: one of :data:`STATES`, the missing observations
    behind it, why it was tombstoned and when (ISO UTC text)."""

    status: str = ACTIVE
    evidence: tuple[Evidence, ...] = ()
    reason: str | None = None
    tombstoned_at: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATES:
            raise ValueError(f"status: expected one of {', '.join(STATES)}, got {self.status!r}")

    @classmethod
    def restore(
        cls,
        status: str | None,
        evidence: str | None = None,
        reason: str | None = None,
        tombstoned_at: str | None = None,
    ) -> PageStatus:
        """A status from stored columns (``evidence`` as :func:`evidence_to_json` wrote it;
        a NULL status is ``active``).

        >>> stored = '[{"status":404,"at":"2026-01-01T00:00:00Z"}]'
        >>> page = PageStatus.restore("suspected_missing", stored)
        >>> page.status, page.evidence
        ('suspected_missing', (Evidence(status=404, at='2026-01-01T00:00:00Z', signal=None),))
        """
        return cls(status or ACTIVE, evidence_from_json(evidence), reason, tombstoned_at)


@dataclass(frozen=True, slots=True)
class Transition:
    """What :func:`on_response` decided: the new status, its evidence, the tombstone's reason
    and time, and whether this response created the tombstone (``tombstones_created``)."""

    new_status: str
    evidence: tuple[Evidence, ...]
    reason: str | None
    created_tombstone: bool
    tombstoned_at: str | None = None

    @property
    def page(self) -> PageStatus:
        """The new status as a :class:`PageStatus`, to store or to feed the next check."""
        return PageStatus(self.new_status, self.evidence, self.reason, self.tombstoned_at)


def evidence_bound(missing_after: int, max_evidence: int = MAX_EVIDENCE) -> int:
    """How many observations a page's evidence holds at most: ``max_evidence``, but never
    fewer than ``missing_after`` (the count must stay visible) nor 2 (first and last).

    >>> evidence_bound(2), evidence_bound(25), evidence_bound(1, max_evidence=0)
    (10, 25, 2)
    """
    return max(2, max_evidence, missing_after)


def on_response(
    current: PageStatus,
    status: int | None,
    now: datetime,
    *,
    missing_after: int,
    missing_window: timedelta,
    gone_is_final: bool = True,
    authoritative: bool = False,
    signal: str | None = None,
    max_evidence: int = MAX_EVIDENCE,
) -> Transition:
    """The page's status after a check of it at ``now`` answered ``status`` (None: no
    response at all, e.g. a timeout). See the module docstring for the rules.

    ``authoritative`` or ``signal``: the caller holds an authoritative deletion signal
    for the page; it is handled as a 410 whatever ``status`` is, except that a 2xx/304
    still means the page is there. Its evidence records ``status`` and the ``signal``
    (without a signal, a None status is recorded as 410).

    Never raises for any status or history, given an aware ``now``; out-of-range
    parameters are read as their nearest sensible value (``missing_after`` below 1
    as 1, a negative window as none).
    """
    if status is not None and (200 <= status < 300 or status == 304):
        return Transition(ACTIVE, (), None, False, None)
    authoritative = authoritative or signal is not None
    if not (authoritative or status in _MISSING_STATUSES):
        return Transition(
            current.status, current.evidence, current.reason, False, current.tombstoned_at
        )

    stamp = iso_utc(now)
    if signal is not None:
        observed = Evidence(status, stamp, signal)
    else:
        observed = Evidence(status if status is not None else 410, stamp)
    bound = evidence_bound(missing_after, max_evidence)
    if current.status == TOMBSTONED:  # still gone: more evidence, the first verdict stays
        evidence = _bounded((*current.evidence, observed), bound)
        return Transition(TOMBSTONED, evidence, current.reason, False, current.tombstoned_at)

    prior = _readable(current.evidence) if current.status == SUSPECTED_MISSING else ()
    observations = (*prior, (observed, now))
    evidence = _bounded(tuple(e for e, _ in observations), bound)

    if gone_is_final and (authoritative or status == 410):
        reason = f"deleted ({signal})" if signal is not None else _final_reason(status)
        return Transition(TOMBSTONED, evidence, reason, True, stamp)

    times = [when for _, when in observations]
    span = max(times) - min(times)
    if len(observations) >= max(1, missing_after) and span >= max(timedelta(0), missing_window):
        reason = _missing_reason(
            [e.status for e, _ in observations if e.status is not None],
            span,
            at_least=len(prior) >= bound,
        )
        return Transition(TOMBSTONED, evidence, reason, True, stamp)
    return Transition(SUSPECTED_MISSING, evidence, None, False, None)


def next_check(
    transition: Transition,
    now: datetime,
    *,
    min_interval: timedelta,
    max_interval: timedelta,
    missing_window: timedelta,
) -> str | None:
    """When to check a page next after ``transition`` (ISO UTC text); None when it is
    active again (the revisit policy schedules it then). See the module docstring.

    >>> from datetime import UTC, datetime, timedelta
    >>> now, hour, day = datetime(2026, 1, 1, tzinfo=UTC), timedelta(hours=1), timedelta(days=1)
    >>> t = on_response(PageStatus(), 404, now, missing_after=2, missing_window=day)
    >>> next_check(t, now, min_interval=hour, max_interval=7 * day, missing_window=day)
    '2026-01-01T01:00:00.000000Z'
    """
    low = max(timedelta(0), min_interval)
    high = max(low, max_interval)
    if transition.new_status == TOMBSTONED:
        return iso_utc(now + high)
    if transition.new_status != SUSPECTED_MISSING:
        return None
    seen = _readable(transition.evidence)
    if len(seen) <= 1:  # the first observation: verify early
        return iso_utc(now + low)
    closes = min(when for _, when in seen) + max(timedelta(0), missing_window)
    return iso_utc(now + min(high, max(low, closes - now)))


def _readable(evidence: Iterable[Evidence]) -> tuple[tuple[Evidence, datetime], ...]:
    """The observations whose time can be read (a damaged one only delays a tombstone)."""
    kept: list[tuple[Evidence, datetime]] = []
    for item in evidence:
        when = _parse_time(item.at)
        if when is not None:
            kept.append((item, when))
    return tuple(kept)


def _parse_time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _bounded(evidence: tuple[Evidence, ...], bound: int) -> tuple[Evidence, ...]:
    """The first observation and the ``bound - 1`` latest ones."""
    if len(evidence) <= bound:
        return evidence
    return (evidence[0], *evidence[len(evidence) - bound + 1 :])


def _final_reason(status: int | None) -> str:
    """``gone (410)``, or ``deleted (authoritative signal, 404)`` for another signal."""
    if status == 410:
        return "gone (410)"
    if status is None:
        return "deleted (authoritative signal)"
    return f"deleted (authoritative signal, {status})"


def _missing_reason(statuses: list[int], span: timedelta, *, at_least: bool) -> str:
    """``missing (404) 3 times over 2 days``; ``at least`` when evidence was dropped."""
    codes = ", ".join(str(code) for code in sorted(set(statuses)))
    count = len(statuses)
    if count == 1:
        return f"missing ({codes}) once"
    times = f"at least {count} times" if at_least else f"{count} times"
    return f"missing ({codes}) {times} over {span_words(span)}"


def span_words(span: timedelta) -> str:
    """A span in its largest whole unit, rounded down: ``2 days``, ``1 hour``, ``0 seconds``."""
    seconds = span.total_seconds()
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'' if n == 1 else 's'}"
    n = int(seconds)
    return f"{n} second{'' if n == 1 else 's'}"


# --------------------------------------------------------------------------- serialisation


def evidence_to_json(evidence: Iterable[Evidence]) -> str:
    """Evidence as JSON text for a TEXT column: ``[{"status": 404, "at": "..."}, ...]``,
    with ``"signal"`` for a deletion signal.

    >>> evidence_to_json([Evidence(404, "2026-01-01T00:00:00.000000Z")])
    '[{"status":404,"at":"2026-01-01T00:00:00.000000Z"}]'
    >>> evidence_to_json([Evidence(None, "2026-01-01T00:00:00.000000Z", "api deleted")])
    '[{"status":null,"at":"2026-01-01T00:00:00.000000Z","signal":"api deleted"}]'
    """
    rows: list[dict[str, object]] = []
    for item in evidence:
        row: dict[str, object] = {"status": item.status, "at": item.at}
        if item.signal is not None:
            row["signal"] = item.signal
        rows.append(row)
    return json.dumps(rows, separators=(",", ":"))


def json_objects(text: str | None) -> list[dict[str, Any]]:
    """The objects of a stored JSON array; nothing for text that is none (empty, not
    JSON, not an array), and what is not an object in it is passed over.

    >>> json_objects('[{"a": 1}, 2]'), json_objects("nonsense"), json_objects(None)
    ([{'a': 1}], [], [])
    """
    if not text or not text.strip():
        return []
    try:
        rows = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def evidence_from_json(text: str | None) -> tuple[Evidence, ...]:
    """Evidence from :func:`evidence_to_json` text. Lenient: NULL, empty or unreadable
    text gives no evidence and unreadable entries are skipped, since less evidence
    can only delay a tombstone, never cause one.

    >>> evidence_from_json('[{"status":410,"at":"2026-01-01T00:00:00Z"},{"status":"x"}]')
    (Evidence(status=410, at='2026-01-01T00:00:00Z', signal=None),)
    >>> evidence_from_json("not json"), evidence_from_json(None)
    ((), ())
    """
    found: list[Evidence] = []
    for row in json_objects(text):
        code, at, signal = row.get("status"), row.get("at"), row.get("signal")
        if not isinstance(at, str) or not (signal is None or isinstance(signal, str)):
            continue
        if isinstance(code, int) and not isinstance(code, bool):
            found.append(Evidence(code, at, signal))
        elif code is None and signal is not None:
            found.append(Evidence(None, at, signal))
    return tuple(found)
