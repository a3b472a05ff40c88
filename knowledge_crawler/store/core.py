"""The store core: the :class:`~knowledge_crawler.store.base.Store` contract written once,
over a :class:`~knowledge_crawler.store.dialect.Dialect` that says what its database does
its own way.

A batch (:meth:`SqlStore.write`) is one transaction. Its operations apply in order, in
runs of one kind. A run of page records is planned against the rows as stored
(:meth:`SqlStore._load`): a page not stored yet is inserted, one whose hash did not
move gets its metadata rewritten and keeps its content, one whose hash moved has its
content kept as a version first. The dialect writes the plan in bulk. A record the
database refuses sends the batch back, to be applied again with each record in a
savepoint (:meth:`SqlStore._attempt`): the offenders are quarantined with their error,
the rest load, in one transaction. Any other error is the database's: nothing of the
batch is written and the error says whether it may pass. Where a failed COMMIT may yet
have committed (PostgreSQL: the answer lost with the connection), each batch records
its id in its own transaction (``applied_batches``), and a retry of the batch reads it
before applying anything: no batch is applied twice, no run counter moves twice.

Reading then writing a page is safe because no other writer touches it in between:
SQLite admits one writer at a time; on PostgreSQL a transaction first claims every
page and checkpoint it writes (:func:`claims`), and writers of overlapping batches
queue there.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from knowledge_crawler.errors import StoreError, TransientStoreError
from knowledge_crawler.store import _sql
from knowledge_crawler.store._report import (
    export_page,
    export_passage,
    group_duplicates,
    stats_report,
)
from knowledge_crawler.store.base import (
    HEAD_COUNTERS,
    PAGE_NOT_STORED,
    REPRESENTATIVE_NOT_STORED,
    ArchivedPage,
    CheckpointAdvance,
    DedupeRow,
    DuplicateUpdate,
    FetchFailure,
    FrontierAdd,
    KnownPage,
    Operation,
    PageRecord,
    StatusChange,
    Store,
    Touch,
    UpsertResult,
    UrlOutcome,
    new_batch_id,
    record_dict,
    utc_now,
)
from knowledge_crawler.store.dialect import Dialect, PageWrites, Params, Reader, Row
from knowledge_crawler.store.leases import Lease, LeaseHolder, expiry

#: why a duplicate update was not applied: it was decided with a record left out as stale
STORED_SINCE_READ = "its page was stored anew since it was read"

#: how long ``applied_batches`` keeps a batch's id: far longer than any retry of a batch
#: waits (``KC_STORE_RETRY_SECONDS``, then one last try at close)
APPLIED_BATCHES_KEPT = timedelta(days=1)
#: prune ``applied_batches`` at most this often (seconds), in a batch's transaction
_PRUNE_EVERY = 600.0


__all__ = [
    "APPLIED_BATCHES_KEPT",
    "SqlStore",
    "claims",
    "outlink_rows",
    "page_params",
    "passage_rows",
    "record_json",
    "storable",
]

Key = tuple[str, str]

# The stored state of pages (``{keys}``): id, content hash, MinHash parameters, whether it
# has content, its passage ids (in order, comma-separated), title.
_PRIORS = """
SELECT m.source_id, m.canonical_url, m.id, m.content_hash, c.minhash_params,
       c.page_id IS NOT NULL, {passage_ids}, m.title
FROM page_meta m LEFT JOIN page_content c ON c.page_id = m.id
WHERE (m.source_id, m.canonical_url) {keys}
"""

#: a lease row as :class:`Lease` takes it
_LEASE_COLUMNS = ", ".join(f.name for f in fields(Lease))

_DEDUPE_COLUMNS = (
    "{p}.source_id, {p}.canonical_url, {p}.content_hash, {p}.word_count, "
    "r.source_id, r.canonical_url, {p}.duplicate_kind, {p}.duplicate_score"
)
# A page's representative signals from the stored outlinks: what its rel=canonical
# names, and how many distinct pages link to it (``idx_outlinks_to``).
_SIGNALS = (
    "(SELECT o.to_url FROM outlinks o WHERE o.source_id = {p}.source_id "
    "AND o.from_url = {p}.canonical_url AND o.canonical = 1), "
    "(SELECT count(*) FROM outlinks o WHERE o.source_id = {p}.source_id "
    "AND o.to_url = {p}.canonical_url)"
)

_ARCHIVED = """
SELECT p.source_id, p.canonical_url, p.url, p.final_url, p.fetched_at, p.http_status, p.etag,
       p.last_modified, p.depth, p.next_check_at, p.check_interval, p.status, p.content_hash,
       r.source_id, r.canonical_url, p.duplicate_kind, p.duplicate_score,
       p.archive_file, p.archive_offset
FROM page_meta p LEFT JOIN page_meta r ON r.id = p.duplicate_of
WHERE p.source_id {sources} ORDER BY p.first_seen_at, p.id
"""


def page_params(rec: PageRecord) -> dict[str, Any]:
    """A record's row as statement parameters (headings and extra fields as JSON text)."""
    dup_source, dup_url = rec.duplicate_of or (None, None)
    return {
        "source_id": rec.source_id,
        "canonical_url": rec.canonical_url,
        "url": rec.url,
        "final_url": rec.final_url,
        "fetched_at": rec.fetched_at,
        "title": rec.title,
        "content": rec.content,
        "headings": json.dumps(list(rec.headings), ensure_ascii=False),
        "word_count": rec.word_count,
        "language": rec.language,
        "thin": int(rec.thin),
        "content_hash": rec.content_hash,
        "minhash": rec.minhash,
        "minhash_params": rec.minhash_params,
        "dup_source": dup_source,
        "dup_url": dup_url,
        "duplicate_kind": rec.duplicate_kind if rec.duplicate_of else None,
        "duplicate_score": rec.duplicate_score if rec.duplicate_of else None,
        "http_status": rec.http_status,
        "etag": rec.etag,
        "last_modified": rec.last_modified,
        "next_check_at": rec.next_check_at,
        "check_interval": rec.check_interval,
        "depth": rec.depth,
        "archive_file": rec.archive_file,
        "archive_offset": rec.archive_offset if rec.archive_file is not None else None,
        "extra": json.dumps(dict(rec.extra), ensure_ascii=False, allow_nan=False),
        "reextracted": bool(rec.reextracted),
        # a re-extraction that moves the hash moves last_changed_at to now, not to the
        # (earlier) fetch: what changed the stored content happened now
        "changed_at": utc_now() if rec.reextracted else None,
    }


def passage_rows(rec: PageRecord) -> Iterator[dict[str, Any]]:
    """A record's passages as rows of ``passages`` (without their page's id)."""
    for passage in rec.passages:
        yield {
            "id": passage.id,
            "source_id": rec.source_id,
            "canonical_url": rec.canonical_url,
            "ord": passage.ord,
            "title": rec.title or "",
            "heading_path": json.dumps(list(passage.heading_path), ensure_ascii=False),
            "content": passage.content,
            "word_count": passage.word_count,
        }


