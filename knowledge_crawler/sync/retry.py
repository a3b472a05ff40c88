"""Failed fetches: what a failure means, when to try again, and when to give up.

Pure module (standard library only): decisions are functions of the stored
attempt state of a URL, the new outcome, an injected ``now`` (an aware UTC
datetime) and injected randomness (``rand``, e.g. ``random.Random(7).random``).
The middleware and the store only connect them to Scrapy and ``fetch_attempts``.

What a failure means (:func:`classify`):

========================  ================  =============================================
outcome                   class             what happens (:func:`next_attempt`)
========================  ================  =============================================
2xx, 304                  ``OK``            ``reset``: the retry state is cleared
network error, timeout,   ``TRANSIENT``     ``retry`` after a backoff with full jitter;
5xx, 408, 421, 425                          ``dead_letter`` once ``max_attempts`` is reached
429, 503 + Retry-After    ``RATE_LIMITED``  as ``TRANSIENT``, waiting at least Retry-After;
                                            the caller also slows the host (:func:`slow_down`)
401, 403                  ``DENIED``        ``review``: recorded, never retried blindly
404                       ``MISSING``       ``missing``: the deletion policy decides
410                       ``GONE``          ``gone``: the deletion policy decides
other 4xx, other 3xx,     ``PERMANENT``     ``dead_letter`` at once: the same request
unusable URL scheme                         would get the same answer
========================  ================  =============================================

A status code wins over an error kind (a response was received). Unrecognised
codes are read by their class (RFC 9110 15: ``4xx`` as 400, ``5xx`` as 500);
codes outside 100-599 and *unknown error kinds* count as ``TRANSIENT``. That
choice is deliberate: retrying an error that turns out to be permanent costs at
most ``max_attempts`` fetches and ends in the dead-letter list under its error
kind, for review; the opposite mistake would give up on a page during a mere
outage. No failure class here is ever evidence about the page's content: only a
404 or a 410 feeds the deletion policy (:mod:`knowledge_crawler.sync.deletion`).

``max_attempts`` counts fetches, the first one included (the default 6 is one
fetch and five retries); rate-limited attempts count too, so that a host that
answers 429 forever cannot hold a URL forever. A dead-lettered URL stays
dead-lettered (further failures are recorded, no retry is scheduled) until a
later success resets it.

>>> from datetime import UTC, datetime
>>> now = datetime(2026, 1, 1, tzinfo=UTC)
>>> classify(503, None).value, classify(503, None, has_retry_after=True).value
('transient', 'rate_limited')
>>> parse_retry_after("120", now), parse_retry_after("Thu, 01 Jan 2026 00:02:00 GMT", now)
(120.0, 120.0)
>>> decision = next_attempt(None, Failure(503, "http_503"), now, RetryPolicy(), lambda: 0.5)
>>> decision.action, decision.delay, decision.retry_at, decision.state.attempts
(<Action.RETRY: 'retry'>, 2.5, '2026-01-01T00:00:02.500000Z', 1)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.sync.policy import iso_utc

__all__ = [
    "MAX_RETRY_AFTER",
    "PERMANENT_ERRORS",
    "SLOW_DOWN_FACTOR",
    "SLOW_DOWN_START",
    "TRANSIENT_ERRORS",
    "TRANSIENT_STATUSES",
    "UNREACHABLE_ERRORS",
    "Action",
    "AttemptDecision",
    "AttemptState",
    "Failure",
    "FailureClass",
    "RetryPolicy",
    "backoff",
    "classify",
    "limit_kind",
    "next_attempt",
    "parse_retry_after",
    "slow_down",
]

#: The longest wait a ``Retry-After`` header is believed for (seconds): one day.
MAX_RETRY_AFTER = 86_400.0

#: A host that answers 429 gets twice its download delay (and at least this many seconds).
SLOW_DOWN_FACTOR = 2.0
SLOW_DOWN_START = 1.0

#: 4xx codes that say "try again" rather than "this request is wrong".
TRANSIENT_STATUSES: frozenset[int] = frozenset({408, 421, 425})

#: Error kinds (exception class names, as ``fetch_error_kind`` gives them) of network
#: failures and timeouts: Twisted's, Scrapy's wrappers of them, the OS's and the browser's.
TRANSIENT_ERRORS: frozenset[str] = frozenset(
    {
        # timeouts
        "TimeoutError",
        "DownloadTimeoutError",
        "TCPTimedOutError",
        # refused, reset, lost connections
        "ConnectionRefusedError",
        "DownloadConnectionRefusedError",
        "ConnectError",
        "ConnectingCancelledError",
        "ConnectionLost",
        "ConnectionDone",
        "ConnectionResetError",
        "ConnectionAbortedError",
        "BrokenPipeError",
        "NoRouteError",
        "TunnelError",
        # responses that never came or came incomplete
        "ResponseNeverReceived",
        "ResponseFailed",
        "ResponseDataLossError",
        "PotentialDataLoss",
        "DownloadFailedError",
        # a cancelled download: a closing crawl cancels its requests (a size limit is
        # BodyTooLarge, see limit_kind)
        "DownloadCancelledError",
        "CancelledError",
        # name resolution
        "DNSLookupError",
        "CannotResolveHostError",
        "UnknownHostError",
        # OSError: also what an empty body gives the decompression middleware
        "OSError",
        # the browser (scrapy-playwright): a crashed page or browser is retried
        "TargetClosedError",
    }
)

#: Error kinds of a host that could not be reached at all (no name, no route, refused,
#: no answer to connect): a host that gives one of these for its robots.txt and then for
#: a page has not answered this crawl, and waiting in the crawl for it is not worth it.
UNREACHABLE_ERRORS: frozenset[str] = frozenset(
    {
        "ConnectionRefusedError",
        "DownloadConnectionRefusedError",
        "ConnectError",
        "NoRouteError",
        "TCPTimedOutError",
        "DNSLookupError",
        "CannotResolveHostError",
        "UnknownHostError",
    }
)

#: Error kinds that no retry can fix: the request itself cannot be made.
PERMANENT_ERRORS: frozenset[str] = frozenset(
    {"UnsupportedURLSchemeError", "NotSupported", "IgnoreRequest"}
    | {"TooManyRedirects", "BodyTooLarge"}
)

#: Scrapy's messages for a crawl limit the page itself broke, and the kind each is recorded
#: as: the same request would break it again.
_LIMIT_MESSAGES: tuple[tuple[str, str], ...] = (
    ("max redirections", "TooManyRedirects"),  # RedirectMiddleware (IgnoreRequest)
    ("exceeded DOWNLOAD_MAXSIZE", "BodyTooLarge"),  # decompression (IgnoreRequest)
    ("larger than download max size", "BodyTooLarge"),  # download (DownloadCancelledError)
)


def limit_kind(message: str) -> str | None:
    """The error kind of a failure that a crawl limit gave, from its message; None for others.

    >>> limit_kind("Expected to receive 2097152 bytes which is larger than download max size")
    'BodyTooLarge'
    >>> limit_kind("Getting http://x/ took longer than 180.0 seconds.") is None
    True
    """
    for needle, kind in _LIMIT_MESSAGES:
        if needle in message:
            return kind
    return None


_HTTP_KIND = re.compile(r"http_(\d{3})", re.ASCII)
_DELTA_SECONDS = re.compile(r"[+-]?\d+(?:\.\d+)?", re.ASCII)


# --------------------------------------------------------------------------- policy


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded exponential backoff: ``base`` seconds doubled per attempt, at most ``cap``,
    for at most ``max_attempts`` fetches of a URL (the first one included).

    >>> RetryPolicy(base=0)
    Traceback (most recent call last):
    ...
    ValueError: base: expected a finite number > 0, got 0
    """

    base: float = 5.0
    max_attempts: int = 6
    cap: float = 900.0

    def __post_init__(self) -> None:
        for name in _SETTINGS:
            problem = _problem(name, getattr(self, name))
            if problem:
                raise ValueError(f"{name}: {problem}")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | Any) -> RetryPolicy:
        """Read ``KC_RETRY_BASE_SECONDS``, ``KC_RETRY_MAX_ATTEMPTS`` and
        ``KC_RETRY_MAX_SECONDS`` from Scrapy settings or a plain mapping (text from
        ``-s NAME=VALUE`` is coerced; a missing one defaults). Raises
        :class:`~knowledge_crawler.errors.ConfigError` naming the setting.

        >>> RetryPolicy.from_settings({"KC_RETRY_MAX_ATTEMPTS": "3"})
        RetryPolicy(base=5.0, max_attempts=3, cap=900.0)
        >>> RetryPolicy.from_settings({"KC_RETRY_MAX_SECONDS": "soon"})
        Traceback (most recent call last):
        ...
        knowledge_crawler.errors.ConfigError: KC_RETRY_MAX_SECONDS: expected a number, got 'soon'
        """
        values: dict[str, Any] = {}
        for name, setting in _SETTINGS.items():
            raw = settings.get(setting)
            if raw is None:
                continue
            value = _coerce(setting, raw, integer=name == "max_attempts")
            problem = _problem(name, value)
            if problem:
                raise ConfigError(f"{setting}: {problem}")
            values[name] = value
        return cls(**values)


