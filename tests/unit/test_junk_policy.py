"""The junk-200 policy (``sync.junk``): what answer is no page, when an HTML answer has
collapsed against the stored page, and when the same junk, repeated over the deletion
window, becomes the page's new content."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from knowledge_crawler.sync.junk import (
    Observation,
    answer_digest,
    body_junk,
    collapse_signature,
    evidence_from_json,
    evidence_to_json,
    is_binary,
    next_retry,
    observe,
    page_junk,
)
from knowledge_crawler.sync.policy import iso_utc

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


def seen(at: datetime, digest: str = "d1", reason: str = "empty body") -> Observation:
    return Observation(iso_utc(at), 200, reason, digest, "kc-x.warc.gz", 1234)


@pytest.mark.parametrize(
    ("body", "kind", "reason"),
    [
        (b"", "empty", "empty body served as text/html"),
        (b" \r\n\t ", "empty", "empty body served as text/html"),
        (random.Random(7).randbytes(256 * 1024), "binary", "binary body served as text/html"),
        (b"\x1f\x8b\x08\x00" + b"x" * 100, "binary", "binary body served as text/html"),
        (b"Service Unavailable, try later", "no_html", "no HTML in a body served as text/html"),
    ],
)
def test_a_body_labelled_html_that_is_none_says_why(body: bytes, kind: str, reason: str) -> None:
    junk = body_junk(body, "text/html; charset=utf-8")
    assert (junk.kind, junk.reason) == (kind, reason)


def test_the_reason_names_the_type_the_body_was_served_as() -> None:
    assert body_junk(b"\x00\x01", "application/xhtml+xml").reason == (
        "binary body served as application/xhtml+xml"
    )
    assert body_junk(b"", None).reason == "empty body served as text/html"


def test_binary_is_told_from_text_in_any_script() -> None:
    assert not is_binary("<p>Grüße, 東京, Ελληνικά</p>\n\t".encode())
    assert not is_binary(b"")
    assert is_binary(b"text" + bytes(range(1, 9)) * 10)  # control bytes, no NUL
    assert is_binary(b"%PDF-1.7 ...")


def test_an_error_page_a_script_shell_and_binary_text_are_signatures() -> None:
    assert collapse_signature("", "Page not found", "Sorry.") == "error page"
    assert collapse_signature("", None, "# 503 Service Unavailable\n\nLater.") == "error page"
    assert collapse_signature("", "Docs", "Oops! Something went wrong.") == "error page"
    shell = '<html><body><div id="app"></div><script src="/app.js"></script></body></html>'
    assert collapse_signature(shell, "App", "") == "script shell"
    garbled = "<p>" + "\ufffd\x01" * 200 + "</p>"
    assert collapse_signature(garbled, None, "x") == "binary text"
    assert collapse_signature("<p>A short note on errands.</p>", "Note", "A short note.") is None


def test_a_collapse_needs_a_stored_page_and_a_sign() -> None:
    # a new page is never junk for its length
    assert page_junk(words=0, stored_words=None) is None
    assert page_junk(words=0, stored_words=0) is None  # nothing stored to lose
    no_text = page_junk(words=0, stored_words=300)
    assert no_text is not None and no_text.kind == "no_text"
    # under a tenth, with a sign
    collapsed = page_junk(words=29, stored_words=300, signature="error page")
    assert (
        collapsed is not None and collapsed.reason == "collapsed to 29 words from 300 (error page)"
    )
    assert page_junk(words=30, stored_words=300, signature="error page") is None  # a tenth
    assert page_junk(words=5, stored_words=300, signature=None) is None  # just shorter


def test_the_same_answer_over_the_window_is_accepted() -> None:
    first = observe((), seen(T0), missing_after=2, missing_window=DAY)
    assert not first.accept and first.since == iso_utc(T0)
    # twice, but within the window: kept
    soon = observe(first.evidence, seen(T0 + HOUR), missing_after=2, missing_window=DAY)
    assert not soon.accept and len(soon.evidence) == 2
    # the window closed
    later = observe(soon.evidence, seen(T0 + DAY), missing_after=2, missing_window=DAY)
    assert later.accept and later.since == iso_utc(T0)


def test_the_count_counts_too() -> None:
    first = observe((), seen(T0), missing_after=3, missing_window=timedelta(0))
    second = observe(first.evidence, seen(T0 + HOUR), missing_after=3, missing_window=DAY * 0)
    assert not second.accept
    third = observe(second.evidence, seen(T0 + 2 * HOUR), missing_after=3, missing_window=HOUR)
    assert third.accept
    assert observe((), seen(T0), missing_after=1, missing_window=timedelta(0)).accept


def test_another_answer_in_between_starts_the_run_again() -> None:
    evidence = observe((), seen(T0, "a"), missing_after=2, missing_window=DAY).evidence
    evidence = observe(evidence, seen(T0 + HOUR, "b"), missing_after=2, missing_window=DAY).evidence
    # a day after the first junk, but b's run is younger than the window
    late = observe(evidence, seen(T0 + DAY, "b"), missing_after=2, missing_window=DAY)
    assert not late.accept and late.since == iso_utc(T0 + HOUR)
    last = observe(late.evidence, seen(T0 + DAY + HOUR, "b"), missing_after=2, missing_window=DAY)
    assert last.accept


def test_evidence_is_bounded_and_keeps_the_first() -> None:
    evidence: tuple[Observation, ...] = ()
    for n in range(25):
        decision = observe(evidence, seen(T0 + n * HOUR), missing_after=2, missing_window=10 * DAY)
        evidence = decision.evidence
    assert len(evidence) == 10 and evidence[0].at == iso_utc(T0)
    assert evidence[-1].at == iso_utc(T0 + 24 * HOUR)


def test_an_unreadable_time_only_delays_acceptance() -> None:
    bad = Observation("yesterday", 200, "empty body", "d1")
    decision = observe((bad,), seen(T0), missing_after=2, missing_window=DAY)
    assert not decision.accept


def test_evidence_round_trips_through_json() -> None:
    evidence = (seen(T0), Observation(iso_utc(T0), 200, "binary body", "d2"))
    assert evidence_from_json(evidence_to_json(evidence)) == evidence
    assert evidence_from_json('[{"status":404,"at":"2026-01-01T00:00:00Z"}]') == ()
    assert evidence_from_json("{}") == () and evidence_from_json("") == ()


def test_the_digest_ignores_what_changes_on_every_error_page() -> None:
    assert answer_digest("collapsed", "Error at 12:03:44, id 99") == answer_digest(
        "collapsed", "error at  9:15:01, id 7"
    )
    assert answer_digest("collapsed", "Error") != answer_digest("no_text", "Error")
    assert answer_digest("binary", b"\x00\x01") != answer_digest("binary", b"\x00\x02")


def test_the_next_try_is_early_then_when_the_window_can_close() -> None:
    kwargs = {"min_interval": HOUR, "max_interval": 7 * DAY, "missing_window": DAY}
    first = observe((), seen(T0), missing_after=2, missing_window=DAY)
    assert next_retry(first, T0, **kwargs) == iso_utc(T0 + HOUR)
    second = observe(first.evidence, seen(T0 + HOUR), missing_after=2, missing_window=DAY)
    assert next_retry(second, T0 + HOUR, **kwargs) == iso_utc(T0 + DAY)
    # never sooner than min_interval, never later than max_interval
    late = observe(second.evidence, seen(T0 + DAY - HOUR / 2), missing_after=3, missing_window=DAY)
    assert next_retry(late, T0 + DAY - HOUR / 2, **kwargs) == iso_utc(T0 + DAY + HOUR / 2)
    long = {"min_interval": HOUR, "max_interval": 2 * HOUR, "missing_window": 30 * DAY}
    assert next_retry(second, T0 + HOUR, **long) == iso_utc(T0 + 3 * HOUR)
