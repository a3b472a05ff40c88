"""PostgreSQL backend (psycopg 3): the SQLite contract, safe with concurrent writers.

Selected by ``KC_DATABASE_URL=postgresql://...`` (or ``postgres://``); any libpq
URL works, e.g. ``postgresql://kc@db.example/kc?options=-csearch_path%3Dcrawl`` to
keep the dataset in a schema of its own. The schema is the one of
:mod:`~knowledge_crawler.store.migrations`, its types rendered for PostgreSQL.

One connection in autocommit mode, guarded by a lock, with explicit transactions;
a lost connection is re-opened by the next call. Streaming reads (changes,
exports) run on a connection of their own, in one read-only snapshot, with a
server-side cursor.

Several processes may write at once. SQLite serialises writers with its file lock, so
its backend decides "new, changed or unchanged" by reading a page and then writing it;
here that read-then-write would race. So a write transaction

- first claims what it will write: a transaction-level advisory lock per page (stored
  or not yet) and per checkpoint, taken in one global order (ascending lock key).
  Writers of overlapping batches queue there, and never wait for each other later in
  their transactions: no deadlock, whatever order their operations come in;
- starts each run of page records with one statement that, in key order, inserts the
  pages not stored yet and locks the rows of those that are (``INSERT ... ON CONFLICT
  DO UPDATE ... WHERE false``: nothing updated, every conflicting row locked) and
  returns the ones it inserted: whether a page is new is the database's answer;
- then reads the locked pages as the last writer committed them (READ COMMITTED: each
  statement sees every commit before it), so each version is saved exactly once, from
  the text it replaces, and no update is lost. A status change reads the status it
  replaces under the row's lock, in the same statement.

Errors are sorted as on SQLite: a record the database refuses (a constraint, a
value out of range or not storable, a key too long to index) is quarantined and
the rest of its batch loads; a serialization failure, deadlock, lock timeout,
lost connection, shutdown, full disk or I/O error is a
:class:`TransientStoreError` (the batch is kept and retried whole); anything
else is a :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import RowMaker

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
    display_url,
    utc_now,
)
from knowledge_crawler.store.migrations import MIGRATIONS, POSTGRES_SEARCH_CONFIG, Migration
from knowledge_crawler.store.sqlite import (
    _dedupe_row,
    _passage_params,
    _row_params,
    record_json,
)

__all__ = [
    "BAD_RECORD_ERRORS",
    "LOAD_STRATEGIES",
    "PostgresStore",
    "Row",
    "pg_store_error",
]

#: Errors that say a record is bad (the database refuses it), not the database.
BAD_RECORD_ERRORS: tuple[type[Exception], ...] = (
    psycopg.IntegrityError,  # a constraint: CHECK, NOT NULL, UNIQUE, FOREIGN KEY
    psycopg.DataError,  # out of range, too long, NUL in text, not valid for its type
    pg_errors.ProgramLimitExceeded,  # e.g. a key too long for its index, a huge tsvector
    ValueError,  # e.g. text with lone surrogates (UnicodeEncodeError)
    TypeError,
    OverflowError,
)

# SQLSTATE classes and codes (https://www.postgresql.org/docs/current/errcodes-appendix.html)
# of conditions that may pass: transaction rollback (serialization failure, deadlock),
# connection exceptions, insufficient resources (disk full, out of memory, too many
# connections), lock not available (lock_timeout), object in use, query canceled
# (statement_timeout), operator intervention (admin or crash shutdown, cannot connect
# now), system errors (I/O), idle-in-transaction timeout.
_TRANSIENT_CLASSES = frozenset({"08", "40", "53", "57", "58"})
_TRANSIENT_CODES = frozenset({"55P03", "55006", "25P03"})

#: how the page records of a batch are written: "copy" (COPY into the tables, and into a
#: staging table for the rows to update) or "executemany" (one statement per row, sent
#: in a pipeline); both in the batch's one transaction (bench/bench_store.py measures them)
LOAD_STRATEGIES: tuple[str, ...] = ("copy", "executemany")

#: rows a streaming read (changes, export) takes from its server-side cursor at a time
_STREAM_ROWS = 64


def pg_store_error(exc: BaseException, what: str) -> StoreError:
    """``exc`` (a database error) as a one-line :class:`StoreError` starting with ``what``.

    :class:`TransientStoreError` when the condition may pass, by SQLSTATE; an
    error without one from the connection itself (lost, closed, cannot connect) too.
    """
    if isinstance(exc, StoreError):
        return exc
    code = getattr(exc, "sqlstate", None)
    if isinstance(code, str) and code:
        transient = code[:2] in _TRANSIENT_CLASSES or code in _TRANSIENT_CODES
    else:
        transient = isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError | OSError)
    message = " ".join(f"{what}: {exc}".split())
    return TransientStoreError(message) if transient else StoreError(message)


class Row:
    """A result row read by column name or by position, as :class:`sqlite3.Row` is.

    ``dict(row)`` gives its columns; it iterates over its values.
    """

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = tuple(values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return self._values == other._values and self.keys() == other.keys()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


def _row_factory(cursor: Any) -> RowMaker[Row]:
    names = [c.name for c in cursor.description or ()]
    index = {name: i for i, name in enumerate(names)}
    return lambda values: Row(index, values)


# SQLite's placeholders (? and :name) as psycopg's, outside quoted text; a % is doubled.
_PLACEHOLDERS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|::|\?|:([A-Za-z_]\w*)|%")


def _pyformat(sql: str) -> str:
    """``sql`` written with SQLite's placeholders (``?``, ``:name``) in psycopg's.

    >>> _pyformat("SELECT x::text FROM t WHERE a = ? AND b LIKE '%:x?' AND c = :c")
    "SELECT x::text FROM t WHERE a = %s AND b LIKE '%%:x?' AND c = %(c)s"
    """

    def one(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "?":
            return "%s"
        if match.group(1):
            return f"%({match.group(1)})s"
        return text.replace("%", "%%")

    return _PLACEHOLDERS.sub(one, sql)


# -- page records ----------------------------------------------------------------------

#: the columns of a page record as the first statement of a run loads them, with their
#: array types: name, PostgreSQL type
_LOCK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source_id", "text"),
    ("canonical_url", "text"),
    ("url", "text"),
    ("final_url", "text"),
    ("fetched_at", "text"),
    ("title", "text"),
    ("headings", "text"),
    ("word_count", "int8"),
    ("language", "text"),
    ("thin", "int8"),
    ("content_hash", "text"),
    ("dup_source", "text"),
    ("dup_url", "text"),
    ("duplicate_kind", "text"),
    ("duplicate_score", "float8"),
    ("http_status", "int8"),
    ("etag", "text"),
    ("last_modified", "text"),
    ("next_check_at", "text"),
    ("check_interval", "int8"),
    ("depth", "int8"),
    ("archive_file", "text"),
    ("archive_offset", "int8"),
    ("extra", "text"),
    ("changed_at", "text"),
)

# One statement, in key order: insert the pages not stored yet (from the first record of
# each), lock the rows of the pages that are (ON CONFLICT DO UPDATE ... WHERE false updates
# nothing and locks every conflicting row). It returns the pages it inserted. Their ids
# are drawn in the order the records came (the inner query, sorted by position, draws
# them; nextval is evaluated after that sort), as SQLite numbers them: storage order. A
# representative inserted by the same statement is not visible to it: see _load.
_LOCK_OR_INSERT = f"""
INSERT INTO page_meta AS m (
    id, source_id, canonical_url, url, final_url, fetched_at, title, headings,
    word_count, language, thin, content_hash,
    duplicate_of, duplicate_kind, duplicate_score, http_status, etag, last_modified, status,
    first_seen_at, last_seen_at, last_checked_at, last_changed_at, next_check_at,
    check_interval, depth, archive_file, archive_offset, extra
) OVERRIDING SYSTEM VALUE
SELECT r.id, r.source_id, r.canonical_url, r.url, r.final_url, r.fetched_at, r.title,
       r.headings, r.word_count, r.language, r.thin, r.content_hash,
       d.id, CASE WHEN d.id IS NOT NULL THEN r.duplicate_kind END,
       CASE WHEN d.id IS NOT NULL THEN r.duplicate_score END,
       r.http_status, r.etag, r.last_modified, 'active',
       r.fetched_at, r.fetched_at, r.fetched_at, COALESCE(r.changed_at, r.fetched_at),
       r.next_check_at, r.check_interval, r.depth, r.archive_file, r.archive_offset, r.extra
