"""Storage behind one small interface: :class:`Store`, opened by URL with :func:`open_store`."""

from __future__ import annotations

from knowledge_crawler.config import database_url
from knowledge_crawler.errors import StoreError
from knowledge_crawler.store.base import (
    HEAD_COUNTERS,
    PAGE_NOT_STORED,
    REPRESENTATIVE_NOT_STORED,
    RUN_OUTCOMES,
    STORE_COUNTERS,
    ArchivedPage,
    CheckpointAdvance,
    DedupeRow,
    DuplicateUpdate,
    FetchFailure,
    FrontierAdd,
    KnownPage,
    Operation,
    PageRecord,
    PassageRecord,
    StatusChange,
    Store,
    Touch,
    UpsertResult,
    UrlOutcome,
    display_url,
    new_batch_id,
    record_dict,
    utc_now,
)
from knowledge_crawler.store.leases import Lease, LeaseHolder, LeaseKeeper

__all__ = [
    "HEAD_COUNTERS",
    "PAGE_NOT_STORED",
    "REPRESENTATIVE_NOT_STORED",
    "RUN_OUTCOMES",
    "STORE_COUNTERS",
    "ArchivedPage",
    "CheckpointAdvance",
    "DedupeRow",
    "DuplicateUpdate",
    "FetchFailure",
    "FrontierAdd",
    "KnownPage",
    "Lease",
    "LeaseHolder",
    "LeaseKeeper",
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
    "open_store",
    "record_dict",
    "utc_now",
]


def open_store(url: str, *, busy_timeout: float = 10.0, read_only: bool = False) -> Store:
    """Open (and migrate) the store at ``url``: ``sqlite:///PATH`` (or a bare PATH), or a
    PostgreSQL database, ``postgresql://...`` (``postgres://...``; any libpq URL).

    ``busy_timeout``: seconds a statement waits for another writer's lock. Anything
    that stops the opening (no such folder, not a database, read-only, locked, a
    server that does not answer, a newer schema) raises one :class:`StoreError` line
    naming the path or URL (never its password) and the reason.

    ``read_only``: for readers, which never write (DESIGN: read-only opens). SQLite
    opens the file as it is (``mode=ro``, or ``immutable=1`` in a folder that cannot
    be written), without making its folder or switching it to WAL; PostgreSQL opens a
    read-only session. Neither migrates: a schema older (or newer) than this code's
    is a :class:`~knowledge_crawler.errors.SchemaMismatchError` naming it, and every
    write raises :class:`StoreError`.
    """
    url = database_url(url)
    if url.startswith("sqlite:///"):
        from knowledge_crawler.store.sqlite import SqliteStore

        return SqliteStore(url, busy_timeout=busy_timeout, read_only=read_only)
    if url.startswith(("postgresql://", "postgres://")):
        from knowledge_crawler.store.postgres import PostgresStore

        return PostgresStore(url, busy_timeout=busy_timeout, read_only=read_only)
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise StoreError(
        f"unsupported database URL scheme {scheme!r} in {display_url(url)!r} "
        "(use sqlite:///PATH or postgresql://...)"
    )
