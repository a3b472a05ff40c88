"""Real crawls of the test site while the database fails: no page lost, none written twice.

Another writer's ``BEGIN EXCLUSIVE`` on a second connection (shorter, then
longer than the retry window), writes that fail on purpose on the real store,
and a record the database refuses.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals

from knowledge_crawler.crawl import runtime as runtime_module
from knowledge_crawler.errors import TransientStoreError
from knowledge_crawler.items import PageItem
from knowledge_crawler.store import PageRecord
from knowledge_crawler.store.sqlite import SqliteStore
from knowledge_crawler.testsite import TestSite
from knowledge_crawler.transform.canonical import canonical_url
from tests.faults import FlakyStore, hold_lock, stored_rows
from tests.helpers import coroutine_test, crawl_settings, query

pytestmark = pytest.mark.crawl

Key = tuple[str, str]

#: small batches flushed often, so a lock lands in the middle of the crawl
SETTINGS: dict[str, Any] = {
    "KC_STORE_BATCH_SIZE": 5,
    "KC_STORE_FLUSH_SECONDS": 0.1,
    "KC_STORE_BUSY_TIMEOUT": 0.2,
    "KC_STORE_RETRY_SECONDS": 30,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
}


async def crawl(db_url: str, site: TestSite, **settings: Any) -> tuple[Any, list[Key]]:
    """Crawl the site; the finished crawler and the key of every page item it scraped."""
    from scrapy.crawler import AsyncCrawlerRunner

    from knowledge_crawler.spiders.knowledge import KnowledgeSpider

    runner = AsyncCrawlerRunner(crawl_settings(db_url, **{**SETTINGS, **settings}))
    crawler = runner.create_crawler(KnowledgeSpider)
    scraped: list[Key] = []

    def on_item(item: Any) -> None:
        if isinstance(item, PageItem):
            scraped.append((item.source_id, item.canonical_url))

    crawler.signals.connect(on_item, signal=signals.item_scraped)
    await crawler.crawl_async(seeds=site.url)
    return crawler, scraped


def stored(db_url: str) -> list[Key]:
    return [
        (r["source_id"], r["canonical_url"])
        for r in query(db_url, "SELECT source_id, canonical_url FROM page_meta ORDER BY id")
    ]


def last_run(db_url: str) -> dict[str, Any]:
    return query(db_url, "SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1")[0]


def use_store(monkeypatch: pytest.MonkeyPatch, factory: Any) -> list[SqliteStore]:
    """Open the crawl's store with ``factory(url, busy_timeout=...)``; the stores opened."""
    opened: list[SqliteStore] = []

    def open_store(url: str, *, busy_timeout: float = 10.0) -> SqliteStore:
        store = factory(url, busy_timeout=busy_timeout)
        opened.append(store)
        return store

    monkeypatch.setattr(runtime_module, "open_store", open_store)
    return opened


