"""The same crawl into PostgreSQL and into SQLite stores the same pages (F-SCALE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.store import open_store
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, last_run, run_crawl

pytestmark = pytest.mark.crawl

#: one request at a time: which of two identical pages is fetched first (the
#: representative of the other) is then the same in both crawls
SERIAL = {"CONCURRENT_REQUESTS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}

PAGES = (
    "SELECT p.source_id, p.canonical_url, p.content_hash, p.title, p.status, p.http_status, "
    "p.duplicate_kind, r.canonical_url AS duplicate_of, "
    "(SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) AS versions "
    "FROM pages p LEFT JOIN pages r ON r.id = p.duplicate_of"
)


def stored(url: str) -> dict[tuple[str, str], dict[str, Any]]:
    with open_store(url) as store:
        rows = [dict(r) for r in store.query(PAGES)]  # type: ignore[attr-defined]
    return {(r["source_id"], r["canonical_url"]): r for r in rows}


def run_row(url: str) -> dict[str, Any]:
    with open_store(url) as store:
        return dict(store.query("SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1")[0])  # type: ignore[attr-defined]


@coroutine_test
async def test_a_crawl_into_postgresql_stores_what_a_crawl_into_sqlite_does(
    site: TestSite, db_url: str, postgres_url: str, tmp_path: Path
) -> None:
    settings = {**SERIAL, "KC_ARCHIVE_DIR": str(tmp_path / "archive")}
    for url in (db_url, postgres_url):
        await run_crawl(url, settings, seeds=site.url)
    first = stored(db_url)
    assert len(first) > 40
    assert any(r["duplicate_of"] for r in first.values())
    assert stored(postgres_url) == first
    # The site changes; a second crawl of each revalidates and stores the same changes.
    for i, kind in enumerate(("price", "text", "whitespace")):
        site.mutate(i, kind)
    for url in (db_url, postgres_url):
        await run_crawl(url, settings, seeds=site.url)
    second = stored(db_url)
    assert sum(r["versions"] for r in second.values()) == 2
    assert stored(postgres_url) == second
    counters = ("pages_new", "responses_200_changed", "responses_304", "upserts_completed")
    sqlite_run, postgres_run = last_run(db_url), run_row(postgres_url)
    assert {c: postgres_run[c] for c in counters} == {c: sqlite_run[c] for c in counters}
    assert postgres_run["outcome"] == "finished"


@coroutine_test
async def test_a_batch_whose_commit_was_lost_counts_once_in_its_run(
    site: TestSite, postgres_url: str, tmp_path: Path
) -> None:
    """The COMMIT of the first batch that stores pages reaches the server, which commits,
    and the connection is cut before its answer (``tests.pg_proxy``); asking at once
    whether it committed fails too (the next connection is refused). The store pipeline
    keeps the batch and retries it under the same id: the retry finds it applied and takes
    its result, so the run's counters tell each page once."""
    from tests.pg_proxy import CommitCutter

    settings = {"KC_ARCHIVE_DIR": str(tmp_path / "archive"), "KC_STORE_BATCH_SIZE": 10}
    with CommitCutter(postgres_url) as cutter:
        url = cutter.url(postgres_url)
        open_store(url).close()  # migrated before the crawl, whose COMMITs are watched
        cutter.arm(after=b"COPY page_content", refuse=1)  # the first batch with new pages
        crawler = await run_crawl(url, settings, seeds=site.url)
        assert (cutter.cuts, cutter.refused) == (1, 1)
    stats = crawler.stats.get_stats()
    assert stats["kc/store/retries"] >= 1
    pages = stored(postgres_url)
    run = run_row(postgres_url)
    assert run["pages_new"] == len(pages) == stats["kc/store/inserted"]
    assert run["upserts_completed"] == len(pages)
    assert run["responses_200_unchanged"] == 0


@pytest.mark.parametrize("where", ["working folder", "KC_RESCUE_DIR"])
@coroutine_test
async def test_what_a_postgresql_crawl_could_not_store_is_loaded_by_its_next_crawl(
    site: TestSite,
    postgres_url: str,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    """The server goes out of reach for longer than the retry window: the crawl stops and
    keeps the rows it held in a file named for its database, in its working folder or in
    ``KC_RESCUE_DIR`` (made if missing). A crawl of another database with the same folder
    leaves the file alone; the next crawl of this one (with ``KC_RESCUE_DIR``, from another
    working folder) loads it first, and ends with the rows of a crawl never disturbed."""
    import json

    from tests.pg_proxy import CommitCutter

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    folder = work if where == "working folder" else tmp_path / "rescue" / "kc"
    settings: dict[str, object] = {
        "KC_ARCHIVE_DIR": str(tmp_path / "archive"),
        "KC_STORE_BATCH_SIZE": 10,
        "KC_STORE_RETRY_SECONDS": 1.0,
        # the failed crawl cannot let go of its writer lease (the server is gone): the
        # next crawl waits for it to run out
        "KC_LEASE_TTL_SECONDS": 2.0,
        "KC_LEASE_WAIT_SECONDS": 30.0,
    }
    if where == "KC_RESCUE_DIR":
        settings["KC_RESCUE_DIR"] = str(folder)
    with CommitCutter(postgres_url) as cutter:
        url = cutter.url(postgres_url)
        open_store(url).close()
        # the first batch with new pages never commits, and the server is gone from then on
        cutter.arm(after=b"COPY page_content", committed=False, refuse=1_000_000)
        failed = await run_crawl(url, settings, seeds=site.url)
        assert failed.stats.get_value("kc/store/failed"), failed.stats.get_stats()
        [rescue_file] = folder.glob("knowledge-*.unsaved-*.jsonl")
        lines = [json.loads(line) for line in rescue_file.read_text().splitlines()]
        rescued = {
            (d["page"]["source_id"], d["page"]["canonical_url"]) for d in lines if "page" in d
        }
        assert rescued, "nothing was rescued: the cut came after the crawl"
        assert not rescued & set(stored(postgres_url))

        # a crawl of another database, from the same folder, is not this file's
        calm = await run_crawl(db_url, settings, seeds=site.url)
        assert calm.stats.get_value("kc/rescue/files") is None
        assert rescue_file.is_file()

        assert not list(work.glob("*.jsonl")) or folder == work
        cutter.stop_refusing()
        if where == "KC_RESCUE_DIR":
            elsewhere = tmp_path / "elsewhere"
            elsewhere.mkdir()
            monkeypatch.chdir(elsewhere)
        again = await run_crawl(url, settings, seeds=site.url)
    assert again.stats.get_value("kc/rescue/files") == 1
    assert again.stats.get_value("kc/rescue/pages") == len(rescued)
    assert not rescue_file.exists()
    assert rescue_file.with_name(rescue_file.name + ".loaded").is_file()
    assert set(stored(postgres_url)) == set(stored(db_url))
