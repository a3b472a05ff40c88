"""SQLite backend: WAL, explicit transactions, batched ``executemany`` upserts.

One connection, guarded by a lock; callers run methods on a single writer
thread (see :mod:`knowledge_crawler.pipelines.store`) so the event loop never
blocks on disk.

Errors are sorted by whose fault they are. A record the database rejects
(:data:`BAD_RECORD_ERRORS`: a constraint, a value it cannot bind) is
quarantined and the rest of its batch loads. Anything else is the database's:
locked, busy, I/O, full, cannot open (:class:`TransientStoreError`, worth a
retry) or another :class:`StoreError`; the batch is rolled back whole and
nothing of it is quarantined.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from knowledge_crawler.errors import SchemaMismatchError, StoreError, TransientStoreError
from knowledge_crawler.store._report import (
    export_page,
    export_passage,
    group_duplicates,
    search_result,
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
    record_dict,
    utc_now,
)
from knowledge_crawler.store.migrations import MIGRATIONS, Migration

__all__ = [
    "BAD_RECORD_ERRORS",
    "SqliteStore",
    "record_json",
    "sqlite_path",
    "store_error",
]

#: Errors that say a record is bad (the database refuses it), not the database.
BAD_RECORD_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.IntegrityError,  # a constraint: CHECK, NOT NULL, UNIQUE, FOREIGN KEY
    sqlite3.DataError,  # string or blob too big
    sqlite3.InterfaceError,  # a value that cannot be bound
    sqlite3.ProgrammingError,  # (Python 3.11+: "Error binding parameter")
    ValueError,  # e.g. text with lone surrogates
    TypeError,
    OverflowError,  # an integer wider than 64 bits
)

# Primary result codes (https://www.sqlite.org/rescode.html) of conditions that may pass.
_TRANSIENT_CODES = frozenset(
    {
        5,  # SQLITE_BUSY
        6,  # SQLITE_LOCKED
        7,  # SQLITE_NOMEM
        8,  # SQLITE_READONLY (e.g. a file system remounted read-only)
        10,  # SQLITE_IOERR
        13,  # SQLITE_FULL
        14,  # SQLITE_CANTOPEN
        15,  # SQLITE_PROTOCOL
    }
)
# ... and their messages, for errors that carry no code.
_TRANSIENT_WORDS = (
    "locked",
    "busy",
    "disk i/o error",
    "disk is full",
    "unable to open",
    "readonly database",
    "out of memory",
)


def store_error(exc: BaseException, what: str) -> StoreError:
    """``exc`` (a database error) as a one-line :class:`StoreError` starting with ``what``.

    :class:`TransientStoreError` when the condition may pass (locked, busy, I/O,
    full, cannot open), by SQLite result code when the error carries one.
    """
    if isinstance(exc, StoreError):
        return exc
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        transient = code & 0xFF in _TRANSIENT_CODES
    else:
        text = str(exc).lower()
        transient = isinstance(exc, OSError) or any(w in text for w in _TRANSIENT_WORDS)
    message = " ".join(f"{what}: {exc}".split())
    return TransientStoreError(message) if transient else StoreError(message)


# Metadata: rewritten on every visit. Content: only when the hash moves (_PUT_CONTENT).
_UPSERT = """
INSERT INTO page_meta (
    source_id, canonical_url, url, final_url, fetched_at, title, headings,
    word_count, language, thin, content_hash,
    duplicate_of, duplicate_kind, duplicate_score, http_status, etag, last_modified, status,
    first_seen_at, last_seen_at, last_checked_at, last_changed_at, next_check_at,
    check_interval, depth, archive_file, archive_offset, extra
) VALUES (
    :source_id, :canonical_url, :url, :final_url, :fetched_at, :title, :headings,
    :word_count, :language, :thin, :content_hash,
    (SELECT id FROM page_meta WHERE source_id = :dup_source AND canonical_url = :dup_url),
    CASE WHEN EXISTS (SELECT 1 FROM page_meta
                      WHERE source_id = :dup_source AND canonical_url = :dup_url)
         THEN :duplicate_kind END,
    CASE WHEN EXISTS (SELECT 1 FROM page_meta
                      WHERE source_id = :dup_source AND canonical_url = :dup_url)
         THEN :duplicate_score END,
    :http_status, :etag, :last_modified, 'active',
    :fetched_at, :fetched_at, :fetched_at, COALESCE(:changed_at, :fetched_at), :next_check_at,
    :check_interval, :depth, :archive_file, :archive_offset, :extra
)
ON CONFLICT (source_id, canonical_url) DO UPDATE SET
    url             = excluded.url,
    final_url       = excluded.final_url,
    fetched_at      = excluded.fetched_at,
    title           = excluded.title,
    headings        = excluded.headings,
    word_count      = excluded.word_count,
    language        = excluded.language,
    thin            = excluded.thin,
    last_changed_at = CASE WHEN page_meta.content_hash = excluded.content_hash
                           THEN page_meta.last_changed_at ELSE excluded.last_changed_at END,
    content_hash    = excluded.content_hash,
    duplicate_of    = excluded.duplicate_of,
    duplicate_kind  = excluded.duplicate_kind,
    duplicate_score = excluded.duplicate_score,
    http_status     = excluded.http_status,
    etag            = excluded.etag,
    last_modified   = excluded.last_modified,
    status_changed_at = CASE WHEN page_meta.status = 'active' OR :reextracted
                             THEN page_meta.status_changed_at ELSE excluded.last_seen_at END,
    status          = CASE WHEN :reextracted THEN page_meta.status ELSE 'active' END,
    status_reason   = CASE WHEN :reextracted THEN page_meta.status_reason END,
    status_evidence = CASE WHEN :reextracted THEN page_meta.status_evidence ELSE '[]' END,
    last_seen_at    = CASE WHEN :reextracted THEN page_meta.last_seen_at
                           ELSE excluded.last_seen_at END,
    last_checked_at = CASE WHEN :reextracted THEN page_meta.last_checked_at
                           ELSE excluded.last_checked_at END,
    next_check_at   = excluded.next_check_at,
    check_interval  = COALESCE(excluded.check_interval, page_meta.check_interval),
    depth           = MIN(page_meta.depth, excluded.depth),
    -- the response the stored content came from: this fetch's, unless it has none and
    -- the content did not move (then the stored record still holds that content)
    archive_file    = CASE WHEN excluded.archive_file IS NULL
                            AND page_meta.content_hash = excluded.content_hash
                           THEN page_meta.archive_file ELSE excluded.archive_file END,
    archive_offset  = CASE WHEN excluded.archive_file IS NULL
                            AND page_meta.content_hash = excluded.content_hash
                           THEN page_meta.archive_offset ELSE excluded.archive_offset END,
    -- a spider's extra fields, from this fetch; a re-extraction has none of its own
    extra           = CASE WHEN :reextracted THEN page_meta.extra ELSE excluded.extra END
    -- first_seen_at is deliberately absent: set once, never updated
