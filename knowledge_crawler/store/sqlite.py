"""SQLite: one file in WAL mode, one writer at a time, ``executemany`` in bulk, FTS5.

One connection, guarded by the store's lock; callers run methods on a single writer
thread (see :mod:`knowledge_crawler.pipelines.store`) so the event loop never blocks
on disk. A write transaction is ``BEGIN IMMEDIATE``: it takes the file's write lock
first, so what it reads stays as it read it until it commits.

Errors are sorted by whose fault they are. A record the database rejects
(:data:`BAD_RECORD_ERRORS`: a constraint, a value it cannot bind) is quarantined and
the rest of its batch loads. Anything else is the database's: locked, busy, I/O,
full, cannot open (:class:`TransientStoreError`, worth a retry) or another
:class:`StoreError`; the batch is rolled back whole and nothing of it is quarantined.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from knowledge_crawler.errors import StoreError, TransientStoreError
from knowledge_crawler.store import _sql
from knowledge_crawler.store._report import search_result
from knowledge_crawler.store.base import utc_now
from knowledge_crawler.store.core import SqlStore, outlink_rows, passage_rows
from knowledge_crawler.store.dialect import Dialect, PageWrites, Params, Row
from knowledge_crawler.store.migrations import Migration, check_schema, pending_migrations

__all__ = ["BAD_RECORD_ERRORS", "SqliteDialect", "SqliteStore", "sqlite_path", "store_error"]

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


def sqlite_path(url: str) -> str:
    """``sqlite:///rel/path.db`` -> ``rel/path.db``; ``sqlite:////abs.db`` -> ``/abs.db``."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        raise StoreError(f"not a SQLite URL (expected sqlite:///PATH): {url!r}")
    path = url[len(prefix) :]
    if not path:
        raise StoreError(f"SQLite URL has no path: {url!r}")
    return path


# A page not stored yet. Its representative is looked up as the row is written.
_INSERT_PAGE = f"""
INSERT INTO page_meta ({_sql.PAGE_COLUMNS}) VALUES (
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
"""

_PAGE_ID = (
    "(SELECT id FROM page_meta WHERE source_id = :source_id AND canonical_url = :canonical_url)"
)

_PUT_CONTENT = f"""
INSERT INTO page_content (page_id, content, minhash, minhash_params)
VALUES ({_PAGE_ID}, :content, :minhash, :minhash_params)
ON CONFLICT (page_id) DO UPDATE SET
    content = excluded.content, minhash = excluded.minhash, minhash_params = excluded.minhash_params
"""

# A page's passages, replaced whenever its content is written (new or changed content);
# the full-text index follows by trigger.
_DROP_PASSAGES = f"DELETE FROM passages WHERE page_id = {_PAGE_ID}"