FROM (
    SELECT r.*, COALESCE(e.id, nextval(pg_get_serial_sequence('page_meta', 'id'))) AS id
    FROM unnest({", ".join(f"%({name})s::{kind}[]" for name, kind in _LOCK_COLUMNS)})
         WITH ORDINALITY AS r({", ".join(name for name, _ in _LOCK_COLUMNS)}, n)
    LEFT JOIN page_meta e ON e.source_id = r.source_id AND e.canonical_url = r.canonical_url
    ORDER BY r.n
    OFFSET 0
) r
LEFT JOIN page_meta d ON d.source_id = r.dup_source AND d.canonical_url = r.dup_url
ORDER BY r.source_id COLLATE "C", r.canonical_url COLLATE "C"
ON CONFLICT (source_id, canonical_url) DO UPDATE SET url = m.url WHERE false
RETURNING m.source_id, m.canonical_url, m.id
"""

# What a record sets on its page's (locked) row: SQLite's upsert of an existing page.
# ``{s}`` is where the record's values come from: the parameters of one statement, or
# the staging table of a COPY.
_SET_PAGE = """
    url             = {s}url,
    final_url       = {s}final_url,
    fetched_at      = {s}fetched_at,
    title           = {s}title,
    headings        = {s}headings,
    word_count      = {s}word_count,
    language        = {s}language,
    thin            = {s}thin,
    last_changed_at = CASE WHEN m.content_hash = {s}content_hash THEN m.last_changed_at
                           ELSE COALESCE({s}changed_at, {s}fetched_at) END,
    content_hash    = {s}content_hash,
    duplicate_of    = d.id,
    duplicate_kind  = CASE WHEN d.id IS NOT NULL THEN {s}duplicate_kind END,
    duplicate_score = CASE WHEN d.id IS NOT NULL THEN {s}duplicate_score END,
    http_status     = {s}http_status,
    etag            = {s}etag,
    last_modified   = {s}last_modified,
    status_changed_at = CASE WHEN m.status = 'active' OR {s}reextracted
                             THEN m.status_changed_at ELSE {s}fetched_at END,
    status          = CASE WHEN {s}reextracted THEN m.status ELSE 'active' END,
    status_reason   = CASE WHEN {s}reextracted THEN m.status_reason END,
    status_evidence = CASE WHEN {s}reextracted THEN m.status_evidence ELSE '[]' END,
    last_seen_at    = CASE WHEN {s}reextracted THEN m.last_seen_at ELSE {s}fetched_at END,
    last_checked_at = CASE WHEN {s}reextracted THEN m.last_checked_at ELSE {s}fetched_at END,
    next_check_at   = {s}next_check_at,
    check_interval  = COALESCE({s}check_interval, m.check_interval),
    depth           = LEAST(m.depth, {s}depth),
    archive_file    = CASE WHEN {s}archive_file IS NULL AND m.content_hash = {s}content_hash
                           THEN m.archive_file ELSE {s}archive_file END,
    archive_offset  = CASE WHEN {s}archive_file IS NULL AND m.content_hash = {s}content_hash
                           THEN m.archive_offset ELSE {s}archive_offset END,
    extra           = CASE WHEN {s}reextracted THEN m.extra ELSE {s}extra END
"""

#: the staging table of page updates: the record's columns, typed
_STAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    *_LOCK_COLUMNS,
    ("reextracted", "bool"),
)


def _typed(name: str) -> str:
    """``%(name)s::type``: a record's column as a typed statement parameter."""
    return f"%({name})s::{dict(_STAGE_COLUMNS)[name]}"


_UPDATE_PAGE = (
    "UPDATE page_meta AS m SET "
    + re.sub(r"\{s\}(\w+)", lambda m: _typed(m.group(1)), _SET_PAGE)
    + " FROM (SELECT (SELECT id FROM page_meta WHERE source_id = %(dup_source)s::text "
    "AND canonical_url = %(dup_url)s::text) AS id) d "
    "WHERE m.source_id = %(source_id)s::text AND m.canonical_url = %(canonical_url)s::text"
)

_STAGE_META = "kc_stage_pages"

_UPDATE_PAGES_FROM_STAGE = (
    "UPDATE page_meta AS m SET "
    + _SET_PAGE.replace("{s}", "s.")
    + f" FROM {_STAGE_META} s LEFT JOIN page_meta d "
    "ON d.source_id = s.dup_source AND d.canonical_url = s.dup_url "
    "WHERE m.source_id = s.source_id AND m.canonical_url = s.canonical_url"
)

_PUT_CONTENT = """
INSERT INTO page_content (page_id, content, minhash, minhash_params)
VALUES (%(page_id)s, %(content)s, %(minhash)s, %(minhash_params)s)
ON CONFLICT (page_id) DO UPDATE SET
    content = EXCLUDED.content, minhash = EXCLUDED.minhash,
    minhash_params = EXCLUDED.minhash_params
"""

_PUT_PASSAGE = """
INSERT INTO passages (id, page_id, ord, title, heading_path, content, word_count)
VALUES (%(id)s, %(page_id)s, %(ord)s, %(title)s, %(heading_path)s, %(content)s, %(word_count)s)
"""

# The previous content of each changed page, from its locked row, before it is rewritten;
# in the order the records came.
_SAVE_VERSIONS = """
INSERT INTO page_versions (page_id, content_hash, title, content, fetched_at, replaced_at,
                           archive_file, archive_offset)
SELECT p.id, p.content_hash, p.title, p.content, p.fetched_at, %(now)s,
       p.archive_file, p.archive_offset
FROM unnest(%(ids)s::int8[]) WITH ORDINALITY AS v(id, n) JOIN pages p ON p.id = v.id
ORDER BY v.n
"""

# The stored state of the pages of a run (read once their rows are locked).
_PRIORS = """
SELECT m.source_id, m.canonical_url, m.id, m.content_hash, c.minhash_params,
       c.page_id IS NOT NULL,
       (SELECT string_agg(p.id, ',' ORDER BY p.ord) FROM passages p WHERE p.page_id = m.id),
       m.title
FROM page_meta m LEFT JOIN page_content c ON c.page_id = m.id
WHERE (m.source_id, m.canonical_url) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
"""

_KEYS = "(source_id, canonical_url) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"

# What a batch writes to (its pages, stored or not yet, and its checkpoints), claimed
# first: a transaction-level advisory lock per key, taken in ascending lock-key order
# (the inner ORDER BY; each lock is taken as its row is read). Writers of overlapping
# batches queue on these claims in that one order, so none of them waits later in its
# transaction for a row, an insert or a claim that another holds: no deadlock, whatever
# order their operations come in. Locks wait at most lock_timeout (transient).
_CLAIM = """
SELECT pg_advisory_xact_lock(k) FROM (
    SELECT DISTINCT hashtextextended(x, 0) AS k FROM unnest(%s::text[]) AS x ORDER BY 1
) claims
"""

