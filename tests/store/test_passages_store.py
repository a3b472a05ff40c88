"""Passages and full-text search in the store: in step with content, in one transaction."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import (
    DuplicateUpdate,
    PageRecord,
    PassageRecord,
    StatusChange,
    Store,
    open_store,
)
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.passages import split_passages
from knowledge_crawler.transform.query import query_terms
from tests.store.backends import POSTGRES_ONLY, SQLITE_ONLY

T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-02T00:00:00.000000Z"


def page(n: int, content: str, at: str = T0, **kw: object) -> PageRecord:
    url = f"https://example.com/p{n}"
    record = PageRecord(
        source_id="s",
        canonical_url=url,
        url=url,
        final_url=url,
        fetched_at=at,
        http_status=200,
        content_hash=content_hash(content),
        content=content,
        title=kw.pop("title", f"Page {n}"),  # type: ignore[arg-type]
        word_count=len(content.split()),
        passages=[
            PassageRecord(p.id, p.ord, p.heading_path, p.text, p.word_count)
            for p in split_passages(content, source_id="s", canonical_url=url, max_words=20)
        ],
    )
    return replace(record, **kw)  # type: ignore[arg-type]


def passages(store: Store) -> list[dict[str, object]]:
    return [
        dict(r)
        for r in store.query(  # type: ignore[attr-defined]
            "SELECT p.seq, p.id, p.ord, p.content, m.canonical_url FROM passages p "
            "JOIN page_meta m ON m.id = p.page_id ORDER BY m.canonical_url, p.ord"
        )
    ]


def hits(store: Store, text: str, **kw: object) -> list[str]:
    found = store.search(query_terms(text).items, **kw)  # type: ignore[arg-type]
    return [r["canonical_url"] for r in found]


PUMP = (
    "## Pumps\n\nThe impeller spins the water outward.\n\n"
    "## Valves\n\nA check valve stops backflow."
)


def test_passages_are_written_with_the_content_and_searchable(store: Store) -> None:
    store.write([page(1, PUMP), page(2, "Nothing about plumbing here at all.")])
    stored = passages(store)
    assert [(p["canonical_url"], p["content"]) for p in stored] == [
        ("https://example.com/p1", "The impeller spins the water outward."),
        ("https://example.com/p1", "A check valve stops backflow."),
        ("https://example.com/p2", "Nothing about plumbing here at all."),
    ]
    [best] = store.search([("impeller",)], k=5)
    assert best["canonical_url"] == "https://example.com/p1"
    assert best["heading_path"] == ["Pumps"] and best["title"] == "Page 1"
    assert "**impeller**" in best["snippet"] and best["score"] > 0
    assert best["content"] == "The impeller spins the water outward."


def test_stemming_and_title_matches(store: Store) -> None:
    store.write([page(1, PUMP, title="Centrifugal pump guide"), page(2, "Valves and valving.")])
    assert hits(store, "spinning impellers") == ["https://example.com/p1"]
    assert hits(store, "centrifugal")[:1] == ["https://example.com/p1"]  # title only


def test_a_changed_page_is_re_split_and_unchanged_passages_keep_their_ids(store: Store) -> None:
    store.write([page(1, PUMP), page(2, "Other page text.")])
    before = {p["content"]: p for p in passages(store)}
    edited = PUMP.replace("A check valve stops backflow.", "A gate valve isolates the line.")
    store.write([page(1, edited, at=T1), page(2, "Other page text.", at=T1)])
    after = {p["content"]: p for p in passages(store)}
    spin = "The impeller spins the water outward."
    assert after[spin]["id"] == before[spin]["id"]
    assert "A check valve stops backflow." not in after
    assert hits(store, "backflow") == []  # the index forgot the old text
    assert hits(store, "isolates") == ["https://example.com/p1"]
    other = "Other page text."
    assert after[other]["seq"] == before[other]["seq"]  # an unchanged page is not rewritten


def test_duplicates_and_tombstones_are_left_out_and_sources_filter(store: Store) -> None:
    store.write(
        [
            page(1, PUMP),
            page(2, PUMP + "\n\nMirror."),
            page(3, "Impeller notes of another source.", source_id="t"),
        ]
    )
    assert set(hits(store, "impeller")) == {f"https://example.com/p{n}" for n in (1, 2, 3)}
    store.write(
        [
            DuplicateUpdate(
                ("s", "https://example.com/p2"), ("s", "https://example.com/p1"), "near", 0.9
            )
        ]
    )
    assert set(hits(store, "impeller")) == {"https://example.com/p1", "https://example.com/p3"}
    store.write([StatusChange("s", "https://example.com/p1", "tombstoned", T1, "gone (410)")])
    assert hits(store, "impeller") == ["https://example.com/p3"]
    assert hits(store, "impeller", source_id="s") == []


def test_a_retitled_page_is_reindexed_under_its_new_title(store: Store) -> None:
    store.write([page(1, PUMP, title="Old name")])
    store.write([page(1, PUMP, at=T1, title="Shiny name")])
    assert set(hits(store, "shiny")) == {"https://example.com/p1"}  # each of its passages
    assert hits(store, "old") == []


def test_pages_stored_before_passages_are_split_on_their_next_fetch(store: Store) -> None:
    store.write([replace(page(1, PUMP), passages=[])])
    assert store.pages_without_passages() == 1
    store.write([page(1, PUMP, at=T1)])  # same content: unchanged, but now split
    assert store.pages_without_passages() == 0
    assert hits(store, "impeller") == ["https://example.com/p1"]


def test_a_failed_batch_leaves_no_passage_behind(store: Store) -> None:
    bad = replace(page(2, "Impeller in a bad record."), canonical_url="not-a-url")
    store.write([page(1, PUMP), bad])  # the bad record is quarantined, the rest load
    assert {p["canonical_url"] for p in passages(store)} == {"https://example.com/p1"}
    assert hits(store, "bad record") == []


@SQLITE_ONLY
def test_a_query_the_index_cannot_read_is_a_value_error(store: Store) -> None:
    store.write([page(1, PUMP)])
    with pytest.raises(ValueError, match="cannot search"):
        store.search(raw='"unterminated', k=3)
    with pytest.raises(ValueError, match="cannot search"):
        store.search(raw="AND OR", k=3)
    assert store.search([], k=3) == []


@POSTGRES_ONLY
def test_a_tsquery_the_database_cannot_read_is_a_value_error(store: Store) -> None:
    """On PostgreSQL a raw query is to_tsquery syntax: operators, phrases, prefixes."""
    store.write([page(1, PUMP), page(2, "Nothing about plumbing here at all.")])
    with pytest.raises(ValueError, match="cannot search"):
        store.search(raw="impeller &", k=3)
    with pytest.raises(ValueError, match="cannot search"):
        store.search(raw="AND OR", k=3)
    assert store.search([], k=3) == []
    found = store.search(raw="impel:* & !backflow", k=3)
    assert [r["canonical_url"] for r in found] == ["https://example.com/p1"]
    assert [r["canonical_url"] for r in store.search(raw="check <-> valve", k=3)] == [
        "https://example.com/p1"
    ]


def test_common_words_narrow_the_ranking_without_changing_the_best(store: Store) -> None:
    """A word in most passages is ranked last, not first: the answer still comes first."""
    common = [page(n, f"Plumbing basics number {n}. Plumbing again.") for n in range(1, 40)]
    answer = page(99, "Plumbing for a sump pump: the float switch starts it.")
    store.write([*common, answer])
    found = store.search([("plumbing",), ("float",), ("switch",)], k=3)
    assert found[0]["canonical_url"] == "https://example.com/p99"
    assert len(found) == 3  # the common word still finds the others
    both = store.search([("plumbing",), ("float",)], k=50)
    assert len(both) == 40  # any-word search keeps every page with any of them


def test_export_passages_streams_each_passage_with_its_provenance(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    with open_store(url) as store:
        store.write([page(1, PUMP), page(2, "Second page words.")])
        store.write(
            [
                DuplicateUpdate(
                    ("s", "https://example.com/p2"), ("s", "https://example.com/p1"), "near", 0.9
                )
            ]
        )
    result = CliRunner().invoke(cli, ["export", "--passages", "--db", url])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [(r["canonical_url"], r["ord"], r["heading_path"]) for r in rows] == [
        ("https://example.com/p1", 0, ["Pumps"]),
        ("https://example.com/p1", 1, ["Valves"]),
    ]
    first = rows[0]
    assert first["content"] == "The impeller spins the water outward."
    assert first["title"] == "Page 1" and first["version"] == 1 and first["status"] == "active"
    assert first["page_content_hash"] == content_hash(PUMP) and len(first["passage_id"]) == 32
    everything = CliRunner().invoke(
        cli, ["export", "--passages", "--include-duplicates", "--db", url]
    )
    assert len(everything.output.splitlines()) == 3


def test_a_page_split_another_way_is_re_split_on_its_next_fetch(store: Store) -> None:
    """A new KC_PASSAGE_WORDS reaches the stored pages as they are fetched again."""
    text = " ".join(f"word{i}" for i in range(60))
    store.write([page(1, text)])  # 20 words a passage: 3
    assert len(passages(store)) == 3
    url = "https://example.com/p1"
    longer = [
        PassageRecord(p.id, p.ord, p.heading_path, p.text, p.word_count)
        for p in split_passages(text, source_id="s", canonical_url=url, max_words=100)
    ]
    store.write([replace(page(1, text, at=T1), passages=longer)])  # same content
    assert [p["content"] for p in passages(store)] == [text]
