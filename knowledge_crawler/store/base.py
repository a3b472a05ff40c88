"""The store contract: what every backend (SQLite now, PostgreSQL later) provides.

The store persists values and never computes them: hashes, canonical URLs,
duplicate decisions and next check times are made before a record gets here.

Its unit of write is an ordered batch of operations (:data:`Operation`),
committed in one transaction by :meth:`Store.write`: page upserts
(:class:`PageRecord`), duplicate decisions about stored pages
(:class:`DuplicateUpdate`), touches of pages revisited without new content
(:class:`Touch`, a 304) and discovery checkpoints (:class:`CheckpointAdvance`).
A checkpoint enters a batch after the records it covers, so it can never
commit ahead of them.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from knowledge_crawler.config import display_url

if TYPE_CHECKING:
    from knowledge_crawler.store.leases import Lease, LeaseHolder

__all__ = [
    "HEAD_COUNTERS",
    "RUN_OUTCOMES",
    "STORE_COUNTERS",
    "ArchivedPage",
    "CheckpointAdvance",
    "DedupeRow",
    "DuplicateUpdate",
    "FetchFailure",
    "FrontierAdd",
    "KnownPage",
    "Operation",
    "PageRecord",
    "PassageRecord",
    "StatusChange",
    "Store",
    "Touch",
    "UpsertResult",
    "UrlOutcome",
    "display_url",
    "new_batch_id",
    "record_dict",
    "utc_now",
]

#: The per-run counters of SPEC F-METRICS, stored as columns of ``crawl_runs``.
HEAD_COUNTERS: tuple[str, ...] = (
    "candidates_discovered",
    "conditional_requests_sent",
    "responses_304",
    "responses_200_changed",
    "responses_200_unchanged",
    "responses_404",
    "responses_429",
    "retries_scheduled",
    "parse_failures",
    "upserts_completed",
    "duplicates_found",
    "tombstones_created",
    "pages_new",
    "quarantined",
)


#: How a run ended (``crawl_runs.outcome``): ``running`` until it finishes, ``abandoned``
#: when a later run found its process gone.
RUN_OUTCOMES: tuple[str, ...] = ("running", "finished", "interrupted", "failed", "abandoned")

#: The counters a committed batch adds to its run, in the batch's own transaction.
STORE_COUNTERS: tuple[str, ...] = (
    "upserts_completed",
    "pages_new",
    "responses_200_changed",
    "responses_200_unchanged",
    "responses_304",
    "tombstones_created",
    "quarantined",
)


def new_batch_id() -> str:
    """A batch id (:meth:`Store.write`) no other batch of any writer has."""
    return uuid.uuid4().hex


def utc_now() -> str:
    """Now as ISO-8601 UTC text ending in ``Z`` (microseconds kept for ordering)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(slots=True)
class PageRecord:
    """One fetched page, ready to load: the row of ``pages`` that a fetch produced."""

    source_id: str
    canonical_url: str
    url: str
    final_url: str
    fetched_at: str
    http_status: int
    content_hash: str
    content: str
    title: str | None = None
    headings: Sequence[str] = ()
    word_count: int = 0
    language: str | None = None
    thin: bool = False
    minhash: bytes | None = None
    minhash_params: str | None = None
    #: ``(source_id, canonical_url)`` of the representative page when a duplicate.
    duplicate_of: tuple[str, str] | None = None
    duplicate_kind: str | None = None
    #: estimated Jaccard similarity with the representative (1.0 for exact duplicates)
    duplicate_score: float | None = None
    etag: str | None = None
    last_modified: str | None = None
    next_check_at: str | None = None
    #: seconds between checks of this page, adapted to how often it changes
    check_interval: int | None = None
    #: link distance from the source's start URLs at which the page was found
    depth: int = 0
    #: the fetch's raw response in the archive: WARC file (relative to the archive folder)
    #: and byte offset of its record; None when not archived (a record without one keeps
    #: the stored location as long as its content hash does not move)
    archive_file: str | None = None
    archive_offset: int | None = None
    #: rebuilt from the archived response (``knowledge-crawler reextract``), not fetched:
    #: the content and what derives from it are written as for a fetch, but the page's
    #: fetch state stays (status, seen and checked times, retry state, frontier entry),
    #: and a moved hash moves ``last_changed_at`` to the time of writing
    reextracted: bool = False
    #: the content split into passages (search units); written with the content, in the
    #: same transaction, replacing the page's previous passages
    passages: Sequence[PassageRecord] = ()
    #: a per-site spider's extra fields (JSON values by name), stored as a JSON object in
    #: ``page_meta.extra`` with every fetch; a re-extraction keeps the stored ones
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: compare-and-set: ``(content_hash, fetched_at)`` of the page as its writer read it
    #: (a re-extraction); the record is written only if the page is still so stored,
    #: else skipped and reported ``stale`` (None: written whatever is stored)
    read_state: tuple[str, str] | None = None
    #: the canonical URLs (same source, in scope) the page links to; they replace the
    #: stored ones when the page's content is written (new, or its hash moved). None:
    #: its links were not read, the stored ones stay
    outlinks: Sequence[str] | None = None
    #: the canonical URL its ``rel=canonical`` names (stored with the outlinks)
    canonical_link: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class PassageRecord:
    """One passage of a page's content, as ``transform.passages`` made it."""

    id: str  #: stable: the same text under the same headings of a page keeps it
    ord: int
    heading_path: tuple[str, ...]
    content: str
    word_count: int

    @classmethod
    def of(cls, passages: Iterable[Any]) -> tuple[PassageRecord, ...]:
        """Records of ``transform.passages.Passage`` values (read by their attributes:
        the store does not import the transforms)."""
        return tuple(
            cls(p.id, p.ord, tuple(p.heading_path), p.text, p.word_count) for p in passages
        )


