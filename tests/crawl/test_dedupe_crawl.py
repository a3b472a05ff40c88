"""Exact and near duplicates across real crawls of the test site, and their consistency."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


key = site_key


def decisions(db_url: str) -> dict[str, tuple[Any, ...]]:
    """canonical_url -> (representative URL, kind, score) for every stored page."""
    rows = query(
        db_url,
        "SELECT p.canonical_url, r.canonical_url AS rep, p.duplicate_kind, p.duplicate_score "
        "FROM pages p LEFT JOIN pages r ON r.id = p.duplicate_of",
    )
    return {r["canonical_url"]: (r["rep"], r["duplicate_kind"], r["duplicate_score"]) for r in rows}


@coroutine_test
async def test_copies_and_near_copies_are_marked_and_stable(site: TestSite, db_url: str) -> None:
    crawler = await run_crawl(db_url, seeds=site.url)
    manifest = site.manifest()
    got = decisions(db_url)

    assert manifest["exact_duplicates"] and manifest["near_duplicates"]
    for dup in manifest["exact_duplicates"]:
        assert got[key(site, dup["path"])] == (key(site, dup["of"]), "exact", 1.0)
    for dup in manifest["near_duplicates"]:
        rep, kind, score = got[key(site, dup["path"])]
        assert (rep, kind) == (key(site, dup["of"]), "near")
        assert 0.85 <= score < 1.0
    # Unrelated articles sharing a vocabulary are never merged.
    for article in manifest["articles"]:
        assert got[key(site, article["path"])] == (None, None, None)
    marked = [u for u, d in got.items() if d[0] is not None]
    copies = {
        key(site, d["path"]) for d in manifest["exact_duplicates"] + manifest["near_duplicates"]
    }
    # Besides the copies, only the first article listing is marked: it repeats the home page.
    assert set(marked) - copies == {key(site, "/articles")}
    assert got[key(site, "/articles")][0] == key(site, "/")
    found = crawler.stats.get_value("kc/dedupe/exact", 0) + crawler.stats.get_value(
        "kc/dedupe/near", 0
    )
    assert found == len(marked)

    # A second crawl restores the state from the database and changes nothing.
    again = await run_crawl(db_url, seeds=site.url)
    assert decisions(db_url) == got
    assert again.stats.get_value("kc/dedupe/restored_pages") == len(got)
    assert again.stats.get_value("kc/dedupe/reassigned", 0) == 0


@coroutine_test
async def test_a_state_moved_out_of_memory_decides_the_same(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """Past KC_DEDUPE_MEMORY_PAGES the state moves into a temporary file mid-crawl; a
    store larger than that is restored straight into one: every decision is the same."""
    await run_crawl(db_url, seeds=site.url)
    expected = decisions(db_url)

    moved_url = f"sqlite:///{tmp_path}/moved.db"
    crawler = await run_crawl(moved_url, {"KC_DEDUPE_MEMORY_PAGES": 5}, seeds=site.url)
    assert crawler.stats.get_value("kc/dedupe/state_moved_at_pages") == 5
    assert crawler.stats.get_value("kc/dedupe/state_move_ms") is not None
    assert crawler.stats.get_value("kc/dedupe/state_move_failed") is None
    assert decisions(moved_url) == expected
    found = crawler.stats.get_value("kc/dedupe/exact", 0) + crawler.stats.get_value(
        "kc/dedupe/near", 0
    )
    assert found == sum(1 for d in expected.values() if d[0] is not None)

    again = await run_crawl(moved_url, {"KC_DEDUPE_MEMORY_PAGES": 0}, seeds=site.url)
    assert again.stats.get_value("kc/dedupe/state_moved_at_pages") == len(expected)
    assert again.stats.get_value("kc/dedupe/restored_pages") == len(expected)
    assert again.stats.get_value("kc/dedupe/reassigned", 0) == 0
    assert decisions(moved_url) == expected


@coroutine_test
async def test_a_full_dedupe_file_stops_the_crawl_and_loses_nothing(
    site: TestSite, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state's file fills up mid-crawl (SQLite's own "database or disk is full"):
    the crawl stops as failed, what it stored is right, and the next crawl stores the
    rest, each page once, with the decisions of a crawl that never failed."""
    await run_crawl(db_url, seeds=site.url)
    expected = decisions(db_url)

    from knowledge_crawler.crawl.dedupe_scratch import ScratchDedupeState
    from knowledge_crawler.pipelines import dedupe

    full_url = f"sqlite:///{tmp_path}/full.db"
    small = functools.partial(ScratchDedupeState, max_bytes=80 * 1024)
    monkeypatch.setattr(dedupe, "ScratchDedupeState", small)
    crawler = await run_crawl(full_url, {"KC_DEDUPE_MEMORY_PAGES": 0}, seeds=site.url)
    stats = crawler.stats
    assert stats.get_value("kc/dedupe/state_failed") == 1
    assert "full" in stats.get_value("kc/dedupe/error")
    assert stats.get_value("kc/outcome") == "failed"
    assert stats.get_value("finish_reason") == dedupe.DEDUPE_FAILED
    stored = decisions(full_url)
    assert 0 < len(stored) < len(expected)
    assert stats.get_value("kc/dedupe/state_dropped") >= 1
    for url, decision in stored.items():  # nothing judged against a broken state
        assert decision == expected[url], url
    # every page fetched but not judged is kept as a retry due at once
    retries = query(
        full_url, "SELECT canonical_url FROM fetch_attempts WHERE last_error = 'dedupe_failed'"
    )
    assert len(retries) == stats.get_value("kc/dedupe/state_dropped")
    assert not {r["canonical_url"] for r in retries} & set(stored)

    monkeypatch.undo()
    again = await run_crawl(full_url, seeds=site.url)
    assert again.stats.get_value("kc/outcome") == "finished"
    assert decisions(full_url) == expected
    rows = query(full_url, "SELECT canonical_url, count(*) AS n FROM pages GROUP BY 1")
    assert len(rows) == len(expected) and {r["n"] for r in rows} == {1}
    assert not query(full_url, "SELECT 1 FROM fetch_attempts WHERE last_error = 'dedupe_failed'")


