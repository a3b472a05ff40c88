"""What a database backend says; everything else is the store core's (:mod:`.core`).

The store core (:class:`~knowledge_crawler.store.core.SqlStore`) plans every batch,
isolates bad records, counts runs, settles frontier entries and runs every query the
backends share, written once in SQL both databases read (:mod:`._sql`). A backend is a
:class:`Dialect`: how it connects and runs a transaction, a savepoint and a streaming
read; how its driver writes a parameter; the few fragments of SQL it spells its own
way; its bulk primitive for page rows (:meth:`Dialect.write_pages`: ``executemany`` on
SQLite, ``COPY`` on PostgreSQL); its full-text search; and which of its errors may pass
(transient) and which say a record is bad. The split follows Django's
``DatabaseOperations``/``DatabaseFeatures`` and SQLAlchemy's dialects.

Shared SQL is written with SQLite's placeholders (``:name``, or ``?`` in a statement
that has no named ones); a dialect's :meth:`~Dialect.execute`, :meth:`~Dialect.executemany`
and :meth:`~Dialect.rows` take it so and turn it into its driver's own.
"""

from __future__ import annotations

import abc
import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from knowledge_crawler.errors import StoreError
from knowledge_crawler.store.base import PageRecord

__all__ = ["Dialect", "PageWrites", "Params", "Reader", "Row"]

#: a statement's parameters: by position or by name
Params = Sequence[Any] | Mapping[str, Any]