_SETTINGS: dict[str, str] = {
    "base": "KC_RETRY_BASE_SECONDS",
    "max_attempts": "KC_RETRY_MAX_ATTEMPTS",
    "cap": "KC_RETRY_MAX_SECONDS",
}


def _problem(name: str, value: object) -> str | None:
    """What is wrong with a policy field's value, or None."""
    if name == "max_attempts":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"expected an integer >= 1, got {value!r}"
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return f"expected a finite number > 0, got {value!r}"
    return None


def _coerce(setting: str, raw: Any, *, integer: bool) -> int | float:
    what = "an integer" if integer else "a number"
    if isinstance(raw, bool):
        raise ConfigError(f"{setting}: expected {what}, got {raw!r}")
    try:
        text = raw.strip() if isinstance(raw, str) else raw
        if integer and isinstance(text, float) and text.is_integer():
            text = int(text)
        value: int | float = int(text) if integer else float(text)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{setting}: expected {what}, got {raw!r}") from None
    return value


# --------------------------------------------------------------------------- classification


class FailureClass(StrEnum):
    """What the outcome of a fetch means for retrying it (see the module table)."""

    OK = "ok"  #: 2xx or 304: the fetch worked
    TRANSIENT = "transient"  #: network error, timeout, 5xx: try again later
    RATE_LIMITED = "rate_limited"  #: 429 (or 503 with Retry-After): later, and slower
    DENIED = "denied"  #: 401, 403: recorded for review, no blind retries
    MISSING = "missing"  #: 404: evidence for the deletion policy
    GONE = "gone"  #: 410: the page was removed on purpose
    PERMANENT = "permanent"  #: the same request would get the same answer


