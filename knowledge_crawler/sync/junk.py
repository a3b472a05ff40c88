"""Junk 200s: an answer that is no page, and when a repeated one becomes the page.

Pure module (standard library, and ``transform.shell`` for a script shell's signs). A
server that breaks often still answers ``200``: an empty body, a binary file served as
``text/html``, an error page or an empty script shell in place of the article. Stored as
it came, such an answer would replace a good page's text with nothing (SPEC F-FETCH: "a
parse failure, an empty or binary 200 never replaces the prior good record"). Here:

* :func:`body_junk`: why a body labelled HTML is no HTML page at all (``empty body served
  as text/html``, ``binary body served as text/html``, ``no HTML in a body served as
  text/html``); junk whether or not the page is stored;
* :func:`page_junk`: whether an HTML answer's extraction *collapsed* against the stored
  page: no text at all where the stored page has some, or under a tenth of its words
  together with a sign of what went wrong (:func:`collapse_signature`: an error page, an
  empty script shell, binary text); a new page is never judged so (nothing to lose);
* :func:`observe`: what a junk answer of a stored page does. It is a parse failure, kept
  with the page's retry state and its evidence (each observation: when, what status, why,
  the answer's digest and where its response is archived), while the stored content
  stays. Only the *same* answer (the same digest), repeated over the deletion policy's
  count and window (the source's ``missing_after`` and ``missing_window``: a page is
  believed gone, or believed to have become this, on the same evidence), is accepted as
  the page's new content.

>>> from datetime import UTC, datetime, timedelta
>>> page_junk(words=0, stored_words=420)
Junk(kind='no_text', reason='no text extracted (the stored page has 420 words)')
>>> page_junk(words=6, stored_words=420, signature="error page").reason
'collapsed to 6 words from 420 (error page)'
>>> page_junk(words=6, stored_words=420) is None  # short, but nothing says it is broken
True
>>> t0, day = datetime(2026, 1, 1, tzinfo=UTC), timedelta(days=1)
>>> seen = Observation("2026-01-01T00:00:00.000000Z", 200, "empty body", "d1")
>>> first = observe((), seen, missing_after=2, missing_window=day)
>>> first.accept, len(first.evidence)
(False, 1)
>>> again = Observation("2026-01-02T00:00:00.000000Z", 200, "empty body", "d1")
>>> observe(first.evidence, again, missing_after=2, missing_window=day).accept
True
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from knowledge_crawler.sync.deletion import MAX_EVIDENCE, evidence_bound, json_objects
from knowledge_crawler.sync.policy import iso_utc
from knowledge_crawler.transform.shell import shell_signs

__all__ = [
    "COLLAPSE_RATIO",
    "PARSE_FAILURE",
    "Junk",
    "JunkDecision",
    "Observation",
    "answer_digest",
    "body_junk",
    "collapse_signature",
    "evidence_from_json",
    "evidence_to_json",
    "is_binary",
    "next_retry",
    "observe",
    "page_junk",
]

#: ``fetch_attempts.last_error`` of a junk answer: this, then its reason
PARSE_FAILURE: Final = "parse failure"
#: an answer with fewer than the stored words divided by this has collapsed (with a sign)
COLLAPSE_RATIO: Final = 10

#: signatures (:func:`collapse_signature`)
ERROR_PAGE: Final = "error page"
SCRIPT_SHELL: Final = "script shell"
BINARY_TEXT: Final = "binary text"

#: leading bytes of formats that are never an HTML page
_MAGIC: tuple[bytes, ...] = (
    b"%PDF",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"RIFF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ",
    b"7z\xbc\xaf",
    b"OggS",
    b"ID3",
    b"\x00\x00\x01\x00",
    b"wOFF",
    b"wOF2",
)
#: control characters that text does not hold (tab, newline, form feed, return do)
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13}
#: a share of control bytes (or replacement characters in text) past this is binary
_BINARY_SHARE = 0.05
#: how much of a body or text is sampled
_SAMPLE = 4096

#: what error pages say in their title or first heading (whole words, any case)
_ERROR_WORDS = re.compile(
    r"\b(?:[45]\d\d|error|not found|page not found|forbidden|access denied|unauthori[sz]ed"
    r"|internal server error|bad gateway|gateway time-?out|service unavailable"
    r"|temporarily unavailable|too many requests|something went wrong|under maintenance"
    r"|down for maintenance|maintenance mode|oops)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)
_WORDS = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Junk:
    """A junk answer: its kind (``empty``, ``binary``, ``no_html``, ``no_text``,
    ``collapsed``, ``failed``) and why, one line."""

    kind: str
    reason: str


def is_binary(data: bytes) -> bool:
    """Whether ``data`` (a body's first bytes are enough) is binary, not text: a known
    binary format's signature, a NUL byte, or more than 5% control bytes.

    >>> is_binary(b"\\x89PNG\\r\\n"), is_binary(b"<p>caf\\xc3\\xa9</p>"), is_binary(b"a\\x00b")
    (True, False, True)
    """
    sample = bytes(data[:_SAMPLE])
    if not sample:
        return False
    if sample.startswith(_MAGIC) or b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte in _CONTROL)
    return controls > _BINARY_SHARE * len(sample)


def body_junk(body: bytes, content_type: str | None) -> Junk:
    """Why a body whose ``content_type`` says HTML is no HTML page (the caller found it is
    none): empty, binary, or text without HTML.

    >>> body_junk(b"  ", "text/html; charset=utf-8").reason
    'empty body served as text/html'
    >>> body_junk(bytes(range(256)), "text/html").reason
    'binary body served as text/html'
    >>> body_junk(b"Service Unavailable", None)
    Junk(kind='no_html', reason='no HTML in a body served as text/html')
    """
    mime = (content_type or "").split(";", 1)[0].strip().lower() or "text/html"
    if not body.strip():
        return Junk("empty", f"empty body served as {mime}")
    if is_binary(body):
        return Junk("binary", f"binary body served as {mime}")
    return Junk("no_html", f"no HTML in a body served as {mime}")


def collapse_signature(html: str, title: str | None, text: str) -> str | None:
    """What says an HTML answer is broken rather than a short page: ``error page`` (its
    title or first heading speaks of an error), ``script shell`` (an empty app root or
    scripts, for a browser to fill) or ``binary text`` (replacement and control
    characters: bytes that were never text); None when nothing does.

    >>> collapse_signature("<title>404 Not Found</title>", "404 Not Found", "Sorry.")
    'error page'
    >>> collapse_signature('<div id="root"></div><script src="a.js"></script>', None, "")
    'script shell'
    >>> collapse_signature("<p>A short note.</p>", "A note", "A short note.") is None
    True
    """
    heading = _HEADING.search(text)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    for said in (title or "", heading.group(1) if heading else "", first_line[:200]):
        if said and _ERROR_WORDS.search(said):
            return ERROR_PAGE
    sample = html[:_SAMPLE]
    if sample:
        odd = sum(1 for ch in sample if ch == "\ufffd" or ord(ch) in _CONTROL)
        if odd > _BINARY_SHARE * len(sample):
            return BINARY_TEXT
    if shell_signs(html).is_shell:
        return SCRIPT_SHELL
    return None


def page_junk(*, words: int, stored_words: int | None, signature: str | None = None) -> Junk | None:
    """Whether an HTML answer of ``words`` words collapsed against the page as stored
    (``stored_words``; None: not stored, never junk): no text where there was some, or
    under a tenth of it with a ``signature`` (:func:`collapse_signature`)."""
    if stored_words is None or stored_words <= 0:
        return None
    if words <= 0:
        return Junk("no_text", f"no text extracted (the stored page has {stored_words} words)")
    if signature is not None and words * COLLAPSE_RATIO < stored_words:
        return Junk("collapsed", f"collapsed to {words} words from {stored_words} ({signature})")
    return None


def answer_digest(kind: str, content: bytes | str) -> str:
    """What tells one junk answer from another: its kind and its text (whitespace
    collapsed, lower case, digits left out, so that a timestamp or a request id on an
    error page does not make each answer new) or its bytes, hashed.

    >>> answer_digest("collapsed", "Error 12:03") == answer_digest("collapsed", "error  9:15")
    True
    """
    if isinstance(content, str):
        content = _DIGITS.sub("", " ".join(content.split()).lower()).encode("utf-8", "replace")
    digest = hashlib.sha256(kind.encode() + b"\n" + content).hexdigest()
    return digest[:32]


# --------------------------------------------------------------------------- observations


@dataclass(frozen=True, slots=True)
class Observation:
    """One junk answer of a stored page: when (ISO UTC text), its status, why, its digest
    (:func:`answer_digest`) and where its response is archived (None: it is not)."""

    at: str
    status: int
    reason: str
    digest: str
    archive_file: str | None = None
    archive_offset: int | None = None


@dataclass(frozen=True, slots=True)
class JunkDecision:
    """What :func:`observe` decided: ``accept`` the answer as the page's new content, or
    keep the stored one and record ``evidence`` (bounded, oldest first)."""

    accept: bool
    evidence: tuple[Observation, ...]
    #: when the run of the same answer began (the window's start)
    since: str


def observe(
    prior: Sequence[Observation],
    observed: Observation,
    *,
    missing_after: int,
    missing_window: timedelta,
    max_evidence: int = MAX_EVIDENCE,
) -> JunkDecision:
    """A stored page answered the junk ``observed`` after the junk ``prior`` (its stored
    evidence, oldest first). Accepted when the latest run of the same answer (``digest``)
    holds at least ``missing_after`` observations whose first and last are at least
    ``missing_window`` apart; another answer in between starts the run again. Never raises:
    an observation whose time cannot be read only delays acceptance."""
    run: list[Observation] = [observed]
    for earlier in reversed(prior):
        if earlier.digest != observed.digest:
            break
        run.append(earlier)
    run.reverse()
    times = [t for t in (_time(o.at) for o in run) if t is not None]
    span = max(times) - min(times) if times else timedelta(0)
    accept = len(run) >= max(1, missing_after) and span >= max(timedelta(0), missing_window)
    bound = evidence_bound(missing_after, max_evidence)
    evidence = (*prior, observed)
    if len(evidence) > bound:
        evidence = (evidence[0], *evidence[len(evidence) - bound + 1 :])
    return JunkDecision(accept, tuple(evidence), run[0].at)


def next_retry(
    decision: JunkDecision,
    now: datetime,
    *,
    min_interval: timedelta,
    max_interval: timedelta,
    missing_window: timedelta,
) -> str:
    """When to fetch a page kept after a junk answer: at ``min_interval`` after a first
    one (a page only briefly broken is back soon), then when the run of the same answer
    could close its window, within ``min_interval`` and ``max_interval``.

    >>> from datetime import UTC, datetime, timedelta
    >>> now, hour = datetime(2026, 1, 1, tzinfo=UTC), timedelta(hours=1)
    >>> d = observe((), Observation(iso_utc(now), 200, "empty body", "d"), missing_after=2,
    ...             missing_window=timedelta(days=1))
    >>> next_retry(d, now, min_interval=hour, max_interval=7 * 24 * hour,
    ...            missing_window=timedelta(days=1))
    '2026-01-01T01:00:00.000000Z'
    """
    low = max(timedelta(0), min_interval)
    high = max(low, max_interval)
    since = _time(decision.since)
    if since is None or len(decision.evidence) <= 1:
        return iso_utc(now + low)
    closes = since + max(timedelta(0), missing_window)
    return iso_utc(now + min(high, max(low, closes - now)))


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def evidence_to_json(evidence: Iterable[Observation]) -> str:
    """Observations as JSON text for ``fetch_attempts.evidence``: a list of objects with
    ``at``, ``status``, ``reason``, ``digest``, ``archive_file`` and ``archive_offset``."""
    rows = [
        {
            "at": o.at,
            "status": o.status,
            "reason": o.reason,
            "digest": o.digest,
            "archive_file": o.archive_file,
            "archive_offset": o.archive_offset,
        }
        for o in evidence
    ]
    return json.dumps(rows, separators=(",", ":"), ensure_ascii=False)


def evidence_from_json(text: str | None) -> tuple[Observation, ...]:
    """Observations from :func:`evidence_to_json` text. Lenient: NULL, empty or unreadable
    text (the evidence of a network failure: none) gives none, and unreadable entries are
    skipped: less evidence only delays acceptance.

    >>> evidence_from_json('[{"at":"2026-01-01Z","status":200,"reason":"r","digest":"d"}, 1]')[0].at
    '2026-01-01Z'
    >>> evidence_from_json("[]"), evidence_from_json("nonsense"), evidence_from_json(None)
    ((), (), ())
    """
    found: list[Observation] = []
    for row in json_objects(text):
        at, status, reason, digest = (row.get(k) for k in ("at", "status", "reason", "digest"))
        file, offset = row.get("archive_file"), row.get("archive_offset")
        if not (isinstance(at, str) and isinstance(reason, str) and isinstance(digest, str)):
            continue
        if not isinstance(status, int) or isinstance(status, bool):
            continue
        found.append(
            Observation(
                at,
                status,
                reason,
                digest,
                file if isinstance(file, str) else None,
                offset if isinstance(offset, int) and not isinstance(offset, bool) else None,
            )
        )
    return tuple(found)
