"""The store's unit of write: an ordered batch of operations committed in one transaction."""

from __future__ import annotations

import pytest

from knowledge_crawler.errors import TransientStoreError
from knowledge_crawler.store import CheckpointAdvance, DuplicateUpdate, Store, Touch
from tests.faults import exclusive_lock
from tests.store.backends import POSTGRES_ONLY, SQLITE_ONLY
from tests.store.test_contract import T0, T1, rec, rows

T2 = "2026-01-03T00:00:00.000000Z"
KEY = ("s", "https://example.com/p1")


def page(store: Store, n: int = 1) -> dict[str, object]:
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", f"https://example.com/p{n}")
    return row


def test_a_touch_moves_times_validators_and_next_check_only(store: Store) -> None:
    store.write([rec(1, etag='"v1"', last_modified="Mon, 01 Jan 2026 00:00:00 GMT")])
    before = page(store)
    result = store.write(
        [Touch(*KEY, checked_at=T1, etag='"v2"', next_check_at=T2, check_interval=7200)]
    )
    assert result.touched == [KEY] and not result.loaded
    after = page(store)
    assert after["last_checked_at"] == after["last_seen_at"] == T1
    assert after["etag"] == '"v2"'
    assert after["last_modified"] == "Mon, 01 Jan 2026 00:00:00 GMT"  # not repeated: kept
    assert after["next_check_at"] == T2 and after["check_interval"] == 7200
    for column in ("content", "content_hash", "title", "fetched_at", "last_changed_at"):
        assert after[column] == before[column], column
    assert after["first_seen_at"] == T0
    assert rows(store, "SELECT COUNT(*) AS n FROM page_versions")[0]["n"] == 0


def test_a_touch_of_a_page_not_stored_is_reported_and_writes_nothing(store: Store) -> None:
    result = store.write([Touch("s", "https://example.com/none", checked_at=T1)])
    assert result.untouched == [("s", "https://example.com/none")] and not result.touched
    assert rows(store, "SELECT COUNT(*) AS n FROM page_meta")[0]["n"] == 0


def test_operations_apply_in_order(store: Store) -> None:
    # A page changed (new record) and then answered 304 with new validators: the touch,
    # which came later, wins for what it moves; the record's content stays.
    store.write(
        [
            rec(1, text="first words", etag='"a"'),
            Touch(*KEY, checked_at=T1, etag='"b"'),
            rec(2),
            DuplicateUpdate(("s", "https://example.com/p2"), KEY, "near", 0.9),
        ]
    )
    assert page(store)["etag"] == '"b"' and page(store)["content"] == "first words"
    assert page(store, 2)["duplicate_kind"] == "near"


def test_a_checkpoint_commits_with_its_records_and_never_alone(store: Store) -> None:
    result = store.write([rec(1), rec(2), CheckpointAdvance("s", "api", "cursor-2")], run_id=None)
    assert result.checkpoints == [("s", "api")]
    assert store.checkpoints("s") == {"api": "cursor-2"}
    store.write([CheckpointAdvance("s", "api", "cursor-3"), CheckpointAdvance("s", "sitemap", "x")])
    assert store.checkpoints("s") == {"api": "cursor-3", "sitemap": "x"}
    assert store.checkpoints("other") == {}


@SQLITE_ONLY
def test_a_locked_database_commits_neither_records_nor_checkpoint(
    tmp_path: object, store: Store
) -> None:
    path = store.path  # type: ignore[attr-defined]
    store.db.conn.execute("PRAGMA busy_timeout = 50")  # type: ignore[attr-defined]
    with exclusive_lock(path), pytest.raises(TransientStoreError):
        store.write([rec(1), CheckpointAdvance("s", "api", "c1")])
    assert store.checkpoints("s") == {}
    assert rows(store, "SELECT COUNT(*) AS n FROM page_meta")[0]["n"] == 0