# -- other operations ------------------------------------------------------------------

_TOUCH = """
UPDATE page_meta SET
    status_changed_at = CASE WHEN status = 'active' THEN status_changed_at
                             ELSE %(checked_at)s::text END,
    status          = 'active',
    status_reason   = NULL,
    status_evidence = '[]',
    last_seen_at    = %(checked_at)s::text,
    last_checked_at = %(checked_at)s::text,
    etag            = COALESCE(%(etag)s::text, etag),
    last_modified   = COALESCE(%(last_modified)s::text, last_modified),
    next_check_at   = COALESCE(%(next_check_at)s::text, next_check_at),
    check_interval  = COALESCE(%(check_interval)s::int8, check_interval)
WHERE source_id = %(source_id)s::text AND canonical_url = %(canonical_url)s::text
RETURNING source_id, canonical_url
"""

_FRONTIER_ADD = """
INSERT INTO frontier (source_id, canonical_url, url, depth, adapter, lastmod, discovered_at, run_id)
SELECT %(source_id)s::text, %(canonical_url)s::text, %(url)s, %(depth)s, %(adapter)s,
       %(lastmod)s, %(discovered_at)s::text, %(run_id)s
WHERE NOT EXISTS (SELECT 1 FROM page_meta
                  WHERE source_id = %(source_id)s::text AND canonical_url = %(canonical_url)s::text
                    AND last_checked_at >= %(discovered_at)s::text)
ON CONFLICT (source_id, canonical_url) DO NOTHING
"""

_FAILURE = """
INSERT INTO fetch_attempts (
    source_id, canonical_url, url, depth, attempts, first_failed_at, last_failed_at,
    last_error, last_status, next_retry_at, dead_lettered_at, needs_review, run_id
) VALUES (
    %(source_id)s, %(canonical_url)s, %(url)s, %(depth)s, %(attempts)s, %(first_failed_at)s,
    %(failed_at)s, %(last_error)s, %(last_status)s, %(next_retry_at)s, %(dead_lettered_at)s,
    %(needs_review)s, %(run_id)s
)
ON CONFLICT (source_id, canonical_url) DO UPDATE SET
    url = EXCLUDED.url, depth = EXCLUDED.depth, attempts = EXCLUDED.attempts,
    first_failed_at = EXCLUDED.first_failed_at, last_failed_at = EXCLUDED.last_failed_at,
    last_error = EXCLUDED.last_error, last_status = EXCLUDED.last_status,
    next_retry_at = EXCLUDED.next_retry_at, dead_lettered_at = EXCLUDED.dead_lettered_at,
    needs_review = EXCLUDED.needs_review, run_id = EXCLUDED.run_id
"""

# A stored page's status moves; one statement reads the status it replaces under the
# row's lock (the old row of the FROM, locked; the new one is what is written).
_STATUS = """
UPDATE page_meta AS m SET
    status = %(status)s, status_reason = %(reason)s, status_evidence = %(evidence)s,
    status_changed_at = CASE WHEN old.status = %(status)s::text THEN old.status_changed_at
                             ELSE %(checked_at)s::text END,
    last_checked_at = %(checked_at)s::text
FROM (SELECT id, status, status_changed_at FROM page_meta
      WHERE source_id = %(source_id)s::text AND canonical_url = %(canonical_url)s::text
      FOR NO KEY UPDATE) old
WHERE m.id = old.id
RETURNING old.status
"""

_ADVANCE = """
INSERT INTO checkpoints (source_id, adapter, cursor, updated_at, run_id)
VALUES (%(source_id)s, %(adapter)s, %(cursor)s, %(updated_at)s, %(run_id)s)
ON CONFLICT (source_id, adapter) DO UPDATE SET
    cursor = EXCLUDED.cursor, updated_at = EXCLUDED.updated_at, run_id = EXCLUDED.run_id
"""

_SET_DUPLICATE = """
UPDATE page_meta SET
    duplicate_of = (SELECT id FROM page_meta
                    WHERE source_id = %(dup_source)s::text AND canonical_url = %(dup_url)s::text),
    duplicate_kind = %(kind)s::text,
    duplicate_score = %(score)s::float8
WHERE source_id = %(source_id)s::text AND canonical_url = %(canonical_url)s::text
"""

_COUNT_RUN = """
UPDATE crawl_runs SET
    upserts_completed       = upserts_completed + %(loaded)s,
    pages_new               = pages_new + %(inserted)s,
    responses_200_changed   = responses_200_changed + %(changed)s,
    responses_200_unchanged = responses_200_unchanged + %(unchanged)s,
    responses_304           = responses_304 + %(touched)s,
    tombstones_created      = tombstones_created + %(tombstones)s,
    quarantined             = quarantined + %(quarantined)s
WHERE id = %(run_id)s
"""

# -- reads -------------------------------------------------------------------------------

_TSQUERY = f"to_tsquery('{POSTGRES_SEARCH_CONFIG}', %(query)s)"

# Full-text search over passages: ts_rank_cd over the weighted vector (title A = 1.0,
# headings B = 2/3, text C = 1/3: the 3, 2, 1 of SQLite's BM25), divided by 1 + the log
# of the passage's length; duplicates and tombstoned pages left out. The snippet is made
# for the k passages returned only.
_SEARCH = f"""
SELECT s.passage_id, s.source_id, s.canonical_url, s.url, s.title, s.heading_path, s.content,
       s.rank,
       ts_headline('{POSTGRES_SEARCH_CONFIG}', s.content, s.q,
                   'StartSel=**, StopSel=**, MaxWords=24, MinWords=8, ShortWord=2, '
                   'MaxFragments=2, FragmentDelimiter=" … "') AS snippet
FROM (
    SELECT p.id AS passage_id, m.source_id, m.canonical_url, m.final_url AS url, m.title,
           p.heading_path, p.content, q,
           ts_rank_cd('{{0.1, 0.3333, 0.6667, 1.0}}', p.search_vector, q, 1) AS rank
    FROM {_TSQUERY} AS q, passages p JOIN page_meta m ON m.id = p.page_id
    WHERE p.search_vector @@ q
      AND m.duplicate_of IS NULL
      AND m.status <> 'tombstoned'
      AND (%(source)s::text IS NULL OR m.source_id = %(source)s::text)
    ORDER BY rank DESC, p.id
    LIMIT %(k)s
) s
ORDER BY s.rank DESC, s.passage_id
"""

# What happened in a window, oldest first (see SqliteStore.changes).
_CHANGES = """
SELECT e.kind, e.time, e.page_id, e.version_id, m.source_id, m.canonical_url, m.title,
       m.content_hash, m.status_reason
FROM (
    SELECT 0 AS rank, 'new' AS kind, first_seen_at AS time, id AS page_id,
           NULL::int8 AS version_id
    FROM page_meta
    WHERE first_seen_at >= %(since)s::text
      AND (%(until)s::text IS NULL OR first_seen_at < %(until)s::text)
    UNION ALL
    SELECT 1, 'changed', replaced_at, page_id, id
    FROM page_versions
    WHERE replaced_at >= %(since)s::text
      AND (%(until)s::text IS NULL OR replaced_at < %(until)s::text)
    UNION ALL
    SELECT 2, CASE status WHEN 'tombstoned' THEN 'tombstoned' ELSE 'restored' END,
           status_changed_at, id, NULL
    FROM page_meta
    WHERE status <> 'suspected_missing'
      AND status_changed_at >= %(since)s::text
      AND (%(until)s::text IS NULL OR status_changed_at < %(until)s::text)
) e JOIN page_meta m ON m.id = e.page_id
WHERE %(source)s::text IS NULL OR m.source_id = %(source)s::text
ORDER BY e.time, e.rank, e.page_id, e.version_id
"""