class Row(Protocol):
    """A result row that reads by column name and by position (``sqlite3.Row`` is one)."""

    def keys(self) -> list[str]: ...

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class Cursor(Protocol):
    """What the core reads of a statement it ran (a DB-API cursor)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Reader(Protocol):
    """A streaming read: a query's rows as they are consumed, and small reads beside it,
    all of one consistent view of the database."""

    def stream(self, sql: str, params: Params) -> Iterator[Row]: ...

    def one(self, sql: str, params: Params) -> Row | None: ...


@dataclass(slots=True)
class PageWrites:
    """What one run of page records writes, decided by the core against the stored rows.

    Row parameters are :func:`~knowledge_crawler.store.core.page_params` dicts. Every
    representative a row names is stored before the run is written, or named as none.
    """

    #: ids of stored pages whose current content is kept as a version before it is rewritten
    versions: list[int] = field(default_factory=list)
    #: rows of pages not stored yet, in the order the records came (their ids in that order)
    new: list[dict[str, Any]] = field(default_factory=list)
    #: rows of stored pages (``SET_PAGE``)
    updates: list[dict[str, Any]] = field(default_factory=list)
    #: rows whose content and MinHash are (re)written
    contents: list[dict[str, Any]] = field(default_factory=list)
    #: records whose passages replace the page's
    passages: list[PageRecord] = field(default_factory=list)
    #: ids of the stored pages, by key
    ids: dict[tuple[str, str], int] = field(default_factory=dict)
    #: records whose outlinks replace the page's (``core.outlink_rows``)
    outlinks: list[PageRecord] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.new or self.updates or self.contents or self.passages or self.outlinks)


class Dialect(abc.ABC):
    """One database: its connection, its transactions and what its SQL says its own way.

    Methods run statements on the dialect's connection without taking :attr:`lock`;
    the core holds it around each call of its own.
    """

    #: what messages name the database by: a file's path, or a URL without its password
    name: str
    #: the store's URL, as it may be shown
    url: str
    #: the driver's errors: anything of these from the database is a :class:`StoreError`
    errors: tuple[type[Exception], ...]
    #: the errors that say a record is bad (the database refuses it), not the database
    bad_record_errors: tuple[type[Exception], ...]
    #: several write transactions may run at once: each claims what it writes first
    #: (``claims`` of :meth:`transaction`); False where the database admits one writer
    concurrent_writers: bool
    #: a COMMIT that fails may still have committed (the answer lost on its way from a
    #: server): each batch then records its id in its own transaction, and a retry after
    #: such a failure reads it first (``core.SqlStore.write``). False where a failed
    #: COMMIT surely committed nothing
    uncertain_commits: bool
    #: a page's (``m``) passage ids, in order, comma-separated
    passage_ids: str
    #: the canonical URLs of a group of pages, space-separated (``stats``)
    url_list: str
    #: a row's place among rows that sort equal, for tables without an id column
    tiebreak: str
    #: opened for reading only: never migrated, and every write transaction refused
    read_only: bool = False

    def __init__(self) -> None:
        self.lock = threading.RLock()

    @contextlib.contextmanager
    def _opening(self, close: Callable[[], object], what: str) -> Iterator[None]:
        """Whatever stops the block closes the connection (``close``); a database error
        or an OS error is raised as one :class:`StoreError` line starting with ``what``."""
        failures: tuple[type[Exception], ...] = (*self.errors, OSError)
        try:
            yield
        except failures as exc:
            close()
            raise self.error(exc, what) from None
        except BaseException:
            close()
            raise

    # -- SQL ------------------------------------------------------------------------

    @abc.abstractmethod
    def keys_in(self, keys: Sequence[tuple[str, str]]) -> Iterator[tuple[str, list[Any]]]:
        """``IN (...)`` fragments that match a row value ``(source_id, canonical_url)`` to
        ``keys``, with their positional parameters, as many as the database needs."""

    @abc.abstractmethod
    def in_list(self, values: Sequence[Any], kind: str) -> tuple[str, list[Any]]:
        """A fragment that matches a column to one of ``values`` (of SQL type ``kind``,
        ``TEXT`` or ``BIGINT``) and its positional parameters."""

    # -- statements -----------------------------------------------------------------

    @abc.abstractmethod
    def execute(self, sql: str, params: Params = ()) -> Cursor:
        """Run one statement of shared SQL."""

    @abc.abstractmethod
    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run one statement of shared SQL once per row; the rows it changed in all."""

    @abc.abstractmethod
    def rows(self, sql: str, params: Params = ()) -> list[Row]:
        """The rows of a query of shared SQL, by column name and by position."""

    @abc.abstractmethod
    def transaction(self, claims: Sequence[str] = ()) -> contextlib.AbstractContextManager[None]:
        """A write transaction: committed when the block ends, rolled back when it raises.

        ``claims``: what the transaction writes (see ``core.claims``), given where
        :attr:`concurrent_writers`: the writers of overlapping claims are serialised
        before the block runs.
        """

    @abc.abstractmethod
    def savepoint(self) -> contextlib.AbstractContextManager[None]:
        """A savepoint inside the transaction: rolled back to when the block raises (the
        error goes on), released when it ends."""

    @abc.abstractmethod
    def reader(self) -> contextlib.AbstractContextManager[Reader]:
        """A streaming read of one consistent view, which never holds :attr:`lock` while
        its caller handles a row."""

    # -- errors ---------------------------------------------------------------------

    @abc.abstractmethod
    def error(self, exc: BaseException, what: str) -> StoreError:
        """``exc`` as one :class:`StoreError` line starting with ``what``: a
        :class:`~knowledge_crawler.errors.TransientStoreError` when it may pass."""

    def record_error(self, exc: Exception) -> str:
        """Why the database refused a record, in one line."""
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"

    # -- what differs beyond a fragment -----------------------------------------------

    @abc.abstractmethod
    def write_pages(self, writes: PageWrites, now: str) -> None:
        """Write a run of page records in bulk, in this order: the versions (from the rows
        as stored), the new pages' rows, the stored pages' rows, contents, passages,
        outlinks (``core.outlink_rows``, replacing the page's)."""

    @abc.abstractmethod
    def search(
        self,
        terms: Sequence[Sequence[str]],
        *,
        require_all: bool,
        raw: str | None,
        k: int,
        source_id: str | None,
    ) -> list[dict[str, Any]]:
        """:meth:`~knowledge_crawler.store.base.Store.search` on this database's own index."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection; further calls fail."""