@POSTGRES_ONLY
def test_a_locked_table_commits_neither_records_nor_checkpoint(store: Store) -> None:
    """Another writer holds the pages table past the lock timeout: transient, nothing written."""
    import psycopg

    store.db.conn.execute("SET lock_timeout = 50")  # type: ignore[attr-defined]
    other = psycopg.connect(store.db.conninfo)  # type: ignore[attr-defined]
    try:
        other.execute("LOCK TABLE page_meta IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(TransientStoreError, match="lock timeout"):
            store.write([rec(1), CheckpointAdvance("s", "api", "c1")])
    finally:
        other.rollback()
        other.close()
    assert store.checkpoints("s") == {}
    assert rows(store, "SELECT COUNT(*) AS n FROM page_meta")[0]["n"] == 0
    # The lock is gone: the same batch commits, once.
    assert store.write([rec(1), CheckpointAdvance("s", "api", "c1")]).inserted == [KEY]
    assert store.checkpoints("s") == {"api": "c1"}


def test_a_bad_record_is_quarantined_and_the_rest_of_the_batch_commits(store: Store) -> None:
    bad = rec(2, content_hash="not a sha-256")
    result = store.write(
        [rec(1), bad, Touch(*KEY, checked_at=T1), CheckpointAdvance("s", "api", "c1")], run_id=None
    )
    assert [k for k, _ in result.quarantined] == [("s", "https://example.com/p2")]
    assert result.inserted == [KEY] and result.touched == [KEY]
    assert store.checkpoints("s") == {"api": "c1"}
    assert page(store)["last_checked_at"] == T1


def test_run_counters_count_touches(store: Store) -> None:
    run = store.start_run(spider="knowledge", sources=["s"], mode="crawl", pid=1, host="h")
    store.write([rec(1)], run_id=run)
    store.write(
        [Touch(*KEY, checked_at=T1), Touch("s", "https://x.test/none", checked_at=T1)], run_id=run
    )
    [row] = rows(store, "SELECT responses_304, pages_new FROM crawl_runs WHERE id = ?", run)
    assert row == {"responses_304": 1, "pages_new": 1}


def test_depth_keeps_the_shortest_path_and_interval_the_last_known(store: Store) -> None:
    store.write([rec(1, depth=3, check_interval=3600)])
    store.write([rec(1, depth=1, at=T1)])
    row = page(store)
    assert row["depth"] == 1 and row["check_interval"] == 3600
    store.write([rec(1, depth=4, check_interval=60, at=T2)])
    row = page(store)
    assert row["depth"] == 1 and row["check_interval"] == 60


def test_known_pages_most_overdue_first_tombstones_included(store: Store) -> None:
    store.write(
        [
            rec(1, next_check_at=T2, etag='"e1"'),
            rec(2, next_check_at=T0),
            rec(3),
            rec(4, next_check_at=T1),
        ]
    )
    store.db.conn.execute(  # type: ignore[attr-defined]
        "UPDATE page_meta SET status = 'tombstoned' WHERE canonical_url LIKE '%p4'"
    )
    known = list(store.known_pages(["s"]))
    # a tombstoned page is known too: it is checked again when due, and may come back
    assert [k.canonical_url.rsplit("/", 1)[1] for k in known] == ["p3", "p2", "p4", "p1"]
    assert known[2].status == "tombstoned" and known[1].status == "active"
    assert known[3].etag == '"e1"' and known[3].content_hash
    assert list(store.known_pages(["other"])) == [] and list(store.known_pages([])) == []


def test_history_newest_first(store: Store) -> None:
    store.write([rec(1, text="one", at=T0)])
    store.write([rec(1, text="two", at=T1)])
    store.write([rec(1, text="three", at=T2)])
    store.write([rec(1, source_id="other", text="elsewhere")])
    history = store.history(KEY[1], source_id="s")
    assert [h["content"] for h in history] == ["three", "two", "one"]
    assert history[0]["replaced_at"] is None and history[1]["replaced_at"] is not None
    assert [h["fetched_at"] for h in history] == [T2, T1, T0]
    assert {h["source_id"] for h in history} == {"s"}
    both = store.history(KEY[1])
    assert [(h["source_id"], h["content"]) for h in both][:2] == [
        ("other", "elsewhere"),
        ("s", "three"),
    ]
    assert store.history("https://example.com/none") == []
