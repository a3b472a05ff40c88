# ruff: noqa: RUF001  (real accented text on purpose)
"""Fault paths under ``/faults/``: failures, retries, deletions, traps and hostile bodies.

No page of the regular site links here, so crawls started at ``/`` never meet these paths; a
crawl started at the index ``/faults/`` reaches every case.  :data:`CASES` is the catalogue
(the package docstring documents it for readers; ``manifest()["faults"]`` serves it with
live counters).  Everything is deterministic: behaviour depends only on the query string and
on how many requests this exact target (path plus sorted query) has received since the last
``/__control/reset``; the only timing-dependent rule is the 429 one (a retry that comes before
the advertised ``Retry-After`` is answered 429 again and counted as ``early``).
"""

from __future__ import annotations

import calendar
import math
import random
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from functools import lru_cache
from html import escape
from typing import Any, Final
from urllib.parse import parse_qs, urlencode, urlsplit

from ._content import Prose
from ._http import BadRequest, Reply, Request
from ._vocab import TOPICS

__all__ = ["CASES", "EXPECTATIONS", "FAULT_INDEX", "Case", "Faults", "catalogue"]

FAULT_INDEX: Final = "/faults/"

#: what a correct crawler ends with for a page
ACTIVE: Final = "active"  # stored, status 'active'
NOT_STORED: Final = "not_stored"  # nothing stored, nothing to report (a policy decision)
DEAD: Final = "dead_lettered"  # nothing stored; the failure is recorded for an operator
SUSPECTED: Final = "suspected_missing"  # stored before; the page is now missing (404)
TOMBSTONED: Final = "tombstoned"  # stored before; the page is gone for good (410)
EXPECTATIONS: Final = (ACTIVE, NOT_STORED, DEAD, SUSPECTED, TOMBSTONED)

MAX_SECONDS: Final = 60.0
#: a 429 retry this much before the advertised time still counts as on time
RETRY_AFTER_GRACE: Final = 0.25
MIB: Final = 1 << 20
PRIVATE_TARGETS: Final = (
    "http://10.0.0.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/",
)
PRIVATE_REDIRECT: Final = "http://169.254.169.254/"
AFTER_FLIP: Final = {"200": ACTIVE, "404": SUSPECTED, "410": TOMBSTONED}
#: what a forced 200 may answer instead of the article-like page (``/__control/fault``'s
#: ``answer``): junk a crawler must not take for the page's new content
ANSWERS: Final = ("empty", "binary", "error")
#: the size of the ``binary`` answer: random bytes labelled text/html
JUNK_BINARY_BYTES: Final = 256 * 1024

_REASONS: Final = {
    401: ("Unauthorized", "Sign in to read this page."),
    403: ("Forbidden", "You do not have access to this page."),
    404: ("Not Found", "The page you requested could not be found."),
    410: ("Gone", "This page has been permanently removed."),
    429: ("Too Many Requests", "Slow down; try again after the Retry-After delay."),
    500: ("Internal Server Error", "Something broke on our side."),
    503: ("Service Unavailable", "The service is temporarily unavailable."),
}
_CHARSET_TEXT: Final = (
    "Müller’s café on the corner serves a crème brûlée that regulars call über-good; "
    "the façade has not changed since the 1920s.",
    "Jürgen, the owner, grinds the beans himself, and the décor is all dark wood, "
    "brass and a piano nobody plays.",
    "Prices are fair: a café au lait costs 3 €, a slice of Käsekuchen 4 €, and the "
    "Grüner Veltliner by the glass 6 €.",
)
_HUGE_HEAD: Final = (
    b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>A huge page</title>'
    b"</head>\n<body><h1>A huge page</h1>\n"
)
_HUGE_TAIL: Final = b"\n</body></html>\n"
_HUGE_BLOCK: Final = (b"<p>" + b"This page goes on and on and on. " * 30 + b"</p>\n") * 64


