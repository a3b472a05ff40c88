"""PostgreSQL (psycopg 3): the same store, safe with concurrent writers, ``COPY`` in bulk.

Selected by ``KC_DATABASE_URL=postgresql://...`` (or ``postgres://``); any libpq
URL works, e.g. ``postgresql://kc@db.example/kc?options=-csearch_path%3Dcrawl`` to
keep the dataset in a schema of its own. The schema is the one of
:mod:`~knowledge_crawler.store.migrations`, its types rendered for PostgreSQL.

One connection in autocommit mode, guarded by the store's lock, with explicit
transactions; a lost connection is re-opened by the next call. Streaming reads
(changes, exports) run on a connection of their own, in one read-only snapshot, with
a server-side cursor.

Several processes may write at once. The store core reads a page and then writes it;
so that no other writer comes in between, a write transaction first claims what it
will write: a transaction-level advisory lock per page (stored or not yet) and per
checkpoint, taken in one global order (ascending lock key). Writers of overlapping
batches queue there, and never wait for each other later in their transactions: no
deadlock, whatever order their operations come in. After the claim, each statement
sees every commit before it (READ COMMITTED), so each version is saved exactly once,
from the text it replaces, and no update is lost.

Errors are sorted as on SQLite: a record the database refuses (a constraint, a
value out of range or not storable, a key too long to index) is quarantined and
the rest of its batch loads; a serialization failure, deadlock, lock timeout,
lost connection, shutdown, full disk or I/O error is a
:class:`TransientStoreError` (the batch is kept and retried whole); anything
else is a :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import RowMaker

from knowledge_crawler.errors import StoreError, TransientStoreError
from knowledge_crawler.store import _sql
from knowledge_crawler.store._report import search_result
from knowledge_crawler.store.base import display_url, utc_now
from knowledge_crawler.store.core import SqlStore, outlink_rows, passage_rows
from knowledge_crawler.store.dialect import Dialect, PageWrites, Params
from knowledge_crawler.store.dialect import Row as DbRow
from knowledge_crawler.store.migrations import (
    POSTGRES_SEARCH_CONFIG,
    Migration,
    check_schema,
    pending_migrations,
)

__all__ = ["BAD_RECORD_ERRORS", "PostgresDialect", "PostgresStore", "Row", "pg_store_error"]

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


@functools.lru_cache(maxsize=512)
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


#: a new page's columns as the insert of a run's new pages takes them, one array each:
#: name, PostgreSQL type
_NEW_COLUMNS: tuple[tuple[str, str], ...] = (
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

# A run's new pages, in one statement, with their representatives looked up. Their ids
# are drawn in the order the records came (the inner query, sorted by position, draws
# them; nextval is evaluated after that sort), as SQLite numbers them: storage order.
_INSERT_PAGES = f"""
INSERT INTO page_meta AS m (id, {_sql.PAGE_COLUMNS}) OVERRIDING SYSTEM VALUE
SELECT r.id, r.source_id, r.canonical_url, r.url, r.final_url, r.fetched_at, r.title,
       r.headings, r.word_count, r.language, r.thin, r.content_hash,
       d.id, CASE WHEN d.id IS NOT NULL THEN r.duplicate_kind END,
       CASE WHEN d.id IS NOT NULL THEN r.duplicate_score END,
       r.http_status, r.etag, r.last_modified, 'active',
       r.fetched_at, r.fetched_at, r.fetched_at, COALESCE(r.changed_at, r.fetched_at),
       r.next_check_at, r.check_interval, r.depth, r.archive_file, r.archive_offset, r.extra