@dataclass(frozen=True, slots=True)
class FrontierAdd:
    """A page a discovery adapter listed, to be fetched; settled when its record is written.

    Not added when the page was already checked since ``discovered_at``.
    """

    source_id: str
    canonical_url: str
    url: str
    adapter: str
    discovered_at: str
    depth: int = 0
    lastmod: str | None = None
    #: canonical URL of the stored page whose links listed it (``adapter`` ``link``)
    found_on: str | None = None
    #: as read back: when a redirected or refused URL is due again (None: now); a
    #: frontier addition does not set it
    next_due_at: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class UrlOutcome:
    """A URL that answered without a page of its own: redirected to another URL, or
    refused (not HTML, robots.txt, out of scope, ...), and when it is due again.

    Not a failure: its retry state, if any, is settled. A URL not stored as a page
    keeps it as its frontier row (``state`` ``redirected`` or ``refused``), left out
    of the crawl until ``next_due_at`` (None: due at once, e.g. a robots.txt refusal
    judged again by each crawl without a download). A stored page that now redirects
    is tombstoned with ``redirect_to`` and stays checked at ``next_due_at``; its
    content is kept. A refusal of a stored page changes nothing stored.
    """

    source_id: str
    canonical_url: str
    url: str
    state: str  #: ``redirected`` or ``refused``
    checked_at: str
    reason: str
    #: where a redirect led: the canonical URL of a page of the source, or the URL itself
    #: when it left the source's scope
    target: str | None = None
    status: int | None = None
    next_due_at: str | None = None
    depth: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class Touch:
    """A stored page checked again without new content (a 304 Not Modified).

    Only check and seen times, validators and the next check move; content, hash,
    title and ``last_changed_at`` stay. A validator given as None keeps the stored one
    (a 304 need not repeat them, RFC 9110 15.4.5).
    """

    source_id: str
    canonical_url: str
    checked_at: str
    etag: str | None = None
    last_modified: str | None = None
    next_check_at: str | None = None
    check_interval: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class FetchFailure:
    """A fetch that failed, and the page's retry state after it (``fetch_attempts``).

    The state is decided before it gets here (``sync.retry``); the store keeps it
    apart from content and never touches ``pages`` for it. ``settled``: the page
    will not be fetched again on its own (dead-lettered, held for review, or a
    final answer), so its frontier entry is done.
    """

    source_id: str
    canonical_url: str
    url: str
    failed_at: str
    attempts: int
    first_failed_at: str
    last_error: str | None = None
    last_status: int | None = None
    next_retry_at: str | None = None
    dead_lettered_at: str | None = None
    needs_review: bool = False
    depth: int = 0
    settled: bool = False
    #: the observations behind a parse failure (a junk 200 of a stored page, as
    #: ``sync.junk`` writes them: times, reasons, digests, archive locations), JSON text;
    #: ``[]`` for a fetch that failed
    evidence: str = "[]"

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class StatusChange:
    """A stored page's status after a check or a deletion signal (``suspected_missing``,
    ``tombstoned``, ``active``).

    Its content stays; ``evidence`` is JSON text of the observations behind the
    change (statuses and times, or the signal), ``reason`` one line. ``http_status``:
    what the page's URL answered (None: no answer of its own, e.g. a feed's deletion
    marker; the stored one stays); ``next_check_at``: when to check it next (None:
    unchanged). When the status moves, the store records the move in ``page_events``.
    """

    source_id: str
    canonical_url: str
    status: str
    checked_at: str
    reason: str | None = None
    evidence: str = "[]"
    http_status: int | None = None
    next_check_at: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class CheckpointAdvance:
    """A source's discovery adapter moved its cursor (a next URL, a ``lastmod`` mark)."""

    source_id: str
    adapter: str
    cursor: str