@dataclass(frozen=True)
class Case:
    """One fault case as ``manifest()["faults"]`` lists it (see the package docs)."""

    name: str
    group: str
    #: path plus query on this site; None for an outside URL (``url``) nobody may request
    path: str | None
    serves: str
    #: statuses of successive requests to ``path``; the last one repeats forever
    statuses: tuple[int, ...]
    #: outcome after one crawl of a freshly reset site
    expect: str
    reason: str
    #: outcome after a second crawl (no reset in between); "" means the same as ``expect``
    then: str = ""
    #: every outcome that is still correct (``expect`` first); () means only ``expect``
    acceptable: tuple[str, ...] = ()
    #: requests a correct crawler sends to ``path`` in one crawl (None: depends on settings)
    requests: int | None = 1
    #: linked from the index ``/faults/``
    linked: bool = True
    url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _cases() -> tuple[Case, ...]:
    refuse = "a private, loopback or link-local address: refuse it before connecting"
    return (
        Case(
            "index",
            "index",
            "/faults/",
            "200: the index of fault cases (every linked case is one link here)",
            (200,),
            ACTIVE,
            "an ordinary page",
            linked=False,
        ),
        Case(
            "flaky-503",
            "retry",
            "/faults/flaky-503?fails=2",
            "503 for the first `fails` (default 2) requests, then 200 with an article-like page",
            (503, 503, 200),
            ACTIVE,
            "transient server error: retry with backoff (2 retries suffice)",
            requests=3,
            extra={"fails": 2},
        ),
        Case(
            "flaky-500",
            "retry",
            "/faults/flaky-500",
            "500 for the first `fails` (default 2) requests, then 200 with an article-like page",
            (500, 500, 200),
            ACTIVE,
            "transient server error: retry with backoff (2 retries suffice)",
            requests=3,
            extra={"fails": 2},
        ),
        Case(
            "server-error-forever",
            "retry",
            "/faults/flaky-503?fails=1000000",
            "503 for the first million requests (always, in practice)",
            (503,),
            DEAD,
            "retries exhausted: give up after a bounded number of retries and record it",
            requests=None,
            extra={"fails": 1000000},
        ),
        Case(
            "timeout-then-ok",
            "retry",
            "/faults/timeout-then-ok?sleep=2",
            "the first `fails` (default 1) requests wait `sleep` seconds (default 2) before "
            "answering 200; later ones answer at once (counted on arrival)",
            (200, 200),
            ACTIVE,
            "a download timeout below `sleep` is transient: the retry succeeds at once "
            "(with a longer timeout the first answer succeeds)",
            requests=None,
            extra={"sleep": 2.0, "fails": 1},
        ),
        Case(
            "rate-limited",
            "politeness",
            "/faults/rate-limited?retry_after=2",
            "429 with `Retry-After: 2` (delay-seconds, `retry_after`, default 2) for the first "
            "`fails` (default 1) requests, then 200; a retry sooner than the advertised delay "
            "gets 429 again and counts as early",
            (429, 200),
            ACTIVE,
            "honour Retry-After: wait at least the delay, then retry once",
            requests=2,
            extra={"retry_after": 2, "retry_after_format": "seconds", "fails": 1},
        ),
        Case(
            "rate-limited-date",
            "politeness",
            "/faults/rate-limited-date?retry_after=3",
            "429 with an HTTP-date `Retry-After` (RFC 9110 IMF-fixdate, the server's clock "
            "rounded up to a whole second plus `retry_after`, default 3) for the first `fails` "
            "(default 1) requests, then 200; a retry before that date gets 429 again (early)",
            (429, 200),
            ACTIVE,
            "honour Retry-After given as a date: wait until then, then retry once",
            requests=2,
            extra={"retry_after": 3, "retry_after_format": "http-date", "fails": 1},
        ),
        Case(
            "unauthorized",
            "auth",
            "/faults/unauthorized",
            '401 with `WWW-Authenticate: Basic realm="faults"`, always',
            (401,),
            DEAD,
            "authentication required: permanent for a crawler without credentials; do not "
            "retry, record the failure, store nothing",
            acceptable=(DEAD, NOT_STORED),
        ),
        Case(
            "forbidden",
            "auth",
            "/faults/forbidden",
            "403, always",
            (403,),
            DEAD,
            "forbidden: permanent; do not retry, record the failure, store nothing",
            acceptable=(DEAD, NOT_STORED),
        ),
        Case(
            "missing-then-back",
            "deletion",
            "/faults/missing-then-back",
            "404 for the first `fails` (default 1) requests, then 200 with an article-like page",
            (404, 200),
            NOT_STORED,
            "a 404 is not retried within a crawl; the next crawl finds the page back",
            then=ACTIVE,
            extra={"fails": 1},
        ),
        Case(
            "missing",
            "deletion",
            "/faults/missing",
            "404, always",
            (404,),
            NOT_STORED,
            "a broken link to a page never stored: nothing to store or tombstone",
        ),
        Case(
            "gone",
            "deletion",
            "/faults/gone",
            "410, always",
            (410,),
            NOT_STORED,
            "gone and never stored: nothing to store or tombstone",
        ),
        Case(
            "doc-alpha",
            "deletion",
            "/faults/doc/alpha",
            "200 with an article-like page (any /faults/doc/NAME does) until flipped with "
            "POST /__control/fault?path=/faults/doc/alpha&status=404|410, or with "
            "status=200&answer=empty|binary|error to a junk 200",
            (200,),
            ACTIVE,
            "an ordinary page; flip it between crawls to test deletions (after_flip)",
            extra={"after_flip": dict(AFTER_FLIP)},
        ),
        Case(
            "doc-beta",
            "deletion",
            "/faults/doc/beta",
            "like doc-alpha (a second page, so one re-crawl can test 404 and 410 together)",
            (200,),
            ACTIVE,
            "an ordinary page; flip it between crawls to test deletions (after_flip)",
            extra={"after_flip": dict(AFTER_FLIP)},
        ),
        Case(
            "redirect-loop",
            "redirect",
            "/faults/loop-a",
            "302 to /faults/loop-b, which answers 302 back to /faults/loop-a",
            (302,),
            DEAD,
            "a redirect loop never ends: detect it (or hit the redirect limit) and give up",
            acceptable=(DEAD, NOT_STORED),
            requests=None,
            extra={"cycle": ["/faults/loop-a", "/faults/loop-b"]},
        ),
        Case(
            "redirect-chain",
            "redirect",
            "/faults/chain/20",
            "/faults/chain/N answers 301 to /faults/chain/N-1 (N <= 9999); /faults/chain/0 "
            "answers 200 with an article-like page: 20 hops from here",
            (301,),
            DEAD,
            "20 hops exceed any sane redirect limit (REDIRECT_MAX_TIMES = 10 here): give up "
            "without requesting the rest of the chain beyond the limit",
            acceptable=(DEAD, NOT_STORED),
            extra={"hops": 20, "final": "/faults/chain/0"},
        ),
        Case(
            "slow",
            "slow",
            "/faults/slow?seconds=1",
            "waits `seconds` (default 1, at most 60) before answering 200 with an article-like "
            "page; with `trickle=1` the headers go out at once and the body trickles out in "
            "10 pieces over `seconds`",
            (200,),
            ACTIVE,
            "slow but within any sane download timeout: wait for it, without a retry, and keep "
            "fetching other pages meanwhile (with `seconds` above the download timeout every "
            "attempt times out: dead_lettered)",
            extra={"seconds": 1.0},
        ),
        Case(
            "huge",
            "size",
            "/faults/huge?mb=32",
            "200 text/html of exactly `mb` MiB (default 32, at most 4096), streamed with a "
            "Content-Length",
            (200,),
            DEAD,
            "larger than any sane size cap (DOWNLOAD_MAXSIZE = 16 MiB here): abort the "
            "download instead of buffering it",
            acceptable=(DEAD, NOT_STORED),
            extra={"bytes": 32 * MIB},
        ),
        Case(
            "gzip-bomb",
            "size",
            "/faults/gzip-bomb",
            "200 text/html with `Content-Encoding: gzip`: `mb` (default 100, at most 1024) MiB "
            "of zero bytes compressed to about 1/1000 of that",
            (200,),
            DEAD,
            "the decoded size exceeds the size cap: stop inflating at the cap, store nothing",
            acceptable=(DEAD, NOT_STORED),
            extra={"decoded_bytes": 100 * MIB, "content_encoding": "gzip"},
        ),
        Case(
            "gzip-bomb-html",
            "size",
            "/faults/gzip-bomb-html",
            "the same gzip bytes as gzip-bomb served as text/html without Content-Encoding",
            (200,),
            NOT_STORED,
            "binary bytes labelled text/html: never inflate them blindly, never store them",
            acceptable=(NOT_STORED, DEAD),
            extra={"decoded_bytes": 100 * MIB, "content_encoding": None},
        ),
        Case(
            "deep-nesting",
            "hostile",
            "/faults/deep-nesting",
            "200 text/html: a heading and a paragraph, then `depth` (default 100,000, at most "
            "1,000,000) nested <div> elements around one more paragraph",
            (200,),
            ACTIVE,
            "hostile markup: parse without unbounded recursion and keep crawling; storing the "
            "top text is best, skipping the page is acceptable, crashing is not",
            acceptable=(ACTIVE, NOT_STORED),
            extra={"depth": 100_000, "text": "This page nests one hundred thousand elements."},
        ),
        Case(
            "binary",
            "hostile",
            "/faults/binary",
            "200 `text/html; charset=utf-8` whose body is 64 KiB of seeded random bytes "
            "(NULs included)",
            (200,),
            NOT_STORED,
            "not text whatever the header says: detect binary content and store nothing",
            acceptable=(NOT_STORED, DEAD),
            extra={"bytes": 64 * 1024},
        ),
        Case(
            "wrong-charset",
            "hostile",
            "/faults/wrong-charset",
            "200 `text/html; charset=utf-8` (no <meta> charset) whose body is windows-1252 "
            "with é, ü and friends: not valid UTF-8",
            (200,),
            ACTIVE,
            "decode tolerantly: detect windows-1252 and store the text with é/ü intact "
            "(text), never crash on the bad UTF-8",
            extra={"declared": "utf-8", "encoding": "windows-1252", "text": _CHARSET_TEXT[0]},
        ),
        Case(
            "calendar",
            "trap",
            "/faults/calendar/2024/01",
            "200: a month page /faults/calendar/YYYY/MM linking to the previous and the next "
            "month, years 0001 to 9999",
            (200,),
            ACTIVE,
            "a URL trap: every page is fine but the links never end; the crawl must still "
            "finish, storing a bounded number of calendar pages (depth or page budget)",
            extra={"trap": True, "next": "/faults/calendar/2024/02"},
        ),
        Case(
            "search",
            "trap",
            "/faults/search?page=1",
            "200: result page N of an endless search, linking to page N+1 (and N-1)",
            (200,),
            ACTIVE,
            "a URL trap in the query string: the crawl must still finish, storing a bounded "
            "number of search pages",
            extra={"trap": True, "next": "/faults/search?page=2"},
        ),
        Case(
            "private-links",
            "private",
            "/faults/private-links",
            "200: a page linking to " + ", ".join(PRIVATE_TARGETS),
            (200,),
            ACTIVE,
            "an ordinary page; its links are the trap (see the private targets)",
            extra={"links": list(PRIVATE_TARGETS)},
        ),
        *(
            Case(
                f"private-target-{n}",
                "private",
                None,
                "nothing listens there; never request it",
                (),
                NOT_STORED,
                refuse,
                requests=0,
                linked=False,
                url=url,
                extra={"linked_from": "/faults/private-links"},
            )
            for n, url in enumerate(PRIVATE_TARGETS, start=1)
        ),
        Case(
            "redirect-private",
            "private",
            "/faults/redirect-private",
            f"302 to {PRIVATE_REDIRECT}",
            (302,),
            NOT_STORED,
            "a redirect to " + refuse + "; do not follow it",
            acceptable=(NOT_STORED, DEAD),
            extra={"location": PRIVATE_REDIRECT},
        ),
    )


