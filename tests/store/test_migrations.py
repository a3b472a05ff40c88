"""Migrations of a database written before them: nothing lost, inconsistencies repaired."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from knowledge_crawler.store import open_store
from knowledge_crawler.store.migrations import MIGRATIONS
from tests.store.backends import applied_migrations, upsert_pages
from tests.store.test_contract import rec, rows


def old_database(path: Path) -> None:
    """A database as the first schema wrote it: pages, duplicates (one inconsistent), runs."""
    first = MIGRATIONS[0]
    assert first.name == "0001_pages_runs_quarantine"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for statement in first.statements:
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (first.name,))
    meta = (
        "INSERT INTO page_meta (id, source_id, canonical_url, url, final_url, fetched_at, "
        "content_hash, duplicate_of, duplicate_kind, duplicate_score, first_seen_at, "
        "last_seen_at, last_checked_at, last_changed_at) "
        "VALUES (?, 's', ?, 'u', 'u', 't', ?, ?, ?, ?, 't', 't', 't', 't')"
    )
    h = "a" * 64
    conn.execute(meta, (1, "https://e.com/1", h, None, None, None))
    conn.execute(meta, (2, "https://e.com/2", h, 1, "exact", 1.0))  # consistent
    conn.execute(meta, (3, "https://e.com/3", h, None, "near", 0.9))  # kind, no pointer
    conn.execute(meta, (4, "https://e.com/4", h, 1, None, None))  # pointer, no kind
    conn.execute(meta, (9, "https://e.com/9", h, None, None, None))
    for page_id in (1, 2, 3, 4, 9):
        conn.execute(
            "INSERT INTO page_content VALUES (?, ?, NULL, NULL)", (page_id, f"text {page_id}")
        )
    conn.execute(
        "INSERT INTO page_versions (page_id, content_hash, content, fetched_at, replaced_at) "
        "VALUES (2, ?, 'older', 't', 't')",
        (h,),
    )
    runs = "INSERT INTO crawl_runs (spider, mode, sources, started_at, finished_at, finish_reason)"
    conn.execute(f"{runs} VALUES ('k', 'crawl', '[]', 't', 't', 'finished')")
    conn.execute(f"{runs} VALUES ('k', 'crawl', '[]', 't', 't', 'shutdown')")
    conn.execute(f"{runs} VALUES ('k', 'crawl', '[]', 't', NULL, NULL)")
    conn.close()


def test_upgrading_keeps_every_row_and_repairs_disagreeing_duplicate_columns(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    old_database(db)
    with open_store(f"sqlite:///{db}") as store:
        assert applied_migrations(store) == [m.name for m in MIGRATIONS]
        got = rows(
            store,
            "SELECT id, content, duplicate_of, duplicate_kind, duplicate_score FROM pages "
            "ORDER BY id",
        )
        assert [tuple(r.values()) for r in got] == [
            (1, "text 1", None, None, None),
            (2, "text 2", 1, "exact", 1.0),
            (3, "text 3", None, None, None),  # repaired: a representative
            (4, "text 4", None, None, None),  # repaired: a representative
            (9, "text 9", None, None, None),
        ]
        assert rows(store, "SELECT page_id, content FROM page_versions") == [
            {"page_id": 2, "content": "older"}
        ]
        # New pages go on from the old ids; foreign keys are back on and hold.
        upsert_pages(store, [rec(10)])
        assert rows(store, "SELECT MAX(id) AS n FROM page_meta")[0]["n"] == 10
        assert rows(store, "PRAGMA foreign_keys")[0]["foreign_keys"] == 1
        assert rows(store, "PRAGMA foreign_key_check") == []
        assert [
            r["outcome"] for r in rows(store, "SELECT outcome FROM crawl_runs ORDER BY id")
        ] == [
            "finished",
            "interrupted",
            "running",
        ]
        indexes = {r["name"] for r in rows(store, "PRAGMA index_list(page_meta)")}
        assert {"idx_pages_hash", "idx_pages_due", "idx_pages_duplicate_of"} <= indexes
    # Reopening applies nothing twice.
    with open_store(f"sqlite:///{db}") as store:
        assert rows(store, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 6