"""

_PUT_CONTENT = """
INSERT INTO page_content (page_id, content, minhash, minhash_params)
VALUES ((SELECT id FROM page_meta WHERE source_id = :source_id AND canonical_url = :canonical_url),
        :content, :minhash, :minhash_params)
ON CONFLICT (page_id) DO UPDATE SET
    content = excluded.content, minhash = excluded.minhash, minhash_params = excluded.minhash_params
"""

# The ids of a page's passages in order, as one text (compared with a record's own).
_PASSAGE_IDS = (
    "(SELECT group_concat(id, ',') FROM "
    "(SELECT id FROM passages p WHERE p.page_id = m.id ORDER BY ord))"
)

# A page's passages, replaced whenever its content is written (new or changed content);
# the full-text index follows by trigger.
_DROP_PASSAGES = """
DELETE FROM passages
WHERE page_id = (SELECT id FROM page_meta WHERE source_id = ? AND canonical_url = ?)
"""

_PUT_PASSAGE = """
INSERT INTO passages (id, page_id, ord, title, heading_path, content, word_count)
VALUES (:id,
        (SELECT id FROM page_meta WHERE source_id = :source_id AND canonical_url = :canonical_url),
        :ord, :title, :heading_path, :content, :word_count)
"""

# A 304: times, validators (a validator the response did not repeat stays) and the next
# check; never content, hash or last_changed_at.
_TOUCH = """
UPDATE page_meta SET
    status_changed_at = CASE WHEN status = 'active' THEN status_changed_at ELSE :checked_at END,
    status          = 'active',
    status_reason   = NULL,
    status_evidence = '[]',
    last_seen_at    = :checked_at,
    last_checked_at = :checked_at,
    etag            = COALESCE(:etag, etag),
    last_modified   = COALESCE(:last_modified, last_modified),
    next_check_at   = COALESCE(:next_check_at, next_check_at),
    check_interval  = COALESCE(:check_interval, check_interval)
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

# A discovered page, unless it was checked since it was discovered (then it is stored).
_FRONTIER_ADD = """
INSERT INTO frontier (source_id, canonical_url, url, depth, adapter, lastmod, discovered_at, run_id)
SELECT :source_id, :canonical_url, :url, :depth, :adapter, :lastmod, :discovered_at, :run_id
WHERE NOT EXISTS (SELECT 1 FROM page_meta
                  WHERE source_id = :source_id AND canonical_url = :canonical_url
                    AND last_checked_at >= :discovered_at)
ON CONFLICT (source_id, canonical_url) DO NOTHING
"""

_FRONTIER_SETTLE = "DELETE FROM frontier WHERE source_id = ? AND canonical_url = ?"

# A page fetched again (stored or 304) has no retry state left.
_ATTEMPTS_CLEAR = "DELETE FROM fetch_attempts WHERE source_id = ? AND canonical_url = ?"

_FAILURE = """
INSERT INTO fetch_attempts (
    source_id, canonical_url, url, depth, attempts, first_failed_at, last_failed_at,
    last_error, last_status, next_retry_at, dead_lettered_at, needs_review, run_id
) VALUES (
    :source_id, :canonical_url, :url, :depth, :attempts, :first_failed_at, :failed_at,
    :last_error, :last_status, :next_retry_at, :dead_lettered_at, :needs_review, :run_id
)
ON CONFLICT (source_id, canonical_url) DO UPDATE SET
    url = excluded.url, depth = excluded.depth, attempts = excluded.attempts,
    first_failed_at = excluded.first_failed_at, last_failed_at = excluded.last_failed_at,
    last_error = excluded.last_error, last_status = excluded.last_status,
    next_retry_at = excluded.next_retry_at, dead_lettered_at = excluded.dead_lettered_at,
    needs_review = excluded.needs_review, run_id = excluded.run_id
"""

# A stored page's status moves; its content stays. Checked now, not seen.
_STATUS = """
UPDATE page_meta SET
    status = :status, status_reason = :reason, status_evidence = :evidence,
    status_changed_at = CASE WHEN status = :status THEN status_changed_at ELSE :checked_at END,
    last_checked_at = :checked_at
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

_ADVANCE = """
INSERT INTO checkpoints (source_id, adapter, cursor, updated_at, run_id)
VALUES (:source_id, :adapter, :cursor, :updated_at, :run_id)
ON CONFLICT (source_id, adapter) DO UPDATE SET
    cursor = excluded.cursor, updated_at = excluded.updated_at, run_id = excluded.run_id
"""

_SET_DUPLICATE = """
UPDATE page_meta SET
    duplicate_of = (SELECT id FROM page_meta
                    WHERE source_id = :dup_source AND canonical_url = :dup_url),
    duplicate_kind = :kind,
    duplicate_score = :score
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

# A stored page's ``duplicate_of`` (no row: the page is not stored).
_EXISTS = "SELECT duplicate_of FROM page_meta WHERE source_id = ? AND canonical_url = ?"

# Each committed batch adds what it did to its run, in the same transaction.
_COUNT_RUN = """
UPDATE crawl_runs SET
    upserts_completed       = upserts_completed + :loaded,
    pages_new               = pages_new + :inserted,
    responses_200_changed   = responses_200_changed + :changed,
    responses_200_unchanged = responses_200_unchanged + :unchanged,
    responses_304           = responses_304 + :touched,
    tombstones_created      = tombstones_created + :tombstones,
    quarantined             = quarantined + :quarantined
WHERE id = :run_id
"""

_SAVE_VERSION = """
INSERT INTO page_versions (page_id, content_hash, title, content, fetched_at, replaced_at,
                           archive_file, archive_offset)
SELECT id, content_hash, title, content, fetched_at, ?, archive_file, archive_offset
FROM pages WHERE id = ?
"""