_EXPORT_FILTER = """
WHERE (%(since)s::text IS NULL OR p.last_changed_at >= %(since)s::text
       OR p.status_changed_at >= %(since)s::text)
  AND (%(source)s::text IS NULL OR p.source_id = %(source)s::text)
  AND (%(duplicates)s OR p.duplicate_of IS NULL)
  AND (%(tombstoned)s OR p.status <> 'tombstoned')
"""

_EXPORT = f"""
SELECT p.source_id, p.canonical_url, p.url, p.final_url, p.title, p.content, p.content_hash,
       p.language, p.word_count, p.headings, p.fetched_at, p.last_changed_at,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) + 1 AS version,
       p.status, r.canonical_url AS duplicate_of, p.extra
FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of
{_EXPORT_FILTER}
ORDER BY p.id
"""

_EXPORT_PASSAGES = f"""
SELECT s.id AS passage_id, s.ord, s.heading_path, s.content, s.word_count,
       p.source_id, p.canonical_url, p.final_url AS url, p.title,
       p.content_hash AS page_content_hash, p.fetched_at, p.last_changed_at,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) + 1 AS version,
       p.status, r.canonical_url AS duplicate_of
FROM pages p JOIN passages s ON s.page_id = p.id
LEFT JOIN page_meta r ON r.id = p.duplicate_of
{_EXPORT_FILTER}
ORDER BY p.id, s.ord
"""


def _export_params(
    since: str | None, source_id: str | None, duplicates: bool, tombstoned: bool
) -> dict[str, Any]:
    return {
        "since": since,
        "source": source_id,
        "duplicates": bool(duplicates),
        "tombstoned": bool(tombstoned),
    }


def _tsquery(terms: Sequence[Sequence[str]], require_all: bool) -> str:
    """to_tsquery syntax for words and phrases: each word a quoted lexeme, a phrase's
    words joined by ``<->``; any of them (``|``) or every one (``&``).

    >>> _tsquery([("pump",), ("check", "valve")], False)
    "'pump' | ('check' <-> 'valve')"
    """
    parts = []
    for term in terms:
        words = ["'" + w.replace("\\", "\\\\").replace("'", "''") + "'" for w in term if w]
        if words:
            parts.append(words[0] if len(words) == 1 else "(" + " <-> ".join(words) + ")")
    return (" & " if require_all else " | ").join(parts)