def outlink_rows(rec: PageRecord) -> list[tuple[str, str, str, int]]:
    """A record's ``outlinks`` rows: ``(source_id, from_url, to_url, canonical)``, each
    target once, the page itself left out; its ``rel=canonical`` target marked (added
    when it is not a link of the page)."""
    targets = dict.fromkeys(rec.outlinks or (), 0)
    if rec.canonical_link is not None:
        targets[rec.canonical_link] = 1
    targets.pop(rec.canonical_url, None)
    return [(rec.source_id, rec.canonical_url, to, flag) for to, flag in targets.items()]


def record_json(rec: PageRecord) -> str:
    """``rec`` as one line of JSON (MinHash bytes as hex), as ``quarantine`` keeps it."""
    return json.dumps(record_dict(rec), default=repr, ensure_ascii=False)


def storable(text: str) -> str:
    """``text`` as any database can store it (no NUL, no lone surrogate): for quarantine
    rows, whose record is there because it could not be stored."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def claims(operations: Iterable[Operation]) -> list[str]:
    """What a batch writes, one name each, in one global order: its pages (stored or not,
    and the URLs its records and touches settle) and its checkpoints."""
    names: set[str] = set()
    for op in operations:
        if isinstance(op, CheckpointAdvance):
            names.add(f"checkpoint\n{op.source_id}\n{op.adapter}")
            continue
        names.add(f"page\n{op.key[0]}\n{op.key[1]}")
    return sorted(names)


def _dedupe_row(row: Sequence[Any]) -> DedupeRow:
    source_id, url, digest, words, rep_source, rep_url, kind, score, minhash, params = row[:10]
    canonical_link, inlinks = row[10:] if len(row) > 10 else (None, 0)
    return DedupeRow(
        source_id=source_id,
        canonical_url=url,
        content_hash=digest,
        word_count=words,
        duplicate_of=(rep_source, rep_url) if rep_url is not None else None,
        duplicate_kind=kind,
        duplicate_score=score,
        minhash=bytes(minhash) if minhash is not None else None,
        minhash_params=params,
        canonical_link=canonical_link,
        inlinks=int(inlinks or 0),
    )


def _export_params(
    since: str | None, source_id: str | None, duplicates: bool, tombstoned: bool
) -> dict[str, Any]:
    return {
        "since": since,
        "source": source_id,
        "duplicates": int(duplicates),
        "tombstoned": int(tombstoned),
    }


#: a frontier row as :class:`FrontierAdd` takes it
_FRONTIER_COLUMNS = (
    "source_id, canonical_url, url, adapter, discovered_at, depth, lastmod, found_on, next_due_at"
)


class SqlStore(Store):
    """A knowledge dataset on a SQL database, through its :class:`Dialect`."""

    def __init__(self, dialect: Dialect) -> None:
        self.db = dialect
        self.url = dialect.url
        self._priors_sql = _PRIORS.format(passage_ids=dialect.passage_ids, keys="{keys}")
        #: batches whose COMMIT failed in a way that may have committed, with what they
        #: did: the next write of the same batch id reads ``applied_batches`` first
        self._uncertain: dict[str, UpsertResult] = {}
        #: when ``applied_batches`` was last pruned (monotonic seconds; None: not yet)
        self._pruned: float | None = None

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Raise database errors as :class:`StoreError` (transient or not) naming the database."""
        try:
            yield
        except self.db.errors as exc:
            raise self.db.error(exc, f"{what} {self.db.name}") from exc

    def _read(self, sql: str, params: Params = (), *, what: str = "cannot read") -> list[Row]:
        with self.db.lock, self._guard(what):
            return self.db.rows(sql, params)

    def _keyed(self, sql: str, keys: Sequence[Key]) -> list[Any]:
        """The rows of ``sql`` for ``keys`` (its ``{keys}``: an ``IN`` of the dialect's)."""
        rows: list[Any] = []
        for fragment, params in self.db.keys_in(keys):
            rows += self.db.execute(sql.format(keys=fragment), params).fetchall()
        return rows

    # -- writes ---------------------------------------------------------------------

    def write(
        self,
        operations: Sequence[Operation],
        *,
        run_id: int | None = None,
        batch_id: str | None = None,
    ) -> UpsertResult:
        if not operations:
            return UpsertResult()
        db = self.db
        batch = batch_id or new_batch_id()
        claimed: list[str] = []
        if db.concurrent_writers:
            claimed = claims(operations)
            if db.uncertain_commits:  # two tries of one batch never overlap (see _attempt)
                claimed = sorted([*claimed, f"batch\n{batch}"])
        with db.lock, self._guard("cannot write to"):
            try:
                return self._attempt(operations, run_id, claimed, batch, isolate=False)
            except db.bad_record_errors:
                pass  # a record the database refuses: find it, below
            return self._attempt(operations, run_id, claimed, batch, isolate=True)

    def _attempt(
        self,
        operations: Sequence[Operation],
        run_id: int | None,
        claimed: Sequence[str],
        batch: str,
        *,
        isolate: bool,
    ) -> UpsertResult:
        """Apply the batch in one transaction; with ``isolate``, each record in a savepoint.

        Isolating, a record the database refuses is rolled back to its savepoint and goes
        to ``quarantine``; the others load. Duplicate updates whose page and representative
        are stored apply, touches and checkpoints too, the quarantine rows are written and
        the run's counters moved, in the same transaction: it commits whole or not at all,
        so a retry after any failure writes each row once.

        Where a COMMIT that fails may have committed (``Dialect.uncertain_commits``: the
        connection lost while the server's answer was on its way), the batch records its
        id (``applied_batches``) in its transaction. After such a failure the id is looked
        up at once on a new connection: found, the batch is done and its result returned;
        else (or when the lookup fails too) the transient error goes on and the result is
        kept, and the caller's retry of the same ``batch_id`` looks again in its own
        transaction, after its claims (the batch's own among them: a commit still under way
        on the server finishes first). So no batch is applied twice and its counters move
        once.
        """
        db = self.db
        result = UpsertResult()
        bad: list[tuple[PageRecord, str]] = []
        done = False  # the transaction's body ran: an error now is COMMIT's
        applied_before = False
        try:
            with db.transaction(claimed):
                if batch in self._uncertain and self._applied(batch):
                    applied_before = True  # committed after all: nothing to do
                else:
                    self._apply_operations(operations, result, run_id, bad=bad if isolate else None)
                    for rec, error in bad:
                        self._quarantine(rec, error, run_id)
                    self._count_run(run_id, result)
                    if db.uncertain_commits:
                        self._record_batch(batch, run_id)
                    done = True
        except db.errors as exc:
            uncertain = done and db.uncertain_commits
            if not (uncertain and isinstance(db.error(exc, ""), TransientStoreError)):
                raise
            self._uncertain[batch] = result
            try:
                applied = self._applied(batch)
            except db.errors:
                raise exc from None  # still uncertain: the retry looks again
            if not applied:
                raise
            return self._uncertain.pop(batch)
        if applied_before:
            return self._uncertain.pop(batch)
        self._uncertain.pop(batch, None)  # looked up and not applied: applied now
        return result

    def _applied(self, batch: str) -> bool:
        """Whether ``applied_batches`` records the batch as committed."""
        row = self.db.execute(
            "SELECT 1 FROM applied_batches WHERE batch_id = ?", (batch,)
        ).fetchone()
        return row is not None

    def _record_batch(self, batch: str, run_id: int | None) -> None:
        """Record the batch as applied, in its transaction; now and then, forget the ones
        older than :data:`APPLIED_BATCHES_KEPT` (no retry waits that long)."""
        now = utc_now()
        self.db.execute(
            "INSERT INTO applied_batches (batch_id, run_id, applied_at) VALUES (?, ?, ?)",
            (batch, run_id, now),
        )
        clock = time.monotonic()
        if self._pruned is None or clock - self._pruned >= _PRUNE_EVERY:
            self._pruned = clock
            cutoff = (datetime.now(UTC) - APPLIED_BATCHES_KEPT).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            self.db.execute("DELETE FROM applied_batches WHERE applied_at < ?", (cutoff,))

    def _apply_operations(
        self,
        operations: Sequence[Operation],
        result: UpsertResult,
        run_id: int | None,
        *,
        bad: list[tuple[PageRecord, str]] | None,
    ) -> None:
        """Apply runs of operations of one kind, in order; ``bad`` given: isolate records.

        With ``bad``, each record loads in a savepoint and one the database refuses
        is rolled back to it and appended to ``bad``; each duplicate update likewise
        is dropped and reported.
        """
        for kind, run in itertools.groupby(operations, key=type):
            ops = list(run)
            if kind is PageRecord:
                records = cast("list[PageRecord]", ops)
                if any(rec.read_state is not None for rec in records):
                    records = self._as_read(records, result)
                restoring = self._restoring([rec for rec in records if not rec.reextracted])
                if bad is None:
                    loaded = records
                    one = self._load(records)
                    result.inserted += one.inserted
                    result.changed += one.changed
                    result.unchanged += one.unchanged
                else:
                    loaded = self._load_each(records, result, bad)
                result.unlinked += self._unlinked(loaded)
                self._restored(restoring, loaded, run_id)
                self._settle([rec for rec in loaded if not rec.reextracted])  # fetched ones
            elif kind is DuplicateUpdate:
                updates = cast("list[DuplicateUpdate]", ops)
                if result.stale:
                    updates = self._not_about_stale(updates, result)
                self._apply_updates(updates, result, isolate=bad is not None)
            elif kind is Touch:
                touches = cast("list[Touch]", ops)
                restoring = self._restoring(touches)
                self._touch(touches, result)
                self._restored(restoring, touches, run_id)
                self._settle(touches)
            elif kind is FrontierAdd:
                self._add_to_frontier(cast("list[FrontierAdd]", ops), result, run_id)
            elif kind is UrlOutcome:
                self._record_outcomes(cast("list[UrlOutcome]", ops), result, run_id)
            elif kind is FetchFailure:
                self._fail(cast("list[FetchFailure]", ops), result, run_id)
            elif kind is StatusChange:
                self._change_status(cast("list[StatusChange]", ops), result, run_id)
            elif kind is CheckpointAdvance:
                self._advance(cast("list[CheckpointAdvance]", ops), result, run_id)
            else:  # pragma: no cover - the Operation union is closed
                raise TypeError(f"not a store operation: {kind.__name__}")

    def _load_each(
        self,
        records: Sequence[PageRecord],
        result: UpsertResult,
        bad: list[tuple[PageRecord, str]],
    ) -> list[PageRecord]:
        """Load each record in a savepoint; the ones the database refuses go to ``bad``."""
        loaded: list[PageRecord] = []
        for rec in records:
            try:
                with self.db.savepoint():
                    one = self._load([rec])
            except self.db.bad_record_errors as exc:
                error = self.db.record_error(exc)
                bad.append((rec, error))
                result.quarantined.append((rec.key, error))
                continue
            loaded.append(rec)
            result.inserted += one.inserted
            result.changed += one.changed
            result.unchanged += one.unchanged
        return loaded

    def _load(self, records: Sequence[PageRecord]) -> UpsertResult:
        """Load a run of records, in order: decide each against its page as stored, and
        hand what to write to the dialect in bulk."""
        result = UpsertResult()
        now = utc_now()
        keys = {rec.key for rec in records}
        priors = self._priors(sorted(keys))
        #: pages stored as far as the records planned so far go
        stored = set(priors)
        writes = PageWrites()
        pending: set[Key] = set()  # pages in ``writes``
        inserting: set[Key] = set()  # of those, the ones not stored yet

        def flush() -> None:
            nonlocal writes
            if writes:
                self.db.write_pages(writes, now)
            writes = PageWrites()
            pending.clear()
            inserting.clear()

        for rec in records:
            key = rec.key
            dup = rec.duplicate_of
            if key in pending or dup in inserting:
                # The same page twice in one run: write the first record before the
                # second is decided. A representative inserted by this run: write it
                # first, so that the row naming it finds it.
                repeated = key in pending
                flush()
                if repeated:
                    priors.update(self._priors([key]))
            params = page_params(rec)
            if dup is not None and dup in keys and dup not in stored:
                # its representative comes later in the run: not stored yet, so none
                params = {**params, "dup_source": None, "dup_url": None}
            prior = priors.get(key)
            if rec.outlinks is not None and (prior is None or prior[1] != rec.content_hash):
                writes.outlinks.append(rec)  # new content: its links replace the stored
            if prior is None:
                result.inserted.append(key)
                writes.new.append(params)
                writes.contents.append(params)
                writes.passages.append(rec)
                inserting.add(key)
            else:
                writes.ids[key] = prior[0]
                writes.updates.append(params)
                if prior[1] == rec.content_hash:
                    result.unchanged.append(key)
                    if not prior[3] or prior[2] != rec.minhash_params:
                        writes.contents.append(params)  # re-signed with other MinHash parameters
                    if (prior[4] or "") != ",".join(p.id for p in rec.passages) or (
                        prior[5] != rec.title
                    ):
                        # split otherwise (another KC_PASSAGE_WORDS, or stored before
                        # passages existed), or retitled: the index needs the page again
                        writes.passages.append(rec)
                else:
                    writes.versions.append(prior[0])
                    result.changed.append(key)
                    writes.contents.append(params)
                    writes.passages.append(rec)
            pending.add(key)
            stored.add(key)
        flush()
        return result

    def _as_read(self, records: Sequence[PageRecord], result: UpsertResult) -> list[PageRecord]:
        """Compare-and-set: the records whose page is stored as their writer read it
        (``read_state``: content hash and fetch time), or that have no ``read_state``; the
        others are left out and reported ``stale``. In the batch's transaction, after its
        claims: nobody else writes the page before it commits."""
        expected = [rec for rec in records if rec.read_state is not None]
        stored = {
            (r[0], r[1]): (r[2], r[3])
            for r in self._keyed(
                "SELECT source_id, canonical_url, content_hash, fetched_at FROM page_meta "
                "WHERE (source_id, canonical_url) {keys}",
                sorted({rec.key for rec in expected}),
            )
        }
        kept: list[PageRecord] = []
        for rec in records:
            if rec.read_state is None or stored.get(rec.key) == tuple(rec.read_state):
                kept.append(rec)
            else:
                result.stale.append(rec.key)
        return kept

    @staticmethod
    def _not_about_stale(
        updates: Sequence[DuplicateUpdate], result: UpsertResult
    ) -> list[DuplicateUpdate]:
        """The updates that neither decide about a page left out as stale nor name one as
        representative (they were decided from the text that was not written)."""
        stale = set(result.stale)
        kept: list[DuplicateUpdate] = []
        for update in updates:
            if update.key in stale or update.duplicate_of in stale:
                result.dropped_updates.append((update, STORED_SINCE_READ))
            else:
                kept.append(update)
        return kept

    def _priors(self, keys: Sequence[Key]) -> dict[Key, tuple[Any, ...]]:
        """The stored state of the pages of ``keys`` (see :data:`_PRIORS`)."""
        return {(r[0], r[1]): tuple(r[2:]) for r in self._keyed(self._priors_sql, keys)}

    def _unlinked(self, records: Sequence[PageRecord]) -> list[Key]:
        """Keys of duplicates stored as none: their representative is not in the database."""
        last = {rec.key: rec for rec in records}
        keys = [k for k, rec in last.items() if rec.duplicate_of is not None]
        if not keys:
            return []
        unlinked = {
            (r[0], r[1])
            for r in self._keyed(
                "SELECT source_id, canonical_url FROM page_meta "
                "WHERE (source_id, canonical_url) {keys} AND duplicate_of IS NULL",
                keys,
            )
        }
        return [k for k in keys if k in unlinked]

    def _stored(self, keys: Iterable[Key]) -> set[Key]:
        """Which of ``keys`` are stored pages."""
        sql = (
            "SELECT source_id, canonical_url FROM page_meta WHERE (source_id, canonical_url) {keys}"
        )
        return {(r[0], r[1]) for r in self._keyed(sql, sorted(set(keys)))}

    def _settle(self, done: Sequence[PageRecord | Touch]) -> None:
        """Pages now written: no frontier entry, no retry state. (A URL that redirected to
        one of them is settled by its own :class:`UrlOutcome`.)"""
        keys = {op.key for op in done}
        self._delete("frontier", sorted(keys))
        self._delete("fetch_attempts", sorted(keys))

    def _delete(self, table: str, keys: Sequence[Key]) -> None:
        for fragment, params in self.db.keys_in(keys):
            self.db.execute(
                f"DELETE FROM {table} WHERE (source_id, canonical_url) {fragment}", params
            )

    def _fail(
        self, failures: Sequence[FetchFailure], result: UpsertResult, run_id: int | None
    ) -> None:
        self.db.executemany(
            _sql.FAILURE,
            [
                {
                    "source_id": f.source_id,
                    "canonical_url": f.canonical_url,
                    "url": f.url,
                    "depth": f.depth,
                    "attempts": f.attempts,
                    "first_failed_at": f.first_failed_at,
                    "failed_at": f.failed_at,
                    "last_error": f.last_error,
                    "last_status": f.last_status,
                    "next_retry_at": f.next_retry_at,
                    "dead_lettered_at": f.dead_lettered_at,
                    "needs_review": int(f.needs_review),
                    "run_id": run_id,
                    "evidence": f.evidence,
                }
                for f in failures
            ],
        )
        self._delete("frontier", sorted({f.key for f in failures if f.settled}))
        result.failures += len(failures)
        result.dead_lettered += sum(1 for f in failures if f.dead_lettered_at)

    def _change_status(
        self, changes: Sequence[StatusChange], result: UpsertResult, run_id: int | None
    ) -> None:
        """Move stored pages' status; each move is a ``page_events`` row, in this transaction."""
        for change in changes:  # few: only pages found missing or deleted
            before = self.db.execute(
                "SELECT id, status FROM page_meta WHERE source_id = ? AND canonical_url = ?",
                change.key,
            ).fetchone()
            if before is None:
                continue  # not stored
            self.db.execute(
                _sql.STATUS,
                {
                    "source_id": change.source_id,
                    "canonical_url": change.canonical_url,
                    "status": change.status,
                    "reason": change.reason,
                    "evidence": change.evidence,
                    "checked_at": change.checked_at,
                    "http_status": change.http_status,
                    "next_check_at": change.next_check_at,
                },
            )
            result.status_changes += 1
            if change.status != before[1]:
                self._event(
                    before[0],
                    change.checked_at,
                    "restored" if change.status == "active" else change.status,
                    change.reason,
                    change.http_status,
                    change.evidence,
                    run_id,
                )
            if change.status == "tombstoned" and before[1] != "tombstoned":
                result.tombstones += 1

    def _event(
        self,
        page_id: int,
        at: str,
        event: str,
        reason: str | None,
        http_status: int | None,
        evidence: str,
        run_id: int | None,
    ) -> None:
        self.db.execute(
            _sql.EVENT,
            {
                "page_id": page_id,
                "at": at,
                "event": event,
                "reason": reason,
                "http_status": http_status,
                "evidence": evidence,
                "run_id": run_id,
            },
        )

    def _restoring(self, fetched: Sequence[PageRecord | Touch]) -> dict[Key, int]:
        """The ids of the pages among ``fetched`` that are stored and not active: an answer
        (a record or a 304) brings them back. Read before the answer is written."""
        if not fetched:
            return {}
        sql = (
            "SELECT source_id, canonical_url, id FROM page_meta "
            "WHERE (source_id, canonical_url) {keys} AND status <> 'active'"
        )
        return {(r[0], r[1]): r[2] for r in self._keyed(sql, sorted({op.key for op in fetched}))}

    def _restored(
        self,
        restoring: Mapping[Key, int],
        written: Sequence[PageRecord | Touch],
        run_id: int | None,
    ) -> None:
        """A ``restored`` event for each page of ``restoring`` that ``written`` brought back,
        at its first answer (a record's status, 304 for a touch)."""
        if not restoring:
            return
        done: set[Key] = set()
        for op in written:
            page_id = restoring.get(op.key)
            if page_id is None or op.key in done:
                continue
            done.add(op.key)
            if isinstance(op, PageRecord):
                at, status = op.fetched_at, op.http_status
            else:
                at, status = op.checked_at, 304
            self._event(page_id, at, "restored", None, status, "[]", run_id)

    def _add_to_frontier(
        self, adds: Sequence[FrontierAdd], result: UpsertResult, run_id: int | None
    ) -> None:
        # One executemany, not a statement per row: the writer thread then takes the
        # GIL once per batch rather than once per row while the crawl keeps it busy.
        result.frontier_added += self.db.executemany(
            _sql.FRONTIER_ADD,
            [
                {
                    "source_id": add.source_id,
                    "canonical_url": add.canonical_url,
                    "url": add.url,
                    "depth": add.depth,
                    "adapter": add.adapter,
                    "lastmod": add.lastmod,
                    "discovered_at": add.discovered_at,
                    "run_id": run_id,
                    "found_on": add.found_on,
                }
                for add in adds
            ],
        )

    def _record_outcomes(
        self, outcomes: Sequence[UrlOutcome], result: UpsertResult, run_id: int | None
    ) -> None:
        """Redirected and refused URLs: a stored page that redirects is tombstoned with
        its target; any other URL gets (or keeps) its frontier row with the outcome. Either
        way its retry state is settled: it answered."""
        last = {op.key: op for op in outcomes}  # the latest outcome of a URL wins
        stored = self._stored(last)
        pages = [op for op in last.values() if op.key in stored and op.state == "redirected"]
        others = [op for op in last.values() if op.key not in stored]
        params = [
            {
                "source_id": op.source_id,
                "canonical_url": op.canonical_url,
                "url": op.url,
                "depth": op.depth,
                "state": op.state,
                "reason": op.reason,
                "target": op.target,
                "status": op.status,
                "checked_at": op.checked_at,
                "next_due_at": op.next_due_at,
                "run_id": run_id,
            }
            for op in (*pages, *others)
        ]
        if pages:
            # a page newly redirecting: its tombstone is an event, as any status move is
            before = {
                (r[0], r[1]): (r[2], r[3] == "tombstoned" and r[4] is not None)
                for r in self._keyed(
                    "SELECT source_id, canonical_url, id, status, redirect_to FROM page_meta "
                    "WHERE (source_id, canonical_url) {keys}",
                    sorted(op.key for op in pages),
                )
            }
            self.db.executemany(_sql.REDIRECT_PAGE, params[: len(pages)])
            for op in pages:
                page_id, redirected = before[op.key]
                if not redirected:
                    self._event(
                        page_id, op.checked_at, "tombstoned", op.reason, op.status, "[]", run_id
                    )
        if others:
            self.db.executemany(_sql.URL_OUTCOME, params[len(pages) :])
        # a refused URL that is a stored page: stored as it was, due by its own schedule
        self._delete("frontier", sorted(k for k in last if k in stored))
        self._delete("fetch_attempts", sorted(last))
        result.redirected += sum(1 for op in last.values() if op.state == "redirected")
        result.redirected_pages += len(pages)
        result.refused += sum(1 for op in last.values() if op.state == "refused")

    def _touch(self, touches: Sequence[Touch], result: UpsertResult) -> None:
        touched = self.db.executemany(
            _sql.TOUCH,
            [
                {
                    "source_id": touch.source_id,
                    "canonical_url": touch.canonical_url,
                    "checked_at": touch.checked_at,
                    "etag": touch.etag,
                    "last_modified": touch.last_modified,
                    "next_check_at": touch.next_check_at,
                    "check_interval": touch.check_interval,
                }
                for touch in touches
            ],
        )
        if touched == len(touches):
            result.touched += [t.key for t in touches]
            return
        stored = self._stored(t.key for t in touches)  # rare: some are not stored
        for touch in touches:
            (result.touched if touch.key in stored else result.untouched).append(touch.key)

    def _advance(
        self, advances: Sequence[CheckpointAdvance], result: UpsertResult, run_id: int | None
    ) -> None:
        now = utc_now()
        self.db.executemany(
            _sql.ADVANCE,
            [
                {
                    "source_id": a.source_id,
                    "adapter": a.adapter,
                    "cursor": a.cursor,
                    "updated_at": now,
                    "run_id": run_id,
                }
                for a in advances
            ],
        )
        result.checkpoints += [(a.source_id, a.adapter) for a in advances]

    def _apply_updates(
        self, updates: Sequence[DuplicateUpdate], result: UpsertResult, *, isolate: bool
    ) -> None:
        """Apply the updates whose page and representative are stored; report the rest.

        With ``isolate``, each update runs in a savepoint and one the database
        refuses is dropped and reported; otherwise such an error propagates.
        """
        present = self._stored(
            [u.key for u in updates] + [u.duplicate_of for u in updates if u.duplicate_of]
        )
        ready: list[DuplicateUpdate] = []
        for update in updates:
            if update.key not in present:
                result.dropped_updates.append((update, PAGE_NOT_STORED))
            elif update.duplicate_of is not None and update.duplicate_of not in present:
                result.dropped_updates.append((update, REPRESENTATIVE_NOT_STORED))
            else:
                ready.append(update)
        if not isolate:
            self._set_duplicates(ready)
            return
        for update in ready:
            try:
                with self.db.savepoint():
                    self._set_duplicates([update])
            except self.db.bad_record_errors as exc:
                result.dropped_updates.append((update, self.db.record_error(exc)))

    def _set_duplicates(self, updates: Sequence[DuplicateUpdate]) -> None:
        if not updates:
            return
        self.db.executemany(
            _sql.SET_DUPLICATE,
            [
                {
                    "source_id": u.key[0],
                    "canonical_url": u.key[1],
                    "dup_source": u.duplicate_of[0] if u.duplicate_of else None,
                    "dup_url": u.duplicate_of[1] if u.duplicate_of else None,
                    "kind": u.kind if u.duplicate_of else None,
                    "score": u.score if u.duplicate_of else None,
                }
                for u in updates
            ],
        )

    def _count_run(self, run_id: int | None, result: UpsertResult) -> None:
        if run_id is None:
            return
        self.db.execute(
            _sql.COUNT_RUN,
            {
                "loaded": result.loaded,
                "inserted": len(result.inserted),
                "changed": len(result.changed),
                "unchanged": len(result.unchanged),
                "touched": len(result.touched),
                "tombstones": result.tombstones,
                "quarantined": len(result.quarantined),
                "run_id": run_id,
            },
        )

    def _quarantine(self, rec: PageRecord, error: str, run_id: int | None) -> None:
        """Record ``rec`` and its error in ``quarantine``, inside the caller's transaction."""
        self.db.execute(
            "INSERT INTO quarantine (run_id, source_id, canonical_url, url, error, record, "
            "quarantined_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                storable(str(rec.source_id)),
                storable(str(rec.canonical_url)),
                storable(str(rec.url)),
                storable(error),
                storable(record_json(rec)),
                utc_now(),
            ),
        )

    def set_meta(self, key: str, value: str) -> None:
        with self.db.lock, self._guard("cannot write to"), self.db.transaction():
            self.db.execute(
                "INSERT INTO dataset_meta (key, value, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (key, value, utc_now()),
            )

    # -- runs -----------------------------------------------------------------------

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
        db = self.db
        with db.lock, self._guard("cannot record the run in"), db.transaction():
            [row] = db.execute(
                "INSERT INTO crawl_runs (spider, mode, sources, started_at, job_id, pid, host, "
                "outcome) VALUES (?, ?, ?, ?, ?, ?, ?, 'running') RETURNING id",
                (spider, mode, json.dumps(list(sources)), utc_now(), job_id, pid, host),
            ).fetchall()
        return int(row[0])

    def unfinished_runs(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._read(
                "SELECT id, pid, host, started_at, job_id FROM crawl_runs "
                "WHERE outcome = 'running' ORDER BY id",
                what="cannot read the runs of",
            )
        ]

    def abandon_run(self, run_id: int) -> None:
        db = self.db
        with db.lock, self._guard("cannot record the run in"), db.transaction():
            db.execute(
                "UPDATE crawl_runs SET outcome = 'abandoned', finished_at = ? "
                "WHERE id = ? AND outcome = 'running'",
                (utc_now(), run_id),
            )

    def finish_run(
        self, run_id: int, *, reason: str, outcome: str, counters: Mapping[str, int]
    ) -> None:
        head = {name: int(counters.get(name, 0)) for name in HEAD_COUNTERS}
        assignments = ", ".join(f"{name} = :{name}" for name in HEAD_COUNTERS)
        db = self.db
        with db.lock, self._guard("cannot record the run in"), db.transaction():
            db.execute(
                f"UPDATE crawl_runs SET finished_at = :finished_at, finish_reason = :reason, "
                f"outcome = :outcome, counters = :counters, {assignments} WHERE id = :run_id",
                {
                    **head,
                    "finished_at": utc_now(),
                    "reason": reason,
                    "outcome": outcome,
                    "counters": json.dumps(dict(sorted(counters.items()))),
                    "run_id": run_id,
                },
            )

    # -- leases ---------------------------------------------------------------------

    def acquire_leases(
        self,
        source_ids: Sequence[str],
        holder: LeaseHolder,
        *,
        ttl: float,
        gone: Callable[[Lease], bool] | None = None,
    ) -> list[Lease]:
        ids = sorted(set(source_ids))
        if not ids:
            return []
        db = self.db
        # SQLite: BEGIN IMMEDIATE holds the file's write lock; PostgreSQL: the sources'
        # lease claims (advisory locks) queue the writers taking them, and each statement
        # after the claim sees every commit before it.
        claimed = [f"lease\n{sid}" for sid in ids] if db.concurrent_writers else ()
        fragment, params = db.in_list(ids, "TEXT")
        with db.lock, self._guard("cannot take the writer lease in"), db.transaction(claimed):
            now = utc_now()
            others = [
                lease for lease in self._leases(fragment, params) if lease.holder != holder.holder
            ]
            blocking = [
                lease
                for lease in others
                if lease.expires_at > now and not (gone is not None and gone(lease))
            ]
            if blocking:
                return blocking
            if others:  # expired, or their process is gone
                db.execute(
                    f"DELETE FROM leases WHERE source_id {fragment} AND holder <> ?",
                    [*params, holder.holder],
                )
            until = expiry(ttl)
            db.executemany(
                _sql.TAKE_LEASE,
                [
                    {
                        "source_id": sid,
                        "token": holder.token,
                        "holder": holder.holder,
                        "host": holder.host,
                        "pid": holder.pid,
                        "run_id": holder.run_id,
                        "command": holder.command,
                        "now": now,
                        "expires_at": until,
                    }
                    for sid in ids
                ],
            )
        return []

    def release_leases(self, holder: LeaseHolder) -> None:
        db = self.db
        with db.lock, self._guard("cannot release the writer lease in"), db.transaction():
            db.execute("DELETE FROM leases WHERE token = ?", (holder.token,))

    def leases(self, source_ids: Sequence[str] | None = None) -> list[Lease]:
        params: list[Any] = []
        if source_ids is None:
            fragment = "IS NOT NULL"
        else:
            fragment, params = self.db.in_list(sorted(set(source_ids)), "TEXT")
        with self.db.lock, self._guard("cannot read the leases of"):
            return self._leases(fragment, params)

    def _leases(self, sources: str, params: Sequence[Any]) -> list[Lease]:
        rows = self.db.rows(
            f"SELECT {_LEASE_COLUMNS} FROM leases WHERE source_id {sources} "
            "ORDER BY source_id, acquired_at, token",
            params,
        )
        return [Lease(*row) for row in rows]

    # -- reads ----------------------------------------------------------------------

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        """Run a read-only query written with SQLite's placeholders (``?`` or ``:name``)
        and return rows that index by column name and by position."""
        return self._read(sql, params, what="cannot query")

    def dedupe_state(self, *, signatures: bool = True) -> Iterator[DedupeRow]:
        minhash = "p.minhash, p.minhash_params" if signatures else "NULL, NULL"
        rows = self._read(
            f"SELECT {_DEDUPE_COLUMNS.format(p='p')}, {minhash}, {_SIGNALS.format(p='p')} "
            "FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of "
            "WHERE p.status = 'active' ORDER BY p.first_seen_at, p.id",
            what="cannot read the pages of",
        )
        for row in rows:
            yield _dedupe_row(tuple(row))

    def dependents(self, key: tuple[str, str]) -> list[DedupeRow]:
        rows = self._read(
            f"SELECT {_DEDUPE_COLUMNS.format(p='d')}, d.minhash, d.minhash_params, "
            f"{_SIGNALS.format(p='d')} FROM pages d JOIN page_meta r ON r.id = d.duplicate_of "
            "WHERE r.source_id = ? AND r.canonical_url = ? AND d.status = 'active' "
            "ORDER BY d.first_seen_at, d.id",
            key,
            what="cannot read the pages of",
        )
        return [_dedupe_row(tuple(row)) for row in rows]

    def _of_sources(
        self, sql: str, source_ids: Sequence[str], what: str, after: Sequence[Any] = ()
    ) -> list[Row]:
        """The rows of ``sql`` whose ``{sources}`` matches one of ``source_ids``; ``after``:
        the values of the placeholders that follow it."""
        if not source_ids:
            return []
        fragment, params = self.db.in_list(list(source_ids), "TEXT")
        return self._read(
            sql.format(sources=fragment, tiebreak=self.db.tiebreak),
            [*params, *after],
            what=what,
        )

    def known_pages(self, source_ids: Sequence[str]) -> Iterator[KnownPage]:
        if not source_ids:
            return
        fragment, params = self.db.in_list(list(source_ids), "TEXT")
        sql = (
            "SELECT source_id, canonical_url, final_url, etag, last_modified, content_hash, "
            "depth, check_interval, last_changed_at, next_check_at, status, status_reason, "
            f"status_evidence, word_count FROM page_meta WHERE source_id {fragment} "
            "ORDER BY next_check_at IS NOT NULL, next_check_at, id"
        )
        # streamed: a crawl of a million stored pages never holds their rows at once
        with self._guard("cannot read the pages of"), self.db.reader() as reader:
            for row in reader.stream(sql, params):
                yield KnownPage(*row)

    def checkpoints(self, source_id: str) -> dict[str, str]:
        rows = self._read(
            "SELECT adapter, cursor FROM checkpoints WHERE source_id = ? ORDER BY adapter",
            (source_id,),
            what="cannot read the checkpoints of",
        )
        return {r["adapter"]: r["cursor"] for r in rows}

    def fetch_attempts(self, source_ids: Sequence[str]) -> list[FetchFailure]:
        rows = self._of_sources(
            "SELECT source_id, canonical_url, url, last_failed_at, attempts, first_failed_at, "
            "last_error, last_status, next_retry_at, dead_lettered_at, needs_review, depth, "
            "evidence FROM fetch_attempts WHERE source_id {sources} "
            "ORDER BY next_retry_at IS NULL, next_retry_at, {tiebreak}",
            source_ids,
            "cannot read the retry state of",
        )
        return [
            FetchFailure(
                source_id=row[0],
                canonical_url=row[1],
                url=row[2],
                failed_at=row[3],
                attempts=row[4],
                first_failed_at=row[5],
                last_error=row[6],
                last_status=row[7],
                next_retry_at=row[8],
                dead_lettered_at=row[9],
                needs_review=bool(row[10]),
                depth=row[11],
                evidence=row[12],
            )
            for row in rows
        ]

    def dead_letters(self, source_id: str | None = None) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._read(
                "SELECT source_id, canonical_url, url, attempts, first_failed_at, "
                "last_failed_at, last_error, last_status, dead_lettered_at, needs_review "
                "FROM fetch_attempts WHERE (dead_lettered_at IS NOT NULL OR needs_review = 1) "
                "AND (CAST(:source AS TEXT) IS NULL OR source_id = CAST(:source AS TEXT)) "
                f"ORDER BY COALESCE(dead_lettered_at, last_failed_at), {self.db.tiebreak}",
                {"source": source_id},
                what="cannot read the dead letters of",
            )
        ]

    def frontier(
        self, source_ids: Sequence[str], *, due_by: str | None = None
    ) -> list[FrontierAdd]:
        rows = self._of_sources(
            f"SELECT {_FRONTIER_COLUMNS} FROM frontier WHERE source_id {{sources}} "
            "AND (CAST(? AS TEXT) IS NULL OR next_due_at IS NULL "
            "OR next_due_at <= CAST(? AS TEXT)) "
            "ORDER BY discovered_at, {tiebreak}",
            source_ids,
            "cannot read the frontier of",
            after=(due_by, due_by),
        )
        return [FrontierAdd(*row) for row in rows]

    def frontier_due(
        self,
        source_id: str,
        *,
        due_by: str,
        after: tuple[int, str] | None = None,
        limit: int = 2000,
    ) -> list[FrontierAdd]:
        depth, key = after if after is not None else (-1, "")
        rows = self._read(
            f"SELECT {_FRONTIER_COLUMNS} FROM frontier WHERE source_id = ? "
            "AND (depth, canonical_url) > (CAST(? AS INTEGER), CAST(? AS TEXT)) "
            "AND (next_due_at IS NULL OR next_due_at <= CAST(? AS TEXT)) "
            "ORDER BY depth, canonical_url LIMIT ?",
            (source_id, depth, key, due_by, limit),
            what="cannot read the frontier of",
        )
        return [FrontierAdd(*row) for row in rows]

    def frontier_waiting(self, source_ids: Sequence[str], *, due_by: str) -> list[tuple[str, str]]:
        rows = self._of_sources(
            "SELECT source_id, canonical_url FROM frontier WHERE source_id {sources} "
            "AND next_due_at > CAST(? AS TEXT)",
            source_ids,
            "cannot read the frontier of",
            after=(due_by,),
        )
        return [(row[0], row[1]) for row in rows]

    def archived_pages(self, source_ids: Sequence[str]) -> list[ArchivedPage]:
        rows = self._of_sources(_ARCHIVED, source_ids, "cannot read the pages of")
        return [
            ArchivedPage(
                source_id=row[0],
                canonical_url=row[1],
                url=row[2],
                final_url=row[3],
                fetched_at=row[4],
                http_status=row[5],
                etag=row[6],
                last_modified=row[7],
                depth=row[8],
                next_check_at=row[9],
                check_interval=row[10],
                status=row[11],
                content_hash=row[12],
                duplicate_of=(row[13], row[14]) if row[14] is not None else None,
                duplicate_kind=row[15],
                duplicate_score=row[16],
                archive_file=row[17],
                archive_offset=row[18],
            )
            for row in rows
        ]

    def history(self, canonical_url: str, *, source_id: str | None = None) -> list[dict[str, Any]]:
        what = "cannot read the history of"
        out: list[dict[str, Any]] = []
        for page in self._read(
            "SELECT id, source_id, canonical_url, final_url AS url, content_hash, title, content, "
            "fetched_at, CAST(NULL AS TEXT) AS replaced_at FROM pages WHERE canonical_url = :url "
            "AND (CAST(:source AS TEXT) IS NULL OR source_id = CAST(:source AS TEXT)) "
            "ORDER BY source_id",
            {"url": canonical_url, "source": source_id},
            what=what,
        ):
            current = dict(page)
            page_id = current.pop("id")
            current["events"] = [
                {**dict(r), "evidence": _json_list(r["evidence"])}
                for r in self._read(
                    "SELECT at AS time, event, reason, http_status, evidence "
                    "FROM page_events WHERE page_id = ? ORDER BY at, id",
                    (page_id,),
                    what=what,
                )
            ]
            out.append(current)
            out += [
                {
                    "source_id": current["source_id"],
                    "canonical_url": canonical_url,
                    "url": current["url"],
                    **dict(r),
                }
                for r in self._read(
                    "SELECT content_hash, title, content, fetched_at, replaced_at "
                    "FROM page_versions WHERE page_id = ? ORDER BY replaced_at DESC, id DESC",
                    (page_id,),
                    what=what,
                )
            ]
        return out

    def changes(
        self,
        since: str,
        until: str | None = None,
        *,
        source_id: str | None = None,
        contents: bool = True,
    ) -> Iterator[dict[str, Any]]:
        params = {"since": since, "until": until, "source": source_id}
        with self._guard("cannot read the changes in"), self.db.reader() as reader:
            for row in reader.stream(_sql.CHANGES, params):
                entry: dict[str, Any] = {
                    "kind": row["kind"],
                    "time": row["time"],
                    "source_id": row["source_id"],
                    "canonical_url": row["canonical_url"],
                    "url": row["url"],
                    "title": row["title"],
                    "content_hash": row["content_hash"],
                    "reason": row["reason"] if row["kind"] == "tombstoned" else None,
                    "previous_content_hash": None,
                    "previous_fetched_at": None,
                    "fetched_at": None,
                }
                if row["kind"] == "changed":
                    entry.update(_change_texts(reader, row["page_id"], row["version_id"], contents))
                yield entry

    def export_pages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        params = _export_params(since, source_id, include_duplicates, include_tombstoned)
        return self._export(_sql.EXPORT, params, export_page, "cannot export the pages of")

    def export_passages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        params = _export_params(since, source_id, include_duplicates, include_tombstoned)
        return self._export(
            _sql.EXPORT_PASSAGES, params, export_passage, "cannot export the passages of"
        )

    def _export(
        self,
        sql: str,
        params: Params,
        make: Callable[[Row], dict[str, Any]],
        what: str,
    ) -> Iterator[dict[str, Any]]:
        with self._guard(what), self.db.reader() as reader:
            for row in reader.stream(sql, params):
                yield make(row)

    def duplicate_clusters(self, kind: str | None = None) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT r.source_id AS rep_source, r.canonical_url AS rep_url, "
            "r.final_url AS rep_fetched_url, r.title AS rep_title, "
            "d.source_id, d.canonical_url, d.final_url AS url, d.title, d.duplicate_kind AS kind, "
            "d.duplicate_score AS score "
            "FROM pages d JOIN pages r ON r.id = d.duplicate_of "
            "WHERE d.duplicate_of IS NOT NULL "
            "AND (CAST(:kind AS TEXT) IS NULL OR d.duplicate_kind = CAST(:kind AS TEXT)) "
            "ORDER BY r.first_seen_at, r.id, d.first_seen_at, d.id",
            {"kind": kind or None},
            what="cannot read the duplicates of",
        )
        return group_duplicates(rows)

    def search(
        self,
        terms: Sequence[Sequence[str]] = (),
        *,
        require_all: bool = False,
        raw: str | None = None,
        k: int = 10,
        source_id: str | None = None,
    ) -> list[dict[str, Any]]:
        with self.db.lock, self._guard("cannot search"):
            return self.db.search(terms, require_all=require_all, raw=raw, k=k, source_id=source_id)

    def pages_without_passages(self) -> int:
        [row] = self._read(
            "SELECT COUNT(*) FROM page_meta m WHERE m.word_count > 0 "
            "AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.page_id = m.id)"
        )
        return int(row[0])

    def get_meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM dataset_meta WHERE key = ?", (key,))
        return None if not rows else str(rows[0][0])

    def stats(self, *, stale_days: int = 7, runs: int = 5) -> dict[str, Any]:
        stale_before = (datetime.now(UTC) - timedelta(days=stale_days)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )

        def q(sql: str, params: Params = ()) -> list[Row]:
            return self._read(sql, params, what="cannot read the statistics of")

        totals = q(
            "SELECT COUNT(*) AS total_rows, "
            "(SELECT COUNT(*) FROM (SELECT DISTINCT source_id, canonical_url FROM pages) d) "
            "AS distinct_identities FROM pages"
        )[0]
        shared = q(
            f"SELECT content_hash, COUNT(*) AS n, {self.db.url_list} AS urls "
            "FROM pages GROUP BY content_hash HAVING COUNT(*) > 1 ORDER BY n DESC, content_hash"
        )
        # the pages of the first shared contents: their keys and the URLs they were fetched at
        shared_pages = {
            r["content_hash"]: q(
                "SELECT canonical_url, final_url FROM pages WHERE content_hash = ? ORDER BY id",
                (r["content_hash"],),
            )
            for r in shared[:10]
        }
        stale = q(
            "SELECT source_id, canonical_url, final_url AS url, last_seen_at FROM pages "
            "WHERE last_seen_at < ? AND status <> 'tombstoned' ORDER BY last_seen_at",
            (stale_before,),
        )
        per_source = q(
            "SELECT source_id, status, COUNT(*) AS n, "
            "COUNT(*) FILTER (WHERE duplicate_of IS NOT NULL) AS duplicates, "
            "CAST(SUM(thin) AS BIGINT) AS thin, MAX(last_seen_at) AS last_seen_at "
            "FROM pages GROUP BY source_id, status ORDER BY source_id, status"
        )
        dup_kinds = {
            r["duplicate_kind"]: r["n"]
            for r in q(
                "SELECT duplicate_kind, COUNT(*) AS n FROM pages "
                "WHERE duplicate_of IS NOT NULL GROUP BY duplicate_kind"
            )
        }
        clusters = q(
            "SELECT COUNT(DISTINCT duplicate_of) AS n FROM pages WHERE duplicate_of IS NOT NULL"
        )[0]["n"]
        # A duplicate's representative is never itself a duplicate.
        chained = q(
            "SELECT d.source_id, d.canonical_url, d.final_url AS url, "
            "r.canonical_url AS duplicate_of, r.final_url AS duplicate_of_url, "
            "rr.canonical_url AS its_duplicate_of, rr.final_url AS its_duplicate_of_url "
            "FROM page_meta d JOIN page_meta r ON r.id = d.duplicate_of "
            "JOIN page_meta rr ON rr.id = r.duplicate_of ORDER BY d.id"
        )
        versions = q("SELECT COUNT(*) AS n FROM page_versions")[0]["n"]
        quarantined = q("SELECT COUNT(*) AS n FROM quarantine")[0]["n"]
        now = utc_now()
        # Health: per source, how far behind its schedule it is (the most overdue
        # page's due time), how many pages are due, the oldest check.
        freshness = q(
            "SELECT source_id, "
            "COUNT(*) FILTER (WHERE next_check_at IS NULL OR next_check_at <= :now) AS due, "
            "MIN(CASE WHEN next_check_at <= :now THEN next_check_at END) AS most_overdue_since, "
            "MIN(last_checked_at) AS oldest_check "
            "FROM page_meta WHERE status <> 'tombstoned' GROUP BY source_id ORDER BY source_id",
            {"now": now},
        )
        retries = q(
            "SELECT "
            "COUNT(*) FILTER (WHERE dead_lettered_at IS NULL AND needs_review = 0) AS pending, "
            "MIN(CASE WHEN dead_lettered_at IS NULL AND needs_review = 0 "
            "THEN next_retry_at END) AS oldest_pending_retry, "
            "COUNT(*) FILTER (WHERE dead_lettered_at IS NOT NULL) AS dead_lettered, "
            "COUNT(*) FILTER (WHERE needs_review = 1 AND dead_lettered_at IS NULL) AS review "
            "FROM fetch_attempts"
        )[0]
        frontier = q("SELECT COUNT(*) AS n FROM frontier")[0]["n"]
        last_runs = q("SELECT * FROM crawl_runs ORDER BY id DESC LIMIT ?", (runs,))
        return stats_report(
            url=self.url,
            now=now,
            stale_days=stale_days,
            totals=totals,
            shared=shared,
            shared_pages=shared_pages,
            stale=stale,
            chained=chained,
            per_source=per_source,
            clusters=clusters,
            dup_kinds=dup_kinds,
            versions=versions,
            quarantined=quarantined,
            freshness=freshness,
            retries=retries,
            frontier=frontier,
            last_runs=last_runs,
        )

    def close(self) -> None:
        with self.db.lock:
            self.db.close()  # a second close does nothing


