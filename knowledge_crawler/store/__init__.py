"""Storage behind one small interface: :class:`Store`, opened by URL with :func:`open_store`."""

from __future__ import annotations

from knowledge_crawler.errors import StoreError
from knowledge_crawler.store.base import (
    HEAD_COUNTERS,
    DedupeRow,
    DuplicateUpdate,
    PageRecord,
    Store,
    UpsertResult,
    utc_now,
)

__all__ = [
    "HEAD_COUNTERS",
    "DedupeRow",
    "DuplicateUpdate",
    "PageRecord",
    "Store",
    "UpsertResult",
    "open_store",
    "utc_now",
]


def open_store(url: str) -> Store:
    """Open (and migrate) the store at ``url``: ``sqlite:///PATH`` (PostgreSQL comes later)."""
    if url.startswith("sqlite:///"):
        from knowledge_crawler.store.sqlite import SqliteStore

        return SqliteStore(url)
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise StoreError(f"unsupported database URL scheme {scheme!r} in {url!r} (use sqlite:///PATH)")