_PRIOR = """
SELECT m.id, m.content_hash, c.minhash_params, c.page_id IS NOT NULL,
       (SELECT group_concat(id, ',') FROM
            (SELECT id FROM passages p WHERE p.page_id = m.id ORDER BY ord)), m.title
FROM page_meta m LEFT JOIN page_content c ON c.page_id = m.id
WHERE m.source_id = ? AND m.canonical_url = ?
"""


# Full-text search over passages: BM25, a match in the page title worth three times one
# in the text and one in the headings above the passage twice;
# duplicates and tombstoned pages left out. bm25() is negative: smaller is better.
_SEARCH = """
SELECT p.id AS passage_id, m.source_id, m.canonical_url, m.final_url AS url, m.title,
       p.heading_path, p.content,
       bm25(passages_fts, 3.0, 2.0, 1.0) AS rank,
       snippet(passages_fts, 2, '**', '**', '…', 24) AS snippet
FROM passages_fts
JOIN passages p ON p.seq = passages_fts.rowid
JOIN page_meta m ON m.id = p.page_id
WHERE passages_fts MATCH :match
  AND (:ids IS NULL OR passages_fts.rowid IN (SELECT value FROM json_each(:ids)))
  AND m.duplicate_of IS NULL
  AND m.status <> 'tombstoned'
  AND (:source IS NULL OR m.source_id = :source)
ORDER BY rank, p.id
LIMIT :k
"""

# The first candidates of a narrowed search (see SqliteStore.search), best first.
_CANDIDATE_IDS = """
SELECT rowid FROM passages_fts WHERE passages_fts MATCH :match
ORDER BY bm25(passages_fts, 3.0, 2.0, 1.0) LIMIT :n
"""

# How many passages hold a term, counted up to :n (enough to tell common from rare).
_TERM_COUNT = """
SELECT count(*) FROM (SELECT 1 FROM passages_fts WHERE passages_fts MATCH :match LIMIT :n)
"""

#: candidates ranked by the rarer terms before every term scores them
_CANDIDATES = 200
#: a term in more than this share of all passages is "common" for narrowing a search
_COMMON_SHARE = 0.2


def _fts_match(terms: Sequence[Sequence[str]], require_all: bool) -> str:
    """FTS5 syntax for words and phrases (made of \\w characters, so never a quote)."""
    quoted = ['"' + " ".join(term).replace('"', " ") + '"' for term in terms if term]
    return (" AND " if require_all else " OR ").join(quoted)


#: keys looked up per statement (two bound values each, well under SQLite's limit)
_KEYS_PER_STATEMENT = 400

#: rows a streaming read (changes, export) takes from its cursor at a time
_STREAM_ROWS = 64

# What happened in a window, oldest first: small rows (no text), sorted by SQLite; the
# texts of a change are read entry by entry. Ties: new before changed before a status.
_CHANGES = """
SELECT e.kind, e.time, e.page_id, e.version_id, m.source_id, m.canonical_url, m.title,
       m.content_hash, m.status_reason
FROM (
    SELECT 0 AS rank, 'new' AS kind, first_seen_at AS time, id AS page_id, NULL AS version_id
    FROM page_meta
    WHERE first_seen_at >= :since AND (:until IS NULL OR first_seen_at < :until)
    UNION ALL
    SELECT 1, 'changed', replaced_at, page_id, id
    FROM page_versions
    WHERE replaced_at >= :since AND (:until IS NULL OR replaced_at < :until)
    UNION ALL
    SELECT 2, CASE status WHEN 'tombstoned' THEN 'tombstoned' ELSE 'restored' END,
           status_changed_at, id, NULL
    FROM page_meta
    WHERE status != 'suspected_missing'
      AND status_changed_at >= :since AND (:until IS NULL OR status_changed_at < :until)
) e JOIN page_meta m ON m.id = e.page_id
WHERE :source IS NULL OR m.source_id = :source
ORDER BY e.time, e.rank, e.page_id, e.version_id
"""

# One page per row with its provenance, in storage order (no sort: rows stream).
_EXPORT = """
SELECT p.source_id, p.canonical_url, p.url, p.final_url, p.title, p.content, p.content_hash,
       p.language, p.word_count, p.headings, p.fetched_at, p.last_changed_at,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) + 1 AS version,
       p.status, r.canonical_url AS duplicate_of, p.extra
FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of
WHERE (:since IS NULL OR p.last_changed_at >= :since OR p.status_changed_at >= :since)
  AND (:source IS NULL OR p.source_id = :source)
  AND (:duplicates OR p.duplicate_of IS NULL)
  AND (:tombstoned OR p.status != 'tombstoned')
ORDER BY p.id
"""

# One row per passage, with its page's provenance; the same filters as _EXPORT.
_EXPORT_PASSAGES = """
SELECT s.id AS passage_id, s.ord, s.heading_path, s.content, s.word_count,
       p.source_id, p.canonical_url, p.final_url AS url, p.title,
       p.content_hash AS page_content_hash, p.fetched_at, p.last_changed_at,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) + 1 AS version,
       p.status, r.canonical_url AS duplicate_of
FROM pages p JOIN passages s ON s.page_id = p.id
LEFT JOIN page_meta r ON r.id = p.duplicate_of
WHERE (:since IS NULL OR p.last_changed_at >= :since OR p.status_changed_at >= :since)
  AND (:source IS NULL OR p.source_id = :source)
  AND (:duplicates OR p.duplicate_of IS NULL)
  AND (:tombstoned OR p.status != 'tombstoned')
ORDER BY p.id, s.ord
"""


