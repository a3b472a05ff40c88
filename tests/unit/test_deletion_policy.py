"""Deletion policy: active -> suspected_missing -> tombstoned, and back only on a success."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge_crawler.sync.deletion import (
    ACTIVE,
    MAX_EVIDENCE,
    SUSPECTED_MISSING,
    TOMBSTONED,
    Evidence,
    PageStatus,
    Transition,
    evidence_bound,
    evidence_from_json,
    evidence_to_json,
    next_check,
    on_response,
)
from knowledge_crawler.sync.policy import iso_utc

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


def at(offset: timedelta) -> str:
    return iso_utc(T0 + offset)


def ev(status: int, offset: timedelta) -> Evidence:
    return Evidence(status, at(offset))


SUSPECT = PageStatus(SUSPECTED_MISSING, (ev(404, timedelta(0)),))
TOMB = PageStatus(
    TOMBSTONED,
    (ev(404, timedelta(0)), ev(404, 2 * DAY)),
    "missing (404) 2 times over 2 days",
    at(2 * DAY),
)


def check(
    current: PageStatus,
    status: int | None,
    offset: timedelta,
    *,
    missing_after: int = 2,
    missing_window: timedelta = DAY,
    **kwargs: bool,
) -> Transition:
    return on_response(
        current,
        status,
        T0 + offset,
        missing_after=missing_after,
        missing_window=missing_window,
        **kwargs,
    )


# --------------------------------------------------------------------------- the transitions


@pytest.mark.parametrize(
    ("current", "status", "offset", "kwargs", "expected"),
    [
        # first 404: suspected, content kept by the caller, one piece of evidence
        (
            PageStatus(),
            404,
            timedelta(0),
            {},
            Transition(SUSPECTED_MISSING, (ev(404, timedelta(0)),), None, False, None),
        ),
        # missing again but within the window: still suspected
        (
            SUSPECT,
            404,
            6 * HOUR,
            {},
            Transition(
                SUSPECTED_MISSING, (ev(404, timedelta(0)), ev(404, 6 * HOUR)), None, False, None
            ),
        ),
        # missing again after the window: tombstoned, with reason and evidence
        (
            SUSPECT,
            404,
            2 * DAY,
            {},
            Transition(
                TOMBSTONED,
                (ev(404, timedelta(0)), ev(404, 2 * DAY)),
                "missing (404) 2 times over 2 days",
                True,
                at(2 * DAY),
            ),
        ),
        # exactly the window is enough
        (
            SUSPECT,
            404,
            DAY,
            {},
            Transition(
                TOMBSTONED,
                (ev(404, timedelta(0)), ev(404, DAY)),
                "missing (404) 2 times over 1 day",
                True,
                at(DAY),
            ),
        ),
        # the window passed, but too few observations
        (
            SUSPECT,
            404,
            3 * DAY,
            {"missing_after": 3},
            Transition(
                SUSPECTED_MISSING, (ev(404, timedelta(0)), ev(404, 3 * DAY)), None, False, None
            ),
        ),
        # one observation and no window: the first 404 is enough
        (
            PageStatus(),
            404,
            timedelta(0),
            {"missing_after": 1, "missing_window": timedelta(0)},
            Transition(
                TOMBSTONED, (ev(404, timedelta(0)),), "missing (404) once", True, at(timedelta(0))
            ),
        ),
        # 410: tombstoned at once
        (
            PageStatus(),
            410,
            HOUR,
            {},
            Transition(TOMBSTONED, (ev(410, HOUR),), "gone (410)", True, at(HOUR)),
        ),
        (
            SUSPECT,
            410,
            HOUR,
            {},
            Transition(
                TOMBSTONED, (ev(404, timedelta(0)), ev(410, HOUR)), "gone (410)", True, at(HOUR)
            ),
        ),
        # 410 when gone is not final: counted like a 404
        (
            PageStatus(),
            410,
            HOUR,
            {"gone_is_final": False},
            Transition(SUSPECTED_MISSING, (ev(410, HOUR),), None, False, None),
        ),
        (
            SUSPECT,
            410,
            2 * DAY,
            {"gone_is_final": False},
            Transition(
                TOMBSTONED,
                (ev(404, timedelta(0)), ev(410, 2 * DAY)),
                "missing (404, 410) 2 times over 2 days",
                True,
                at(2 * DAY),
            ),
        ),
        # an authoritative deletion signal: at once
        (
            PageStatus(),
            404,
            HOUR,
            {"authoritative": True},
            Transition(
                TOMBSTONED,
                (ev(404, HOUR),),
                "deleted (authoritative signal, 404)",
                True,
                at(HOUR),
            ),
        ),
        (
            PageStatus(),
            None,
            HOUR,
            {"authoritative": True},
            Transition(
                TOMBSTONED, (ev(410, HOUR),), "deleted (authoritative signal)", True, at(HOUR)
            ),
        ),
        # ... but a served page is there, whatever the signal says
        (
            PageStatus(),
            200,
            HOUR,
            {"authoritative": True},
            Transition(ACTIVE, (), None, False, None),
        ),
        # a tombstoned page still missing: more evidence, the first verdict stays
        (
            TOMB,
            404,
            3 * DAY,
            {},
            Transition(
                TOMBSTONED,
                (*TOMB.evidence, ev(404, 3 * DAY)),
                TOMB.reason,
                False,
                TOMB.tombstoned_at,
            ),
        ),
        (
            TOMB,
            410,
            3 * DAY,
            {},
            Transition(
                TOMBSTONED,
                (*TOMB.evidence, ev(410, 3 * DAY)),
                TOMB.reason,
                False,
                TOMB.tombstoned_at,
            ),
        ),
        # a success restores active from any state, evidence cleared
        (SUSPECT, 200, HOUR, {}, Transition(ACTIVE, (), None, False, None)),
        (TOMB, 200, 3 * DAY, {}, Transition(ACTIVE, (), None, False, None)),
        (TOMB, 304, 3 * DAY, {}, Transition(ACTIVE, (), None, False, None)),
        (TOMB, 203, 3 * DAY, {}, Transition(ACTIVE, (), None, False, None)),
        (PageStatus(), 200, HOUR, {}, Transition(ACTIVE, (), None, False, None)),
    ],
)
def test_transitions(
    current: PageStatus,
    status: int | None,
    offset: timedelta,
    kwargs: dict[str, object],
    expected: Transition,
) -> None:
    assert check(current, status, offset, **kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("current", [PageStatus(), SUSPECT, TOMB])
@pytest.mark.parametrize("status", [None, 500, 502, 503, 504, 408, 429, 401, 403, 400, 301, 302])
def test_failures_that_say_nothing_about_the_page_leave_it_as_it_is(
    current: PageStatus, status: int | None
) -> None:
    got = check(current, status, 5 * DAY)
    assert got.page == current and not got.created_tombstone


def test_the_reason_counts_every_observation_and_the_whole_span() -> None:
    page = PageStatus()
    for hours in (0, 5, 11):
        page = check(page, 404, hours * HOUR, missing_after=3, missing_window=10 * HOUR).page
    assert page.status == TOMBSTONED
    assert page.reason == "missing (404) 3 times over 11 hours"
    assert page.tombstoned_at == at(11 * HOUR)


@pytest.mark.parametrize(
    ("offsets", "reason"),
    [
        ((timedelta(0), timedelta(seconds=45)), "missing (404) 2 times over 45 seconds"),
        ((timedelta(0), timedelta(minutes=1)), "missing (404) 2 times over 1 minute"),
        ((timedelta(0), timedelta(minutes=150)), "missing (404) 2 times over 2 hours"),
        ((timedelta(0), timedelta(days=1, hours=23)), "missing (404) 2 times over 1 day"),
        ((timedelta(0), timedelta(days=30)), "missing (404) 2 times over 30 days"),
    ],
)
def test_reason_spans_round_down_to_their_largest_unit(
    offsets: tuple[timedelta, ...], reason: str
) -> None:
    page = PageStatus()
    for offset in offsets:
        page = check(page, 404, offset, missing_window=timedelta(0)).page
    assert page.reason == reason


def test_evidence_is_bounded_keeping_the_first_and_latest_and_says_at_least() -> None:
    """Hourly 404s for a day: the first observation anchors the window; the count of the
    dropped ones is not kept, so the reason says how many there were at least."""
    page = PageStatus()
    for hours in range(25):
        transition = check(page, 404, hours * HOUR)
        page = transition.page
        assert len(page.evidence) <= MAX_EVIDENCE
    assert transition.created_tombstone
    assert page.reason == "missing (404) at least 11 times over 1 day"
    assert page.evidence[0] == ev(404, timedelta(0))
    assert page.evidence[-1] == ev(404, 24 * HOUR)
    assert page.evidence[1] == ev(404, 16 * HOUR)


def test_the_evidence_bound_keeps_at_least_missing_after_observations() -> None:
    assert evidence_bound(2) == MAX_EVIDENCE
    assert evidence_bound(15) == 15
    assert evidence_bound(1, max_evidence=1) == 2
    page = PageStatus()
    for n in range(15):
        transition = check(page, 404, n * DAY, missing_after=15)
        page = transition.page
    assert transition.created_tombstone
    assert page.reason == "missing (404) 15 times over 14 days"


def test_odd_parameters_are_read_sensibly() -> None:
    got = check(PageStatus(), 404, HOUR, missing_after=0, missing_window=-DAY)
    assert got.new_status == TOMBSTONED and got.reason == "missing (404) once"


def test_damaged_evidence_only_delays_a_tombstone() -> None:
    damaged = PageStatus(SUSPECTED_MISSING, (Evidence(404, "yesterday"),))
    got = check(damaged, 404, 2 * DAY)
    assert got.new_status == SUSPECTED_MISSING
    assert got.evidence == (ev(404, 2 * DAY),)


def test_a_naive_now_is_refused() -> None:
    with pytest.raises(ValueError):
        on_response(PageStatus(), 404, datetime(2026, 1, 1), missing_after=2, missing_window=DAY)


def test_page_status_is_validated_and_restored() -> None:
    with pytest.raises(ValueError, match="status"):
        PageStatus("deleted")
    assert PageStatus.restore(None) == PageStatus()
    stored = evidence_to_json(TOMB.evidence)
    restored = PageStatus.restore(TOMBSTONED, stored, TOMB.reason, TOMB.tombstoned_at)
    assert restored == TOMB


# --------------------------------------------------------------------------- serialisation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, ()),
        ("", ()),
        ("[]", ()),
        ("{}", ()),
        ("nope", ()),
        ("[" * 100_000, ()),
        (
            '[{"status": 404, "at": "2026-01-01T00:00:00Z"}]',
            (Evidence(404, "2026-01-01T00:00:00Z"),),
        ),
        (
            '[{"status": true, "at": "x"}, {"status": 404}, 7, {"status": 410, "at": "y"}]',
            (Evidence(410, "y"),),
        ),
    ],
)
def test_evidence_from_json(text: str | None, expected: tuple[Evidence, ...]) -> None:
    assert evidence_from_json(text) == expected


@given(
    st.lists(
        st.builds(Evidence, st.integers(min_value=100, max_value=599), st.text(max_size=40)),
        max_size=MAX_EVIDENCE,
    )
)
def test_evidence_json_round_trips(evidence: list[Evidence]) -> None:
    assert evidence_from_json(evidence_to_json(evidence)) == tuple(evidence)


# --------------------------------------------------------------------------- properties

SUCCESS = (200, 204, 304)
NO_EVIDENCE = (None, 500, 502, 503, 504, 408, 429, 401, 403, 400, 301)
STATUSES = st.sampled_from((*SUCCESS, *NO_EVIDENCE, 404, 404, 404, 410))
EVENTS = st.lists(
    st.tuples(
        STATUSES,
        st.integers(min_value=0, max_value=3 * 86_400),  # seconds since the previous check
        st.booleans(),  # an authoritative signal (rarely)
    ),
    max_size=40,
)


@given(
    events=EVENTS,
    missing_after=st.integers(min_value=-1, max_value=12),
    window_hours=st.integers(min_value=-2, max_value=96),
    gone_is_final=st.booleans(),
    max_evidence=st.integers(min_value=0, max_value=12),
    authoritative_rate=st.sampled_from([0, 7]),
)
def test_the_machine_keeps_its_promises(
    events: list[tuple[int | None, int, bool]],
    missing_after: int,
    window_hours: int,
    gone_is_final: bool,
    max_evidence: int,
    authoritative_rate: int,
) -> None:
    window = timedelta(hours=window_hours)
    bound = evidence_bound(missing_after, max_evidence)
    page = PageStatus()
    now = T0
    missing_since_success: list[datetime] = []  # the model: every missing observation
    for i, (status, step, flag) in enumerate(events):
        now += timedelta(seconds=step)
        authoritative = flag and authoritative_rate and i % authoritative_rate == 0
        transition = on_response(  # (e) never raises
            page,
            status,
            now,
            missing_after=missing_after,
            missing_window=window,
            gone_is_final=gone_is_final,
            authoritative=bool(authoritative),
            max_evidence=max_evidence,
        )
        success = status in SUCCESS
        missing = not success and (bool(authoritative) or status in (404, 410))
        if missing:
            missing_since_success.append(now)
        elif success:
            missing_since_success.clear()

        if success:  # (b) a success always ends active with no evidence
            assert transition == Transition(ACTIVE, (), None, False, None)
        elif not missing:  # (c) what says nothing about the page changes nothing
            assert transition.page == page and not transition.created_tombstone
        if transition.created_tombstone:  # (a) tombstoned only on enough evidence, or final
            final = gone_is_final and (bool(authoritative) or status == 410)
            span = missing_since_success[-1] - missing_since_success[0]
            enough = len(missing_since_success) >= max(1, missing_after) and span >= window
            assert final or enough
            assert page.status != TOMBSTONED and transition.new_status == TOMBSTONED
            assert transition.reason and transition.tombstoned_at == iso_utc(now)
        if page.status == TOMBSTONED and not success:  # a tombstone stays until a success
            assert transition.new_status == TOMBSTONED
            assert transition.tombstoned_at == page.tombstoned_at
        if transition.new_status == ACTIVE:
            assert transition.evidence == ()
        assert len(transition.evidence) <= bound  # (d) bounded evidence
        if transition.new_status != ACTIVE:
            assert transition.evidence  # a missing page always shows why
        page = transition.page


@given(events=EVENTS)
def test_defaults_tombstone_exactly_when_the_rule_says(
    events: list[tuple[int | None, int, bool]],
) -> None:
    """With the source defaults (2 observations over a day) and no authoritative signals,
    the machine tombstones at the first moment the rule holds, never earlier or later."""
    page = PageStatus()
    now = T0
    seen: list[datetime] = []
    for status, step, _ in events:
        now += timedelta(seconds=step)
        transition = on_response(page, status, now, missing_after=2, missing_window=DAY)
        if status in SUCCESS:
            seen.clear()
        elif status in (404, 410):
            seen.append(now)
        should = page.status != TOMBSTONED and (
            status == 410 or (status == 404 and len(seen) >= 2 and seen[-1] - seen[0] >= DAY)
        )
        assert transition.created_tombstone == should
        page = transition.page


# -- when to check a missing page next ---------------------------------------------------

BOUNDS = {"min_interval": HOUR, "max_interval": 7 * DAY}


def test_a_first_404_brings_the_next_check_forward_to_min_interval() -> None:
    first = on_response(PageStatus(), 404, T0, missing_after=2, missing_window=DAY)
    assert next_check(first, T0, missing_window=DAY, **BOUNDS) == at(HOUR)


def test_a_page_still_suspected_is_checked_when_its_window_can_close() -> None:
    second = on_response(SUSPECT, 404, T0 + HOUR, missing_after=2, missing_window=DAY)
    assert second.new_status == SUSPECTED_MISSING
    assert next_check(second, T0 + HOUR, missing_window=DAY, **BOUNDS) == at(DAY)
    # the window is over but the count is short: soon again (min_interval)
    short = on_response(SUSPECT, 404, T0 + 2 * DAY, missing_after=3, missing_window=DAY)
    assert next_check(short, T0 + 2 * DAY, missing_window=DAY, **BOUNDS) == at(2 * DAY + HOUR)
    # never beyond max_interval
    long = on_response(SUSPECT, 404, T0 + HOUR, missing_after=2, missing_window=30 * DAY)
    assert next_check(long, T0 + HOUR, missing_window=30 * DAY, **BOUNDS) == at(HOUR + 7 * DAY)


def test_a_tombstoned_page_is_checked_at_max_interval_and_an_active_one_is_not_ours() -> None:
    gone = on_response(PageStatus(), 410, T0, missing_after=2, missing_window=DAY)
    assert next_check(gone, T0, missing_window=DAY, **BOUNDS) == at(7 * DAY)
    still = on_response(TOMB, 404, T0 + 9 * DAY, missing_after=2, missing_window=DAY)
    assert next_check(still, T0 + 9 * DAY, missing_window=DAY, **BOUNDS) == at(16 * DAY)
    back = on_response(TOMB, 200, T0, missing_after=2, missing_window=DAY)
    assert next_check(back, T0, missing_window=DAY, **BOUNDS) is None


# -- authoritative deletion signals ------------------------------------------------------

FEED_SIGNAL = "atom:deleted-entry in https://example.com/feed.atom (when 2026-01-01T00:00:00Z)"


def test_a_deletion_signal_tombstones_at_once_with_itself_as_evidence() -> None:
    t = on_response(PageStatus(), None, T0, missing_after=3, missing_window=DAY, signal=FEED_SIGNAL)
    assert (t.new_status, t.created_tombstone) == (TOMBSTONED, True)
    assert t.reason == f"deleted ({FEED_SIGNAL})"
    assert t.evidence == (Evidence(None, at(timedelta(0)), FEED_SIGNAL),)
    assert evidence_from_json(evidence_to_json(t.evidence)) == t.evidence
    assert '"signal"' in evidence_to_json(t.evidence)
    # a suspected page keeps its 404s as evidence too; a tombstone keeps its first verdict
    t = on_response(SUSPECT, None, T0 + HOUR, missing_after=3, missing_window=DAY, signal="x")
    assert t.new_status == TOMBSTONED and [e.status for e in t.evidence] == [404, None]
    t = on_response(TOMB, None, T0 + 3 * DAY, missing_after=2, missing_window=DAY, signal="x")
    assert t.reason == TOMB.reason and not t.created_tombstone
    # still, an answer from the page itself says it is there
    back = on_response(t.page, 200, T0 + 4 * DAY, missing_after=2, missing_window=DAY)
    assert back.new_status == ACTIVE


def test_evidence_without_a_status_needs_its_signal() -> None:
    assert evidence_from_json(
        '[{"status":null,"at":"t"},{"status":null,"at":"t","signal":"s"}]'
    ) == (Evidence(None, "t", "s"),)