def seeds_file(tmp_path: Path, site: TestSite, *paths: str, depth: int = 5) -> str:
    """A source "site" starting at ``paths`` (the whole site by default)."""
    urls = ", ".join(f'"{site.url.rstrip("/")}{p}"' for p in paths or ("/",))
    path = tmp_path / f"site-{len(list(tmp_path.glob('site-*.toml')))}.toml"
    path.write_text(f'[[source]]\nid = "site"\nstart_urls = [{urls}]\ndepth_limit = {depth}\n')
    return str(path)


@coroutine_test
async def test_a_representative_that_moves_away_releases_its_duplicates(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    manifest = site.manifest()
    by_path = {a["path"]: a["i"] for a in manifest["articles"]}
    exact = manifest["exact_duplicates"][0]
    near = manifest["near_duplicates"][0]
    await run_crawl(db_url, seeds=seeds_file(tmp_path, site))
    assert decisions(db_url)[key(site, exact["path"])][0] == key(site, exact["of"])

    # The originals are rewritten, their copies keep the old text, and only the
    # originals are fetched again: the copies must be re-evaluated from the store.
    site.mutate(by_path[exact["of"]], "rewrite", copies=False)
    site.mutate(by_path[near["of"]], "rewrite", copies=False)
    originals = seeds_file(tmp_path, site, exact["of"], near["of"], depth=0)
    crawler = await run_crawl(db_url, seeds=originals)
    assert crawler.stats.get_value("kc/extract/ok") == 2  # only they have new content
    got = decisions(db_url)

    # No pointer to an unrelated page remains: each copy is now its own representative,
    # or the duplicate of another page with its content (never the rewritten original).
    for dup in (exact, near):
        rep = got[key(site, dup["path"])][0]
        assert rep != key(site, dup["of"])
    assert got[key(site, exact["path"])] == (None, None, None)
    assert crawler.stats.get_value("kc/dedupe/reassigned", 0) >= 2
    # Every remaining pointer is backed by the content: same hash for exact pairs.
    rows = query(
        db_url,
        "SELECT p.content_hash AS h, r.content_hash AS rh, p.duplicate_kind AS kind "
        "FROM pages p JOIN pages r ON r.id = p.duplicate_of",
    )
    assert rows and all(r["h"] == r["rh"] for r in rows if r["kind"] == "exact")


@coroutine_test
async def test_a_small_change_keeps_the_copy_as_a_near_duplicate(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    manifest = site.manifest()
    exact = manifest["exact_duplicates"][1]
    i = {a["path"]: a["i"] for a in manifest["articles"]}[exact["of"]]
    await run_crawl(db_url, seeds=seeds_file(tmp_path, site))
    site.mutate(i, "append", copies=False)  # one review added to the original only
    await run_crawl(db_url, seeds=seeds_file(tmp_path, site, exact["of"], depth=0))
    rep, kind, score = decisions(db_url)[key(site, exact["path"])]
    assert (rep, kind) == (key(site, exact["of"]), "near")
    assert 0.85 <= score < 1.0


@coroutine_test
async def test_signatures_made_with_other_parameters_are_refused(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = seeds_file(tmp_path, site, "/about", depth=0)
    await run_crawl(db_url, seeds=seeds)
    before = query(db_url, "SELECT canonical_url, minhash FROM pages")
    with pytest.raises(ConfigError, match=r"made with mh1:p128:s1:k3, this crawl uses .*k4"):
        await run_crawl(db_url, {"KC_SHINGLE_SIZE": 4}, seeds=seeds)
    assert query(db_url, "SELECT canonical_url, minhash FROM pages") == before
    [meta] = query(db_url, "SELECT value FROM dataset_meta WHERE key = 'minhash_signature'")
    assert meta["value"].endswith(":k3")


@coroutine_test
async def test_dedupe_decisions_never_wait_on_the_store(
    site: TestSite, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """process_item decides from memory: the state is read once, when the spider opens."""
    from knowledge_crawler.pipelines.dedupe import DedupePipeline
    from knowledge_crawler.store.base import Store
    from knowledge_crawler.store.sqlite import SqliteStore

    deciding = threading.local()
    during_items: list[str] = []
    state_reads: list[str] = []

    def watch(name: str) -> None:
        method = getattr(SqliteStore, name)

        def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(deciding, "on", False):
                during_items.append(name)
            if name == "dedupe_state":
                state_reads.append(name)
            return method(self, *args, **kwargs)

        monkeypatch.setattr(SqliteStore, name, watched)

    for name in sorted(Store.__abstractmethods__ | {"query"}):
        watch(name)
    process_item = DedupePipeline.process_item

    def process_item_watched(self: DedupePipeline, item: Any) -> Any:
        deciding.on = True
        try:
            return process_item(self, item)
        finally:
            deciding.on = False

    monkeypatch.setattr(DedupePipeline, "process_item", process_item_watched)

    manifest = site.manifest()
    by_path = {a["path"]: a["i"] for a in manifest["articles"]}
    exact = manifest["exact_duplicates"][0]
    near = manifest["near_duplicates"][0]
    await run_crawl(db_url, seeds=seeds_file(tmp_path, site))
    site.mutate(by_path[exact["of"]], "rewrite", copies=False)
    site.mutate(by_path[near["of"]], "rewrite", copies=False)
    crawler = await run_crawl(db_url, seeds=seeds_file(tmp_path, site, exact["of"], near["of"]))

    assert crawler.stats.get_value("kc/dedupe/reassigned", 0) >= 2  # re-evaluation happened
    # ... and examined the duplicates of the two changed pages, not every page of the run
    assert crawler.stats.get_value("item_scraped_count") > 20
    assert 2 <= crawler.stats.get_value("kc/dedupe/reevaluated", 0) <= 4
    assert during_items == []
    assert state_reads == ["dedupe_state", "dedupe_state"]  # once per crawl
