"""What each dialect says its own way, checked on its own database."""

from __future__ import annotations

import sqlite3
from typing import Any

from knowledge_crawler.store import Store
from knowledge_crawler.store.core import SqlStore
from tests.store.backends import SQLITE_ONLY
from tests.store.test_contract import T1, rec, rows


def _plan(store: SqlStore, statement: str, params: list[Any]) -> str:
    return " | ".join(str(r[3]) for r in store.query(f"EXPLAIN QUERY PLAN {statement}", params))


@SQLITE_ONLY
def test_a_set_of_keys_is_looked_up_through_the_index_not_scanned(store: Store) -> None:
    """SQLite scans the whole table for ``(a, b) IN (VALUES ...)``; the dialect's key sets
    must reach the (source_id, canonical_url) index, or every batch reads every page."""
    assert isinstance(store, SqlStore)
    keys = [("s", f"https://example.com/p{n}") for n in range(3)]
    [(fragment, params)] = store.db.keys_in(keys)
    for table, statement in [
        ("page_meta", f"SELECT id FROM page_meta WHERE (source_id, canonical_url) {fragment}"),
        ("frontier", f"DELETE FROM frontier WHERE (source_id, canonical_url) {fragment}"),
        (
            "fetch_attempts",
            f"DELETE FROM fetch_attempts WHERE (source_id, canonical_url) {fragment}",
        ),
    ]:
        plan = _plan(store, statement, params)
        assert f"SEARCH {table} USING" in plan, plan
        assert f"SCAN {table}" not in plan, plan


@SQLITE_ONLY
def test_key_sets_come_in_chunks_under_the_variable_limit(store: Store) -> None:
    assert isinstance(store, SqlStore)
    keys = [("s", f"https://example.com/p{n}") for n in range(1001)]
    chunks = list(store.db.keys_in(keys))
    assert [len(params) // 2 for _, params in chunks] == [400, 400, 201]
    assert [k for _, params in chunks for k in zip(params[::2], params[1::2], strict=True)] == keys


@SQLITE_ONLY
def test_a_batch_of_changed_pages_is_not_bound_by_the_variable_limit(store: Store) -> None:
    """However many pages of a batch change, their versions are saved: a batch is as large
    as KC_STORE_BATCH_SIZE says, with no bound of SQLite's bound variables."""
    assert isinstance(store, SqlStore)
    store.db.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 1000)
    n = 1000
    store.write([rec(i, f"first text {i}") for i in range(n)])
    result = store.write([rec(i, f"second text {i}", at=T1) for i in range(n)])
    assert len(result.changed) == n
    assert rows(store, "SELECT COUNT(*) AS n FROM page_versions") == [{"n": n}]