@coroutine_test
async def test_a_lock_longer_than_the_busy_timeout_mid_crawl_loses_nothing(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    path = db_url.removeprefix("sqlite:///")
    # Another writer takes the database once 10 rows are in, for 3x the busy timeout.
    holder, locked = hold_lock(path, seconds=0.6, when=lambda: stored_rows(path) >= 10)
    crawler, scraped = await crawl(db_url, site)
    holder.join()
    assert locked.is_set()
    assert crawler.stats.get_value("kc/store/retries", 0) >= 1, "the lock never hit a write"

    rows = stored(db_url)
    assert len(rows) == len(set(rows)) == len(scraped) == len(set(scraped))  # none twice
    assert set(rows) == set(scraped)  # none lost
    assert query(db_url, "SELECT COUNT(*) AS n FROM quarantine")[0]["n"] == 0
    # The same as a crawl that no one disturbed.
    calm_url = f"sqlite:///{tmp_path}/calm.db"
    await crawl(calm_url, site)
    assert set(stored(calm_url)) == set(rows)

    run = last_run(db_url)
    assert run["outcome"] == "finished" and run["finish_reason"] == "finished"
    assert run["upserts_completed"] == run["pages_new"] == len(rows)
    assert crawler.stats.get_value("kc/store/upserted") == len(rows)
    assert not crawler.stats.get_value("kc/store/failed")


@coroutine_test
async def test_writes_that_fail_are_retried_and_every_page_stored(
    site: TestSite, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def flaky(url: str, **kw: Any) -> FlakyStore:
        store = FlakyStore(url, **kw)
        store.fail_upserts = [
            TransientStoreError("cannot write to k.db: database is locked"),
            TransientStoreError("cannot write to k.db: disk I/O error"),
        ]
        return store

    opened = use_store(monkeypatch, flaky)
    crawler, scraped = await crawl(db_url, site)
    [store] = opened
    assert not store.fail_upserts  # both failures happened
    rows = stored(db_url)
    assert len(rows) == len(set(scraped)) == len(scraped) and set(rows) == set(scraped)
    assert query(db_url, "SELECT COUNT(*) AS n FROM quarantine")[0]["n"] == 0
    assert crawler.stats.get_value("kc/store/retries") == 2
    assert crawler.stats.get_value("kc/store/upserted") == len(rows)
    run = last_run(db_url)
    assert run["outcome"] == "finished" and run["upserts_completed"] == len(rows)


@coroutine_test
async def test_a_lock_longer_than_the_retry_window_stops_the_crawl_and_rescues_the_rows(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    path = db_url.removeprefix("sqlite:///")
    rescued = lambda: list(tmp_path.glob("knowledge.db.unsaved-*.jsonl"))  # noqa: E731
    # The lock comes once 10 rows are in and holds until the crawl has given up
    # and written its rescue file.
    holder, locked = hold_lock(
        path, when=lambda: stored_rows(path) >= 10, until=lambda: bool(rescued())
    )
    crawler, scraped = await crawl(
        db_url, site, KC_STORE_RETRY_SECONDS=1.0, KC_STORE_BUSY_TIMEOUT=0.1
    )
    holder.join()
    assert locked.is_set()

    stats = crawler.stats
    assert stats.get_value("kc/store/failed") == 1
    assert stats.get_value("kc/outcome") == "failed"
    assert "database is locked" in stats.get_value("kc/store/error")
    assert path in stats.get_value("kc/store/error")
    [rescue_file] = rescued()
    assert stats.get_value("kc/store/rescue_file") == str(rescue_file)
    lines = [json.loads(line) for line in rescue_file.read_text().splitlines()]
    in_file = [(p["page"]["source_id"], p["page"]["canonical_url"]) for p in lines if "page" in p]
    in_db = stored(db_url)
    # Every page scraped is in the database or in the rescue file: once, not both.
    assert len(in_db) == len(set(in_db)) and len(in_file) == len(set(in_file))
    assert not set(in_db) & set(in_file)
    assert sorted(in_db + in_file) == sorted(set(scraped)) and len(scraped) == len(set(scraped))
    assert in_file, "the crawl stored everything before the lock: nothing was rescued"
    assert query(db_url, "SELECT COUNT(*) AS n FROM quarantine")[0]["n"] == 0

    run = last_run(db_url)
    assert run["outcome"] == "failed" and run["finish_reason"] == "store_failed"
    assert run["upserts_completed"] == len(in_db) == stats.get_value("kc/store/upserted")
    assert stats.get_value("kc/store/rescued") == len(in_file)


@coroutine_test
async def test_a_record_the_database_refuses_is_the_only_one_quarantined(
    site: TestSite, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = site.manifest()
    copy = manifest["exact_duplicates"][0]
    original = canonical_url(site.url.rstrip("/") + copy["of"])

    class OneBadRecord(SqliteStore):
        """The real store; one page arrives with a status the database refuses."""

        def write(self, operations: Any, **kw: Any) -> Any:
            return super().write([self._spoil(op) for op in operations], **kw)

        @staticmethod
        def _spoil(op: Any) -> Any:
            if isinstance(op, PageRecord) and op.canonical_url == original:
                return replace(op, http_status=999)
            return op

    use_store(monkeypatch, OneBadRecord)
    crawler, scraped = await crawl(db_url, site)

    [bad] = query(db_url, "SELECT canonical_url, error FROM quarantine")
    assert bad["canonical_url"] == original and "CHECK constraint failed" in bad["error"]
    rows = stored(db_url)
    assert set(rows) == set(scraped) - {(k[0], original) for k in scraped}
    assert len(rows) == len(scraped) - 1
    # Its copies are stored, pointing at nothing rather than at a page that is not there.
    copies = query(
        db_url,
        "SELECT canonical_url, duplicate_of, duplicate_kind, duplicate_score FROM page_meta "
        "WHERE canonical_url = ?",
        canonical_url(site.url.rstrip("/") + copy["path"]),
    )
    assert [(c["duplicate_of"], c["duplicate_kind"], c["duplicate_score"]) for c in copies] == [
        (None, None, None)
    ]
    assert crawler.stats.get_value("kc/store/unlinked", 0) >= 1
    assert crawler.stats.get_value("kc/store/quarantined") == 1
    run = last_run(db_url)
    assert run["outcome"] == "finished" and run["quarantined"] == 1
    assert run["upserts_completed"] == len(rows)


def test_the_end_of_a_run_stopped_while_opening_waits_out_a_locked_database(
    tmp_path: Path,
) -> None:
    # After the reactor has stopped, the crawl command records the end of a run whose
    # spider never closed (runtime.close_after_stop). Another writer holding the database
    # then must not leave the run "running": the write is retried like every other.
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    path = tmp_path / "k.db"
    settings = {"KC_STORE_BUSY_TIMEOUT": 0.1, "KC_STORE_RETRY_SECONDS": 30}
    crawler = get_crawler(Spider, {"KC_DATABASE_URL": f"sqlite:///{path}", **settings})
    runtime = runtime_module.runtime_for(crawler)
    run_id = runtime.store.start_run(
        spider="knowledge", sources=["site"], mode="refresh", pid=1, host="test"
    )
    runtime._recorded_run = run_id
    holder, locked = hold_lock(path, seconds=0.8)
    assert locked.wait(10)
    runtime.close_after_stop()
    holder.join()
    [run] = query(f"sqlite:///{path}", "SELECT outcome, finish_reason FROM crawl_runs")
    assert (run["outcome"], run["finish_reason"]) == ("interrupted", "shutdown")
    assert crawler.stats.get_value("kc/outcome") == "interrupted"
