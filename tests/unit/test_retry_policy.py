"""Retry policy: failure classes, Retry-After, backoff with full jitter, dead letters."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.sync.policy import iso_utc
from knowledge_crawler.sync.retry import (
    MAX_RETRY_AFTER,
    Action,
    AttemptState,
    Failure,
    FailureClass,
    RetryPolicy,
    backoff,
    classify,
    limit_kind,
    next_attempt,
    parse_retry_after,
    slow_down,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
STAMP = iso_utc(NOW)
HALF = lambda: 0.5  # noqa: E731 - a fixed "random" draw


# --------------------------------------------------------------------------- classify


@pytest.mark.parametrize(
    ("status", "kind", "has_retry_after", "expected"),
    [
        (200, None, False, FailureClass.OK),
        (204, None, False, FailureClass.OK),
        (304, None, False, FailureClass.OK),
        (500, None, False, FailureClass.TRANSIENT),
        (502, "http_502", False, FailureClass.TRANSIENT),
        (503, None, False, FailureClass.TRANSIENT),
        (503, None, True, FailureClass.RATE_LIMITED),
        (504, None, False, FailureClass.TRANSIENT),
        (520, None, False, FailureClass.TRANSIENT),  # unknown 5xx reads as 500
        (408, None, False, FailureClass.TRANSIENT),
        (425, None, False, FailureClass.TRANSIENT),
        (429, None, False, FailureClass.RATE_LIMITED),
        (429, None, True, FailureClass.RATE_LIMITED),
        (401, None, False, FailureClass.DENIED),
        (403, None, True, FailureClass.DENIED),
        (404, None, False, FailureClass.MISSING),
        (410, None, False, FailureClass.GONE),
        (400, None, False, FailureClass.PERMANENT),
        (405, None, False, FailureClass.PERMANENT),
        (451, None, False, FailureClass.PERMANENT),
        (499, None, False, FailureClass.PERMANENT),  # unknown 4xx reads as 400
        (301, None, False, FailureClass.PERMANENT),  # a redirect that was not followed
        (100, None, False, FailureClass.TRANSIENT),
        (0, None, False, FailureClass.TRANSIENT),
        (999, None, False, FailureClass.TRANSIENT),
        # a status wins over the error kind
        (404, "TimeoutError", False, FailureClass.MISSING),
        # network errors and timeouts
        (None, "TimeoutError", False, FailureClass.TRANSIENT),
        (None, "DownloadTimeoutError", False, FailureClass.TRANSIENT),
        (None, "TCPTimedOutError", False, FailureClass.TRANSIENT),
        (None, "ConnectionRefusedError", False, FailureClass.TRANSIENT),
        (None, "DownloadConnectionRefusedError", False, FailureClass.TRANSIENT),
        (None, "ConnectionLost", False, FailureClass.TRANSIENT),
        (None, "ConnectionDone", False, FailureClass.TRANSIENT),
        (None, "ResponseNeverReceived", False, FailureClass.TRANSIENT),
        (None, "DNSLookupError", False, FailureClass.TRANSIENT),
        (None, "CannotResolveHostError", False, FailureClass.TRANSIENT),
        (None, "DownloadFailedError", False, FailureClass.TRANSIENT),
        (None, "ResponseDataLossError", False, FailureClass.TRANSIENT),
        (None, "twisted.internet.error.TimeoutError", False, FailureClass.TRANSIENT),
        # http_NNN kinds (as the spider names HttpError) carry their status
        (None, "http_404", False, FailureClass.MISSING),
        (None, "http_403", False, FailureClass.DENIED),
        (None, "http_503", True, FailureClass.RATE_LIMITED),
        # requests that cannot be made
        (None, "UnsupportedURLSchemeError", False, FailureClass.PERMANENT),
        (None, "scrapy.exceptions.NotSupported", False, FailureClass.PERMANENT),
        # limits the page itself breaks: the same request breaks them again
        (None, "BodyTooLarge", False, FailureClass.PERMANENT),
        (None, "TooManyRedirects", False, FailureClass.PERMANENT),
        # unknown errors are retried (within max_attempts), never taken as bad data
        (None, "SomethingNewError", False, FailureClass.TRANSIENT),
        (None, "SSLError", False, FailureClass.TRANSIENT),
        (None, None, False, FailureClass.TRANSIENT),
        (None, "", False, FailureClass.TRANSIENT),
    ],
)
def test_classify(
    status: int | None, kind: str | None, has_retry_after: bool, expected: FailureClass
) -> None:
    assert classify(status, kind, has_retry_after=has_retry_after) is expected


# --------------------------------------------------------------------------- Retry-After


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        ("  30 ", 30.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("-5", 0.0),  # negative: now
        ("Sun, 01 Mar 2026 12:02:00 GMT", 120.0),  # IMF-fixdate, future
        ("Sun, 01 Mar 2026 11:00:00 GMT", 0.0),  # IMF-fixdate, past
        ("Sunday, 01-Mar-26 12:00:30 GMT", 30.0),  # obsolete RFC 850 form
        ("Sun Mar  1 12:01:00 2026", 60.0),  # obsolete asctime form (GMT)
        ("Sun, 01 Mar 2026 14:00:00 +0200", 0.0),  # an offset is understood too
        ("Mon, 02 Mar 2026 13:00:00 GMT", MAX_RETRY_AFTER),  # 25 h: capped at a day
        ("99999999999999999999999999", MAX_RETRY_AFTER),
        ("soon", None),
        ("12 minutes", None),
        ("Sun, 01 Mar 2026 25:00:00 GMT", None),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


def test_parse_retry_after_cap_is_a_parameter() -> None:
    assert parse_retry_after("600", NOW, max_delay=60.0) == 60.0
    assert parse_retry_after("Sun, 01 Mar 2026 13:00:00 GMT", NOW, max_delay=7200.0) == 3600.0


def test_parse_retry_after_needs_an_aware_now_for_dates() -> None:
    with pytest.raises(ValueError):
        parse_retry_after("Sun, 01 Mar 2026 13:00:00 GMT", datetime(2026, 3, 1))


@given(st.text(max_size=60))
def test_parse_retry_after_never_raises_and_stays_in_bounds(value: str) -> None:
    got = parse_retry_after(value, NOW)
    assert got is None or 0.0 <= got <= MAX_RETRY_AFTER


# --------------------------------------------------------------------------- policy and settings


def test_policy_defaults_follow_the_spec() -> None:
    assert RetryPolicy() == RetryPolicy(base=5.0, max_attempts=6, cap=900.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base": 0}, "base"),
        ({"base": -1.0}, "base"),
        ({"base": math.inf}, "base"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 2.5}, "max_attempts"),
        ({"max_attempts": True}, "max_attempts"),
        ({"cap": 0.0}, "cap"),
        ({"cap": math.nan}, "cap"),
    ],
)
def test_policy_validation_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: "):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_policy_from_settings_coerces_text() -> None:
    settings = {
        "KC_RETRY_BASE_SECONDS": " 2.5 ",
        "KC_RETRY_MAX_ATTEMPTS": "3",
        "KC_RETRY_MAX_SECONDS": 60,
    }
    assert RetryPolicy.from_settings(settings) == RetryPolicy(base=2.5, max_attempts=3, cap=60.0)
    assert RetryPolicy.from_settings({}) == RetryPolicy()


def test_policy_from_scrapy_settings() -> None:
    settings = Settings({"KC_RETRY_MAX_ATTEMPTS": "4"})
    assert RetryPolicy.from_settings(settings).max_attempts == 4


@pytest.mark.parametrize(
    ("setting", "raw"),
    [
        ("KC_RETRY_BASE_SECONDS", "fast"),
        ("KC_RETRY_BASE_SECONDS", "0"),
        ("KC_RETRY_BASE_SECONDS", "inf"),
        ("KC_RETRY_MAX_ATTEMPTS", "2.5"),
        ("KC_RETRY_MAX_ATTEMPTS", "0"),
        ("KC_RETRY_MAX_ATTEMPTS", True),
        ("KC_RETRY_MAX_SECONDS", "-1"),
        ("KC_RETRY_MAX_SECONDS", "nan"),
        ("KC_RETRY_MAX_SECONDS", []),
    ],
)
def test_policy_from_settings_names_the_bad_setting(setting: str, raw: object) -> None:
    with pytest.raises(ConfigError, match=rf"^{setting}: "):
        RetryPolicy.from_settings({setting: raw})


# --------------------------------------------------------------------------- backoff


def test_backoff_is_full_jitter_under_a_growing_capped_ceiling() -> None:
    policy = RetryPolicy(base=5.0, max_attempts=6, cap=900.0)
    top = [backoff(n, policy, lambda: 1.0) for n in range(1, 10)]
    assert top == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 900.0]
    assert backoff(3, policy, lambda: 0.0) == 0.0
    assert backoff(3, policy, HALF) == 10.0


def test_backoff_with_a_seeded_random_is_bounded_and_repeatable() -> None:
    policy = RetryPolicy()
    first = random.Random(1234)
    again = random.Random(1234)
    for attempt in range(1, 40):
        delay = backoff(attempt, policy, first.random)
        assert 0.0 <= delay <= min(policy.cap, policy.base * 2 ** (attempt - 1))
        assert delay == backoff(attempt, policy, again.random)


def test_backoff_survives_huge_attempts_and_bad_draws() -> None:
    policy = RetryPolicy()
    assert backoff(10**6, policy, lambda: 1.0) == policy.cap
    assert backoff(2, policy, lambda: 7.0) == 10.0  # a draw above 1 counts as 1
    assert backoff(2, policy, lambda: -1.0) == 0.0
    with pytest.raises(ValueError, match="attempt"):
        backoff(0, policy, HALF)


@given(
    attempt=st.integers(min_value=1, max_value=5000),
    base=st.floats(min_value=0.001, max_value=1e4),
    cap=st.floats(min_value=0.001, max_value=1e6),
    seed=st.integers(),
)
def test_backoff_never_exceeds_the_cap(attempt: int, base: float, cap: float, seed: int) -> None:
    policy = RetryPolicy(base=base, max_attempts=6, cap=cap)
    delay = backoff(attempt, policy, random.Random(seed).random)
    assert 0.0 <= delay <= cap


# --------------------------------------------------------------------------- next_attempt


def test_a_first_transient_failure_schedules_a_retry() -> None:
    decision = next_attempt(None, Failure(None, "TimeoutError"), NOW, RetryPolicy(), HALF)
    assert decision.action is Action.RETRY
    assert decision.failure_class is FailureClass.TRANSIENT
    assert decision.delay == 2.5
    assert decision.retry_at == iso_utc(NOW + timedelta(seconds=2.5))
    assert decision.state == AttemptState(
        attempts=1,
        first_failed_at=STAMP,
        last_error="TimeoutError",
        last_status=None,
        next_retry_at=decision.retry_at,
        dead_lettered_at=None,
    )


def test_failures_back_off_then_dead_letter_at_max_attempts() -> None:
    policy = RetryPolicy(base=5.0, max_attempts=4, cap=900.0)
    state: AttemptState | None = None
    delays = []
    now = NOW
    for _ in range(3):
        decision = next_attempt(state, Failure(502, "http_502"), now, policy, lambda: 1.0)
        assert decision.action is Action.RETRY
        delays.append(decision.delay)
        state = decision.state
        now += timedelta(minutes=1)
    assert delays == [5.0, 10.0, 20.0]
    assert state is not None and state.attempts == 3 and state.first_failed_at == STAMP

    last = next_attempt(state, Failure(None, "ConnectionLost"), now, policy, lambda: 1.0)
    assert last.action is Action.DEAD_LETTER
    assert last.retry_at is None and last.delay is None
    assert last.state == AttemptState(
        attempts=4,
        first_failed_at=STAMP,
        last_error="ConnectionLost",
        last_status=None,
        next_retry_at=None,
        dead_lettered_at=iso_utc(now),
    )

    # Later failures are recorded; the URL stays dead-lettered from its first time.
    later = now + timedelta(days=1)
    again = next_attempt(last.state, Failure(500), later, policy, lambda: 1.0)
    assert again.action is Action.DEAD_LETTER and again.retry_at is None
    assert again.state is not None
    assert again.state.attempts == 5 and again.state.dead_lettered_at == iso_utc(now)
    assert again.state.last_error == "http_500" and again.state.last_status == 500


def test_one_attempt_means_no_retry() -> None:
    decision = next_attempt(None, Failure(503), NOW, RetryPolicy(max_attempts=1), HALF)
    assert decision.action is Action.DEAD_LETTER


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize(
    "state",
    [
        None,
        AttemptState(2, "2026-03-01T00:00:00.000000Z", "TimeoutError", None, STAMP, None),
        AttemptState(9, "2026-03-01T00:00:00.000000Z", "http_403", 403, None, None),
    ],
)
def test_denied_is_recorded_for_review_and_never_retried(
    status: int, state: AttemptState | None
) -> None:
    decision = next_attempt(state, Failure(status), NOW, RetryPolicy(), HALF)
    assert decision.action is Action.REVIEW
    assert decision.failure_class is FailureClass.DENIED
    assert decision.retry_at is None and decision.delay is None
    assert decision.state is not None
    assert decision.state.next_retry_at is None
    assert decision.state.last_status == status
    assert decision.state.last_error == f"http_{status}"
    assert decision.state.attempts == (state.attempts if state else 0) + 1


@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, 200, 304, 401, 403, 404, 410, 400, 429, 500, 503]),
            st.sampled_from([None, "TimeoutError", "Weird"]),
            st.one_of(st.none(), st.floats(min_value=-10, max_value=1e9)),
        ),
        max_size=30,
    )
)
def test_no_sequence_retries_a_denial_or_exceeds_the_attempts(
    events: list[tuple[int | None, str | None, float | None]],
) -> None:
    policy = RetryPolicy(max_attempts=4)
    rand = random.Random(0).random
    state: AttemptState | None = None
    now = NOW
    for status, kind, retry_after in events:
        decision = next_attempt(state, Failure(status, kind, retry_after), now, policy, rand)
        if decision.action is Action.RETRY:
            assert decision.failure_class in (FailureClass.TRANSIENT, FailureClass.RATE_LIMITED)
            assert decision.state is not None
            assert decision.state.attempts < policy.max_attempts
            assert decision.delay is not None and 0.0 <= decision.delay <= MAX_RETRY_AFTER
            assert decision.retry_at == decision.state.next_retry_at
        else:
            assert decision.retry_at is None
            assert decision.state is None or decision.state.next_retry_at is None
        if decision.failure_class is FailureClass.DENIED:
            assert decision.action is Action.REVIEW
        state = decision.state
        now += timedelta(minutes=5)


@pytest.mark.parametrize("status", [200, 204, 304])
def test_a_success_resets_the_state(status: int) -> None:
    dead = AttemptState(6, STAMP, "TimeoutError", None, None, STAMP)
    decision = next_attempt(dead, Failure(status), NOW, RetryPolicy(), HALF)
    assert decision.action is Action.RESET
    assert decision.state is None and decision.retry_at is None


@pytest.mark.parametrize(
    ("status", "action"), [(404, Action.MISSING), (410, Action.GONE), (None, Action.MISSING)]
)
def test_missing_and_gone_pass_through_to_the_deletion_policy(
    status: int | None, action: Action
) -> None:
    kind = "http_404" if status is None else None
    pending = AttemptState(2, STAMP, "TimeoutError", None, STAMP, None)
    decision = next_attempt(pending, Failure(status, kind), NOW, RetryPolicy(), HALF)
    assert decision.action is action
    assert decision.state is None and decision.retry_at is None


@pytest.mark.parametrize(
    ("status", "kind"), [(400, None), (405, None), (None, "UnsupportedURLSchemeError")]
)
def test_permanent_failures_are_dead_lettered_at_once(status: int | None, kind: str | None) -> None:
    decision = next_attempt(None, Failure(status, kind), NOW, RetryPolicy(), HALF)
    assert decision.action is Action.DEAD_LETTER
    assert decision.failure_class is FailureClass.PERMANENT
    assert decision.state is not None
    assert decision.state.attempts == 1 and decision.state.dead_lettered_at == STAMP


@pytest.mark.parametrize(
    ("status", "retry_after", "delay"),
    [
        (429, 120.0, 120.0),  # Retry-After beyond the backoff: honoured
        (429, 1.0, 2.5),  # backoff beyond Retry-After: the backoff
        (429, None, 2.5),  # no Retry-After: the backoff
        (503, 60.0, 60.0),  # 503 with Retry-After is rate limiting
        (429, 10**9, MAX_RETRY_AFTER),  # absurd: at most a day
        (429, -30.0, 2.5),
        (429, math.inf, MAX_RETRY_AFTER),
        (429, math.nan, 2.5),
    ],
)
def test_rate_limited_waits_for_the_larger_of_retry_after_and_backoff(
    status: int, retry_after: float | None, delay: float
) -> None:
    decision = next_attempt(None, Failure(status, None, retry_after), NOW, RetryPolicy(), HALF)
    assert decision.action is Action.RETRY
    assert decision.failure_class is FailureClass.RATE_LIMITED
    assert decision.delay == delay
    assert decision.retry_at == iso_utc(NOW + timedelta(seconds=delay))


def test_retry_state_survives_a_restart() -> None:
    """The stored state is all there is: rebuilding it from its columns continues the count."""
    first = next_attempt(None, Failure(500), NOW, RetryPolicy(), HALF)
    assert first.state is not None
    columns = (
        first.state.attempts,
        first.state.first_failed_at,
        first.state.last_error,
        first.state.last_status,
        first.state.next_retry_at,
        first.state.dead_lettered_at,
    )
    second = next_attempt(AttemptState(*columns), Failure(500), NOW, RetryPolicy(), lambda: 1.0)
    assert second.state is not None
    assert second.state.attempts == 2 and second.delay == 10.0
    assert second.state.first_failed_at == STAMP


# --------------------------------------------------------------------------- slow_down


@pytest.mark.parametrize(
    ("current", "retry_after", "low", "high", "concurrency", "expected"),
    [
        (0.0, None, 0.0, 60.0, 1, 1.0),  # no delay yet: start at a second
        (0.5, None, 0.0, 60.0, 1, 1.0),  # doubled
        (4.0, None, 0.0, 60.0, 1, 8.0),
        (4.0, 30.0, 0.0, 60.0, 1, 30.0),  # at least Retry-After per request
        (4.0, 30.0, 0.0, 60.0, 3, 10.0),  # ... spread over the host's concurrency
        (4.0, 2.0, 0.0, 60.0, 1, 8.0),  # a short Retry-After does not speed up
        (40.0, None, 0.0, 60.0, 1, 60.0),  # at most max_delay
        (0.0, None, 5.0, 60.0, 1, 5.0),  # at least min_delay
        (1.0, 500.0, 0.0, 10.0, 1, 10.0),
        (1.0, None, 20.0, 10.0, 1, 20.0),  # max below min counts as min
        (math.nan, math.inf, 0.0, 60.0, 0, 1.0),
    ],
)
def test_slow_down(
    current: float,
    retry_after: float | None,
    low: float,
    high: float,
    concurrency: int,
    expected: float,
) -> None:
    assert slow_down(current, retry_after, low, high, concurrency=concurrency) == expected


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (
            "Expected to receive 33554432 bytes which is larger than download max size "
            "(16777216) in request <GET http://x/>.",
            "BodyTooLarge",
        ),
        (
            "Received 17000000 bytes which is larger than download max size (16777216)",
            "BodyTooLarge",
        ),
        (
            "Ignored response <200 http://x/> because its body (1 B compressed, 2 B decompressed "
            "so far) exceeded DOWNLOAD_MAXSIZE (1 B) during decompression.",
            "BodyTooLarge",
        ),
        ("max redirections reached", "TooManyRedirects"),
        ("Getting http://x/ took longer than 180.0 seconds.", None),
        ("", None),
    ],
)
def test_limit_kind_names_a_broken_crawl_limit(message: str, kind: str | None) -> None:
    assert limit_kind(message) == kind
