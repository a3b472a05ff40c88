"""Status events (``page_events``): every move of a page's status kept, in order, written by
the store in the same transaction as the move; ``http_status`` tells the last answer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from knowledge_crawler.store import StatusChange, Store, Touch, open_store
from knowledge_crawler.store.migrations import MIGRATIONS
from tests.store.backends import applied_migrations
from tests.store.test_contract import T0, T1, rec, rows

T2 = "2026-01-03T00:00:00.000000Z"
T3 = "2026-01-04T00:00:00.000000Z"
T4 = "2026-01-05T00:00:00.000000Z"
KEY = ("s", "https://example.com/p1")
EVIDENCE_404 = '[{"status":404,"at":"2026-01-02T00:00:00.000000Z"}]'


def events(store: Store) -> list[tuple[object, ...]]:
    return [
        tuple(r.values())
        for r in rows(
            store,
            "SELECT e.at, e.event, e.reason, e.http_status FROM page_events e "
            "JOIN page_meta m ON m.id = e.page_id ORDER BY e.at, e.id",
        )
    ]


def page(store: Store) -> dict[str, object]:
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", KEY[1])
    return row


def test_each_status_move_is_one_event_in_order_and_a_fetch_restores(store: Store) -> None:
    store.write([rec(1)])
    store.write([StatusChange(*KEY, "suspected_missing", T1, None, EVIDENCE_404, http_status=404)])
    # still missing, not yet tombstoned: more evidence, no move, no event
    store.write([StatusChange(*KEY, "suspected_missing", T2, None, EVIDENCE_404, http_status=404)])
    store.write([StatusChange(*KEY, "tombstoned", T2, "missing (404) 2 times", http_status=404)])
    store.write([StatusChange(*KEY, "tombstoned", T3, "missing (404) 2 times", http_status=404)])
    assert page(store)["http_status"] == 404  # the last answer, not the stored content's 200
    store.write([rec(1, at=T4)])  # it answers 200 again
    assert events(store) == [
        (T1, "suspected_missing", None, 404),
        (T2, "tombstoned", "missing (404) 2 times", 404),
        (T4, "restored", None, 200),
    ]
    row = page(store)
    assert row["status"] == "active" and row["http_status"] == 200


def test_a_304_brings_a_tombstoned_page_back_with_an_event(store: Store) -> None:
    store.write([rec(1)])
    store.write([StatusChange(*KEY, "tombstoned", T1, "gone (410)", http_status=410)])
    row = page(store)
    assert (row["status"], row["http_status"]) == ("tombstoned", 410)
    result = store.write([Touch(*KEY, checked_at=T2), Touch(*KEY, checked_at=T3)])
    assert result.touched == [KEY, KEY]
    assert events(store) == [(T1, "tombstoned", "gone (410)", 410), (T2, "restored", None, 304)]
    row = page(store)
    # a 304 says the stored 200 response holds again
    assert (row["status"], row["http_status"], row["status_reason"]) == ("active", 200, None)


def test_a_touch_of_an_active_page_writes_no_event(store: Store) -> None:
    store.write([rec(1), rec(2)])
    store.write([Touch(*KEY, checked_at=T1), rec(2, at=T1)])
    assert events(store) == []


def test_a_status_change_moves_the_next_check(store: Store) -> None:
    store.write([rec(1, next_check_at=T4)])
    store.write(
        [
            StatusChange(
                *KEY, "suspected_missing", T1, None, EVIDENCE_404, http_status=404, next_check_at=T2
            )
        ]
    )
    assert page(store)["next_check_at"] == T2
    store.write([StatusChange(*KEY, "suspected_missing", T2, None, EVIDENCE_404)])
    row = page(store)
    assert row["next_check_at"] == T2 and row["http_status"] == 404  # None keeps them


def test_an_event_keeps_its_evidence_after_the_page_is_restored(store: Store) -> None:
    store.write([rec(1)])
    evidence = '[{"signal":"atom:deleted-entry https://example.com/feed.atom","at":"x"}]'
    store.write([StatusChange(*KEY, "tombstoned", T1, "deleted (feed)", evidence)])
    store.write([rec(1, at=T2)])
    assert page(store)["status_evidence"] == "[]"
    [kept] = rows(store, "SELECT evidence FROM page_events WHERE event = 'tombstoned'")
    assert kept["evidence"] == evidence


def test_changes_keep_the_tombstone_once_the_page_is_restored(store: Store) -> None:
    store.write([rec(1, at=T0)])
    store.write([StatusChange(*KEY, "suspected_missing", T1, None, EVIDENCE_404, http_status=404)])
    store.write([StatusChange(*KEY, "tombstoned", T2, "gone (410)", http_status=410)])
    store.write([rec(1, at=T3)])
    store.write([StatusChange(*KEY, "tombstoned", T4, "gone (410)", http_status=410)])
    kinds = [(e["kind"], e["time"], e["reason"]) for e in store.changes(T0)]
    assert kinds == [
        ("new", T0, None),
        ("tombstoned", T2, "gone (410)"),
        ("restored", T3, None),
        ("tombstoned", T4, "gone (410)"),
    ]
    assert [e["kind"] for e in store.changes(T1, T4)] == ["tombstoned", "restored"]


def test_history_lists_the_status_events_oldest_first(store: Store) -> None:
    store.write([rec(1, at=T0)])
    store.write([StatusChange(*KEY, "tombstoned", T1, "gone (410)", http_status=410)])
    store.write([rec(1, "new words", at=T2)])
    [current, version] = store.history(KEY[1])
    assert "events" not in version
    assert [(e["time"], e["event"], e["reason"], e["http_status"]) for e in current["events"]] == [
        (T1, "tombstoned", "gone (410)", 410),
        (T2, "restored", None, 200),
    ]
    assert current["events"][0]["evidence"] == []


def test_a_batch_that_fails_writes_no_event(store: Store) -> None:
    store.write([rec(1)])
    bad = rec(2, canonical_url="not a url")  # the database refuses it: quarantined
    result = store.write([StatusChange(*KEY, "tombstoned", T1, "gone (410)"), bad])
    assert len(result.quarantined) == 1 and result.tombstones == 1
    assert events(store) == [(T1, "tombstoned", "gone (410)", None)]  # once, not twice


def test_upgrading_a_database_turns_its_status_moves_into_events(tmp_path: Path) -> None:
    """A database as 0010 left it: a tombstoned page and a restored one keep their event."""
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    with open_store(url) as store:
        store.write([rec(1), rec(2), rec(3)])
        store.write([StatusChange("s", "https://example.com/p2", "tombstoned", T1, "gone (410)")])
        store.write([StatusChange(*KEY, "tombstoned", T1, "gone (410)")])
        store.write([rec(1, at=T2)])
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE page_events")
    conn.execute("DELETE FROM schema_migrations WHERE name = '0012_page_events'")
    conn.close()
    with open_store(url) as store:
        assert applied_migrations(store) == sorted(m.name for m in MIGRATIONS)
        got = rows(
            store,
            "SELECT m.canonical_url, e.at, e.event, e.reason FROM page_events e "
            "JOIN page_meta m ON m.id = e.page_id ORDER BY e.id",
        )
        assert [tuple(r.values()) for r in got] == [
            ("https://example.com/p2", T1, "tombstoned", "gone (410)"),
            ("https://example.com/p1", T2, "restored", None),
        ]


def test_the_history_command_shows_the_events(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from knowledge_crawler.cli.history import history

    url = f"sqlite:///{tmp_path}/k.db"
    with open_store(url) as store:
        store.write([rec(1, at=T0)])
        store.write([StatusChange(*KEY, "tombstoned", T1, "gone (410)", http_status=410)])
        store.write([Touch(*KEY, checked_at=T2)])
    result = CliRunner().invoke(history, ["--db", url, KEY[1]])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-3:] == [
        f"  tombstoned         {T1}  HTTP 410  (gone (410))",
        f"  restored           {T2}  HTTP 304",
        "1 version",
    ]