_PUT_PASSAGE = f"""
INSERT INTO passages (id, page_id, ord, title, heading_path, content, word_count)
VALUES (:id, {_PAGE_ID}, :ord, :title, :heading_path, :content, :word_count)
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

# The first candidates of a narrowed search (see SqliteDialect.search), best first.
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

#: keys looked up per statement (two bound values each, well under SQLite's limit)
_KEYS_PER_STATEMENT = 400

#: rows a streaming read (changes, export) takes from its cursor at a time
_STREAM_ROWS = 64


def _fts_match(terms: Sequence[Sequence[str]], require_all: bool) -> str:
    """FTS5 syntax for words and phrases (made of \\w characters, so never a quote)."""
    quoted = ['"' + " ".join(term).replace('"', " ") + '"' for term in terms if term]
    return (" AND " if require_all else " OR ").join(quoted)


class SqliteDialect(Dialect):
    """One SQLite file: WAL, ``synchronous=NORMAL``, foreign keys on."""

    errors = (sqlite3.Error,)
    bad_record_errors = BAD_RECORD_ERRORS
    concurrent_writers = False  # BEGIN IMMEDIATE takes the file's one write lock
    # COMMIT is a call into the library on this process's own file: when it raises, the
    # transaction is rolled back (see transaction), never committed with its answer lost;
    # a process killed meanwhile loses its batch from memory along with the question.
    # So no batch records its id here (applied_batches stays empty).
    uncertain_commits = False
    passage_ids = (
        "(SELECT group_concat(id, ',') FROM "
        "(SELECT id FROM passages p WHERE p.page_id = m.id ORDER BY ord))"
    )
    url_list = "GROUP_CONCAT(canonical_url, ' ')"
    tiebreak = "rowid"

    def __init__(self, url: str, *, busy_timeout: float = 10.0, read_only: bool = False) -> None:
        """Open (creating its folder) and migrate the database at ``url``.

        ``busy_timeout``: seconds a statement waits for another writer's lock
        before failing with :class:`TransientStoreError`. ``read_only``: open the
        file as it is, for reading only (see :meth:`_open_read_only`). Whatever
        stops the opening raises one :class:`StoreError` line: ``cannot open PATH: REASON``.
        """
        super().__init__()
        self.url = url
        self.read_only = read_only
        self.name = self.path = path = sqlite_path(url)
        what = f"cannot open {path}"
        if read_only:
            self._open_read_only(busy_timeout)
            return
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
            self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise store_error(exc, what) from None
        with self._opening(self.conn.close, what):
            self.conn.execute(f"PRAGMA busy_timeout = {max(0, round(busy_timeout * 1000))}")
            self._use_wal(busy_timeout)
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()

    def _open_read_only(self, busy_timeout: float) -> None:
        """Open the file for reading only (``mode=ro``, ``query_only``): no folder made,
        no WAL switch, no migration; a schema older or newer than this code's is refused.

        A WAL database whose folder cannot be written (a read-only snapshot) cannot
        be opened ``mode=ro`` without its -shm file: it is then opened ``immutable=1``
        (:attr:`immutable`), which is right only when no -wal file is left with
        commits the file does not hold yet; with one, the opening fails.
        """
        path = self.path
        what = f"cannot open {path}"
        file = Path(path)
        if path == ":memory:" or not file.is_file():
            why = "it is a directory" if file.is_dir() else "no such file"
            raise StoreError(f"{what}: {why}")
        #: opened ``immutable=1``: the file is taken not to change while it is open
        self.immutable = False
        uri = file.absolute().as_uri()
        try:
            self.conn = self._connect_read_only(f"{uri}?mode=ro", busy_timeout)
            with self._opening(self.conn.close, what):
                applied = self._applied()
        except StoreError as exc:
            wal = Path(f"{path}-wal")
            if "unable to open" not in str(exc) or os.access(file.parent, os.W_OK):
                raise
            if wal.exists():
                raise StoreError(
                    f"{what} read-only: its folder cannot be written and its write-ahead log "
                    f"{wal} is left without its -shm file (copy the database with its -wal "
                    "and -shm files, or checkpoint it where it is written)"
                ) from None
            self.immutable = True
            self.conn = self._connect_read_only(f"{uri}?mode=ro&immutable=1", busy_timeout)
            with self._opening(self.conn.close, what):
                applied = self._applied()
        with self._opening(self.conn.close, what):
            check_schema(applied, path)

    def _connect_read_only(self, uri: str, busy_timeout: float) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise store_error(exc, f"cannot open {self.path}") from None
        with self._opening(conn.close, f"cannot open {self.path}"):
            conn.execute(f"PRAGMA busy_timeout = {max(0, round(busy_timeout * 1000))}")
            conn.execute("PRAGMA query_only = ON")
        return conn

    def _applied(self) -> set[str] | None:
        """The migrations the file records (None: it has no ``schema_migrations``)."""
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if not exists:
            return None
        return {r[0] for r in self.conn.execute("SELECT name FROM schema_migrations")}

    def _use_wal(self, busy_timeout: float) -> None:
        """Switch the file to WAL, waiting up to ``busy_timeout`` for another opener.

        While one connection turns a new file to WAL, another's ``journal_mode`` fails
        at once with "database is locked": SQLite does not call the busy handler there.
        """
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _migrate(self) -> None:
        with self.lock:
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            applied = {r[0] for r in self.conn.execute("SELECT name FROM schema_migrations")}
            for migration in pending_migrations(applied, self.url):
                self._apply(migration)

    def _apply(self, migration: Migration) -> None:
        conn = self.conn
        if migration.rebuilds_table:
            conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction
        try:
            with self.transaction():
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

    # -- SQL --------------------------------------------------------------------------

    def keys_in(self, keys: Sequence[tuple[str, str]]) -> Iterator[tuple[str, list[Any]]]:
        for start in range(0, len(keys), _KEYS_PER_STATEMENT):
            chunk = keys[start : start + _KEYS_PER_STATEMENT]
            marks = ", ".join("(?, ?)" for _ in chunk)
            # a subquery, not a bare VALUES list: SQLite then looks each key up in the
            # table's (source_id, canonical_url) index instead of scanning the table
            fragment = f"IN (SELECT column1, column2 FROM (VALUES {marks}))"
            yield fragment, [part for key in chunk for part in key]

    def in_list(self, values: Sequence[Any], kind: str) -> tuple[str, list[Any]]:
        return f"IN ({', '.join('?' for _ in values)})", list(values)

    # -- statements -------------------------------------------------------------------

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        if not rows:
            return 0
        return self.conn.executemany(sql, rows).rowcount

    def rows(self, sql: str, params: Params = ()) -> list[Row]:
        cur = self.conn.cursor()
        cur.row_factory = sqlite3.Row
        return cur.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(self, claims: Sequence[str] = ()) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; on any error (COMMIT's own too) ``ROLLBACK``.

        The write lock is the file's, taken at BEGIN: there are no ``claims`` to take.
        SQLite rolls some failures back by itself (a full disk, an I/O error): the
        ROLLBACK is then skipped, so the original error is what the caller sees.
        """
        if self.read_only:
            raise StoreError(f"cannot write to {self.path}: it is opened read-only")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                # A ROLLBACK that fails leaves nothing committed; the first error wins.
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        self.conn.execute("SAVEPOINT kc_record")
        try:
            yield
        except BaseException as exc:
            if not self.conn.in_transaction:  # SQLite gave the whole transaction up
                raise TransientStoreError(
                    f"cannot write to {self.path}: the transaction was rolled back"
                ) from exc
            self.conn.execute("ROLLBACK TO kc_record")
            self.conn.execute("RELEASE kc_record")
            raise
        self.conn.execute("RELEASE kc_record")

    @contextlib.contextmanager
    def reader(self) -> Iterator[_Reader]:
        yield _Reader(self)

    def error(self, exc: BaseException, what: str) -> StoreError:
        return store_error(exc, what)

    # -- what differs beyond a fragment -------------------------------------------------

    def write_pages(self, writes: PageWrites, now: str) -> None:
        conn = self.conn
        if writes.versions:  # one statement per page: a batch has no bound-variable limit
            conn.executemany(
                _sql.SAVE_VERSIONS.format(ids="= ?"), [(now, page) for page in writes.versions]
            )
        if writes.new:
            conn.executemany(_INSERT_PAGE, writes.new)
        if writes.updates:
            conn.executemany(_sql.UPDATE_PAGE, writes.updates)
        if writes.contents:
            conn.executemany(_PUT_CONTENT, writes.contents)
        if writes.passages:
            conn.executemany(_DROP_PASSAGES, [rec.key for rec in writes.passages])
            conn.executemany(
                _PUT_PASSAGE, [p for rec in writes.passages for p in passage_rows(rec)]
            )
        if writes.outlinks:
            conn.executemany(_sql.DROP_OUTLINKS, [rec.key for rec in writes.outlinks])
            conn.executemany(
                _sql.PUT_OUTLINK, [row for rec in writes.outlinks for row in outlink_rows(rec)]
            )

    def search(
        self,
        terms: Sequence[Sequence[str]],
        *,
        require_all: bool,
        raw: str | None,
        k: int,
        source_id: str | None,
    ) -> list[dict[str, Any]]:
        """See :meth:`Store.search`; ``raw`` is FTS5's query syntax."""
        try:
            if raw is not None:
                match, narrow = raw, None
            else:
                match = _fts_match(terms, require_all)
                narrow = None if require_all else self._narrowed(terms)
            if not match:
                return []
            params: dict[str, Any] = {"match": match, "k": k, "source": source_id, "ids": None}
            rows = []
            if narrow is not None:
                # Rank by the rarer words first, then score those candidates with every
                # word: a word in most passages costs most to rank and weighs least.
                limit = max(_CANDIDATES, 20 * k)
                ids = [r[0] for r in self.rows(_CANDIDATE_IDS, {"match": narrow, "n": limit})]
                params["ids"] = json.dumps(ids)
                rows = self.rows(_SEARCH, params)
                params["ids"] = None
            if len(rows) < k:  # not narrowed, or too few with the rare words
                rows = self.rows(_SEARCH, params)
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
        [row] = self.rows("SELECT count(*) FROM passages")
        common = int(row[0] * _COMMON_SHARE)

        def holders(term: Sequence[str]) -> int:
            counted = self.rows(_TERM_COUNT, {"match": _fts_match([term], False), "n": common + 1})
            return int(counted[0][0])

        rare = [term for term in terms if holders(term) <= common]
        if not rare or len(rare) == len(terms):
            return None
        return _fts_match(rare, False)

    def close(self) -> None:
        self.conn.close()  # a second close does nothing


class _Reader:
    """A streaming read on the store's own connection: the lock is held only while rows
    are read, not while the caller handles them."""

    def __init__(self, dialect: SqliteDialect) -> None:
        self.dialect = dialect

    def stream(self, sql: str, params: Params) -> Iterator[Row]:
        lock = self.dialect.lock
        with lock:
            cur = self.dialect.conn.cursor()
            cur.row_factory = sqlite3.Row
            cur.execute(sql, params)
        try:
            while True:
                with lock:
                    rows = cur.fetchmany(_STREAM_ROWS)
                if not rows:
                    return
                yield from rows
        finally:
            with contextlib.suppress(sqlite3.Error):  # the store may be closed already
                cur.close()

    def one(self, sql: str, params: Params) -> Row | None:
        with self.dialect.lock:
            rows = self.dialect.rows(sql, params)
        return rows[0] if rows else None


class SqliteStore(SqlStore):
    """The default store: one SQLite file (``sqlite:///PATH``)."""

    db: SqliteDialect

    def __init__(self, url: str, *, busy_timeout: float = 10.0, read_only: bool = False) -> None:
        super().__init__(SqliteDialect(url, busy_timeout=busy_timeout, read_only=read_only))
        self.path = self.db.path