def classify(
    status: int | None, error_kind: str | None, *, has_retry_after: bool = False
) -> FailureClass:
    """The class of a fetch outcome: an HTTP ``status`` (None when no response came) and
    an ``error_kind`` (an exception class name, dotted or not, or ``http_NNN``).

    ``has_retry_after``: the response carried a usable ``Retry-After`` (it turns a 503
    into ``RATE_LIMITED``).

    >>> [classify(s, None).value for s in (200, 304, 401, 404, 410, 400, 429, 500)]
    ['ok', 'ok', 'denied', 'missing', 'gone', 'permanent', 'rate_limited', 'transient']
    >>> classify(None, "twisted.internet.error.TCPTimedOutError").value
    'transient'
    >>> classify(None, "http_403").value, classify(None, "UnsupportedURLSchemeError").value
    ('denied', 'permanent')
    """
    if status is None and error_kind:
        matched = _HTTP_KIND.fullmatch(error_kind.strip())
        if matched:
            status = int(matched.group(1))
    if status is not None:
        return _classify_status(status, has_retry_after=has_retry_after)
    kind = (error_kind or "").strip().rsplit(".", 1)[-1]
    if kind in PERMANENT_ERRORS:
        return FailureClass.PERMANENT
    if kind in TRANSIENT_ERRORS:
        return FailureClass.TRANSIENT
    return FailureClass.TRANSIENT  # unknown: retried, within max_attempts (module docstring)