@dataclass(frozen=True, slots=True)
class KnownPage:
    """What a crawl needs to know of a stored page before fetching it again."""

    source_id: str
    canonical_url: str
    #: the URL that answered last time: what a revisit requests (no redirect to follow)
    final_url: str
    etag: str | None
    last_modified: str | None
    content_hash: str
    depth: int
    check_interval: int | None
    last_changed_at: str
    next_check_at: str | None
    #: ``active``, ``suspected_missing`` or ``tombstoned``, with the reason and the
    #: evidence (JSON text) behind it
    status: str = "active"
    status_reason: str | None = None
    status_evidence: str = "[]"
    #: the stored content's words (what a junk answer is measured against)
    word_count: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class ArchivedPage:
    """A stored page as re-extraction reads it: its last fetch, its archive location
    (None when it has none) and what must stay as it is (schedule, status, decision)."""

    source_id: str
    canonical_url: str
    url: str
    final_url: str
    fetched_at: str
    http_status: int
    etag: str | None
    last_modified: str | None
    depth: int
    next_check_at: str | None
    check_interval: int | None
    status: str
    content_hash: str
    duplicate_of: tuple[str, str] | None
    duplicate_kind: str | None
    duplicate_score: float | None
    archive_file: str | None
    archive_offset: int | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


def record_dict(rec: PageRecord) -> dict[str, Any]:
    """``rec`` as plain JSON values (MinHash bytes as hex): for quarantine and rescue files."""
    record = asdict(rec)
    if isinstance(record.get("minhash"), bytes):
        record["minhash"] = record["minhash"].hex()
    record["headings"] = list(record["headings"])
    record["passages"] = [
        {**p, "heading_path": list(p["heading_path"])} for p in record.get("passages", [])
    ]
    return record


@dataclass(frozen=True, slots=True)
class DuplicateUpdate:
    """A new duplicate decision for a page already stored (``duplicate_of=None``: none)."""

    key: tuple[str, str]
    duplicate_of: tuple[str, str] | None
    kind: str | None = None
    score: float | None = None


#: One operation of a batch; :meth:`Store.write` applies them in order, in one transaction.
Operation = (
    PageRecord
    | DuplicateUpdate
    | Touch
    | FrontierAdd
    | UrlOutcome
    | FetchFailure
    | StatusChange
    | CheckpointAdvance
)


@dataclass(frozen=True, slots=True)
class DedupeRow:
    """What deduplication needs to know of one stored, active page."""

    source_id: str
    canonical_url: str
    content_hash: str
    word_count: int
    #: representative's ``(source_id, canonical_url)`` when the page is a duplicate
    duplicate_of: tuple[str, str] | None
    duplicate_kind: str | None = None
    duplicate_score: float | None = None
    minhash: bytes | None = None
    minhash_params: str | None = None
    #: the canonical URL its ``rel=canonical`` names, when another page's
    canonical_link: str | None = None
    #: distinct stored pages linking to it (from stored outlinks)
    inlinks: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


#: why a duplicate update was not applied: its page, or the page it names as its
#: representative, has no row (yet: another process of a shared crawl may store it)
PAGE_NOT_STORED = "its page is not stored"
REPRESENTATIVE_NOT_STORED = "its representative is not stored"


