"""The store contract: upsert semantics, batches, quarantine, runs, migrations."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from knowledge_crawler.errors import SchemaMismatchError, StoreError
from knowledge_crawler.store import (
    HEAD_COUNTERS,
    DuplicateUpdate,
    PageRecord,
    Store,
    open_store,
    utc_now,
)
from knowledge_crawler.transform.fingerprint import content_hash
from tests.store.backends import applied_migrations, upsert_pages

T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-02T00:00:00.000000Z"


def rec(n: int, text: str | None = None, at: str = T0, **kw: object) -> PageRecord:
    text = text if text is not None else f"page {n} body"
    base = PageRecord(
        source_id="s",
        canonical_url=f"https://example.com/p{n}",
        url=f"http://example.com/p{n}?utm_source=x",
        final_url=f"http://example.com/p{n}",
        fetched_at=at,
        http_status=200,
        content_hash=content_hash(text),
        content=text,
        title=f"Page {n}",
        headings=("Intro",),
        word_count=len(text.split()),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def rows(store: Store, sql: str, *params: object) -> list[dict[str, object]]:
    return [dict(r) for r in store.query(sql, params)]  # type: ignore[attr-defined]


def test_insert_then_unchanged_keeps_first_seen_and_content(store: Store) -> None:
    r1 = upsert_pages(store, [rec(1), rec(2)])
    assert len(r1.inserted) == 2 and not r1.changed and not r1.unchanged
    again = upsert_pages(store, [rec(1, at=T1)])
    assert again.unchanged == [("s", "https://example.com/p1")]
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", "https://example.com/p1")
    assert row["first_seen_at"] == T0
    assert row["last_seen_at"] == T1 and row["last_checked_at"] == T1
    assert row["last_changed_at"] == T0  # the hash did not move
    assert row["status"] == "active" and row["headings"] == '["Intro"]'
    assert rows(store, "SELECT COUNT(*) AS n FROM page_versions")[0]["n"] == 0


def test_changed_hash_rewrites_content_and_keeps_a_version(store: Store) -> None:
    upsert_pages(store, [rec(1, "price $49")])
    result = upsert_pages(store, [rec(1, "price $59", at=T1)])
    assert result.changed == [("s", "https://example.com/p1")]
    [row] = rows(store, "SELECT * FROM pages")
    assert row["content"] == "price $59" and row["last_changed_at"] == T1
    assert row["first_seen_at"] == T0
    [version] = rows(store, "SELECT * FROM page_versions")
    assert version["content"] == "price $49" and version["fetched_at"] == T0


def test_one_row_per_identity_across_sources(store: Store) -> None:
    result = upsert_pages(store, [rec(1), rec(1, source_id="other"), rec(1)])
    assert rows(store, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 2
    # The repeat in the same batch is no second insert.
    assert len(result.inserted) == 2 and result.unchanged == [("s", "https://example.com/p1")]


def test_a_page_changing_twice_in_one_batch_keeps_both_versions(store: Store) -> None:
    upsert_pages(store, [rec(1, "first")])
    result = upsert_pages(store, [rec(1, "second", at=T1), rec(1, "third", at=T1)])
    assert result.changed == [("s", "https://example.com/p1")] * 2
    versions = rows(store, "SELECT content FROM page_versions ORDER BY id")
    assert [v["content"] for v in versions] == ["first", "second"]
    assert rows(store, "SELECT content FROM pages")[0]["content"] == "third"


def test_bad_record_is_quarantined_and_the_rest_load(store: Store) -> None:
    bad = rec(2, content_hash="not-a-sha256")
    worse = rec(3, http_status=999)
    result = upsert_pages(store, [rec(1), bad, worse, rec(4)], run_id=None)
    assert sorted(result.inserted) == [
        ("s", "https://example.com/p1"),
        ("s", "https://example.com/p4"),
    ]
    assert [k for k, _ in result.quarantined] == [bad.key, worse.key]
    assert "check constraint" in result.quarantined[0][1].lower()  # said by either backend
    q = rows(store, "SELECT canonical_url, error FROM quarantine ORDER BY id")
    assert [r["canonical_url"] for r in q] == [bad.canonical_url, worse.canonical_url]
    urls = {r["canonical_url"] for r in rows(store, "SELECT canonical_url FROM pages")}
    assert urls == {"https://example.com/p1", "https://example.com/p4"}


def test_failed_batch_leaves_no_half_loaded_change(store: Store) -> None:
    upsert_pages(store, [rec(1, "old text")])
    # p1 changes in a batch with an offender: p1's change and its version land once.
    result = upsert_pages(store, [rec(1, "new text", at=T1), rec(2, content_hash="x")])
    assert result.changed == [("s", "https://example.com/p1")]
    assert rows(store, "SELECT COUNT(*) AS n FROM page_versions")[0]["n"] == 1


def test_duplicate_of_points_at_the_representative(store: Store) -> None:
    same = "the same words"
    upsert_pages(
        store,
        [
            rec(1, same),
            rec(2, same, duplicate_of=("s", "https://example.com/p1"), duplicate_kind="exact"),
        ],
    )
    got = rows(
        store,
        "SELECT d.canonical_url AS dup, r.canonical_url AS rep, d.duplicate_kind AS kind "
        "FROM pages d JOIN pages r ON r.id = d.duplicate_of",
    )
    assert got == [
        {"dup": "https://example.com/p2", "rep": "https://example.com/p1", "kind": "exact"}
    ]
    state = list(store.dedupe_state())
    assert [r.canonical_url for r in state] == ["https://example.com/p1", "https://example.com/p2"]
    assert state[0].duplicate_of is None
    assert state[1].duplicate_of == ("s", "https://example.com/p1")


def test_runs_record_counters(store: Store) -> None:
    run = store.start_run(spider="knowledge", sources=["s"], mode="crawl", pid=7, host="h")
    store.finish_run(
        run, reason="finished", outcome="finished", counters={"pages_new": 3, "kc/other": 7}
    )
    [report_run] = store.stats()["runs"]
    assert report_run["pages_new"] == 3 and report_run["finish_reason"] == "finished"
    assert report_run["outcome"] == "finished"
    assert (report_run["pid"], report_run["host"], report_run["job_id"]) == (7, "h", None)
    assert set(HEAD_COUNTERS) <= set(report_run)


def test_stats_sanity_checks(store: Store) -> None:
    now = utc_now()
    upsert_pages(store, [rec(1, "same", at=now), rec(2, "same", at=now), rec(3, "other", at=T0)])
    sanity = store.stats()["sanity"]
    assert sanity["total_rows"] == sanity["distinct_identities"] == 3
    assert sanity["shared_content_hashes"] == 1
    assert sanity["stale_pages"] == 1


def test_migrations_are_recorded_and_reopen_is_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    with open_store(url) as s:
        upsert_pages(s, [rec(1)])
        first = applied_migrations(s)
    with open_store(url) as s:
        assert applied_migrations(s) == first
        assert s.stats()["sanity"]["total_rows"] == 1


def test_refuses_a_database_from_a_newer_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    open_store(url).close()
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute("INSERT INTO schema_migrations VALUES ('9999_future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaMismatchError, match="9999_future"):
        open_store(url)


def test_wal_and_parent_folder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/nested/dir/k.db"
    with open_store(url) as s:
        assert rows(s, "PRAGMA journal_mode")[0]["journal_mode"] == "wal"
    assert (tmp_path / "nested/dir/k.db").exists()


def test_unknown_url_scheme() -> None:
    with pytest.raises(StoreError, match="unsupported"):
        open_store("mysql://x")


def test_a_representative_counts_from_its_own_record_on_in_a_batch(store: Store) -> None:
    """In one batch, a duplicate finds its representative when the representative's record
    came before it (new or stored), and is stored as no duplicate when it comes after and
    was not stored: the same on every database, whichever rows are inserted or updated."""

    def p(n: int) -> tuple[str, str]:
        return ("s", f"https://example.com/p{n}")

    upsert_pages(store, [rec(1, "one"), rec(2, "two")])  # p1, p2 stored before the batch
    result = upsert_pages(
        store,
        [
            rec(3, "three"),  # new representative first ...
            rec(4, "three", duplicate_of=p(3), duplicate_kind="exact"),  # ... a new duplicate
            rec(1, "three", at=T1, duplicate_of=p(3), duplicate_kind="exact"),  # a stored one
            rec(5, "five", duplicate_of=p(6), duplicate_kind="near"),  # its representative ...
            rec(2, "five", at=T1, duplicate_of=p(6), duplicate_kind="near"),
            rec(6, "five"),  # ... comes after: not stored yet
            rec(7, "seven", duplicate_of=p(2), duplicate_kind="near"),  # stored before
        ],
    )
    got = {
        r["dup"]: r["rep"]
        for r in rows(
            store,
            "SELECT d.canonical_url AS dup, r.canonical_url AS rep "
            "FROM page_meta d LEFT JOIN page_meta r ON r.id = d.duplicate_of",
        )
    }
    u = "https://example.com/p"
    assert got == {
        f"{u}1": f"{u}3",
        f"{u}2": None,
        f"{u}3": None,
        f"{u}4": f"{u}3",
        f"{u}5": None,
        f"{u}6": None,
        f"{u}7": f"{u}2",
    }
    assert sorted(result.unlinked) == [p(2), p(5)]
    assert sorted(result.inserted) == [p(3), p(4), p(5), p(6), p(7)]
    assert sorted(result.changed) == [p(1), p(2)]


def test_the_same_page_twice_in_a_batch_is_written_in_order(store: Store) -> None:
    result = upsert_pages(store, [rec(1, "first"), rec(1, "second", at=T1)])
    assert result.inserted == [("s", "https://example.com/p1")]
    assert result.changed == [("s", "https://example.com/p1")]
    [page] = rows(store, "SELECT content, fetched_at FROM pages")
    assert page == {"content": "second", "fetched_at": T1}
    [version] = rows(store, "SELECT content FROM page_versions")
    assert version == {"content": "first"}


def test_dedupe_state_carries_every_pages_signature(store: Store) -> None:
    upsert_pages(
        store,
        [
            rec(1, "a b c", minhash=b"sig1", minhash_params="mh1:x"),
            rec(
                2,
                "a b c d",
                minhash=b"sig2",
                minhash_params="mh1:x",
                duplicate_of=("s", "https://example.com/p1"),
                duplicate_kind="near",
                duplicate_score=0.9,
            ),
        ],
    )
    rows = {r.canonical_url: r for r in store.dedupe_state()}
    assert rows["https://example.com/p1"].minhash == b"sig1"
    # A duplicate's signature too: it is decided again when its representative changes.
    assert rows["https://example.com/p2"].minhash == b"sig2"
    assert rows["https://example.com/p2"].minhash_params == "mh1:x"
    assert rows["https://example.com/p2"].duplicate_of == ("s", "https://example.com/p1")
    assert rows["https://example.com/p2"].duplicate_kind == "near"
    [dep] = store.dependents(("s", "https://example.com/p1"))
    assert dep.key == ("s", "https://example.com/p2") and dep.minhash == b"sig2"
    assert dep.duplicate_score == 0.9


def test_duplicate_updates_apply_in_the_same_transaction(store: Store) -> None:
    same = "shared words"
    upsert_pages(
        store,
        [
            rec(1, same),
            rec(
                2,
                same,
                duplicate_of=("s", "https://example.com/p1"),
                duplicate_kind="exact",
                duplicate_score=1.0,
            ),
        ],
    )
    # p1 changes; p2 is re-decided as a representative in the same call.
    result = upsert_pages(
        store,
        [rec(1, "new words", at=T1)],
        duplicate_updates=[DuplicateUpdate(("s", "https://example.com/p2"), None)],
    )
    assert result.changed == [("s", "https://example.com/p1")]
    assert store.dependents(("s", "https://example.com/p1")) == []
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", "https://example.com/p2")
    assert row["duplicate_of"] is None and row["duplicate_kind"] is None
    assert store.duplicate_clusters() == []


def test_duplicate_clusters(store: Store) -> None:
    p1 = ("s", "https://example.com/p1")
    upsert_pages(
        store,
        [
            rec(1, "x y"),
            rec(2, "x y", duplicate_of=p1, duplicate_kind="exact", duplicate_score=1.0),
            rec(3, "x y z", duplicate_of=p1, duplicate_kind="near", duplicate_score=0.91),
        ],
    )
    [cluster] = store.duplicate_clusters()
    assert cluster["representative"]["canonical_url"] == "https://example.com/p1"
    assert [(d["kind"], d["score"]) for d in cluster["duplicates"]] == [
        ("exact", 1.0),
        ("near", 0.91),
    ]
    assert [d["kind"] for d in store.duplicate_clusters("near")[0]["duplicates"]] == ["near"]
    assert store.stats()["duplicates"] == {"clusters": 1, "exact": 1, "near": 1}


def test_meta_values(store: Store) -> None:
    assert store.get_meta("minhash_signature") is None
    store.set_meta("minhash_signature", "mh1:p128:s1:k3")
    store.set_meta("minhash_signature", "mh1:p128:s1:k3")
    assert store.get_meta("minhash_signature") == "mh1:p128:s1:k3"


def test_unchanged_revisit_writes_no_content(tmp_path: Path) -> None:
    """Content lives apart from the metadata: a revisit with the same hash never writes it."""
    url = f"sqlite:///{tmp_path}/w.db"
    with open_store(url) as store:
        upsert_pages(store, [rec(1, "some text"), rec(2, "other text")])
    conn = sqlite3.connect(tmp_path / "w.db")
    conn.executescript(
        """
        CREATE TABLE content_writes (page_id INTEGER);
        CREATE TRIGGER log_update AFTER UPDATE ON page_content
        BEGIN INSERT INTO content_writes VALUES (new.page_id); END;
        CREATE TRIGGER log_insert AFTER INSERT ON page_content
        BEGIN INSERT INTO content_writes VALUES (new.page_id); END;
        """
    )
    conn.close()
    with open_store(url) as store:
        upsert_pages(store, [rec(1, "some text", at=T1), rec(2, "other text, changed", at=T1)])
        writes = rows(
            store, "SELECT p.canonical_url FROM content_writes w JOIN pages p ON p.id = w.page_id"
        )
        assert [w["canonical_url"] for w in writes] == ["https://example.com/p2"]
        [p1] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", "https://example.com/p1")
        assert p1["last_seen_at"] == T1 and p1["content"] == "some text"
