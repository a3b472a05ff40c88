"""Re-extraction: stored pages rebuilt from their archived responses, with no network.

``knowledge-crawler reextract`` (``cli/reextract.py``) runs this; it imports no Scrapy.
For each stored page of the chosen sources that has an archive location, the
response is read back from the WARC file (:mod:`knowledge_crawler.archive.warc`) and
goes through the stages a crawl runs, calling the same pure functions as the
pipelines:

* decode (``transform.decode.decode_html`` with the archived ``Content-Type``, as
  the spider does) and extract (``transform.extract.extract``);
* clean with the source's *current* ``boilerplate`` and ``thin_words``
  (``transform.extract.stored_form``);
* canonicalize (``Source.key``): the page keeps its stored identity; a page whose
  URL would now canonicalize otherwise (changed ``keep_params``/``tracking_params``)
  is counted and named in a warning;
* fingerprint: ``transform.fingerprint.content_hash``, the MinHash signature with
  the dataset's stored MinHash parameters and the source's threshold, and the
  passages (``transform.passages.split_passages``);
* dedupe: a ``sync.dedupe.DedupePolicy`` restored from the store, as the dedupe
  pipeline restores it; pages that are not ``active`` keep their stored decision
  (deduplication knows active pages only);
* store: batches of :class:`~knowledge_crawler.store.PageRecord` marked
  ``reextracted`` (and the duplicate decisions they cause) through
  :meth:`Store.write`: content whose hash did not move stays as it is, a moved
  hash keeps the previous content as a version, as a crawl would; the page's fetch
  state (times, validators, status, schedule, retry state) is not touched.

The caller holds the writer lease on the sources (``cli/reextract.py``): no crawl
writes them meanwhile. Each record still carries the page's state as it was read
(content hash and fetch time): one stored anew since then (by a writer that did not
wait for the lease, or after a lease was lost) is not reverted but skipped and counted
(``stale``), with the duplicate decisions about it.

A page without an archive location is counted and skipped. A record that cannot be
read (its file missing or unreadable, no record at its offset) or a page that cannot
be re-extracted is counted as an error and left as it is stored; a missing file is
named once, however many pages it held.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from knowledge_crawler.archive.warc import (
    ArchivedResponse,
    ArchiveError,
    ArchiveFileError,
    ArchiveReader,
)
from knowledge_crawler.errors import ConfigError, TransientStoreError
from knowledge_crawler.sources import Source
from knowledge_crawler.store import (
    ArchivedPage,
    DuplicateUpdate,
    LeaseKeeper,
    Operation,
    PageRecord,
    PassageRecord,
    Store,
    UpsertResult,
)
from knowledge_crawler.sync.dedupe import DedupePolicy, StoredPage
from knowledge_crawler.transform.decode import decode_html, looks_like_html
from knowledge_crawler.transform.extract import extract, stored_form
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.minhash import (
    FINGERPRINT_VERSION,
    MinHashParams,
    ParamsMismatchError,
    signature,
    to_bytes,
)
from knowledge_crawler.transform.passages import split_passages

__all__ = [
    "META_SIGNATURES",
    "Reextractor",
    "Summary",
    "dataset_params",
    "params_from_fingerprint",
    "rebuild",
]

#: dataset_meta key of the stored signatures' MinHash parameters (as ``runtime`` writes it)
META_SIGNATURES = "minhash_signature"

#: warnings of one kind printed before the rest are only counted
_MAX_WARNINGS = 20


def params_from_fingerprint(fingerprint: str) -> MinHashParams:
    """The MinHash parameters of signatures stamped ``mh1:p128:s1:k3`` (banding ignored).

    >>> params = params_from_fingerprint("mh1:p64:s7:k2")
    >>> params.num_perm, params.seed, params.shingle_size
    (64, 7, 2)
    """
    try:
        version, perm, seed, shingle = fingerprint.split(":")[:4]
        if version != FINGERPRINT_VERSION:
            raise ValueError(f"algorithm {version!r}, not {FINGERPRINT_VERSION!r}")
        if (perm[:1], seed[:1], shingle[:1]) != ("p", "s", "k"):
            raise ValueError("expected mh1:pN:sN:kN")
        return MinHashParams(
            num_perm=int(perm[1:]), seed=int(seed[1:]), shingle_size=int(shingle[1:])
        )
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"stored MinHash parameters {fingerprint!r} cannot be used: {exc}"
        ) from None


def dataset_params(store: Store) -> MinHashParams:
    """The MinHash parameters the database's signatures were made with (the defaults for a
    database that records none)."""
    stored = store.get_meta(META_SIGNATURES)
    return MinHashParams() if stored is None else params_from_fingerprint(stored)


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """What the stages after the fetch make of one archived response."""

    canonical_url: str  #: as the source's rules canonicalize the URL now
    title: str | None
    content: str
    headings: tuple[str, ...]
    word_count: int
    language: str | None
    thin: bool
    content_hash: str
    minhash: bytes | None
    minhash_params: str | None
    passages: tuple[PassageRecord, ...]


def rebuild(
    response: ArchivedResponse,
    page: ArchivedPage,
    source: Source,
    params: MinHashParams,
    *,
    passage_words: int,
) -> Rebuilt:
    """Extract, clean, canonicalize and fingerprint an archived response as a crawl does.

    Raises :class:`ValueError` for a body that is not HTML, or a URL the source cannot
    canonicalize.
    """
    body = response.body
    if not looks_like_html(body[:4096]):  # as the spider tells HTML from other bodies
        raise ValueError("the archived response is not HTML")
    # extract (pipelines/extract.py), decoded as the spider decodes a response
    html = decode_html(body, response.header("Content-Type"))
    result = extract(html, url=page.final_url)
    # clean (pipelines/clean.py)
    content, headings, words = stored_form(result.markdown, result.headings, source.boilerplate)
    # canonicalize (pipelines/canonicalize.py)
    canonical = source.key(page.final_url)
    # fingerprint (pipelines/fingerprint.py)
    minhash: bytes | None = None
    minhash_params: str | None = None
    if words:
        signed = dataclasses.replace(params, threshold=source.near_duplicate_threshold)
        minhash = to_bytes(signature(content, signed))
        minhash_params = signed.fingerprint()
    passages = split_passages(
        content,
        source_id=page.source_id,
        canonical_url=page.canonical_url,
        max_words=passage_words,
    )
    return Rebuilt(
        canonical_url=canonical,
        title=result.title,
        content=content,
        headings=tuple(headings),
        word_count=words,
        language=result.language,
        thin=words < source.thin_words,
        content_hash=content_hash(content),
        minhash=minhash,
        minhash_params=minhash_params,
        passages=PassageRecord.of(passages),
    )


@dataclass(slots=True)
class Summary:
    """What a re-extraction did."""

    #: stored pages of the chosen sources
    pages: int = 0
    #: archived responses read back
    read: int = 0
    changed: int = 0
    unchanged: int = 0
    #: pages without an archive location (skipped)
    missing_archive: int = 0
    #: pages that could not be re-extracted (left as stored)
    errors: int = 0
    #: pages whose URL would now canonicalize to another identity (kept under their own)
    rekeyed: int = 0
    #: pages stored anew since they were read (a crawl wrote them meanwhile): not written
    stale: int = 0
    #: archive files that could not be read, with why (each named once)
    failed_files: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        """The one-line summary ``reextract`` prints."""
        return (
            f"{self.pages} pages: {self.read} read from the archive, {self.changed} changed, "
            f"{self.unchanged} unchanged, {self.missing_archive} without an archive record, "
            f"{self.errors} errors"
        ) + (f", {self.stale} skipped: stored anew since they were read" if self.stale else "")


class Reextractor:
    """Re-extracts the stored pages of ``sources`` from the archive in ``archive``."""

    def __init__(
        self,
        store: Store,
        sources: Mapping[str, Source],
        archive: str | Path,
        *,
        passage_words: int,
        batch_size: int = 200,
        retry_seconds: float = 60.0,
        warn: Callable[[str], None] = lambda message: None,
        lease: LeaseKeeper | None = None,
    ) -> None:
        self.store = store
        #: the writer lease on the sources: checked before each batch (none is written
        #: once it is lost)
        self.lease = lease
        self.sources = dict(sources)
        self.archive = Path(archive)
        self.passage_words = passage_words
        self.batch_size = batch_size
        self.retry_seconds = retry_seconds
        self._warn = warn
        self._warned: dict[str, int] = {}
        self.params = dataset_params(store)

    def pages(self) -> list[ArchivedPage]:
        """The stored pages of the sources, in the order they are re-extracted."""
        return self.store.archived_pages(sorted(self.sources))

    def run(
        self, pages: Sequence[ArchivedPage], progress: Callable[[int], None] = lambda n: None
    ) -> Summary:
        """Re-extract ``pages``; ``progress(1)`` after each. :class:`StoreError` when the
        database cannot be written (batches written until then stay written)."""
        policy = self._policy()
        summary = Summary(pages=len(pages))
        batch: list[Operation] = []
        with ArchiveReader(self.archive) as reader:
            for page in pages:
                try:
                    ops = self._one(page, reader, policy, summary)
                finally:
                    progress(1)
                if ops:
                    batch += ops
                    if sum(isinstance(op, PageRecord) for op in batch) >= self.batch_size:
                        self._write(batch, summary)
                        batch = []
            self._write(batch, summary)
        for kind, n in self._warned.items():
            if n > _MAX_WARNINGS:
                self._warn(f"... and {n - _MAX_WARNINGS} more {kind} warnings")
        return summary

    def _policy(self) -> DedupePolicy:
        """The dedupe state as the dedupe pipeline restores it when a crawl opens."""
        thresholds = {sid: s.near_duplicate_threshold for sid, s in self.sources.items()}
        policy = DedupePolicy(self.params, thresholds)
        # A store.DedupeRow is a StoredPage: the rows reach the policy as they are.
        rows: Iterable[StoredPage] = self.store.dedupe_state()
        try:
            policy.restore(rows)
        except ParamsMismatchError as exc:
            raise ConfigError(f"stored MinHash signatures do not match: {exc}") from exc
        return policy

    def _one(
        self,
        page: ArchivedPage,
        reader: ArchiveReader,
        policy: DedupePolicy,
        summary: Summary,
    ) -> list[Operation]:
        source = self.sources.get(page.source_id)
        if source is None:
            return []
        if page.archive_file is None or page.archive_offset is None:
            summary.missing_archive += 1
            return []
        if page.archive_file in summary.failed_files:
            summary.errors += 1  # its file is already known to be unreadable
            return []
        try:
            response = reader.read(page.archive_file, page.archive_offset)
        except ArchiveFileError as exc:  # named once; its other pages are counted
            summary.errors += 1
            summary.failed_files[page.archive_file] = str(exc)
            self._warn(f"{exc}: the pages archived in it are left as stored")
            return []
        except ArchiveError as exc:
            summary.errors += 1
            self._note("record", f"{page.canonical_url}: {exc}")
            return []
        summary.read += 1
        try:
            rebuilt = rebuild(response, page, source, self.params, passage_words=self.passage_words)
        except Exception as exc:  # a parse failure never replaces the stored record
            summary.errors += 1
            self._note("extraction", f"{page.canonical_url}: cannot re-extract: {exc!r}")
            return []
        if rebuilt.canonical_url != page.canonical_url:
            summary.rekeyed += 1
            self._note(
                "identity",
                f"{page.canonical_url}: now canonicalizes to {rebuilt.canonical_url} "
                "(keep_params or tracking_params changed?); kept under its stored URL",
            )
        updates: list[Operation] = []
        duplicate_of, kind, score = page.duplicate_of, page.duplicate_kind, page.duplicate_score
        if page.status == "active":  # deduplication knows active pages only
            decision, changes = policy.decide(
                page.key, rebuilt.content_hash, rebuilt.minhash, rebuilt.word_count
            )
            duplicate_of, kind, score = decision.duplicate_of, decision.kind, decision.score
            updates = [
                DuplicateUpdate(c.key, c.decision.duplicate_of, c.decision.kind, c.decision.score)
                for c in changes
            ]
        record = PageRecord(
            source_id=page.source_id,
            canonical_url=page.canonical_url,
            url=page.url,
            final_url=page.final_url,
            fetched_at=page.fetched_at,
            http_status=page.http_status,
            content_hash=rebuilt.content_hash,
            content=rebuilt.content,
            title=rebuilt.title,
            headings=rebuilt.headings,
            word_count=rebuilt.word_count,
            language=rebuilt.language,
            thin=rebuilt.thin,
            minhash=rebuilt.minhash,
            minhash_params=rebuilt.minhash_params,
            duplicate_of=duplicate_of,
            duplicate_kind=kind,
            duplicate_score=score,
            etag=page.etag,
            last_modified=page.last_modified,
            next_check_at=page.next_check_at,
            check_interval=page.check_interval,
            depth=page.depth,
            archive_file=page.archive_file,
            archive_offset=page.archive_offset,
            reextracted=True,
            passages=rebuilt.passages,
            read_state=(page.content_hash, page.fetched_at),  # written only if still so
        )
        return [record, *updates]

    def _note(self, kind: str, message: str) -> None:
        """A warning of ``kind``; past :data:`_MAX_WARNINGS` of a kind, only counted."""
        n = self._warned[kind] = self._warned.get(kind, 0) + 1
        if n <= _MAX_WARNINGS:
            self._warn(message)

    def _write(self, batch: Sequence[Operation], summary: Summary) -> None:
        if not batch:
            return
        if self.lease is not None:
            self.lease.check()
        result = self._write_retrying(batch)
        summary.stale += len(result.stale)
        summary.changed += len(result.changed) + len(result.inserted)
        summary.unchanged += len(result.unchanged)
        summary.errors += len(result.quarantined)
        for key, error in result.quarantined:
            self._note("store", f"{key[1]}: not stored (quarantined): {error}")

    def _write_retrying(self, batch: Sequence[Operation]) -> UpsertResult:
        """One transaction; a transient error (locked, busy) is retried with backoff."""
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.1
        while True:
            try:
                return self.store.write(batch)
            except TransientStoreError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