@dataclass(slots=True)
class UpsertResult:
    """What one batch did, key by key."""

    inserted: list[tuple[str, str]] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    #: ``(key, error)`` of each record that failed and was quarantined.
    quarantined: list[tuple[tuple[str, str], str]] = field(default_factory=list)
    #: keys of records marked duplicate of a page that is not stored (e.g. quarantined):
    #: stored as no duplicate
    unlinked: list[tuple[str, str]] = field(default_factory=list)
    #: ``(update, why)`` of each duplicate update not applied (its page or representative
    #: is not stored, or the database refused it)
    dropped_updates: list[tuple[DuplicateUpdate, str]] = field(default_factory=list)
    #: keys of the pages touched (a 304), and of touches for pages not stored (ignored)
    touched: list[tuple[str, str]] = field(default_factory=list)
    untouched: list[tuple[str, str]] = field(default_factory=list)
    #: checkpoints advanced, ``(source_id, adapter)``
    checkpoints: list[tuple[str, str]] = field(default_factory=list)
    #: pages added to the frontier (discovered, not yet stored)
    frontier_added: int = 0
    #: URLs recorded as redirected (stored pages among them: ``redirected_pages``) or refused
    redirected: int = 0
    redirected_pages: int = 0
    refused: int = 0
    #: failures recorded, and of those dead-lettered
    failures: int = 0
    dead_lettered: int = 0
    #: status changes applied to stored pages, and of those tombstones made
    status_changes: int = 0
    tombstones: int = 0
    #: keys of records with a ``read_state`` the page no longer has (another writer
    #: stored it since it was read): not written
    stale: list[tuple[str, str]] = field(default_factory=list)

    @property
    def loaded(self) -> int:
        return len(self.inserted) + len(self.changed) + len(self.unchanged)