def _columns(keys: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Keys as two arrays (source ids, canonical URLs), for ``unnest``."""
    pairs = list(keys)
    return [k[0] for k in pairs], [k[1] for k in pairs]


class PostgresStore(Store):
    """The PostgreSQL backend: one database (or schema), shared by any number of writers."""

    #: how page records are written (one of :data:`LOAD_STRATEGIES`)
    load_strategy: str = "copy"

    def __init__(self, url: str, *, busy_timeout: float = 10.0) -> None:
        """Connect to and migrate the database at ``url`` (``postgresql://`` or ``postgres://``).

        ``busy_timeout``: seconds a statement waits for another writer's lock
        (``lock_timeout``) before failing with :class:`TransientStoreError`.
        Whatever stops the opening raises one :class:`StoreError` line: ``cannot
        open URL: REASON`` (the URL without its password).
        """
        self.url = display_url(url)
        self._lock = threading.RLock()
        self._closed = False
        #: the connection that has the staging table (see _stage)
        self._staged: psycopg.Connection[Any] | None = None
        self._busy_ms = max(1, round(busy_timeout * 1000))
        what = f"cannot open {self.url}"
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise StoreError(f"{what}: {' '.join(str(exc).split())}") from None
        params.setdefault("connect_timeout", 10)
        params.setdefault("application_name", "knowledge_crawler")
        self._conninfo = make_conninfo("", **params)
        try:
            self._conn: psycopg.Connection[Any] = self._connect()
        except psycopg.Error as exc:
            raise pg_store_error(exc, what) from None
        try:
            self._migrate()
        except (psycopg.Error, OSError) as exc:
            self._conn.close()
            raise pg_store_error(exc, what) from None
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self._conninfo, autocommit=True)
        conn.execute(f"SET lock_timeout = {self._busy_ms}")
        # A batch's statements are short; JIT compiling one costs more than running it
        # (~0.2 s each when the planner overestimates a table not analyzed yet).
        conn.execute("SET jit = off")
        return conn

    @property
    def _db(self) -> psycopg.Connection[Any]:
        """The connection, opened again when it was lost (call with the lock held)."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        if self._conn.closed:
            self._conn = self._connect()
        return self._conn

    # -- schema -----------------------------------------------------------------------

    #: advisory lock taken while migrating, so that processes opening a new database at
    #: once apply each migration once
    _MIGRATION_LOCK = 0x6B635F6D696772  # "kc_migr"

    def _migrate(self) -> None:
        conn = self._conn
        applied = self._applied(conn)
        if applied is not None and not self._pending(applied):
            return
        conn.execute("SELECT pg_advisory_lock(%s)", (self._MIGRATION_LOCK,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                '(name TEXT COLLATE "C" PRIMARY KEY, applied_at TEXT COLLATE "C" NOT NULL)'
            )
            for migration in self._pending(self._applied(conn) or set()):
                self._apply(migration)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (self._MIGRATION_LOCK,))

    @staticmethod
    def _applied(conn: psycopg.Connection[Any]) -> set[str] | None:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return None
        return {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}

    def _pending(self, applied: set[str]) -> list[Migration]:
        unknown = sorted(applied - {m.name for m in MIGRATIONS})
        if unknown:
            raise SchemaMismatchError(
                f"{self.url} was written by a newer knowledge_crawler "
                f"(unknown migrations: {', '.join(unknown)})"
            )
        return [m for m in MIGRATIONS if m.name not in applied]

    def _apply(self, migration: Migration) -> None:
        conn = self._conn
        with conn.transaction():
            for statement in migration.postgres_statements():
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)",
                (migration.name, utc_now()),
            )

    def applied_migrations(self) -> list[str]:
        with self._lock, self._guard("cannot read the migrations of"):
            return [
                r[0] for r in self._db.execute("SELECT name FROM schema_migrations ORDER BY name")
            ]

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Raise database errors as :class:`StoreError` (transient or not) naming the database."""
        try:
            yield
        except psycopg.Error as exc:
            raise pg_store_error(exc, f"{what} {self.url}") from exc

    # -- writes -----------------------------------------------------------------------

    def write(self, operations: Sequence[Operation], *, run_id: int | None = None) -> UpsertResult:
        if not operations:
            return UpsertResult()
        with self._lock, self._guard("cannot write to"):
            conn = self._db
            if self.load_strategy == "copy" and any(
                isinstance(op, PageRecord) for op in operations
            ):
                self._stage(conn)
            try:
                with conn.transaction():
                    result = UpsertResult()
                    _claim(conn, operations)
                    self._apply_operations(conn, operations, result, run_id, bad=None)
                    self._count_run(conn, run_id, result)
                    return result
            except BAD_RECORD_ERRORS:
                pass  # a record the database refuses: find it, below
            return self._isolate(conn, operations, run_id)

    def _isolate(
        self, conn: psycopg.Connection[Any], operations: Sequence[Operation], run_id: int | None
    ) -> UpsertResult:
        """Apply the batch again, each record in a savepoint, all in one transaction
        (see SqliteStore._isolate)."""
        result = UpsertResult()
        bad: list[tuple[PageRecord, str]] = []
        with conn.transaction():
            _claim(conn, operations)
            self._apply_operations(conn, operations, result, run_id, bad=bad)
            for rec, error in bad:
                conn.execute(
                    "INSERT INTO quarantine (run_id, source_id, canonical_url, url, error, "
                    "record, quarantined_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        run_id,
                        _storable(str(rec.source_id)),
                        _storable(str(rec.canonical_url)),
                        _storable(str(rec.url)),
                        _storable(error),
                        _storable(record_json(rec)),
                        utc_now(),
                    ),
                )
            self._count_run(conn, run_id, result)
        return result

    def _apply_operations(
        self,
        conn: psycopg.Connection[Any],
        operations: Sequence[Operation],
        result: UpsertResult,
        run_id: int | None,
        *,
        bad: list[tuple[PageRecord, str]] | None,
    ) -> None:
        """Apply runs of operations of one kind, in order (see SqliteStore._apply_operations)."""
        for kind, run in itertools.groupby(operations, key=type):
            ops = list(run)
            if kind is PageRecord:
                records = cast("list[PageRecord]", ops)
                if bad is None:
                    loaded = records
                    one = self._load(conn, records)
                    result.inserted += one.inserted
                    result.changed += one.changed
                    result.unchanged += one.unchanged
                else:
                    loaded = self._load_each(conn, records, result, bad)
                result.unlinked += self._unlinked(conn, loaded)
                self._settle(conn, [rec for rec in loaded if not rec.reextracted])
            elif kind is DuplicateUpdate:
                updates = cast("list[DuplicateUpdate]", ops)
                self._apply_updates(conn, updates, result, isolate=bad is not None)
            elif kind is Touch:
                touches = cast("list[Touch]", ops)
                self._touch(conn, touches, result)
                self._settle(conn, touches)
            elif kind is FrontierAdd:
                self._add_to_frontier(conn, cast("list[FrontierAdd]", ops), result, run_id)
            elif kind is FetchFailure:
                self._fail(conn, cast("list[FetchFailure]", ops), result, run_id)
            elif kind is StatusChange:
                self._change_status(conn, cast("list[StatusChange]", ops), result)
            elif kind is CheckpointAdvance:
                self._advance(conn, cast("list[CheckpointAdvance]", ops), result, run_id)
            else:  # pragma: no cover - the Operation union is closed
                raise TypeError(f"not a store operation: {kind.__name__}")

    def _load_each(
        self,
        conn: psycopg.Connection[Any],
        records: Sequence[PageRecord],
        result: UpsertResult,
        bad: list[tuple[PageRecord, str]],
    ) -> list[PageRecord]:
        """Load each record in a savepoint; the ones the database refuses go to ``bad``."""
        loaded: list[PageRecord] = []
        for rec in records:
            try:
                with conn.transaction():
                    one = self._load(conn, [rec])
            except BAD_RECORD_ERRORS as exc:
                error = _record_error(exc)
                bad.append((rec, error))
                result.quarantined.append((rec.key, error))
                continue
            loaded.append(rec)
            result.inserted += one.inserted
            result.changed += one.changed
            result.unchanged += one.unchanged
        return loaded

    def _load(self, conn: psycopg.Connection[Any], records: Sequence[PageRecord]) -> UpsertResult:
        """Load a run of records, in order, as SqliteStore._load does, once their pages are
        inserted or locked (:data:`_LOCK_OR_INSERT`)."""
        result = UpsertResult()
        now = utc_now()
        params_of = [_page_params(rec) for rec in records]
        firsts: dict[tuple[str, str], dict[str, Any]] = {}
        for rec, params in zip(records, params_of, strict=True):
            firsts.setdefault(rec.key, params)
        arrays = {name: [p[name] for p in firsts.values()] for name, _ in _LOCK_COLUMNS}
        fresh = {(r[0], r[1]): r[2] for r in conn.execute(_LOCK_OR_INSERT, arrays).fetchall()}
        priors = self._priors(conn, sorted(firsts))

        # ``stored``: pages stored as far as the records applied so far go. A page this
        # run inserted counts from its first record on (a duplicate of it that comes
        # earlier in the run is, as on SQLite, stored as no duplicate).
        stored = {k for k in firsts if k not in fresh}
        rows: list[dict[str, Any]] = []  # updates of locked rows
        contents: list[dict[str, Any]] = []
        written: list[tuple[PageRecord, int]] = []  # records whose passages are (re)written
        versions: list[int] = []  # pages whose stored content is saved as a version
        pending: set[tuple[str, str]] = set()

        def flush() -> None:
            self._flush(conn, now, versions, rows, contents, written)
            versions.clear()
            rows.clear()
            contents.clear()
            written.clear()
            pending.clear()

        for rec, params in zip(records, params_of, strict=True):
            key = rec.key
            if key in pending:  # the same page twice in one run: write the first one
                flush()
                priors.update(self._priors(conn, [key]))
            dup = rec.duplicate_of
            if dup is not None and dup in firsts and dup not in stored:
                params = {**params, "dup_source": None, "dup_url": None}  # not stored yet
            if key in fresh and key not in stored:  # inserted from this very record
                page_id = fresh[key]
                result.inserted.append(key)
                if dup is not None and dup in fresh and dup in stored:
                    rows.append(params)  # its representative came earlier in this run
                contents.append({**params, "page_id": page_id})
                written.append((rec, page_id))
                stored.add(key)
                pending.add(key)
                continue
            prior = priors[key]
            page_id = prior[0]
            if prior[1] == rec.content_hash:
                result.unchanged.append(key)
                if not prior[3] or prior[2] != rec.minhash_params:
                    contents.append({**params, "page_id": page_id})  # re-signed
                if (prior[4] or "") != ",".join(p.id for p in rec.passages) or (
                    prior[5] != rec.title
                ):
                    written.append((rec, page_id))  # split otherwise, or retitled
            else:
                versions.append(page_id)
                result.changed.append(key)
                contents.append({**params, "page_id": page_id})
                written.append((rec, page_id))
            rows.append(params)
            stored.add(key)
            pending.add(key)
        flush()
        return result

    def _priors(
        self, conn: psycopg.Connection[Any], keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[Any, ...]]:
        """The stored state of the pages of ``keys``: id, hash, MinHash parameters, whether
        it has content, its passage ids (comma-separated, in order), title."""
        rows = conn.execute(_PRIORS, _columns(keys)).fetchall()
        return {(r[0], r[1]): tuple(r[2:]) for r in rows}

    def _flush(
        self,
        conn: psycopg.Connection[Any],
        now: str,
        versions: Sequence[int],
        rows: Sequence[dict[str, Any]],
        contents: Sequence[dict[str, Any]],
        written: Sequence[tuple[PageRecord, int]],
    ) -> None:
        """Write what a run of records decided: versions first (from the rows as stored),
        then the pages' rows, contents and passages."""
        if versions:
            conn.execute(_SAVE_VERSIONS, {"now": now, "ids": list(versions)})
        passages = [
            {**p, "page_id": page_id} for rec, page_id in written for p in _passage_params(rec)
        ]
        cur = conn.cursor()
        if written:
            cur.execute(
                "DELETE FROM passages WHERE page_id = ANY(%s::int8[])",
                ([page_id for _, page_id in written],),
            )
        if self.load_strategy == "executemany":
            if rows:
                cur.executemany(_UPDATE_PAGE, rows)
            if contents:
                cur.executemany(_PUT_CONTENT, contents)
            if passages:
                cur.executemany(_PUT_PASSAGE, passages)
            return
        if rows:
            names = [name for name, _ in _STAGE_COLUMNS]
            with cur.copy(f"COPY {_STAGE_META} ({', '.join(names)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row([row[name] for name in names])
            cur.execute(_UPDATE_PAGES_FROM_STAGE)
            cur.execute(f"TRUNCATE {_STAGE_META}")
        if contents:
            cur.execute(
                "DELETE FROM page_content WHERE page_id = ANY(%s::int8[])",
                ([c["page_id"] for c in contents],),
            )
            with cur.copy(
                "COPY page_content (page_id, content, minhash, minhash_params) FROM STDIN"
            ) as copy:
                for c in contents:
                    copy.write_row((c["page_id"], c["content"], c["minhash"], c["minhash_params"]))
        if passages:
            columns = ("id", "page_id", "ord", "title", "heading_path", "content", "word_count")
            with cur.copy(f"COPY passages ({', '.join(columns)}) FROM STDIN") as copy:
                for p in passages:
                    copy.write_row([p[name] for name in columns])

    def _stage(self, conn: psycopg.Connection[Any]) -> None:
        """Create the staging table of page updates (a temporary table) on ``conn``, outside
        any transaction, unless it is there: a COPY of the updates goes into it."""
        if self._staged is conn:
            return
        columns = ", ".join(f"{name} {kind}" for name, kind in _STAGE_COLUMNS)
        conn.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {_STAGE_META} ({columns})")
        self._staged = conn

    def _unlinked(
        self, conn: psycopg.Connection[Any], records: Sequence[PageRecord]
    ) -> list[tuple[str, str]]:
        """Keys of duplicates stored as none: their representative is not in the database."""
        last = {rec.key: rec for rec in records}
        keys = [k for k, rec in last.items() if rec.duplicate_of is not None]
        if not keys:
            return []
        unlinked = {
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT source_id, canonical_url FROM page_meta WHERE {_KEYS} "
                "AND duplicate_of IS NULL",
                _columns(keys),
            )
        }
        return [k for k in keys if k in unlinked]

    def _settle(self, conn: psycopg.Connection[Any], done: Sequence[PageRecord | Touch]) -> None:
        """Pages now written (and the URLs requested): no frontier entry, no retry state."""
        keys = {op.key for op in done}
        keys |= {(op.source_id, op.requested_key) for op in done if op.requested_key}
        if not keys:
            return
        arrays = _columns(sorted(keys))
        conn.execute(f"DELETE FROM frontier WHERE {_KEYS}", arrays)
        conn.execute(f"DELETE FROM fetch_attempts WHERE {_KEYS}", arrays)

    def _fail(
        self,
        conn: psycopg.Connection[Any],
        failures: Sequence[FetchFailure],
        result: UpsertResult,
        run_id: int | None,
    ) -> None:
        conn.cursor().executemany(
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
                for f in sorted(failures, key=lambda f: f.key)  # in key order: see _load
            ],
        )
        settled = sorted({f.key for f in failures if f.settled})
        if settled:
            conn.execute(f"DELETE FROM frontier WHERE {_KEYS}", _columns(settled))
        result.failures += len(failures)
        result.dead_lettered += sum(1 for f in failures if f.dead_lettered_at)

    def _change_status(
        self, conn: psycopg.Connection[Any], changes: Sequence[StatusChange], result: UpsertResult
    ) -> None:
        for change in changes:  # few: only pages whose status moves
            before = conn.execute(
                _STATUS,
                {
                    "source_id": change.source_id,
                    "canonical_url": change.canonical_url,
                    "status": change.status,
                    "reason": change.reason,
                    "evidence": change.evidence,
                    "checked_at": change.checked_at,
                },
            ).fetchone()
            if before is None:
                continue  # not stored
            result.status_changes += 1
            if change.status == "tombstoned" and before[0] != "tombstoned":
                result.tombstones += 1

    def _add_to_frontier(
        self,
        conn: psycopg.Connection[Any],
        adds: Sequence[FrontierAdd],
        result: UpsertResult,
        run_id: int | None,
    ) -> None:
        cur = conn.cursor()
        cur.executemany(
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
                for add in sorted(adds, key=lambda a: a.key)  # in key order: see _load
            ],
        )
        result.frontier_added += max(0, cur.rowcount)

    def _touch(
        self, conn: psycopg.Connection[Any], touches: Sequence[Touch], result: UpsertResult
    ) -> None:
        cur = conn.cursor()
        cur.executemany(
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
                for touch in sorted(touches, key=lambda t: t.key)  # in key order: see _load
            ],
            returning=True,
        )
        stored: set[tuple[str, str]] = set()
        while True:
            stored.update((r[0], r[1]) for r in cur.fetchall())
            if not cur.nextset():
                break
        for touch in touches:
            (result.touched if touch.key in stored else result.untouched).append(touch.key)

    def _advance(
        self,
        conn: psycopg.Connection[Any],
        advances: Sequence[CheckpointAdvance],
        result: UpsertResult,
        run_id: int | None,
    ) -> None:
        now = utc_now()
        conn.cursor().executemany(
            _ADVANCE,
            [
                {
                    "source_id": a.source_id,
                    "adapter": a.adapter,
                    "cursor": a.cursor,
                    "updated_at": now,
                    "run_id": run_id,
                }
                for a in sorted(advances, key=lambda a: (a.source_id, a.adapter))
            ],
        )
        result.checkpoints += [(a.source_id, a.adapter) for a in advances]

    def _apply_updates(
        self,
        conn: psycopg.Connection[Any],
        updates: Sequence[DuplicateUpdate],
        result: UpsertResult,
        *,
        isolate: bool,
    ) -> None:
        """Apply the updates whose page and representative are stored; report the rest
        (see SqliteStore._apply_updates)."""
        wanted = {u.key for u in updates} | {u.duplicate_of for u in updates if u.duplicate_of}
        present = {
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT source_id, canonical_url FROM page_meta WHERE {_KEYS}",
                _columns(sorted(wanted)),
            )
        }
        ready: list[DuplicateUpdate] = []
        for update in updates:
            if update.key not in present:
                result.dropped_updates.append((update, PAGE_NOT_STORED))
            elif update.duplicate_of is not None and update.duplicate_of not in present:
                result.dropped_updates.append((update, REPRESENTATIVE_NOT_STORED))
            else:
                ready.append(update)
        if not isolate:
            self._set_duplicates(conn, ready)
            return
        for update in ready:
            try:
                with conn.transaction():
                    self._set_duplicates(conn, [update])
            except BAD_RECORD_ERRORS as exc:
                result.dropped_updates.append((update, _record_error(exc)))

    def _set_duplicates(
        self, conn: psycopg.Connection[Any], updates: Sequence[DuplicateUpdate]
    ) -> None:
        if not updates:
            return
        conn.cursor().executemany(
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
                for u in sorted(updates, key=lambda u: u.key)  # in key order: see _load
            ],
        )

    def _count_run(
        self, conn: psycopg.Connection[Any], run_id: int | None, result: UpsertResult
    ) -> None:
        if run_id is None:
            return
        conn.execute(
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

    # -- runs -------------------------------------------------------------------------

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
        with self._lock, self._guard("cannot record the run in"):
            row = self._db.execute(
                "INSERT INTO crawl_runs (spider, mode, sources, started_at, job_id, pid, host, "
                "outcome) VALUES (%s, %s, %s, %s, %s, %s, %s, 'running') RETURNING id",
                (spider, mode, json.dumps(list(sources)), utc_now(), job_id, pid, host),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def unfinished_runs(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._rows(
                "SELECT id, pid, host, started_at, job_id FROM crawl_runs "
                "WHERE outcome = 'running' ORDER BY id",
                what="cannot read the runs of",
            )
        ]

    def abandon_run(self, run_id: int) -> None:
        with self._lock, self._guard("cannot record the run in"):
            self._db.execute(
                "UPDATE crawl_runs SET outcome = 'abandoned', finished_at = %s "
                "WHERE id = %s AND outcome = 'running'",
                (utc_now(), run_id),
            )

    def finish_run(
        self, run_id: int, *, reason: str, outcome: str, counters: Mapping[str, int]
    ) -> None:
        head = {name: int(counters.get(name, 0)) for name in HEAD_COUNTERS}
        assignments = ", ".join(f"{name} = %({name})s" for name in HEAD_COUNTERS)
        with self._lock, self._guard("cannot record the run in"):
            self._db.execute(
                f"UPDATE crawl_runs SET finished_at = %(finished_at)s, finish_reason = %(reason)s, "
                f"outcome = %(outcome)s, counters = %(counters)s, {assignments} "
                "WHERE id = %(run_id)s",
                {
                    **head,
                    "finished_at": utc_now(),
                    "reason": reason,
                    "outcome": outcome,
                    "counters": json.dumps(dict(sorted(counters.items()))),
                    "run_id": run_id,
                },
            )

    # -- reads ------------------------------------------------------------------------

    def _rows(
        self,
        sql: str,
        params: Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        what: str = "cannot read",
    ) -> list[Row]:
        """The rows of ``sql`` (psycopg's placeholders), by name and by position."""
        with self._lock, self._guard(what):
            cur = self._db.cursor(row_factory=_row_factory)
            return cur.execute(sql, params).fetchall()

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Row]:
        """Run a query written as for :meth:`SqliteStore.query` (``?`` or ``:name``
        placeholders) and return rows that index by column name and by position."""
        if params:
            return self._rows(_pyformat(sql), params, what="cannot query")
        return self._rows(sql, None, what="cannot query")

    def dedupe_state(self, *, signatures: bool = True) -> Iterator[DedupeRow]:
        minhash = "p.minhash, p.minhash_params" if signatures else "NULL, NULL"
        rows = self._rows(
            "SELECT p.source_id, p.canonical_url, p.content_hash, p.word_count, "
            "r.source_id, r.canonical_url, p.duplicate_kind, p.duplicate_score, "
            f"{minhash} "
            "FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of "
            "WHERE p.status = 'active' ORDER BY p.first_seen_at, p.id",
            what="cannot read the pages of",
        )
        for row in rows:
            yield _dedupe_row(tuple(row))

    def known_pages(self, source_ids: Sequence[str]) -> Iterator[KnownPage]:
        if not source_ids:
            return
        rows = self._rows(
            "SELECT source_id, canonical_url, final_url, etag, last_modified, content_hash, "
            "depth, check_interval, last_changed_at, next_check_at, status, status_reason, "
            "status_evidence FROM page_meta "
            "WHERE source_id = ANY(%s::text[]) AND status <> 'tombstoned' "
            "ORDER BY next_check_at NULLS FIRST, id",
            (list(source_ids),),
            what="cannot read the pages of",
        )
        for row in rows:
            yield KnownPage(*row)

    def checkpoints(self, source_id: str) -> dict[str, str]:
        rows = self._rows(
            "SELECT adapter, cursor FROM checkpoints WHERE source_id = %s ORDER BY adapter",
            (source_id,),
            what="cannot read the checkpoints of",
        )
        return {r["adapter"]: r["cursor"] for r in rows}

    def fetch_attempts(self, source_ids: Sequence[str]) -> list[FetchFailure]:
        if not source_ids:
            return []
        rows = self._rows(
            "SELECT source_id, canonical_url, url, last_failed_at, attempts, first_failed_at, "
            "last_error, last_status, next_retry_at, dead_lettered_at, needs_review, depth "
            "FROM fetch_attempts WHERE source_id = ANY(%s::text[]) "
            "ORDER BY next_retry_at NULLS LAST, source_id, canonical_url",
            (list(source_ids),),
            what="cannot read the retry state of",
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
            )
            for row in rows
        ]

    def dead_letters(self, source_id: str | None = None) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._rows(
                "SELECT source_id, canonical_url, url, attempts, first_failed_at, "
                "last_failed_at, last_error, last_status, dead_lettered_at, needs_review "
                "FROM fetch_attempts WHERE (dead_lettered_at IS NOT NULL OR needs_review = 1) "
                "AND (%(source)s::text IS NULL OR source_id = %(source)s::text) "
                "ORDER BY COALESCE(dead_lettered_at, last_failed_at), source_id, canonical_url",
                {"source": source_id},
                what="cannot read the dead letters of",
            )
        ]

    def frontier(self, source_ids: Sequence[str]) -> list[FrontierAdd]:
        if not source_ids:
            return []
        rows = self._rows(
            "SELECT source_id, canonical_url, url, adapter, discovered_at, depth, lastmod "
            "FROM frontier WHERE source_id = ANY(%s::text[]) "
            "ORDER BY discovered_at, source_id, canonical_url",
            (list(source_ids),),
            what="cannot read the frontier of",
        )
        return [FrontierAdd(*row) for row in rows]

    def archived_pages(self, source_ids: Sequence[str]) -> list[ArchivedPage]:
        if not source_ids:
            return []
        rows = self._rows(
            "SELECT p.source_id, p.canonical_url, p.url, p.final_url, p.fetched_at, "
            "p.http_status, p.etag, p.last_modified, p.depth, p.next_check_at, "
            "p.check_interval, p.status, p.content_hash, r.source_id, r.canonical_url, "
            "p.duplicate_kind, p.duplicate_score, p.archive_file, p.archive_offset "
            "FROM page_meta p LEFT JOIN page_meta r ON r.id = p.duplicate_of "
            "WHERE p.source_id = ANY(%s::text[]) ORDER BY p.first_seen_at, p.id",
            (list(source_ids),),
            what="cannot read the pages of",
        )
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
        for page in self._rows(
            "SELECT id, source_id, canonical_url, content_hash, title, content, fetched_at, "
            "NULL::text AS replaced_at FROM pages WHERE canonical_url = %(url)s::text "
            "AND (%(source)s::text IS NULL OR source_id = %(source)s::text) ORDER BY source_id",
            {"url": canonical_url, "source": source_id},
            what=what,
        ):
            current = dict(page)
            page_id = current.pop("id")
            out.append(current)
            out += [
                {"source_id": current["source_id"], "canonical_url": canonical_url, **dict(r)}
                for r in self._rows(
                    "SELECT content_hash, title, content, fetched_at, replaced_at "
                    "FROM page_versions WHERE page_id = %s ORDER BY replaced_at DESC, id DESC",
                    (page_id,),
                    what=what,
                )
            ]
        return out

    @contextlib.contextmanager
    def _reader(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection of its own for a streaming read: one read-only snapshot."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        with self._guard(what):
            conn = psycopg.connect(self._conninfo, autocommit=False)
        try:
            with self._guard(what):
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                conn.read_only = True
            yield conn
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def _stream(
        self,
        conn: psycopg.Connection[Any],
        sql: str,
        params: Mapping[str, Any],
        what: str,
    ) -> Iterator[Row]:
        """The rows of ``sql`` from a server-side cursor, ``_STREAM_ROWS`` at a time."""
        with self._guard(what):
            cur = conn.cursor(name="kc_stream", row_factory=_row_factory)
            cur.itersize = _STREAM_ROWS
            cur.execute(sql, params)
        try:
            while True:
                with self._guard(what):
                    rows = cur.fetchmany(_STREAM_ROWS)
                if not rows:
                    return
                yield from rows
        finally:
            with contextlib.suppress(psycopg.Error):
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
        with self._reader(what) as conn:
            for row in self._stream(conn, _CHANGES, params, what):
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
                    with self._guard(what):
                        texts = _change_texts(conn, row["page_id"], row["version_id"], contents)
                    entry.update(texts)
                yield entry

    def export_pages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        what = "cannot export the pages of"
        params = _export_params(since, source_id, include_duplicates, include_tombstoned)
        with self._reader(what) as conn:
            for row in self._stream(conn, _EXPORT, params, what):
                yield export_page(row)

    def export_passages(
        self,
        *,
        since: str | None = None,
        source_id: str | None = None,
        include_duplicates: bool = False,
        include_tombstoned: bool = False,
    ) -> Iterator[dict[str, Any]]:
        what = "cannot export the passages of"
        params = _export_params(since, source_id, include_duplicates, include_tombstoned)
        with self._reader(what) as conn:
            for row in self._stream(conn, _EXPORT_PASSAGES, params, what):
                yield export_passage(row)

    def dependents(self, key: tuple[str, str]) -> list[DedupeRow]:
        rows = self._rows(
            "SELECT d.source_id, d.canonical_url, d.content_hash, d.word_count, "
            "r.source_id, r.canonical_url, d.duplicate_kind, d.duplicate_score, "
            "d.minhash, d.minhash_params "
            "FROM pages d JOIN page_meta r ON r.id = d.duplicate_of "
            "WHERE r.source_id = %s AND r.canonical_url = %s AND d.status = 'active' "
            "ORDER BY d.first_seen_at, d.id",
            key,
            what="cannot read the pages of",
        )
        return [_dedupe_row(tuple(row)) for row in rows]

    def duplicate_clusters(self, kind: str | None = None) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT r.source_id AS rep_source, r.canonical_url AS rep_url, r.title AS rep_title, "
            "d.source_id, d.canonical_url, d.title, d.duplicate_kind AS kind, "
            "d.duplicate_score AS score "
            "FROM pages d JOIN pages r ON r.id = d.duplicate_of "
            "WHERE d.duplicate_of IS NOT NULL "
            "AND (%(kind)s::text IS NULL OR d.duplicate_kind = %(kind)s::text) "
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
        """See :meth:`Store.search`; ``raw`` is PostgreSQL's ``to_tsquery`` syntax
        (``&``, ``|``, ``!``, ``<->``, ``word:*``, quoted phrases)."""
        query = raw if raw is not None else _tsquery(terms, require_all)
        if not query.strip():
            return []
        params = {"query": query, "k": k, "source": source_id}
        try:
            with self._lock:
                cur = self._db.cursor(row_factory=_row_factory)
                rows = cur.execute(_SEARCH, params).fetchall()
        except (psycopg.errors.SyntaxError, psycopg.DataError) as exc:
            raise ValueError(f"cannot search for {query!r}: {exc}") from None  # its syntax
        except psycopg.Error as exc:
            raise pg_store_error(exc, f"cannot search {self.url}") from exc
        return [search_result(r, float(r["rank"])) for r in rows]

    def pages_without_passages(self) -> int:
        [row] = self._rows(
            "SELECT COUNT(*) FROM page_meta m WHERE m.word_count > 0 "
            "AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.page_id = m.id)"
        )
        return int(row[0])

    def get_meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM dataset_meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock, self._guard("cannot write to"):
            self._db.execute(
                "INSERT INTO dataset_meta (key, value, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, "
                "updated_at = EXCLUDED.updated_at",
                (key, value, utc_now()),
            )

    def stats(self, *, stale_days: int = 7, runs: int = 5) -> dict[str, Any]:
        stale_before = (datetime.now(UTC) - timedelta(days=stale_days)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        what = "cannot read the statistics of"

        def q(sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[Row]:
            return self._rows(sql, params, what=what)

        totals = q(
            "SELECT COUNT(*) AS total_rows, "
            "(SELECT COUNT(*) FROM (SELECT DISTINCT source_id, canonical_url FROM pages) d) "
            "AS distinct_identities FROM pages"
        )[0]
        shared = q(
            "SELECT content_hash, COUNT(*) AS n, string_agg(canonical_url, ' ' ORDER BY id) "
            "AS urls FROM pages GROUP BY content_hash HAVING COUNT(*) > 1 "
            "ORDER BY n DESC, content_hash"
        )
        stale = q(
            "SELECT source_id, canonical_url, last_seen_at FROM pages "
            "WHERE last_seen_at < %s AND status <> 'tombstoned' ORDER BY last_seen_at",
            (stale_before,),
        )
        per_source = q(
            "SELECT source_id, status, COUNT(*) AS n, "
            "COUNT(*) FILTER (WHERE duplicate_of IS NOT NULL) AS duplicates, "
            "SUM(thin)::int8 AS thin, MAX(last_seen_at) AS last_seen_at "
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
        chained = q(
            "SELECT d.source_id, d.canonical_url, r.canonical_url AS duplicate_of, "
            "rr.canonical_url AS its_duplicate_of "
            "FROM page_meta d JOIN page_meta r ON r.id = d.duplicate_of "
            "JOIN page_meta rr ON rr.id = r.duplicate_of ORDER BY d.id"
        )
        versions = q("SELECT COUNT(*) AS n FROM page_versions")[0]["n"]
        quarantined = q("SELECT COUNT(*) AS n FROM quarantine")[0]["n"]
        now = utc_now()
        freshness = q(
            "SELECT source_id, "
            "COUNT(*) FILTER (WHERE next_check_at IS NULL OR next_check_at <= %(now)s) AS due, "
            "MIN(CASE WHEN next_check_at <= %(now)s THEN next_check_at END) "
            "AS most_overdue_since, "
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
        last_runs = q("SELECT * FROM crawl_runs ORDER BY id DESC LIMIT %s", (runs,))
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
            self._closed = True
            self._conn.close()  # a second close does nothing


def _claim(conn: psycopg.Connection[Any], operations: Sequence[Operation]) -> None:
    """Take the advisory locks of what ``operations`` write (see :data:`_CLAIM`)."""
    claims: set[str] = set()
    for op in operations:
        if isinstance(op, CheckpointAdvance):
            claims.add(f"checkpoint\n{op.source_id}\n{op.adapter}")
            continue
        keys = [op.key]
        if isinstance(op, PageRecord | Touch) and op.requested_key:
            keys.append((op.source_id, op.requested_key))  # settled with it
        claims.update(f"page\n{source_id}\n{url}" for source_id, url in keys)
    conn.execute(_CLAIM, (sorted(claims),))


def _page_params(rec: PageRecord) -> dict[str, Any]:
    """A record's statement parameters: SQLite's, with a real boolean."""
    params = _row_params(rec)
    params["reextracted"] = bool(params["reextracted"])
    return params


def _record_error(exc: Exception) -> str:
    """Why the database refused a record, in one line: PostgreSQL's primary message (its
    detail repeats the whole row, which the quarantine keeps anyway)."""
    diag = getattr(exc, "diag", None)
    message = getattr(diag, "message_primary", None) or str(exc)
    return f"{type(exc).__name__}: {' '.join(message.split())}"


def _storable(text: str) -> str:
    """``text`` as PostgreSQL can store it (no NUL, no lone surrogate): for quarantine rows,
    whose record is there because it could not be stored."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _change_texts(
    conn: psycopg.Connection[Any], page_id: int, version_id: int, contents: bool
) -> dict[str, Any]:
    """The two sides of one change (see SqliteStore._change_texts)."""
    text = "content" if contents else "NULL"
    old = conn.execute(
        f"SELECT content_hash, fetched_at, {text} FROM page_versions WHERE id = %s",
        (version_id,),
    ).fetchone()
    new = (
        conn.execute(
            f"SELECT content_hash, fetched_at, {text}, title FROM page_versions "
            "WHERE page_id = %s AND id > %s ORDER BY id LIMIT 1",
            (page_id, version_id),
        ).fetchone()
        or conn.execute(
            f"SELECT content_hash, fetched_at, {text}, title FROM pages WHERE id = %s",
            (page_id,),
        ).fetchone()
    )
    assert old is not None and new is not None
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