CASES: Final[tuple[Case, ...]] = _cases()


def catalogue() -> str:
    """One line per case (``--faults`` on the command line)."""
    lines = [f"{'path or url':<42} {'expect':<13} serves"]
    for case in CASES:
        target = case.path or case.url or ""
        lines.append(f"{target:<42} {case.expect:<13} {case.serves}")
    return "\n".join(lines)


def _key(path: str, query: dict[str, list[str]]) -> str:
    """The counter key: path plus the sorted query."""
    pairs = sorted((k, v) for k, values in query.items() for v in values)
    return path + ("?" + urlencode(pairs) if pairs else "")


def _target_key(target: str) -> str:
    parts = urlsplit(target)
    return _key(parts.path, parse_qs(parts.query))


def _page(title: str, main: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head>\n<body>\n"
        f'<nav><a href="{FAULT_INDEX}">Fault cases</a></nav>\n'
        f"<main>\n{main}\n</main>\n</body></html>\n"
    )


def _int_arg(req: Request, name: str, default: int, low: int, high: int) -> int:
    raw = req.arg(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise BadRequest(f"{name} must be an integer in [{low}, {high}]")
    return int(raw)


def _float_arg(req: Request, name: str, default: float, high: float = MAX_SECONDS) -> float:
    raw = req.arg(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= high:
        raise BadRequest(f"{name} must be a number in [0, {high:g}]")
    return value


def _flag(req: Request, name: str) -> bool:
    return (req.arg(name, "") or "").lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class _Hit:
    key: str
    #: 1 for the first request to ``key`` since the last reset
    n: int


Route = Callable[[Request, "re.Match[str]", _Hit], Reply]


class Faults:
    """State and routes of the ``/faults/`` paths (thread-safe; one per site)."""

    def __init__(self, url: str, seed: int) -> None:
        self.origin = url.rstrip("/")
        self.seed = seed
        self._lock = threading.Lock()
        #: counter key -> requests since the last reset
        self._hits: dict[str, int] = {}
        #: counter key -> (429s sent, epoch seconds before which a retry is early)
        self._limits: dict[str, tuple[int, float]] = {}
        self._early: dict[str, int] = {}
        #: bare path -> status forced by /__control/fault
        self._overrides: dict[str, int] = {}
        #: bare path -> the junk a forced 200 answers instead of the page (ANSWERS)
        self._answers: dict[str, str] = {}
        self._junk_binary: bytes | None = None
        self._build_lock = threading.Lock()
        self._bombs: dict[int, bytes] = {}
        self._deep: dict[int, bytes] = {}
        self._binary: bytes | None = None
        self._article = lru_cache(maxsize=256)(self._article_uncached)
        self._routes = self.routes()

    def routes(self) -> list[tuple[re.Pattern[str], Route]]:
        """``(path regex, handler)``; the first full match wins."""
        table: list[tuple[str, Route]] = [
            (r"/faults/", self._index),
            (r"/faults/flaky-(?P<code>500|503)", self._flaky),
            (r"/faults/timeout-then-ok", self._timeout_then_ok),
            (r"/faults/rate-limited(?P<date>-date)?", self._rate_limited),
            (r"/faults/unauthorized", self._unauthorized),
            (r"/faults/forbidden", self._forbidden),
            (r"/faults/missing-then-back", self._missing_then_back),
            (r"/faults/missing", self._missing),
            (r"/faults/gone", self._gone),
            (r"/faults/doc/(?P<name>[a-z0-9][a-z0-9-]*)", self._doc),
            (r"/faults/loop-(?P<which>[ab])", self._loop),
            (r"/faults/chain/(?P<n>0|[1-9][0-9]{0,3})", self._chain),
            (r"/faults/slow", self._slow),
            (r"/faults/huge", self._huge),
            (r"/faults/gzip-bomb(?P<html>-html)?", self._gzip_bomb),
            (r"/faults/deep-nesting", self._deep_nesting),
            (r"/faults/binary", self._binary_page),
            (r"/faults/wrong-charset", self._wrong_charset),
            (
                r"/faults/calendar/(?P<year>[0-9]{4})/(?P<month>0[1-9]|1[0-2])",
                self._calendar,
            ),
            (r"/faults/search", self._search),
            (r"/faults/private-links", self._private_links),
            (r"/faults/redirect-private", self._redirect_private),
        ]
        return [(re.compile(p), h) for p, h in table]

    # -- entry points (called by SiteApp) ----------------------------------------------------

    def handle(self, req: Request) -> Reply:
        path = FAULT_INDEX if req.path == "/faults" else req.path
        key = _key(path, req.query)
        with self._lock:
            n = self._hits[key] = self._hits.get(key, 0) + 1
            override = self._overrides.get(path)
            answer = self._answers.get(path)
        if answer is not None:
            return self._junk_reply(answer)
        if override is not None:
            return self._article_reply(path) if override == 200 else self._error(override)
        for pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if match is not None:
                return handler(req, match, _Hit(key, n))
        return self._error(404)

    def override(self, req: Request) -> dict[str, int]:
        """``/__control/fault?path=/faults/...&status=200|404|410|0`` (0 removes it); with
        ``status=200``, ``answer=empty|binary|error`` answers that junk instead of the page
        (an empty body, 256 KiB of random bytes, a short error page; all ``text/html``)."""
        path = req.arg("path", "") or ""
        if not path.startswith(FAULT_INDEX) or "?" in path or "#" in path:
            raise BadRequest("path must be a bare path under /faults/ (no query)")
        raw = req.arg("status", "") or ""
        if raw not in ("0", "200", "404", "410"):
            raise BadRequest("status must be 200, 404, 410 or 0 (remove the override)")
        answer = req.arg("answer")
        if answer is not None and (raw != "200" or answer not in ANSWERS):
            raise BadRequest(f"answer must be one of {', '.join(ANSWERS)}, with status=200")
        with self._lock:
            self._answers.pop(path, None)
            if raw == "0":
                self._overrides.pop(path, None)
            else:
                self._overrides[path] = int(raw)
                if answer is not None:
                    self._answers[path] = answer
            return dict(sorted(self._overrides.items()))

    def answers(self) -> dict[str, str]:
        """The junk answers forced by ``/__control/fault``, by path."""
        with self._lock:
            return dict(sorted(self._answers.items()))

    def reset(self) -> None:
        """Forget every counter, 429 deadline and override."""
        with self._lock:
            self._hits.clear()
            self._limits.clear()
            self._early.clear()
            self._overrides.clear()
            self._answers.clear()

    def hits(self) -> dict[str, int]:
        """Requests per target (path plus sorted query) since the last reset, sorted."""
        with self._lock:
            return dict(sorted(self._hits.items()))

    def manifest(self) -> list[dict[str, Any]]:
        with self._lock:
            hits = dict(self._hits)
            early = dict(self._early)
            overrides = dict(self._overrides)
        entries = []
        for case in CASES:
            key = None if case.path is None else _target_key(case.path)
            entry: dict[str, Any] = {
                "name": case.name,
                "group": case.group,
                "path": case.path,
                "url": case.url or self.origin + (case.path or ""),
                "linked": case.linked,
                "serves": case.serves,
                "statuses": list(case.statuses),
                "expect": case.expect,
                "then": case.then or case.expect,
                "acceptable": list(case.acceptable or (case.expect,)),
                "reason": case.reason,
                "requests": case.requests,
                "never_connect": case.path is None,
                "hits": None if key is None else hits.get(key, 0),
                "override": None if key is None else overrides.get(urlsplit(key).path),
            }
            entry.update(case.extra)
            if case.group == "politeness" and key is not None:
                entry["early"] = early.get(key, 0)
            entries.append(entry)
        return entries

    # -- building blocks ---------------------------------------------------------------------

    def _article_uncached(self, path: str) -> bytes:
        rng = random.Random(f"{self.seed}:fault:{path}")
        primary = TOPICS[int(rng.random() * len(TOPICS))]
        secondary = TOPICS[(TOPICS.index(primary) + 1 + int(rng.random() * 3)) % len(TOPICS)]
        prose = Prose(rng, primary, secondary)
        title = prose.heading()
        paragraphs = [prose.paragraph(4 + int(rng.random() * 3)) for _ in range(5)]
        main = (
            f"<article>\n<h1>{escape(title)}</h1>\n"
            f'<p class="case">Fault case page {escape(path)}</p>\n'
            + "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)
            + "\n</article>"
        )
        return _page(title, main).encode()

    def _junk_reply(self, answer: str) -> Reply:
        """A 200 labelled text/html that is no page: ``empty``, ``binary`` or ``error``."""
        if answer == "empty":
            return Reply(200, b"", headers={"Cache-Control": "no-cache"})
        if answer == "binary":
            with self._build_lock:
                if self._junk_binary is None:
                    rng = random.Random(f"{self.seed}:junk-binary")
                    self._junk_binary = rng.randbytes(JUNK_BINARY_BYTES)
                body = self._junk_binary
            return Reply(200, body, headers={"Cache-Control": "no-cache"})
        page = _page("Error", "<h1>Something went wrong</h1>\n<p>Please try again later.</p>")
        return Reply(200, page.encode(), headers={"Cache-Control": "no-cache"})

    def _article_reply(self, path: str) -> Reply:
        return Reply(200, self._article(path), headers={"Cache-Control": "no-cache"})

    def _error(self, status: int, headers: dict[str, str] | None = None) -> Reply:
        reason, detail = _REASONS[status]
        body = _page(f"{status} {reason}", f"<h1>{status} {reason}</h1>\n<p>{detail}</p>")
        return Reply(status, body.encode(), headers=headers or {})

    def _redirect(self, status: int, location: str) -> Reply:
        body = "<!DOCTYPE html>\n<title>Moved</title><p>This page has moved.</p>\n"
        return Reply(status, body.encode(), headers={"Location": location})

    # -- routes ------------------------------------------------------------------------------

    def _index(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        items = "\n".join(
            f'<li><a href="{escape(c.path or "", quote=True)}">{escape(c.name)}</a>: '
            f"{escape(c.serves)}</li>"
            for c in CASES
            if c.linked
        )
        main = (
            "<h1>Fault cases</h1>\n<p>Each link below misbehaves in one documented way; "
            "see the test site manifest for what a correct crawler ends with.</p>\n"
            f"<ul>\n{items}\n</ul>"
        )
        return Reply(200, _page("Fault cases", main).encode())

    def _flaky(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        fails = _int_arg(req, "fails", 2, 0, 10**9)
        if hit.n <= fails:
            return self._error(int(match.group("code")))
        return self._article_reply(match.group(0))

    def _timeout_then_ok(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        seconds = _float_arg(req, "sleep", 2.0)
        if hit.n <= _int_arg(req, "fails", 1, 0, 10**9):
            time.sleep(seconds)
        return self._article_reply(match.group(0))

    def _rate_limited(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        as_date = match.group("date") is not None
        delay = _int_arg(req, "retry_after", 3 if as_date else 2, 1, int(MAX_SECONDS))
        fails = _int_arg(req, "fails", 1, 0, 10**9)
        now = time.time()
        with self._lock:
            sent, not_before = self._limits.get(hit.key, (0, 0.0))
            if now < not_before - RETRY_AFTER_GRACE:
                self._early[hit.key] = self._early.get(hit.key, 0) + 1
            elif sent < fails:
                not_before = (math.ceil(now) if as_date else now) + delay
                self._limits[hit.key] = (sent + 1, not_before)
            else:
                return self._article_reply(match.group(0))
        if as_date:
            value = format_datetime(datetime.fromtimestamp(not_before, UTC), usegmt=True)
        else:
            value = str(max(1, math.ceil(not_before - now)))
        return self._error(429, {"Retry-After": value})

    def _unauthorized(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        return self._error(401, {"WWW-Authenticate": 'Basic realm="faults"'})

    def _forbidden(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        return self._error(403)

    def _missing_then_back(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        if hit.n <= _int_arg(req, "fails", 1, 0, 10**9):
            return self._error(404)
        return self._article_reply(match.group(0))

    def _missing(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        return self._error(404)

    def _gone(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        return self._error(410)

    def _doc(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        return self._article_reply(match.group(0))

    def _loop(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        other = "b" if match.group("which") == "a" else "a"
        return self._redirect(302, f"{self.origin}/faults/loop-{other}")

    def _chain(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        n = int(match.group("n"))
        if n == 0:
            return self._article_reply(match.group(0))
        return self._redirect(301, f"{self.origin}/faults/chain/{n - 1}")

    def _slow(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        seconds = _float_arg(req, "seconds", 1.0)
        body = self._article(match.group(0))
        if not _flag(req, "trickle"):
            time.sleep(seconds)
            return Reply(200, body)

        def trickle(pieces: int = 10) -> Iterator[bytes]:
            step = -(-len(body) // pieces)
            for start in range(0, len(body), step):
                time.sleep(seconds / pieces)
                yield body[start : start + step]

        return Reply(200, stream=trickle, length=len(body))

    def _huge(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        total = _int_arg(req, "mb", 32, 1, 4096) * MIB

        def chunks() -> Iterator[bytes]:
            yield _HUGE_HEAD
            remaining = total - len(_HUGE_HEAD) - len(_HUGE_TAIL)
            while remaining >= len(_HUGE_BLOCK):
                yield _HUGE_BLOCK
                remaining -= len(_HUGE_BLOCK)
            yield b" " * remaining
            yield _HUGE_TAIL

        return Reply(200, stream=chunks, length=total)

    def bomb(self, mb: int) -> bytes:
        """``mb`` MiB of zero bytes, gzip-compressed once (level 9) and cached."""
        with self._build_lock:
            body = self._bombs.get(mb)
            if body is None:
                compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
                zeros = bytes(MIB)
                parts = [compressor.compress(zeros) for _ in range(mb)]
                parts.append(compressor.flush())
                if len(self._bombs) >= 4:
                    self._bombs.clear()
                body = self._bombs[mb] = b"".join(parts)
            return body

    def _gzip_bomb(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        body = self.bomb(_int_arg(req, "mb", 100, 1, 1024))
        headers = {} if match.group("html") else {"Content-Encoding": "gzip"}
        return Reply(200, body, headers=headers)

    def _deep_nesting(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        depth = _int_arg(req, "depth", 100_000, 1, 1_000_000)
        with self._build_lock:
            body = self._deep.get(depth)
            if body is None:
                head = _page(
                    "A deeply nested page",
                    "<h1>A deeply nested page</h1>\n"
                    f"<p>This page nests {_number_words(depth)} elements.</p>\n\x00",
                ).encode()
                before, after = head.split(b"\x00")
                body = b"".join(
                    (
                        before,
                        b"<div>" * depth,
                        b"<p>The bottom of the page.</p>",
                        b"</div>" * depth,
                        after,
                    )
                )
                if len(self._deep) >= 4:
                    self._deep.clear()
                self._deep[depth] = body
        return Reply(200, body)

    def _binary_page(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        with self._build_lock:
            if self._binary is None:
                self._binary = random.Random(f"{self.seed}:binary").randbytes(64 * 1024)
            body = self._binary
        return Reply(200, body)

    def _wrong_charset(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        paragraphs = "\n".join(f"<p>{p}</p>" for p in _CHARSET_TEXT)
        html = (
            "<!DOCTYPE html>\n<html><head><title>Müller’s café</title></head>\n<body>\n"
            f'<nav><a href="{FAULT_INDEX}">Fault cases</a></nav>\n'
            f"<main><article><h1>Müller’s café</h1>\n{paragraphs}\n</article></main>\n"
            "</body></html>\n"
        )
        return Reply(200, html.encode("windows-1252"))

    def _calendar(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        year, month = int(match.group("year")), int(match.group("month"))
        if year == 0:
            return self._error(404)
        index = year * 12 + month - 1
        links = []
        for label, rel, other in (
            ("Previous month", "prev", index - 1),
            ("Next", "next", index + 1),
        ):
            y, m = divmod(other, 12)
            if 1 <= y <= 9999:
                href = f"/faults/calendar/{y:04d}/{m + 1:02d}"
                links.append(f'<a href="{href}" rel="{rel}">{label}</a>')
        weeks = "\n".join(
            "<tr>" + "".join(f"<td>{d or ''}</td>" for d in week) + "</tr>"
            for week in calendar.monthcalendar(year, month)
        )
        title = f"Events in {calendar.month_name[month]} {year:04d}"
        main = (
            f"<h1>{title}</h1>\n<p>No events are planned this month.</p>\n"
            f"<table>\n{weeks}\n</table>\n<nav>{' '.join(links)}</nav>"
        )
        return Reply(200, _page(title, main).encode())

    def _search(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        page = _int_arg(req, "page", 1, 1, 10**15)
        rng = random.Random(f"{self.seed}:search:{page}")
        prose = Prose(rng, TOPICS[page % len(TOPICS)], TOPICS[(page + 1) % len(TOPICS)])
        first = (page - 1) * 10 + 1
        results = "\n".join(
            f"<li>Result {first + k}: {escape(prose.phrase())}</li>" for k in range(10)
        )
        links = [f'<a href="/faults/search?page={page + 1}" rel="next">Next page</a>']
        if page > 1:
            links.insert(0, f'<a href="/faults/search?page={page - 1}" rel="prev">Previous</a>')
        title = f"Search results, page {page}"
        main = f"<h1>{title}</h1>\n<ol>\n{results}\n</ol>\n<nav>{' '.join(links)}</nav>"
        return Reply(200, _page(title, main).encode())

    def _private_links(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        items = "\n".join(
            f'<li><a href="{escape(url, quote=True)}">{escape(url)}</a></li>'
            for url in PRIVATE_TARGETS
        )
        main = (
            "<h1>Internal links</h1>\n<p>These links point at private, loopback and "
            "link-local addresses. A crawler must refuse them without connecting.</p>\n"
            f"<ul>\n{items}\n</ul>"
        )
        return Reply(200, _page("Internal links", main).encode())

    def _redirect_private(self, req: Request, match: re.Match[str], hit: _Hit) -> Reply:
        return self._redirect(302, PRIVATE_REDIRECT)


def _number_words(n: int) -> str:
    return "one hundred thousand" if n == 100_000 else f"{n:,}"