class Store(abc.ABC):
    """A knowledge dataset on some database. Methods are blocking; call them off the event loop."""

    url: str

    @abc.abstractmethod
    def write(
        self,
        operations: Sequence[Operation],
        *,
        run_id: int | None = None,
        batch_id: str | None = None,
    ) -> UpsertResult:
        """Apply ``operations`` in order, in one transaction.

        Touches move only times, validators and the next check of a stored page
        (one for a page that is not stored is ignored and reported ``untouched``);
        frontier additions record discovered pages, and a record or touch settles
        its page's entry and clears its retry state; a URL outcome records a redirect
        or refusal (see :class:`UrlOutcome`) and clears its retry state;
        a failure replaces the page's retry state (``fetch_attempts``), a status
        change moves a stored page's status with its reason and evidence;
        checkpoints replace the source's cursor for their adapter. Records upsert
        on ``(source_id, canonical_url)``: ``first_seen_at`` is set once;
        content, minhash and ``last_changed_at`` move only when the hash moves,
        and then the previous content is appended to ``page_versions``. With
        ``run_id``, the run's :data:`STORE_COUNTERS` grow by what the batch did,
        in the same transaction.

        A record the database refuses never half-loads the batch: the batch is
        rolled back and loaded again record by record, in one transaction with
        the duplicate updates whose page and representative are stored and the
        quarantine rows of the offenders (with their error); the rest load. A
        record whose representative is not stored is stored as no duplicate
        (``unlinked``); an update that cannot apply is left out
        (``dropped_updates``).

        Any other failure is the database's, not a record's: nothing of the
        batch is written, nothing quarantined, and it raises
        :class:`~knowledge_crawler.errors.TransientStoreError` when the
        condition may pass (locked, busy, I/O, full) or another
        :class:`~knowledge_crawler.errors.StoreError`. The caller keeps the
        batch and may retry it whole, with the same ``batch_id``: a batch whose
        COMMIT failed and yet committed (a connection lost while the answer was
        on its way) is not applied again, its first result is returned (None:
        an id of its own, so the store can still tell at once).
        """

    @abc.abstractmethod
    def known_pages(self, source_ids: Sequence[str]) -> Iterator[KnownPage]:
        """Every stored page of these sources, tombstoned ones included (they are
        checked again when due, so a page that comes back is restored), most overdue first.

        Pages never scheduled (``next_check_at`` NULL) come first, then by
        ``next_check_at``: the order a refresh visits them in.
        """

    @abc.abstractmethod
    def checkpoints(self, source_id: str) -> dict[str, str]:
        """The source's discovery cursors, ``{adapter: cursor}``."""

    @abc.abstractmethod
    def fetch_attempts(self, source_ids: Sequence[str]) -> list[FetchFailure]:
        """The retry state of these sources' failed pages (dead letters included)."""

    @abc.abstractmethod
    def dead_letters(self, source_id: str | None = None) -> list[dict[str, Any]]:
        """Pages whose retries are exhausted or that wait for review, oldest first."""

    @abc.abstractmethod
    def frontier(
        self, source_ids: Sequence[str], *, due_by: str | None = None
    ) -> list[FrontierAdd]:
        """URLs of these sources known and not stored as pages (listed, linked,
        redirected, refused), oldest discovery first; ``due_by`` given: only those due
        by then (a redirected or refused URL waits for its ``next_due_at``)."""

    @abc.abstractmethod
    def frontier_due(
        self,
        source_id: str,
        *,
        due_by: str,
        after: tuple[int, str] | None = None,
        limit: int = 2000,
    ) -> list[FrontierAdd]:
        """Up to ``limit`` URLs of ``source_id`` known and not stored that are due by
        ``due_by``, by depth then canonical URL, after ``after`` (the ``(depth,
        canonical_url)`` of the last one of the page before): the crawl state read a page
        at a time, so that a crawl never holds all of it."""

    @abc.abstractmethod
    def frontier_waiting(self, source_ids: Sequence[str], *, due_by: str) -> list[tuple[str, str]]:
        """``(source_id, canonical_url)`` of the URLs known and not stored that are not
        due by ``due_by`` (redirected and refused URLs waiting for their time)."""

    @abc.abstractmethod
    def archived_pages(self, source_ids: Sequence[str]) -> list[ArchivedPage]:
        """Every stored page of these sources (any status), with its archive location
        (None when it has none), earliest ``first_seen_at`` first (ties by id): the order
        :meth:`dedupe_state` lists pages in."""

    @abc.abstractmethod
    def history(self, canonical_url: str, *, source_id: str | None = None) -> list[dict[str, Any]]:
        """The versions of the page(s) with this identity, newest first per source.

        For each source that stores the URL (or only ``source_id``): the current
        content, then its ``page_versions``. Each: ``source_id, canonical_url,
        content_hash, title, content, fetched_at`` and ``replaced_at`` (None for
        the current one). The current one also has ``events``: every move of the
        page's status (``page_events``), oldest first, each with ``time``, ``event``
        (``suspected_missing``, ``tombstoned``, ``restored``), ``reason``,
        ``http_status`` (what the URL answered; None for a deletion signal) and
        ``evidence`` (a list). Empty when no such page is stored.
        """

    @abc.abstractmethod
    def changes(
        self,
        since: str,
        until: str | None = None,
        *,
        source_id: str | None = None,
        contents: bool = True,
    ) -> Iterator[dict[str, Any]]:
        """What happened to pages from ``since`` (included) to ``until`` (excluded), oldest first.

        Times are stored-time text (ISO-8601 UTC, ``Z``). One entry per event, each
        with ``kind``, ``time``, ``source_id``, ``canonical_url``, ``title`` and
        ``content_hash`` (the page's current ones; a change's: its new text's),
        ``reason``, ``fetched_at`` and the ``previous_*`` fields (None where they
        do not apply):

        - ``new``: the page was first seen (``first_seen_at``);
        - ``changed``: its content hash moved (one entry per stored version, at its
          ``replaced_at``), with ``previous_content_hash``, ``previous_fetched_at``
          and ``fetched_at`` (when the old and the new text were last fetched), and
          with ``contents`` the two texts, ``previous_content`` and ``content``;
        - ``tombstoned``: the page was tombstoned (one entry per time), with the
          ``reason``;
        - ``restored``: the page became active again after being missing
          (suspected or tombstoned).

        Status entries come from ``page_events``, so a page tombstoned and restored
        in the window shows both, in order. A page's ``suspected_missing`` moves are
        kept there too (see :meth:`history`) but are not changes: it is listed only
        once tombstoned, or restored. Streams: rows are read as consumed.
        """

    @abc.abstractmethod
    def export_pages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Every stored page with its provenance, in storage order; streams.

        Each: ``source_id, canonical_url, url, final_url, title, content,
        content_hash, language, word_count, headings`` (a list), ``fetched_at,
        last_changed_at, version`` (stored versions + 1: the current one's number),
        ``status``, ``duplicate_of`` (the representative's canonical URL, or
        None) and ``extra`` (a dict: the spider's extra fields, ``{}`` for none).
        Leaves out duplicates and tombstoned pages unless asked. ``since``: only
        pages whose content or status moved at or after it (``last_changed_at`` or
        ``status_changed_at``).
        """

    @abc.abstractmethod
    def export_passages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Every passage of the pages :meth:`export_pages` would give, page by page in
        passage order; streams. Each: ``passage_id, ord, heading_path`` (a list),
        ``content, word_count`` and its page's ``source_id, canonical_url, url`` (after
        redirects), ``title, page_content_hash, fetched_at, last_changed_at, version,
        status, duplicate_of``."""

    @abc.abstractmethod
    def dedupe_state(self, *, signatures: bool = True) -> Iterator[DedupeRow]:
        """Every active page, earliest ``first_seen_at`` first (ties by id).

        With ``signatures``, every page carries its stored MinHash bytes and
        parameters fingerprint: a representative's to rebuild the LSH index, a
        duplicate's to decide again when its representative changes, so that a
        crawl needs no other read of the dedupe state once it has started.
        """

    @abc.abstractmethod
    def dependents(self, key: tuple[str, str]) -> list[DedupeRow]:
        """The pages stored as duplicates of ``key``, earliest first, with their MinHash."""

    @abc.abstractmethod
    def duplicate_clusters(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Each representative with its duplicates (of ``kind`` "exact"/"near", or both)."""

    @abc.abstractmethod
    def search(
        self,
        terms: Sequence[Sequence[str]] = (),
        *,
        require_all: bool = False,
        raw: str | None = None,
        k: int = 10,
        source_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The ``k`` passages that best answer a query, best first, leaving out duplicates
        and tombstoned pages: ``passage_id``, ``source_id``, ``canonical_url``, ``url``,
        ``title``, ``heading_path``, ``score`` (higher is better), ``snippet`` (matches
        in ``**``) and ``content``.

        The query is ``terms`` (words, and phrases as several words, lower case, as
        ``transform.query.query_terms`` gives them), any of them or every one
        (``require_all``); or ``raw``, the backend's own query syntax, as typed. Raises
        :class:`ValueError` for a raw query the index cannot read."""

    @abc.abstractmethod
    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Any]:
        """The rows of a read-only SQL query over the schema's tables and views, written
        with SQLite's placeholders (``?`` or ``:name``) whatever the database; each row
        reads by column name and by position, and ``dict(row)`` gives its columns."""

    @abc.abstractmethod
    def pages_without_passages(self) -> int:
        """Stored pages with content but no passages (stored before passages existed)."""

    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None:
        """A dataset-level value (e.g. the MinHash parameters of stored signatures)."""

    @abc.abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Store a dataset-level value."""

    @abc.abstractmethod
    def start_run(
        self,
        *,
        spider: str,
        sources: Sequence[str],
        mode: str,
        job_id: str | None = None,
        pid: int,
        host: str,
    ) -> int:
        """Record a crawl run as started (outcome ``running``) by ``pid`` on ``host``; its id.

        ``job_id``: the scheduler's id of the job (scrapyd's ``_job``), if any.
        """

    @abc.abstractmethod
    def unfinished_runs(self) -> list[dict[str, Any]]:
        """Runs still ``running``, oldest first: ``id, pid, host, started_at, job_id`` each."""

    @abc.abstractmethod
    def abandon_run(self, run_id: int) -> None:
        """Mark a ``running`` run ``abandoned`` (its process is gone), finished now.

        Its counters stay as its committed batches left them.
        """

    @abc.abstractmethod
    def finish_run(
        self, run_id: int, *, reason: str, outcome: str, counters: Mapping[str, int]
    ) -> None:
        """Record a run's end: Scrapy's close ``reason``, its ``outcome`` and its counters.

        ``counters``: every integer stat; the columns of :data:`HEAD_COUNTERS` are
        set from it, and all of it is kept as JSON.
        """

    @abc.abstractmethod
    def acquire_leases(
        self,
        source_ids: Sequence[str],
        holder: LeaseHolder,
        *,
        ttl: float,
        gone: Callable[[Lease], bool] | None = None,
    ) -> list[Lease]:
        """Take or renew ``holder``'s writer lease on each source, for ``ttl`` seconds from
        now, in one transaction: every one or none.

        A source is free when it has no lease, only expired ones, only ones whose
        process ``gone`` says is gone, or only ones of ``holder.holder`` (the processes
        of one shared crawl share a holder). Returns the leases that stand in the way
        (empty: all taken); expired and gone leases of others are removed when taken.
        """

    @abc.abstractmethod
    def release_leases(self, holder: LeaseHolder) -> None:
        """Give up this process's leases (``holder.token``); other processes' stay."""

    @abc.abstractmethod
    def leases(self, source_ids: Sequence[str] | None = None) -> list[Lease]:
        """The leases recorded (of these sources), expired ones included, by source."""

    @abc.abstractmethod
    def stats(self, *, stale_days: int = 7, runs: int = 5) -> dict[str, Any]:
        """The sanity checks, per-source counts and the last runs' counters.

        Each run carries its outcome, job id and ``fetch_errors`` (``{kind: count}``
        from its ``kc/fetch/error/<kind>`` stats).
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection; further calls fail."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