def _json_list(text: str | None) -> list[Any]:
    """A JSON array stored as text; ``[]`` for NULL or anything else."""
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _change_texts(reader: Reader, page_id: int, version_id: int, contents: bool) -> dict[str, Any]:
    """The two sides of one change: the version replaced and the text that replaced it.

    The new side is the page's next stored version, or its current content.
    """
    text = "content" if contents else "NULL"
    old = reader.one(
        f"SELECT content_hash, fetched_at, {text} FROM page_versions WHERE id = ?", (version_id,)
    )
    new = reader.one(
        f"SELECT content_hash, fetched_at, {text}, title FROM page_versions "
        "WHERE page_id = ? AND id > ? ORDER BY id LIMIT 1",
        (page_id, version_id),
    ) or reader.one(
        f"SELECT content_hash, fetched_at, {text}, title FROM pages WHERE id = ?", (page_id,)
    )
    if old is None or new is None:  # pragma: no cover - a version always has its page
        raise StoreError(f"page {page_id} has no version {version_id}")
    texts: dict[str, Any] = {
        "title": new[3],
        "content_hash": new[0],
        "previous_content_hash": old[0],
        "previous_fetched_at": old[1],
        "fetched_at": new[1],
    }
    if contents:
        texts["previous_content"] = old[2]
        texts["content"] = new[2]
    return texts