def _classify_status(status: int, *, has_retry_after: bool) -> FailureClass:
    if 200 <= status < 300 or status == 304:
        return FailureClass.OK
    if status == 429 or (status == 503 and has_retry_after):
        return FailureClass.RATE_LIMITED
    if status in (401, 403):
        return FailureClass.DENIED
    if status == 404:
        return FailureClass.MISSING
    if status == 410:
        return FailureClass.GONE
    if status in TRANSIENT_STATUSES or 500 <= status < 600:
        return FailureClass.TRANSIENT
    if 300 <= status < 500:  # a redirect that could not be followed, a request refused
        return FailureClass.PERMANENT
    return FailureClass.TRANSIENT  # 1xx (an interim answer) and codes without a class


# --------------------------------------------------------------------------- timing


def parse_retry_after(
    value: str | None, now: datetime, *, max_delay: float = MAX_RETRY_AFTER
) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110 10.2.3), or None.

    Accepts delta-seconds and an HTTP-date: the IMF-fixdate and the obsolete RFC 850
    and asctime forms (a date without a zone is GMT). A negative delay or a date in
    the past gives 0; a delay above ``max_delay`` gives ``max_delay``; anything
    unreadable gives None (as if the header were absent).

    >>> from datetime import UTC, datetime
    >>> now = datetime(1994, 11, 6, 8, 49, 0, tzinfo=UTC)
    >>> [parse_retry_after(v, now) for v in ("Sunday, 06-Nov-94 08:49:37 GMT",
    ...                                      "Sun Nov  6 08:49:37 1994", "-3", "soon", None)]
    [37.0, 37.0, 0.0, None, None]
    >>> parse_retry_after("9999999", now)
    86400.0
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    seconds: float
    if _DELTA_SECONDS.fullmatch(text):
        seconds = float(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - _aware(now)).total_seconds()
    return min(max(0.0, seconds), max(0.0, max_delay))


def backoff(attempt: int, policy: RetryPolicy, rand: Callable[[], float]) -> float:
    """Seconds to wait before retrying after failed attempt number ``attempt`` (1-based):
    exponential backoff with full jitter, ``rand() * min(cap, base * 2 ** (attempt - 1))``.

    >>> [backoff(n, RetryPolicy(), lambda: 1.0) for n in (1, 2, 3, 9, 10_000)]
    [5.0, 10.0, 20.0, 900.0, 900.0]
    """
    if attempt < 1:
        raise ValueError(f"attempt: expected an integer >= 1, got {attempt!r}")
    exponent = min(attempt - 1, 1000)  # 2.0 ** 1024 overflows; the cap is long reached
    ceiling = min(policy.cap, policy.base * 2.0**exponent)
    return min(1.0, max(0.0, rand())) * ceiling


def slow_down(
    current_delay: float,
    retry_after: float | None,
    min_delay: float,
    max_delay: float,
    *,
    concurrency: int = 1,
) -> float:
    """The new download delay of a host that answered 429 (or 503 with Retry-After).

    Twice the current delay (:data:`SLOW_DOWN_START` seconds when it had none), and
    at least ``retry_after / concurrency``: the host's slot then sends no more than
    ``concurrency`` requests per ``retry_after`` seconds. The result is kept within
    ``[min_delay, max_delay]`` (``max_delay`` below ``min_delay`` counts as
    ``min_delay``). AutoThrottle, or the caller, brings it down again.

    >>> slow_down(0.0, None, 0.0, 60.0), slow_down(2.0, None, 0.0, 60.0)
    (1.0, 4.0)
    >>> slow_down(2.0, 30.0, 0.0, 60.0, concurrency=2), slow_down(40.0, None, 0.0, 60.0)
    (15.0, 60.0)
    """
    current = current_delay if math.isfinite(current_delay) and current_delay > 0 else 0.0
    wanted = current * SLOW_DOWN_FACTOR if current > 0 else SLOW_DOWN_START
    if retry_after is not None and math.isfinite(retry_after) and retry_after > 0:
        wanted = max(wanted, retry_after / max(1, concurrency))
    low = max(0.0, min_delay)
    high = max(low, max_delay)
    return min(high, max(low, wanted))


# --------------------------------------------------------------------------- attempts


