"""What a contract test needs to know of the backend under it (see ``conftest.py``)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from knowledge_crawler.store import DuplicateUpdate, PageRecord, Store, UpsertResult

#: the test runs on SQLite only (it opens the file, locks it, reads its pragmas, FTS5 syntax)
SQLITE_ONLY = pytest.mark.parametrize("store", ["sqlite"], indirect=True)
#: the test runs on PostgreSQL only
POSTGRES_ONLY = pytest.mark.parametrize("store", ["postgres"], indirect=True)


def backend(store: Store) -> str:
    """``sqlite`` or ``postgres``."""
    return "sqlite" if store.url.startswith("sqlite:") else "postgres"


def columns(store: Store, table: str) -> set[str]:
    """The column names of a table or view."""
    if backend(store) == "sqlite":
        rows = store.query(f"PRAGMA table_info({table})")
        return {r["name"] for r in rows}
    rows = store.query(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ?",
        (table,),
    )
    return {r["column_name"] for r in rows}


def execute(store: Store, sql: str) -> None:
    """Run a statement behind the store's back on its connection (committed at once)."""
    store.db.conn.execute(sql)  # type: ignore[attr-defined]


def upsert_pages(
    store: Store,
    records: Sequence[PageRecord],
    *,
    run_id: int | None = None,
    duplicate_updates: Sequence[DuplicateUpdate] = (),
) -> UpsertResult:
    """Load ``records``, then apply ``duplicate_updates``: one :meth:`Store.write`."""
    return store.write([*records, *duplicate_updates], run_id=run_id)


def applied_migrations(store: Store) -> list[str]:
    """The names of the migrations the store's database records, in order."""
    return [r[0] for r in store.query("SELECT name FROM schema_migrations ORDER BY name")]
