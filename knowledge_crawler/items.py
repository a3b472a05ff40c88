"""Items that cross from the spider to the pipelines.

Pure module (dataclasses only). A response becomes one outcome item:

* :class:`PageItem`, a page with content (new, changed or unchanged): the
  spider fills the fetch fields; each pipeline fills its own group of fields in
  order (archive, extract, clean, canonicalize, fingerprint, dedupe) and the store
  pipeline loads the result;
* :class:`NotModifiedItem`, a 304 for a stored page: stages 1-5 pass it by,
  and the store pipeline turns it into a touch (times, validators, next check);
* :class:`FailureItem`, a fetch that failed for good in this crawl (or was
  denied, missing or gone), with the retry decision already taken: stages 1-5
  pass it by, and the store pipeline keeps the retry state apart from content
  and moves a stored page's status (suspected missing, tombstoned);
* :class:`DiscoveryItem`, what one sitemap, feed or API page listed: stages 1-5
  pass it by, and the store pipeline writes the pages to the frontier, the
  tombstones of the stored pages it says were deleted, and then the adapter's
  checkpoint, in that order, so the checkpoint never commits ahead of what it
  moved past;
* :class:`UrlOutcomeItem`, a URL that answered without a page of its own (a
  redirect to another URL, or a refusal: not HTML, robots.txt, out of scope):
  the store pipeline records it in the crawl state, due again later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Deleted",
    "Discovered",
    "DiscoveryItem",
    "FailureItem",
    "NotModifiedItem",
    "PageItem",
    "UrlOutcomeItem",
]


@dataclass(slots=True)
class PageItem:
    """One fetched response of one source, on its way to the store."""

    # -- set by the spider ------------------------------------------------------
    source_id: str
    url: str  #: the URL that was requested (before redirects)
    final_url: str  #: the URL that answered (after redirects)
    http_status: int
    fetched_at: str  #: ISO-8601 UTC, ``Z``
    content_type: str | None = None
    html: str | None = None  #: decoded body for text responses; None for binary ones
    etag: str | None = None
    last_modified: str | None = None
    depth: int = 0
    #: canonical URL of the URL requested (before redirects)
    request_key: str | None = None
    #: the response as received, for the raw archive: headers as ``(name, value)`` pairs in
    #: order, and the body (Content-Encoding already undone by Scrapy); the archive
    #: pipeline writes them and empties both
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None
    #: the body is the page's HTML after a browser ran its scripts, not the HTTP body
    rendered: bool = False
    #: the spider's CSS or XPath selector for the main content (extract uses the
    #: elements it matches instead of automatic extraction); None: automatic
    content_selector: str | None = None
    #: the spider's extra fields for this page (``extra_fields``), checked by extract:
    #: JSON values by name, stored in ``page_meta.extra``
    extra: dict[str, Any] = field(default_factory=dict)

    #: the page's links are to be followed (read by the stage middleware, which yields their
    #: requests): from the parts of the page this XPath selects (None: all of it), with
    #: the response's encoding for a ``<base href>``
    follow: bool = False
    link_region: str | None = None
    encoding: str = "utf-8"
    #: ``(canonical URL, URL)`` of the in-scope links found on the page that the crawl
    #: did not know yet: stored with the page, in its transaction (the crawl state's
    #: frontier), whether this crawl requests them or not (past the depth limit or
    #: the budget, or denied by the spider's rules: a later crawl may)
    outlinks: list[tuple[str, str]] = field(default_factory=list)
    #: ``(canonical URL, URL, reason)`` of the new in-scope links refused before any
    #: request (robots.txt): recorded as refused with the page
    refused_links: list[tuple[str, str, str]] = field(default_factory=list)
    #: the canonical URLs of all the page's in-scope links, known or not (its stored
    #: outlinks, and inlinks of their targets for dedupe); None: its links were not read
    links: list[str] | None = None
    #: the canonical URL its ``<link rel=canonical>`` names, when in scope (read with
    #: its links)
    canonical_link: str | None = None
    #: a body labelled HTML that is no HTML page (empty, binary, text without markup): why,
    #: as ``sync.junk.Junk``, and the body's digest (``sync.junk.answer_digest``); set by the
    #: spider, judged by extract (a parse failure, which a stored page survives)
    junk: Any = None
    junk_digest: str | None = None
    #: stages 1-4 worked out ahead in a worker process (``transform.stages.Prepared``);
    #: each stage takes its result from it while its input is what the worker saw
    prepared: Any = None
    #: why the stage workers could not do this page (``crawl.stage_pool.StagePageError``:
    #: its stages raised, it killed its worker, it ran past the time limit); the extract
    #: stage records it as a failure with retry state, and the page is not stored
    stage_failure: Exception | None = None

    # -- 0. archive -------------------------------------------------------------
    #: where the response is archived: WARC file (relative to the archive folder) and the
    #: byte offset of its record; None when it was not archived
    archive_file: str | None = None
    archive_offset: int | None = None

    # -- 1. extract -------------------------------------------------------------
    title: str | None = None
    content: str = ""  #: main content (markdown), cleaned by step 2
    headings: list[str] = field(default_factory=list)
    word_count: int = 0
    language: str | None = None
    thin: bool = False

    # -- 3. canonicalize --------------------------------------------------------
    canonical_url: str = ""

    # -- 4. fingerprint ---------------------------------------------------------
    content_hash: str = ""
    minhash: bytes | None = None
    minhash_params: str | None = None
    #: the content split by headings into passages (``transform.passages.Passage``)
    passages: list[Any] = field(default_factory=list)

    # -- 5. dedupe --------------------------------------------------------------
    duplicate_of: tuple[str, str] | None = None  #: (source_id, canonical_url) of the representative
    duplicate_kind: str | None = None  #: "exact" or "near"
    duplicate_score: float | None = None  #: estimated Jaccard with the representative
    #: decisions about other, already stored pages that this page's change caused
    #: (``store.DuplicateUpdate`` values, written in the same transaction as this page)
    dedupe_updates: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class NotModifiedItem:
    """A stored page answered ``304 Not Modified``: its stored content still holds."""

    source_id: str
    canonical_url: str  #: the stored page's identity
    url: str  #: the URL that was requested
    checked_at: str  #: ISO-8601 UTC, ``Z``
    #: validators the 304 carried (None: not repeated, the stored ones stay)
    etag: str | None = None
    last_modified: str | None = None
    request_key: str | None = None


@dataclass(frozen=True, slots=True)
class Discovered:
    """One page a discovery adapter listed."""

    canonical_url: str
    url: str
    lastmod: str | None = None


@dataclass(frozen=True, slots=True)
class Deleted:
    """A stored page a discovery response says its publisher deleted (an authoritative
    signal: an Atom ``at:deleted-entry``, an API item's deleted flag)."""

    canonical_url: str
    url: str
    #: what said so, one line (``atom:deleted-entry in URL, when TIME``): the evidence
    signal: str


@dataclass(slots=True)
class DiscoveryItem:
    """What one discovery response (sitemap, feed, API page) listed, and the cursor after it."""

    source_id: str
    adapter: str  #: e.g. ``sitemap``, ``feed``, ``api``
    discovered_at: str  #: ISO-8601 UTC, ``Z``
    pages: list[Discovered] = field(default_factory=list)
    #: the adapter's checkpoint after this response (None: no cursor to move)
    checkpoint: str | None = None
    #: the checkpoint's key (``api``, ``sitemap:URL``, ...); defaults to ``adapter``
    checkpoint_key: str | None = None
    #: stored pages the response says were deleted: tombstoned before the checkpoint moves
    deleted: list[Deleted] = field(default_factory=list)


@dataclass(slots=True)
class FailureItem:
    """A fetch that failed, and what the retry policy made of it."""

    source_id: str
    canonical_url: str  #: the page's identity (of the URL that answered, or was requested)
    url: str  #: the URL that was requested
    depth: int
    failed_at: str  #: ISO-8601 UTC, ``Z``
    status: int | None  #: the HTTP status, None without a response
    error: str  #: ``http_NNN`` or the exception's class name
    #: ``sync.retry.Action`` value: retry, dead_letter, review, missing, gone
    action: str
    #: the retry state to keep (``sync.retry.AttemptState``), None: none to keep
    state: Any = None
    #: a parse failure's observations (JSON text, ``sync.junk.evidence_to_json``); None: a
    #: fetch that failed, with none
    evidence: str | None = None


@dataclass(slots=True)
class UrlOutcomeItem:
    """A URL that answered without a page of its own: redirected, or refused."""

    source_id: str
    canonical_url: str  #: the URL's identity (the one requested)
    url: str  #: the URL that was requested
    state: str  #: ``redirected`` or ``refused``
    checked_at: str  #: ISO-8601 UTC, ``Z``
    reason: str  #: one line: ``redirected (301) to URL``, ``not HTML (application/pdf)``
    #: a redirect's target: the canonical URL of a page of the source, or the URL itself
    #: when it left the source's scope
    target: str | None = None
    #: a redirect's target URL as it answered, when it is a page of the source (it is
    #: added to the frontier with the outcome, so that it is not lost)
    target_url: str | None = None
    status: int | None = None
    depth: int = 0
    #: judged again by every crawl (a robots.txt refusal costs no download)
    due_at_once: bool = False