FROM (
    SELECT r.*, nextval(pg_get_serial_sequence('page_meta', 'id')) AS id
    FROM unnest({", ".join(f"%({name})s::{kind}[]" for name, kind in _NEW_COLUMNS)})
         WITH ORDINALITY AS r({", ".join(name for name, _ in _NEW_COLUMNS)}, n)
    ORDER BY r.n
    OFFSET 0
) r
LEFT JOIN page_meta d ON d.source_id = r.dup_source AND d.canonical_url = r.dup_url
RETURNING m.source_id, m.canonical_url, m.id
"""

#: the staging table of page updates (a temporary table): a COPY of the rows goes in,
#: one UPDATE joins them to the pages
_STAGE = "kc_stage_pages"
_STAGE_COLUMNS: tuple[tuple[str, str], ...] = (*_NEW_COLUMNS, ("reextracted", "bool"))

_UPDATE_PAGES_FROM_STAGE = (
    "UPDATE page_meta AS m SET "
    + _sql.SET_PAGE.format(s="s.")
    + f" FROM {_STAGE} s LEFT JOIN page_meta d "
    "ON d.source_id = s.dup_source AND d.canonical_url = s.dup_url "
    "WHERE m.source_id = s.source_id AND m.canonical_url = s.canonical_url"
)

_PASSAGE_COLUMNS = ("id", "page_id", "ord", "title", "heading_path", "content", "word_count")

# What a batch writes to, claimed first (see the module's docstring): a transaction-level
# advisory lock per claim, taken in ascending lock-key order (the inner ORDER BY; each
# lock is taken as its row is read). Locks wait at most lock_timeout (transient).
_CLAIM = """
SELECT pg_advisory_xact_lock(k) FROM (
    SELECT DISTINCT hashtextextended(x, 0) AS k FROM unnest(%s::text[]) AS x ORDER BY 1
) claims
"""

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


class PostgresDialect(Dialect):
    """One PostgreSQL database (or schema), shared by any number of writers."""

    errors = (psycopg.Error,)
    bad_record_errors = BAD_RECORD_ERRORS
    concurrent_writers = True
    # the server may commit and the connection drop before its answer arrives
    uncertain_commits = True
    passage_ids = (
        "(SELECT string_agg(p.id, ',' ORDER BY p.ord) FROM passages p WHERE p.page_id = m.id)"
    )
    url_list = "string_agg(canonical_url, ' ' ORDER BY id)"
    tiebreak = "source_id, canonical_url"

    #: advisory lock taken while migrating, so that processes opening a new database at
    #: once apply each migration once
    _MIGRATION_LOCK = 0x6B635F6D696772  # "kc_migr"

    def __init__(self, url: str, *, busy_timeout: float = 10.0, read_only: bool = False) -> None:
        """Connect to and migrate the database at ``url`` (``postgresql://`` or ``postgres://``).

        ``busy_timeout``: seconds a statement waits for another writer's lock
        (``lock_timeout``) before failing with :class:`TransientStoreError`.
        ``read_only``: a session whose transactions are read-only
        (``default_transaction_read_only``), on a schema it checks but never migrates.
        Whatever stops the opening raises one :class:`StoreError` line: ``cannot
        open URL: REASON`` (the URL without its password).
        """
        super().__init__()
        self.url = self.name = display_url(url)
        self.read_only = read_only
        self._closed = False
        #: the connection of the transaction under way, if any
        self._active: psycopg.Connection[Any] | None = None
        #: the connection that has the staging table
        self._staged: psycopg.Connection[Any] | None = None
        self._busy_ms = max(1, round(busy_timeout * 1000))
        what = f"cannot open {self.url}"
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise StoreError(f"{what}: {' '.join(str(exc).split())}") from None
        params.setdefault("connect_timeout", 10)
        params.setdefault("application_name", "knowledge_crawler")
        self.conninfo = make_conninfo("", **params)
        try:
            self._conn: psycopg.Connection[Any] = self._connect()
        except psycopg.Error as exc:
            raise pg_store_error(exc, what) from None
        with self._opening(self._conn.close, what):
            if read_only:
                check_schema(self._applied(self._conn), self.url)
            else:
                self._migrate()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.conninfo, autocommit=True)
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")
        conn.execute(f"SET lock_timeout = {self._busy_ms}")
        # A batch's statements are short; JIT compiling one costs more than running it
        # (~0.2 s each when the planner overestimates a table not analyzed yet).
        conn.execute("SET jit = off")
        return conn

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """The connection: the transaction's, or one opened again when it was lost."""
        if self._active is not None:
            return self._active
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        if self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def _migrate(self) -> None:
        conn = self._conn
        applied = self._applied(conn)
        if applied is not None and not pending_migrations(applied, self.url):
            return
        conn.execute("SELECT pg_advisory_lock(%s)", (self._MIGRATION_LOCK,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                '(name TEXT COLLATE "C" PRIMARY KEY, applied_at TEXT COLLATE "C" NOT NULL)'
            )
            for migration in pending_migrations(self._applied(conn) or set(), self.url):
                self._apply(conn, migration)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (self._MIGRATION_LOCK,))

    @staticmethod
    def _applied(conn: psycopg.Connection[Any]) -> set[str] | None:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return None
        return {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}

    @staticmethod
    def _apply(conn: psycopg.Connection[Any], migration: Migration) -> None:
        with conn.transaction():
            for statement in migration.postgres_statements():
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)",
                (migration.name, utc_now()),
            )

    # -- SQL --------------------------------------------------------------------------

    def keys_in(self, keys: Sequence[tuple[str, str]]) -> Iterator[tuple[str, list[Any]]]:
        if keys:
            fragment = "IN (SELECT * FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[])))"
            yield fragment, [[k[0] for k in keys], [k[1] for k in keys]]

    def in_list(self, values: Sequence[Any], kind: str) -> tuple[str, list[Any]]:
        return f"= ANY(CAST(? AS {kind}[]))", [list(values)]

    # -- statements -------------------------------------------------------------------

    def execute(self, sql: str, params: Params = ()) -> psycopg.Cursor[Any]:
        return self.conn.execute(_pyformat(sql), params)

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        if not rows:
            return 0
        cur = self.conn.cursor()
        cur.executemany(_pyformat(sql), rows)
        return max(0, cur.rowcount)

    def rows(self, sql: str, params: Params = ()) -> list[DbRow]:
        cur = self.conn.cursor(row_factory=_row_factory)
        return list(cur.execute(_pyformat(sql), params).fetchall())

    @contextlib.contextmanager
    def transaction(self, claims: Sequence[str] = ()) -> Iterator[None]:
        if self.read_only:
            raise StoreError(f"cannot write to {self.url}: it is opened read-only")
        conn = self.conn
        if claims and self._staged is not conn:
            # outside any transaction, so that a rolled-back batch does not take it along
            columns = ", ".join(f"{name} {kind}" for name, kind in _STAGE_COLUMNS)
            conn.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {_STAGE} ({columns})")
            self._staged = conn
        with conn.transaction():
            self._active = conn
            try:
                if claims:
                    conn.execute(_CLAIM, (list(claims),))
                yield
            finally:
                self._active = None

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    @contextlib.contextmanager
    def reader(self) -> Iterator[_Reader]:
        """A connection of its own for a streaming read: one read-only snapshot."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        conn = psycopg.connect(self.conninfo, autocommit=False)
        try:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            yield _Reader(conn)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def error(self, exc: BaseException, what: str) -> StoreError:
        return pg_store_error(exc, what)

    def record_error(self, exc: Exception) -> str:
        """PostgreSQL's primary message (its detail repeats the whole row, which the
        quarantine keeps anyway)."""
        diag = getattr(exc, "diag", None)
        message = getattr(diag, "message_primary", None) or str(exc)
        return f"{type(exc).__name__}: {' '.join(message.split())}"

    # -- what differs beyond a fragment -------------------------------------------------

    def write_pages(self, writes: PageWrites, now: str) -> None:
        cur = self.conn.cursor()
        if writes.versions:
            fragment, params = self.in_list(writes.versions, "BIGINT")
            cur.execute(_pyformat(_sql.SAVE_VERSIONS.format(ids=fragment)), [now, *params])
        ids = dict(writes.ids)
        if writes.new:
            arrays = {name: [row[name] for row in writes.new] for name, _ in _NEW_COLUMNS}
            ids.update(((r[0], r[1]), r[2]) for r in cur.execute(_INSERT_PAGES, arrays))
        if writes.updates:
            names = [name for name, _ in _STAGE_COLUMNS]
            with cur.copy(f"COPY {_STAGE} ({', '.join(names)}) FROM STDIN") as copy:
                for row in writes.updates:
                    copy.write_row([row[name] for name in names])
            cur.execute(_UPDATE_PAGES_FROM_STAGE)
            cur.execute(f"TRUNCATE {_STAGE}")
        if writes.contents:
            contents = [(ids[(c["source_id"], c["canonical_url"])], c) for c in writes.contents]
            cur.execute(
                "DELETE FROM page_content WHERE page_id = ANY(%s::int8[])",
                ([page_id for page_id, _ in contents],),
            )
            with cur.copy(
                "COPY page_content (page_id, content, minhash, minhash_params) FROM STDIN"
            ) as copy:
                for page_id, c in contents:
                    copy.write_row((page_id, c["content"], c["minhash"], c["minhash_params"]))
        if writes.passages:
            cur.execute(
                "DELETE FROM passages WHERE page_id = ANY(%s::int8[])",
                ([ids[rec.key] for rec in writes.passages],),
            )
            with cur.copy(f"COPY passages ({', '.join(_PASSAGE_COLUMNS)}) FROM STDIN") as copy:
                for rec in writes.passages:
                    for p in passage_rows(rec):
                        p["page_id"] = ids[rec.key]
                        copy.write_row([p[name] for name in _PASSAGE_COLUMNS])
        if writes.outlinks:
            cur.execute(
                "DELETE FROM outlinks o USING unnest(%s::text[], %s::text[]) AS k(s, u) "
                "WHERE o.source_id = k.s AND o.from_url = k.u",
                (
                    [rec.source_id for rec in writes.outlinks],
                    [rec.canonical_url for rec in writes.outlinks],
                ),
            )
            with cur.copy(
                "COPY outlinks (source_id, from_url, to_url, canonical) FROM STDIN"
            ) as copy:
                for rec in writes.outlinks:
                    for link in outlink_rows(rec):
                        copy.write_row(link)

    def search(
        self,
        terms: Sequence[Sequence[str]],
        *,
        require_all: bool,
        raw: str | None,
        k: int,
        source_id: str | None,
    ) -> list[dict[str, Any]]:
        """See :meth:`Store.search`; ``raw`` is PostgreSQL's ``to_tsquery`` syntax
        (``&``, ``|``, ``!``, ``<->``, ``word:*``, quoted phrases)."""
        query = raw if raw is not None else _tsquery(terms, require_all)
        if not query.strip():
            return []
        params = {"query": query, "k": k, "source": source_id}
        try:
            cur = self.conn.cursor(row_factory=_row_factory)
            rows = cur.execute(_SEARCH, params).fetchall()
        except (psycopg.errors.SyntaxError, psycopg.DataError) as exc:
            raise ValueError(f"cannot search for {query!r}: {exc}") from None  # its syntax
        return [search_result(r, float(r["rank"])) for r in rows]

    def close(self) -> None:
        self._closed = True
        self._conn.close()  # a second close does nothing


class _Reader:
    """A streaming read on a connection of its own, from a server-side cursor."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def stream(self, sql: str, params: Params) -> Iterator[Row]:
        cur = self.conn.cursor(name="kc_stream", row_factory=_row_factory)
        cur.itersize = _STREAM_ROWS
        cur.execute(_pyformat(sql), params)
        try:
            while rows := cur.fetchmany(_STREAM_ROWS):
                yield from rows
        finally:
            with contextlib.suppress(psycopg.Error):
                cur.close()

    def one(self, sql: str, params: Params) -> Row | None:
        cur = self.conn.cursor(row_factory=_row_factory)
        return cur.execute(_pyformat(sql), params).fetchone()


class PostgresStore(SqlStore):
    """The store on PostgreSQL (``postgresql://...``)."""

    db: PostgresDialect

    def __init__(self, url: str, *, busy_timeout: float = 10.0, read_only: bool = False) -> None:
        super().__init__(PostgresDialect(url, busy_timeout=busy_timeout, read_only=read_only))