def _export_params(
    since: str | None, source_id: str | None, duplicates: bool, tombstoned: bool
) -> dict[str, Any]:
    return {
        "since": since,
        "source": source_id,
        "duplicates": int(duplicates),
        "tombstoned": int(tombstoned),
    }


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def sqlite_path(url: str) -> str:
    """``sqlite:///rel/path.db`` -> ``rel/path.db``; ``sqlite:////abs.db`` -> ``/abs.db``."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        raise StoreError(f"not a SQLite URL (expected sqlite:///PATH): {url!r}")
    path = url[len(prefix) :]
    if not path:
        raise StoreError(f"SQLite URL has no path: {url!r}")
    return path


def _row_params(rec: PageRecord) -> dict[str, Any]:
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
        "reextracted": int(rec.reextracted),
        # a re-extraction that moves the hash moves last_changed_at to now, not to the
        # (earlier) fetch: what changed the stored content happened now
        "changed_at": utc_now() if rec.reextracted else None,
    }


def _passage_params(rec: PageRecord) -> Iterator[dict[str, Any]]:
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


def record_json(rec: PageRecord) -> str:
    """``rec`` as one line of JSON (MinHash bytes as hex), as ``quarantine`` keeps it."""
    return json.dumps(record_dict(rec), default=repr, ensure_ascii=False)


def _dedupe_row(row: Sequence[Any]) -> DedupeRow:
    source_id, url, digest, words, rep_source, rep_url, kind, score, minhash, params = row
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
    )


class SqliteStore(Store):
    """The default backend: one SQLite file in WAL mode."""

    def __init__(self, url: str, *, busy_timeout: float = 10.0) -> None:
        """Open (creating its folder) and migrate the database at ``url``.

        ``busy_timeout``: seconds a statement waits for another writer's lock
        before failing with :class:`TransientStoreError`. Whatever stops the
        opening raises one :class:`StoreError` line: ``cannot open PATH: REASON``.
        """
        self.url = url
        self.path = path = sqlite_path(url)
        self._lock = threading.RLock()
        what = f"cannot open {path}"
        if path != ":memory:":
            parent = Path(path).parent
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except FileExistsError:
                raise StoreError(f"{what}: {parent} is not a directory") from None
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                raise StoreError(f"{what}: cannot create its folder {parent}: {reason}") from None
            if Path(path).is_dir():
                raise StoreError(f"{what}: unable to open database file (it is a directory)")
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise store_error(exc, what) from None
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {max(0, round(busy_timeout * 1000))}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            self._conn.close()
            raise store_error(exc, what) from None
        except BaseException:
            self._conn.close()
            raise

    # -- schema ---------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            applied = {r[0] for r in self._conn.execute("SELECT name FROM schema_migrations")}
            known = {m.name for m in MIGRATIONS}
            unknown = sorted(applied - known)
            if unknown:
                raise SchemaMismatchError(
                    f"{self.url} was written by a newer knowledge_crawler "
                    f"(unknown migrations: {', '.join(unknown)})"
                )
            for migration in MIGRATIONS:
                if migration.name not in applied:
                    self._apply(migration)

    def _apply(self, migration: Migration) -> None:
        conn = self._conn
        if migration.rebuilds_table:
            conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction
        try:
            with self._transaction():
                done = conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE name = ?", (migration.name,)
                ).fetchone()
                if done:  # another process applied it while we waited for the lock
                    return
                for statement in migration.sqlite_statements():
                    conn.execute(statement)
                if migration.rebuilds_table:
                    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise StoreError(
                            f"{self.path}: migration {migration.name} would leave "
                            f"{len(broken)} broken references (first: {broken[0]})"
                        )
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, utc_now()),
                )
        finally:
            if migration.rebuilds_table:
                conn.execute("PRAGMA foreign_keys = ON")

    def applied_migrations(self) -> list[str]:
        with self._lock:
            return [
                r[0] for r in self._conn.execute("SELECT name FROM schema_migrations ORDER BY name")
            ]

    # -- transactions -----------------------------------------------------------

    class _Tx:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; on any error (COMMIT's own too) ``ROLLBACK``.

        SQLite rolls some failures back by itself (a full disk, an I/O error): the
        ROLLBACK is then skipped, so the original error is what the caller sees.
        """

        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def __enter__(self) -> sqlite3.Connection:
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, exc_type: object, *rest: object) -> None:
            if exc_type is None:
                try:
                    self.conn.execute("COMMIT")
                    return
                except BaseException:
                    self._rollback()
                    raise
            self._rollback()

        def _rollback(self) -> None:
            if self.conn.in_transaction:
                # A ROLLBACK that fails leaves nothing committed; the first error wins.
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")

    def _transaction(self) -> SqliteStore._Tx:
        return SqliteStore._Tx(self._conn)

    # -- writes -----------------------------------------------------------------

    def write(self, operations: Sequence[Operation], *, run_id: int | None = None) -> UpsertResult:
        if not operations:
            return UpsertResult()
        with self._lock:
            try:
                try:
                    with self._transaction():
                        result = UpsertResult()
                        self._apply_operations(operations, result, run_id, bad=None)
                        self._count_run(run_id, result)
                        return result
                except BAD_RECORD_ERRORS:
                    pass  # a record the database refuses: find it, below
                return self._isolate(operations, run_id)
            except sqlite3.Error as exc:
                raise store_error(exc, f"cannot write to {self.path}") from exc

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
                loaded = records if bad is None else self._load_each(records, result, bad)
                if bad is None:
                    one = self._load(records)
                    result.inserted += one.inserted
                    result.changed += one.changed
                    result.unchanged += one.unchanged
                result.unlinked += self._unlinked(loaded)
                self._settle([rec for rec in loaded if not rec.reextracted])  # fetched ones
            elif kind is DuplicateUpdate:
                updates = cast("list[DuplicateUpdate]", ops)
                self._apply_updates(updates, result, isolate=bad is not None)
            elif kind is Touch:
                touches = cast("list[Touch]", ops)
                self._touch(touches, result)
                self._settle(touches)
            elif kind is FrontierAdd:
                self._add_to_frontier(cast("list[FrontierAdd]", ops), result, run_id)
            elif kind is FetchFailure:
                self._fail(cast("list[FetchFailure]", ops), result, run_id)
            elif kind is StatusChange:
                self._change_status(cast("list[StatusChange]", ops), result)
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
        conn = self._conn
        loaded: list[PageRecord] = []
        for rec in records:
            conn.execute("SAVEPOINT kc_record")
            try:
                one = self._load([rec])
            except BAD_RECORD_ERRORS as exc:
                self._undo("kc_record")
                error = f"{type(exc).__name__}: {exc}"
                bad.append((rec, error))
                result.quarantined.append((rec.key, error))
                continue
            conn.execute("RELEASE kc_record")
            loaded.append(rec)
            result.inserted += one.inserted
            result.changed += one.changed
            result.unchanged += one.unchanged
        return loaded

    def _settle(self, done: Sequence[PageRecord | Touch]) -> None:
        """Pages now written (and the URLs requested): no frontier entry, no retry state."""
        keys = {op.key for op in done}
        keys |= {(op.source_id, op.requested_key) for op in done if op.requested_key}
        ordered = sorted(keys)
        self._conn.executemany(_FRONTIER_SETTLE, ordered)
        self._conn.executemany(_ATTEMPTS_CLEAR, ordered)

    def _fail(
        self, failures: Sequence[FetchFailure], result: UpsertResult, run_id: int | None
    ) -> None:
        self._conn.executemany(
            _FAILURE,
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
                }
                for f in failures
            ],
        )
        self._conn.executemany(_FRONTIER_SETTLE, [f.key for f in failures if f.settled])
        result.failures += len(failures)
        result.dead_lettered += sum(1 for f in failures if f.dead_lettered_at)

    def _change_status(self, changes: Sequence[StatusChange], result: UpsertResult) -> None:
        for change in changes:  # few: only pages whose status moves
            before = self._conn.execute(
                "SELECT status FROM page_meta WHERE source_id = ? AND canonical_url = ?",
                change.key,
            ).fetchone()
            if before is None:
                continue
            self._conn.execute(
                _STATUS,
                {
                    "source_id": change.source_id,
                    "canonical_url": change.canonical_url,
                    "status": change.status,
                    "reason": change.reason,
                    "evidence": change.evidence,
                    "checked_at": change.checked_at,
                },
            )
            result.status_changes += 1
            if change.status == "tombstoned" and before[0] != "tombstoned":
                result.tombstones += 1

    def _add_to_frontier(
        self, adds: Sequence[FrontierAdd], result: UpsertResult, run_id: int | None
    ) -> None:
        # One executemany, not a statement per row: the writer thread then takes the
        # GIL once per batch rather than once per row while the crawl keeps it busy.
        before = self._conn.total_changes
        self._conn.executemany(
            _FRONTIER_ADD,
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
                }
                for add in adds
            ],
        )
        result.frontier_added += self._conn.total_changes - before

    def _touch(self, touches: Sequence[Touch], result: UpsertResult) -> None:
        before = self._conn.total_changes
        self._conn.executemany(
            _TOUCH,
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
        if self._conn.total_changes - before == len(touches):
            result.touched += [t.key for t in touches]
            return
        stored = self._priors([t.key for t in touches])  # rare: some are not stored
        for touch in touches:
            (result.touched if touch.key in stored else result.untouched).append(touch.key)

    def _advance(
        self, advances: Sequence[CheckpointAdvance], result: UpsertResult, run_id: int | None
    ) -> None:
        now = utc_now()
        self._conn.executemany(
            _ADVANCE,
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

    def _isolate(self, operations: Sequence[Operation], run_id: int | None) -> UpsertResult:
        """Apply the batch again, each record in a savepoint, all in one transaction.

        A record the database refuses is rolled back to its savepoint and goes to
        ``quarantine``; the others load. Duplicate updates whose page and
        representative are stored apply, touches and checkpoints too, the
        quarantine rows are written and the run's counters moved, in the same
        transaction: it commits whole or not at all, so a retry after any failure
        writes each row once.
        """
        result = UpsertResult()
        bad: list[tuple[PageRecord, str]] = []
        with self._transaction():
            self._apply_operations(operations, result, run_id, bad=bad)
            for rec, error in bad:
                self._insert_quarantine(rec, error, run_id)
            self._count_run(run_id, result)
        return result

    def _undo(self, savepoint: str) -> None:
        """Roll back to ``savepoint`` (a statement failed for its record's sake)."""
        if not self._conn.in_transaction:  # SQLite gave the whole transaction up
            raise TransientStoreError(
                f"cannot write to {self.path}: the transaction was rolled back"
            )
        self._conn.execute(f"ROLLBACK TO {savepoint}")
        self._conn.execute(f"RELEASE {savepoint}")

    def _unlinked(self, records: Sequence[PageRecord]) -> list[tuple[str, str]]:
        """Keys of duplicates stored as none: their representative is not in the database."""
        last = {rec.key: rec for rec in records}
        unlinked = []
        for k, rec in last.items():
            if rec.duplicate_of is not None:
                row = self._conn.execute(_EXISTS, k).fetchone()
                if row is not None and row[0] is None:
                    unlinked.append(k)
        return unlinked

    def _apply_updates(
        self, updates: Sequence[DuplicateUpdate], result: UpsertResult, *, isolate: bool
    ) -> None:
        """Apply the updates whose page and representative are stored; report the rest.

        With ``isolate``, each update runs in a savepoint and one the database
        refuses is dropped and reported; otherwise such an error propagates.
        """
        conn = self._conn
        ready: list[DuplicateUpdate] = []
        for update in updates:
            if conn.execute(_EXISTS, update.key).fetchone() is None:
                result.dropped_updates.append((update, PAGE_NOT_STORED))
            elif (
                update.duplicate_of is not None
                and conn.execute(_EXISTS, update.duplicate_of).fetchone() is None
            ):
                result.dropped_updates.append((update, REPRESENTATIVE_NOT_STORED))
            else:
                ready.append(update)
        if not isolate:
            self._set_duplicates(ready)
            return
        for update in ready:
            conn.execute("SAVEPOINT kc_update")
            try:
                self._set_duplicates([update])
            except BAD_RECORD_ERRORS as exc:
                self._undo("kc_update")
                result.dropped_updates.append((update, f"{type(exc).__name__}: {exc}"))
                continue
            conn.execute("RELEASE kc_update")

    def _count_run(self, run_id: int | None, result: UpsertResult) -> None:
        if run_id is None:
            return
        self._conn.execute(
            _COUNT_RUN,
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

    def _set_duplicates(self, updates: Sequence[DuplicateUpdate]) -> None:
        if not updates:
            return
        self._conn.executemany(
            _SET_DUPLICATE,
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

    def _load(self, records: Sequence[PageRecord]) -> UpsertResult:
        conn = self._conn
        result = UpsertResult()
        now = utc_now()
        rows: list[dict[str, Any]] = []
        contents: list[dict[str, Any]] = []
        pending: set[tuple[str, str]] = set()

        written: list[PageRecord] = []  # records whose content (and passages) is written

        def write() -> None:
            conn.executemany(_UPSERT, rows)
            conn.executemany(_PUT_CONTENT, contents)
            conn.executemany(_DROP_PASSAGES, [rec.key for rec in written])
            conn.executemany(_PUT_PASSAGE, [p for rec in written for p in _passage_params(rec)])
            rows.clear()
            contents.clear()
            written.clear()
            pending.clear()

        priors = self._priors([rec.key for rec in records])
        for rec in records:
            if rec.key in pending:  # the same page twice in one batch: write the first one
                write()
                priors[rec.key] = conn.execute(_PRIOR, rec.key).fetchone()
            prior = priors.get(rec.key)
            params = _row_params(rec)
            if prior is None:
                result.inserted.append(rec.key)
                contents.append(params)
                written.append(rec)
            elif prior[1] == rec.content_hash:
                result.unchanged.append(rec.key)
                if not prior[3] or prior[2] != rec.minhash_params:
                    contents.append(params)  # re-signed with other MinHash parameters
                if (prior[4] or "") != ",".join(p.id for p in rec.passages) or (
                    prior[5] != rec.title
                ):
                    # split otherwise (another KC_PASSAGE_WORDS, or stored before passages
                    # existed), or retitled: the index needs the page again
                    written.append(rec)
            else:
                conn.execute(_SAVE_VERSION, (now, prior[0]))
                result.changed.append(rec.key)
                contents.append(params)
                written.append(rec)
            rows.append(params)
            pending.add(rec.key)
        write()
        return result

    def _priors(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Any]:
        """The stored state (``_PRIOR`` columns) of the pages of ``keys``, in few statements."""
        priors: dict[tuple[str, str], Any] = {}
        for chunk in _chunks(sorted(set(keys)), _KEYS_PER_STATEMENT):
            marks = ", ".join("(?, ?)" for _ in chunk)
            for row in self._conn.execute(
                "SELECT m.source_id, m.canonical_url, m.id, m.content_hash, c.minhash_params, "
                "c.page_id IS NOT NULL, "
                f"{_PASSAGE_IDS}, m.title "
                "FROM page_meta m "
                "LEFT JOIN page_content c ON c.page_id = m.id "
                f"WHERE (m.source_id, m.canonical_url) IN (VALUES {marks})",
                [part for key in chunk for part in key],
            ):
                priors[(row[0], row[1])] = row[2:]
        return priors

    def _insert_quarantine(self, rec: PageRecord, error: str, run_id: int | None) -> None:
        """Record ``rec`` and its error in ``quarantine``, inside the caller's transaction."""
        self._conn.execute(
            "INSERT INTO quarantine (run_id, source_id, canonical_url, url, error, record, "
            "quarantined_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                str(rec.source_id),
                str(rec.canonical_url),
                str(rec.url),
                error,
                record_json(rec),
                utc_now(),
            ),
        )

    # -- runs -------------------------------------------------------------------

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
        with self._lock, self._guard("cannot record the run in"), self._transaction() as conn:
            cur = conn.execute(
                "INSERT INTO crawl_runs (spider, mode, sources, started_at, job_id, pid, host, "
                "outcome) VALUES (?, ?, ?, ?, ?, ?, ?, 'running')",
                (spider, mode, json.dumps(list(sources)), utc_now(), job_id, pid, host),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def unfinished_runs(self) -> list[dict[str, Any]]:
        with self._guard("cannot read the runs of"):
            return [
                dict(r)
                for r in self.query(
                    "SELECT id, pid, host, started_at, job_id FROM crawl_runs "
                    "WHERE outcome = 'running' ORDER BY id"
                )
            ]

    def abandon_run(self, run_id: int) -> None:
        with self._lock, self._guard("cannot record the run in"), self._transaction() as conn:
            conn.execute(
                "UPDATE crawl_runs SET outcome = 'abandoned', finished_at = ? "
                "WHERE id = ? AND outcome = 'running'",
                (utc_now(), run_id),
            )

    def finish_run(
        self, run_id: int, *, reason: str, outcome: str, counters: Mapping[str, int]
    ) -> None:
        head = {name: int(counters.get(name, 0)) for name in HEAD_COUNTERS}
        assignments = ", ".join(f"{name} = :{name}" for name in HEAD_COUNTERS)
        with self._lock, self._guard("cannot record the run in"), self._transaction() as conn:
            conn.execute(
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

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Raise database errors as :class:`StoreError` (transient or not) naming the file."""
        try:
            yield
        except sqlite3.Error as exc:
            raise store_error(exc, f"{what} {self.path}") from exc

    # -- reads ------------------------------------------------------------------

    def dedupe_state(self, *, signatures: bool = True) -> Iterator[DedupeRow]:
        minhash = "p.minhash, p.minhash_params" if signatures else "NULL, NULL"
        with self._lock:
            rows = self._conn.execute(
                "SELECT p.source_id, p.canonical_url, p.content_hash, p.word_count, "
                "r.source_id, r.canonical_url, p.duplicate_kind, p.duplicate_score, "
                f"{minhash} "
                "FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of "
                "WHERE p.status = 'active' ORDER BY p.first_seen_at, p.id"
            ).fetchall()
        for row in rows:
            yield _dedupe_row(row)

    def known_pages(self, source_ids: Sequence[str]) -> Iterator[KnownPage]:
        if not source_ids:
            return
        marks = ", ".join("?" for _ in source_ids)
        with self._lock, self._guard("cannot read the pages of"):
            rows = self._conn.execute(
                "SELECT source_id, canonical_url, final_url, etag, last_modified, content_hash, "
                "depth, check_interval, last_changed_at, next_check_at, status, status_reason, "
                "status_evidence FROM page_meta "
                f"WHERE source_id IN ({marks}) AND status != 'tombstoned' "
                "ORDER BY next_check_at IS NOT NULL, next_check_at, id",
                tuple(source_ids),
            ).fetchall()
        for row in rows:
            yield KnownPage(*row)

    def checkpoints(self, source_id: str) -> dict[str, str]:
        with self._guard("cannot read the checkpoints of"):
            rows = self.query(
                "SELECT adapter, cursor FROM checkpoints WHERE source_id = ? ORDER BY adapter",
                (source_id,),
            )
        return {r["adapter"]: r["cursor"] for r in rows}

    def fetch_attempts(self, source_ids: Sequence[str]) -> list[FetchFailure]:
        if not source_ids:
            return []
        marks = ", ".join("?" for _ in source_ids)
        with self._lock, self._guard("cannot read the retry state of"):
            rows = self._conn.execute(
                "SELECT source_id, canonical_url, url, last_failed_at, attempts, first_failed_at, "
                "last_error, last_status, next_retry_at, dead_lettered_at, needs_review, depth "
                f"FROM fetch_attempts WHERE source_id IN ({marks}) "
                "ORDER BY next_retry_at IS NULL, next_retry_at, rowid",
                tuple(source_ids),
            ).fetchall()
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
            )
            for row in rows
        ]

    def dead_letters(self, source_id: str | None = None) -> list[dict[str, Any]]:
        where = "(dead_lettered_at IS NOT NULL OR needs_review = 1)"
        params: tuple[str, ...] = ()
        if source_id is not None:
            where += " AND source_id = ?"
            params = (source_id,)
        with self._guard("cannot read the dead letters of"):
            return [
                dict(r)
                for r in self.query(
                    "SELECT source_id, canonical_url, url, attempts, first_failed_at, "
                    "last_failed_at, last_error, last_status, dead_lettered_at, needs_review "
                    f"FROM fetch_attempts WHERE {where} "
                    "ORDER BY COALESCE(dead_lettered_at, last_failed_at), rowid",
                    params,
                )
            ]

    def frontier(self, source_ids: Sequence[str]) -> list[FrontierAdd]:
        if not source_ids:
            return []
        marks = ", ".join("?" for _ in source_ids)
        with self._lock, self._guard("cannot read the frontier of"):
            rows = self._conn.execute(
                "SELECT source_id, canonical_url, url, adapter, discovered_at, depth, lastmod "
                f"FROM frontier WHERE source_id IN ({marks}) ORDER BY discovered_at, rowid",
                tuple(source_ids),
            ).fetchall()
        return [FrontierAdd(*row) for row in rows]

    def archived_pages(self, source_ids: Sequence[str]) -> list[ArchivedPage]:
        if not source_ids:
            return []
        marks = ", ".join("?" for _ in source_ids)
        with self._lock, self._guard("cannot read the pages of"):
            rows = self._conn.execute(
                "SELECT p.source_id, p.canonical_url, p.url, p.final_url, p.fetched_at, "
                "p.http_status, p.etag, p.last_modified, p.depth, p.next_check_at, "
                "p.check_interval, p.status, p.content_hash, r.source_id, r.canonical_url, "
                "p.duplicate_kind, p.duplicate_score, p.archive_file, p.archive_offset "
                "FROM page_meta p LEFT JOIN page_meta r ON r.id = p.duplicate_of "
                f"WHERE p.source_id IN ({marks}) ORDER BY p.first_seen_at, p.id",
                tuple(source_ids),
            ).fetchall()
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
        where = "canonical_url = ?" + (" AND source_id = ?" if source_id is not None else "")
        params = (canonical_url,) + ((source_id,) if source_id is not None else ())
        out: list[dict[str, Any]] = []
        with self._guard("cannot read the history of"):
            for page in self.query(
                "SELECT id, source_id, canonical_url, content_hash, title, content, fetched_at, "
                f"NULL AS replaced_at FROM pages WHERE {where} ORDER BY source_id",
                params,
            ):
                current = dict(page)
                page_id = current.pop("id")
                out.append(current)
                out += [
                    {"source_id": current["source_id"], "canonical_url": canonical_url, **dict(r)}
                    for r in self.query(
                        "SELECT content_hash, title, content, fetched_at, replaced_at "
                        "FROM page_versions WHERE page_id = ? ORDER BY replaced_at DESC, id DESC",
                        (page_id,),
                    )
                ]
        return out

    def _stream(self, sql: str, params: Mapping[str, Any], what: str) -> Iterator[sqlite3.Row]:
        """The rows of ``sql``, read ``_STREAM_ROWS`` at a time: memory stays flat.

        The lock is held only while rows are read, not while the caller handles them;
        the cursor is closed when the rows run out or the caller stops early.
        """
        with self._lock, self._guard(what):
            cur = self._conn.cursor()
            cur.row_factory = sqlite3.Row
            cur.execute(sql, params)
        try:
            while True:
                with self._lock, self._guard(what):
                    rows = cur.fetchmany(_STREAM_ROWS)
                if not rows:
                    return
                yield from rows
        finally:
            with contextlib.suppress(sqlite3.Error):  # the store may be closed already
                cur.close()

    def changes(
        self,
        since: str,
        until: str | None = None,
        *,
        source_id: str | None = None,
        contents: bool = True,
    ) -> Iterator[dict[str, Any]]:
        what = "cannot read the changes in"
        params = {"since": since, "until": until, "source": source_id}
        for row in self._stream(_CHANGES, params, what):
            entry: dict[str, Any] = {
                "kind": row["kind"],
                "time": row["time"],
                "source_id": row["source_id"],
                "canonical_url": row["canonical_url"],
                "title": row["title"],
                "content_hash": row["content_hash"],
                "reason": row["status_reason"] if row["kind"] == "tombstoned" else None,
                "previous_content_hash": None,
                "previous_fetched_at": None,
                "fetched_at": None,
            }
            if row["kind"] == "changed":
                with self._lock, self._guard(what):
                    entry.update(self._change_texts(row["page_id"], row["version_id"], contents))
            yield entry

    def _change_texts(self, page_id: int, version_id: int, contents: bool) -> dict[str, Any]:
        """The two sides of one change: the version replaced and the text that replaced it.

        The new side is the page's next stored version, or its current content.
        """
        text = "content" if contents else "NULL"
        old = self._conn.execute(
            f"SELECT content_hash, fetched_at, {text} FROM page_versions WHERE id = ?",
            (version_id,),
        ).fetchone()
        new = (
            self._conn.execute(
                f"SELECT content_hash, fetched_at, {text}, title FROM page_versions "
                "WHERE page_id = ? AND id > ? ORDER BY id LIMIT 1",
                (page_id, version_id),
            ).fetchone()
            or self._conn.execute(
                f"SELECT content_hash, fetched_at, {text}, title FROM pages WHERE id = ?",
                (page_id,),
            ).fetchone()
        )
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

    def export_pages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        params = _export_params(since, source_id, include_duplicates, include_tombstoned)
        for row in self._stream(_EXPORT, params, "cannot export the pages of"):
            yield export_page(row)

    def export_passages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        params = _export_params(since, source_id, include_duplicates, include_tombstoned)
        for row in self._stream(_EXPORT_PASSAGES, params, "cannot export the passages of"):
            yield export_passage(row)

    def dependents(self, key: tuple[str, str]) -> list[DedupeRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT d.source_id, d.canonical_url, d.content_hash, d.word_count, "
                "r.source_id, r.canonical_url, d.duplicate_kind, d.duplicate_score, "
                "d.minhash, d.minhash_params "
                "FROM pages d JOIN page_meta r ON r.id = d.duplicate_of "
                "WHERE r.source_id = ? AND r.canonical_url = ? AND d.status = 'active' "
                "ORDER BY d.first_seen_at, d.id",
                key,
            ).fetchall()
        return [_dedupe_row(row) for row in rows]

    def duplicate_clusters(self, kind: str | None = None) -> list[dict[str, Any]]:
        where = "d.duplicate_of IS NOT NULL" + (" AND d.duplicate_kind = ?" if kind else "")
        rows = self.query(
            "SELECT r.source_id AS rep_source, r.canonical_url AS rep_url, r.title AS rep_title, "
            "d.source_id, d.canonical_url, d.title, d.duplicate_kind AS kind, "
            "d.duplicate_score AS score "
            f"FROM pages d JOIN pages r ON r.id = d.duplicate_of WHERE {where} "
            "ORDER BY r.first_seen_at, r.id, d.first_seen_at, d.id",
            (kind,) if kind else (),
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
        if raw is not None:
            match, narrow = raw, None
        else:
            match = _fts_match(terms, require_all)
            narrow = None if require_all else self._narrowed(terms)
        if not match:
            return []
        params: dict[str, Any] = {"match": match, "k": k, "source": source_id, "ids": None}
        try:
            if narrow is not None:
                # Rank by the rarer words first, then score those candidates with every
                # word: a word in most passages costs most to rank and weighs least.
                limit = max(_CANDIDATES, 20 * k)
                ids = [r[0] for r in self.query(_CANDIDATE_IDS, {"match": narrow, "n": limit})]
                params["ids"] = json.dumps(ids)
                rows = self.query(_SEARCH, params)
                if len(rows) < k:  # too few with the rare words (or left by the filters)
                    params["ids"] = None
                    rows = self.query(_SEARCH, params)
            else:
                rows = self.query(_SEARCH, params)
        except sqlite3.OperationalError as exc:
            error = store_error(exc, "search")
            if isinstance(error, TransientStoreError):
                raise error from exc
            raise ValueError(f"cannot search for {match!r}: {exc}") from None  # its syntax
        return [search_result(r, -r["rank"]) for r in rows]

    def _narrowed(self, terms: Sequence[Sequence[str]]) -> str | None:
        """The rarer terms of an any-word query, as a match, when some of its terms are in
        more than :data:`_COMMON_SHARE` of all passages (None: rank with every term)."""
        if len(terms) < 2:
            return None
        [row] = self.query("SELECT count(*) FROM passages")
        common = int(row[0] * _COMMON_SHARE)

        def holders(term: Sequence[str]) -> int:
            counted = self.query(_TERM_COUNT, {"match": _fts_match([term], False), "n": common + 1})
            return int(counted[0][0])

        rare = [term for term in terms if holders(term) <= common]
        if not rare or len(rare) == len(terms):
            return None
        return _fts_match(rare, False)

    def pages_without_passages(self) -> int:
        [row] = self.query(
            "SELECT COUNT(*) FROM page_meta m WHERE m.word_count > 0 "
            "AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.page_id = m.id)"
        )
        return int(row[0])

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM dataset_meta WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock, self._transaction() as conn:
            conn.execute(
                "INSERT INTO dataset_meta (key, value, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (key, value, utc_now()),
            )

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a read-only query and return rows that index by column name."""
        with self._lock:
            cur = self._conn.cursor()
            cur.row_factory = sqlite3.Row
            return cur.execute(sql, params).fetchall()

    def stats(self, *, stale_days: int = 7, runs: int = 5) -> dict[str, Any]:
        stale_before = (datetime.now(UTC) - timedelta(days=stale_days)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        q = self.query
        totals = q(
            "SELECT COUNT(*) AS total_rows, "
            "(SELECT COUNT(*) FROM (SELECT DISTINCT source_id, canonical_url FROM pages)) "
            "AS distinct_identities FROM pages"
        )[0]
        shared = q(
            "SELECT content_hash, COUNT(*) AS n, GROUP_CONCAT(canonical_url, ' ') AS urls "
            "FROM pages GROUP BY content_hash HAVING COUNT(*) > 1 ORDER BY n DESC, content_hash"
        )
        stale = q(
            "SELECT source_id, canonical_url, last_seen_at FROM pages "
            "WHERE last_seen_at < ? AND status != 'tombstoned' ORDER BY last_seen_at",
            (stale_before,),
        )
        per_source = q(
            "SELECT source_id, status, COUNT(*) AS n, SUM(duplicate_of IS NOT NULL) AS duplicates, "
            "SUM(thin) AS thin, MAX(last_seen_at) AS last_seen_at "
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
            "SELECT d.source_id, d.canonical_url, r.canonical_url AS duplicate_of, "
            "rr.canonical_url AS its_duplicate_of "
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
            "SUM(next_check_at IS NULL OR next_check_at <= :now) AS due, "
            "MIN(CASE WHEN next_check_at <= :now THEN next_check_at END) AS most_overdue_since, "
            "MIN(last_checked_at) AS oldest_check "
            "FROM page_meta WHERE status != 'tombstoned' GROUP BY source_id ORDER BY source_id",
            {"now": now},
        )
        retries = q(
            "SELECT "
            "SUM(dead_lettered_at IS NULL AND needs_review = 0) AS pending, "
            "MIN(CASE WHEN dead_lettered_at IS NULL AND needs_review = 0 "
            "THEN next_retry_at END) AS oldest_pending_retry, "
            "SUM(dead_lettered_at IS NOT NULL) AS dead_lettered, "
            "SUM(needs_review = 1 AND dead_lettered_at IS NULL) AS review "
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
        with self._lock:
            self._conn.close()  # a second close does nothing
