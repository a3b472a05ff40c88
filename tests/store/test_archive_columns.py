"""Archive locations (F-ARCHIVE) in the store, and records rebuilt from the archive."""

from __future__ import annotations

from knowledge_crawler.store import FetchFailure, StatusChange, Store, Touch
from tests.store.backends import applied_migrations, columns
from tests.store.test_contract import T0, T1, rec, rows

T2 = "2026-01-03T00:00:00.000000Z"
KEY = ("s", "https://example.com/p1")


def page(store: Store) -> dict[str, object]:
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", KEY[1])
    return row


def location(row: dict[str, object]) -> tuple[object, object]:
    return (row["archive_file"], row["archive_offset"])


def test_the_migration_adds_the_columns_and_the_view_shows_them(store: Store) -> None:
    assert "0008_archive" in applied_migrations(store)
    for table in ("page_meta", "page_versions", "pages"):
        assert {"archive_file", "archive_offset"} <= columns(store, table), table


def test_each_stored_fetch_keeps_the_location_of_its_response(store: Store) -> None:
    store.write([rec(1, archive_file="a.warc.gz", archive_offset=10)])
    assert location(page(store)) == ("a.warc.gz", 10)
    # The same content fetched again: its newer record is where the page now points.
    store.write([rec(1, at=T1, archive_file="b.warc.gz", archive_offset=20)])
    assert location(page(store)) == ("b.warc.gz", 20)
    # A fetch not archived (archiving off) with the same content: the older record
    # still holds that content, so it stays.
    store.write([rec(1, at=T2)])
    assert location(page(store)) == ("b.warc.gz", 20)
    # A 304 moves no location.
    store.write([Touch(*KEY, checked_at=T2)])
    assert location(page(store)) == ("b.warc.gz", 20)


def test_a_changed_page_keeps_its_old_location_on_the_old_version(store: Store) -> None:
    store.write([rec(1, "old words", archive_file="a.warc.gz", archive_offset=10)])
    store.write([rec(1, "new words", at=T1, archive_file="b.warc.gz", archive_offset=30)])
    [version] = rows(store, "SELECT * FROM page_versions")
    assert version["content"] == "old words" and location(version) == ("a.warc.gz", 10)
    assert location(page(store)) == ("b.warc.gz", 30)
    # New content without a record: the page has no location (the old one is not it).
    store.write([rec(1, "newer words", at=T2)])
    assert location(page(store)) == (None, None)
    newest = rows(store, "SELECT * FROM page_versions ORDER BY id DESC LIMIT 1")[0]
    assert location(newest) == ("b.warc.gz", 30)


def test_a_reextracted_record_moves_content_but_not_the_fetch_state(store: Store) -> None:
    store.write([rec(1, "old words", archive_file="a.warc.gz", archive_offset=10)])
    store.write(
        [
            StatusChange(*KEY, "suspected_missing", T1, "404", '[{"status": 404}]'),
            FetchFailure(*KEY, KEY[1], failed_at=T1, attempts=1, first_failed_at=T1),
        ]
    )
    before = page(store)
    result = store.write(
        [
            rec(
                1,
                "re-extracted words",
                next_check_at=before["next_check_at"],
                archive_file="a.warc.gz",
                archive_offset=10,
                reextracted=True,
            )
        ]
    )
    assert result.changed == [KEY]
    after = page(store)
    assert after["content"] == "re-extracted words"
    assert after["last_changed_at"] > T2  # when the stored content changed: now
    for column in (
        "status",
        "status_reason",
        "status_evidence",
        "status_changed_at",
        "last_seen_at",
        "last_checked_at",
        "fetched_at",
        "first_seen_at",
        "archive_file",
        "archive_offset",
    ):
        assert after[column] == before[column], column
    assert rows(store, "SELECT COUNT(*) AS n FROM fetch_attempts")[0]["n"] == 1  # kept
    [version] = rows(store, "SELECT * FROM page_versions")
    assert version["content"] == "old words" and location(version) == ("a.warc.gz", 10)


def test_archived_pages_lists_every_page_with_its_location(store: Store) -> None:
    store.write([rec(1, archive_file="a.warc.gz", archive_offset=10), rec(2)])
    store.write([rec(3, source_id="other")])
    pages = store.archived_pages(["s"])
    assert [(p.canonical_url, p.archive_file, p.archive_offset) for p in pages] == [
        ("https://example.com/p1", "a.warc.gz", 10),
        ("https://example.com/p2", None, None),
    ]
    assert pages[0].status == "active" and pages[0].fetched_at == T0
    assert store.archived_pages([]) == []