@dataclass(frozen=True, slots=True)
class AttemptState:
    """The stored retry state of one URL (a ``fetch_attempts`` row); times are ISO UTC text.

    ``attempts`` counts the failed fetches since the last success; ``last_error`` is
    the error kind (``http_NNN`` for an HTTP failure).
    """

    attempts: int
    first_failed_at: str
    last_error: str | None = None
    last_status: int | None = None
    next_retry_at: str | None = None
    dead_lettered_at: str | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """How a fetch ended: the HTTP status (None without a response), the error kind
    (an exception class name or ``http_NNN``) and the parsed ``Retry-After`` (seconds).
    A success is a ``Failure`` of status 2xx/304 too: it resets the state."""

    status: int | None
    error_kind: str | None = None
    retry_after: float | None = None


class Action(StrEnum):
    """What the caller does with a URL after :func:`next_attempt`."""

    RESET = "reset"  #: success: delete the retry state
    RETRY = "retry"  #: fetch again at ``retry_at``
    DEAD_LETTER = "dead_letter"  #: no more retries; listed by ``dead-letters``
    REVIEW = "review"  #: access denied: recorded for an operator, not retried
    MISSING = "missing"  #: 404: hand it to the deletion policy
    GONE = "gone"  #: 410: hand it to the deletion policy


@dataclass(frozen=True, slots=True)
class AttemptDecision:
    """The outcome of :func:`next_attempt`.

    ``state`` is the retry state to store (None: delete it); ``retry_at`` and
    ``delay`` (seconds from ``now``) are set only when ``action`` is ``retry``.
    """

    action: Action
    failure_class: FailureClass
    state: AttemptState | None
    retry_at: str | None = None
    delay: float | None = None


def next_attempt(
    state: AttemptState | None,
    failure: Failure,
    now: datetime,
    policy: RetryPolicy,
    rand: Callable[[], float],
) -> AttemptDecision:
    """The new retry state of a URL whose fetch ended with ``failure`` at ``now``.

    ``state`` is the stored state (None when the URL had no failure pending). See
    the module docstring for what each class leads to.

    >>> from datetime import UTC, datetime
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> denied = next_attempt(None, Failure(403), now, RetryPolicy(), lambda: 0.5)
    >>> denied.action.value, denied.retry_at, denied.state.last_error
    ('review', None, 'http_403')
    >>> next_attempt(denied.state, Failure(200), now, RetryPolicy(), lambda: 0.5).state is None
    True
    """
    kind = classify(
        failure.status, failure.error_kind, has_retry_after=failure.retry_after is not None
    )
    if kind is FailureClass.OK:
        return AttemptDecision(Action.RESET, kind, None)
    if kind is FailureClass.MISSING:
        return AttemptDecision(Action.MISSING, kind, None)
    if kind is FailureClass.GONE:
        return AttemptDecision(Action.GONE, kind, None)

    stamp = iso_utc(now)
    error = failure.error_kind or (f"http_{failure.status}" if failure.status is not None else None)
    recorded = AttemptState(
        attempts=(max(0, state.attempts) if state else 0) + 1,
        first_failed_at=state.first_failed_at if state else stamp,
        last_error=error,
        last_status=failure.status,
        next_retry_at=None,
        dead_lettered_at=state.dead_lettered_at if state else None,
    )
    if kind is FailureClass.DENIED:
        return AttemptDecision(Action.REVIEW, kind, recorded)
    if (
        kind is FailureClass.PERMANENT
        or recorded.dead_lettered_at is not None
        or recorded.attempts >= policy.max_attempts
    ):
        dead = replace(recorded, dead_lettered_at=recorded.dead_lettered_at or stamp)
        return AttemptDecision(Action.DEAD_LETTER, kind, dead)

    delay = backoff(recorded.attempts, policy, rand)
    if kind is FailureClass.RATE_LIMITED and failure.retry_after is not None:
        asked = failure.retry_after
        if not math.isnan(asked):  # Retry-After is honoured, within reason
            delay = max(delay, min(max(0.0, asked), MAX_RETRY_AFTER))
    retry_at = iso_utc(now + timedelta(seconds=delay))
    return AttemptDecision(
        Action.RETRY, kind, replace(recorded, next_retry_at=retry_at), retry_at, delay
    )


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("expected an aware datetime")
    return moment
