"""A per-site spider's extra fields: ``page_meta.extra``, a JSON object written with every fetch."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from knowledge_crawler.store import Store, open_store
from knowledge_crawler.store.migrations import MIGRATIONS
from tests.store.test_contract import T1, rec, rows
from tests.store.test_migrations import old_database

URL = "https://example.com/p1"


def extra_of(store: Store, url: str = URL) -> object:
    [row] = rows(store, "SELECT extra FROM pages WHERE canonical_url = ?", url)
    return json.loads(str(row["extra"]))


def test_stored_with_the_page_and_empty_by_default(store: Store) -> None:
    store.write([rec(1, extra={"price": 22.0, "tags": ["a", "b"], "note": "é"}), rec(2)])
    assert extra_of(store) == {"price": 22.0, "tags": ["a", "b"], "note": "é"}
    assert extra_of(store, "https://example.com/p2") == {}


def test_rewritten_by_every_fetch_even_when_the_content_did_not_change(store: Store) -> None:
    store.write([rec(1, extra={"price": 22.0, "in_stock": True})])
    result = store.write([rec(1, at=T1, extra={"price": 34.5, "in_stock": False})])
    assert result.unchanged == [("s", URL)]
    assert extra_of(store) == {"price": 34.5, "in_stock": False}
    store.write([rec(1, at=T1)])  # a fetch without extras leaves none
    assert extra_of(store) == {}


def test_a_reextraction_keeps_the_stored_extras(store: Store) -> None:
    store.write([rec(1, extra={"price": 22.0})])
    store.write([rec(1, "re-extracted words", reextracted=True)])
    assert extra_of(store) == {"price": 22.0}
    [row] = rows(store, "SELECT content FROM pages WHERE canonical_url = ?", URL)
    assert row["content"] == "re-extracted words"


def test_a_record_whose_extras_are_not_json_is_quarantined(store: Store) -> None:
    bad = rec(2, extra={"price": float("nan")})
    result = store.write([rec(1), bad, rec(3)])
    assert [key for key, _ in result.quarantined] == [bad.key]
    assert sorted(result.inserted) == [("s", URL), ("s", "https://example.com/p3")]
    [q] = rows(store, "SELECT record FROM quarantine")
    assert "price" in str(q["record"])


def test_exported_with_each_page(store: Store) -> None:
    store.write([rec(1, extra={"sku": "A-1"}), rec(2)])
    assert [p["extra"] for p in store.export_pages()] == [{"sku": "A-1"}, {}]


def test_migration_gives_existing_pages_an_empty_object(tmp_path: Path) -> None:
    assert "0010_page_extra" in [m.name for m in MIGRATIONS]
    db = tmp_path / "old.db"
    old_database(db)
    with open_store(f"sqlite:///{db}") as store:
        got = rows(store, "SELECT id, extra FROM pages ORDER BY id")
        assert {r["extra"] for r in got} == {"{}"} and len(got) == 5
        store.write([replace(rec(10), extra={"k": 1})])
        assert extra_of(store, "https://example.com/p10") == {"k": 1}
