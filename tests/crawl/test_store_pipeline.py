"""The store pipeline flushes by size, by age and at close, and never loses a row."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from knowledge_crawler.crawl.runtime import runtime_for
from knowledge_crawler.errors import TransientStoreError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines import store as store_pipeline
from knowledge_crawler.pipelines.store import StorePipeline, to_record
from knowledge_crawler.store import DuplicateUpdate, open_store, utc_now
from knowledge_crawler.transform.fingerprint import content_hash
from tests.faults import FlakyStore, hold_lock
from tests.helpers import coroutine_test, query


def item(n: int) -> PageItem:
    text = f"page number {n} has its own words"
    return PageItem(
        source_id="s",
        url=f"http://e.com/{n}",
        final_url=f"http://e.com/{n}",
        http_status=200,
        fetched_at=utc_now(),
        content=text,
        canonical_url=f"https://e.com/{n}",
        content_hash=content_hash(text),
        word_count=6,
    )


def make_pipeline(db_url: str, **settings: Any) -> StorePipeline:
    crawler = get_crawler(Spider, {"KC_DATABASE_URL": db_url, **settings})
    return StorePipeline.from_crawler(crawler)


@coroutine_test
async def test_flush_in_flight_at_close_is_not_lost(db_url: str) -> None:
    pipeline = make_pipeline(db_url, KC_STORE_BATCH_SIZE=10_000, KC_STORE_FLUSH_SECONDS=0.05)
    await pipeline.open_spider()
    for n in range(50):
        await pipeline.process_item(item(n))
    # A busy writer thread (a slow disk): the age flush that the ticker starts now
    # waits in the writer's queue when the spider closes.
    pipeline._writer.submit(time.sleep, 0.5)
    await asyncio.sleep(0.2)
    for n in range(50, 80):
        await pipeline.process_item(item(n))
    await pipeline.close_spider()  # must wait for the queued flush, then flush the rest
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 80
    assert pipeline.stats.get_value("kc/store/upserted") == 80
    runtime_for(pipeline.crawler).store.close()


@coroutine_test
async def test_flush_by_size(db_url: str) -> None:
    pipeline = make_pipeline(db_url, KC_STORE_BATCH_SIZE=7, KC_STORE_FLUSH_SECONDS=60)
    await pipeline.open_spider()
    for n in range(15):
        await pipeline.process_item(item(n))
    assert pipeline.stats.get_value("kc/store/batches") == 2
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 14
    await pipeline.close_spider()
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 15
    runtime_for(pipeline.crawler).store.close()


# -- a write that fails keeps its rows ---------------------------------------------------


def flaky(pipeline: StorePipeline, *errors: BaseException) -> FlakyStore:
    """Swap the pipeline's store for the real store whose next writes raise ``errors``."""
    runtime = runtime_for(pipeline.crawler)
    runtime.store.close()
    store = FlakyStore(runtime.store.url)
    store.fail_upserts = list(errors)
    runtime.store = store
    return store


@coroutine_test
async def test_a_batch_whose_write_fails_is_kept_and_retried(db_url: str) -> None:
    pipeline = make_pipeline(
        db_url, KC_STORE_BATCH_SIZE=10, KC_STORE_FLUSH_SECONDS=60, KC_STORE_RETRY_SECONDS=30
    )
    store = flaky(
        pipeline,
        TransientStoreError("k.db: database is locked"),
        TransientStoreError("k.db: disk I/O error"),
    )
    await pipeline.open_spider()
    for n in range(25):
        await pipeline.process_item(item(n))
    await pipeline.close_spider()
    assert store.upsert_calls == 5  # 2 failed, then 10 + 10 + 5
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 25
    assert query(db_url, "SELECT COUNT(*) AS n FROM quarantine")[0]["n"] == 0
    # The stats count rows committed, each once.
    assert pipeline.stats.get_value("kc/store/upserted") == 25
    assert pipeline.stats.get_value("kc/store/inserted") == 25
    assert pipeline.stats.get_value("kc/store/retries") == 2
    assert not pipeline.stats.get_value("kc/store/failed")
    store.close()


@coroutine_test
async def test_a_lock_longer_than_the_busy_timeout_is_waited_out(db_url: str) -> None:
    pipeline = make_pipeline(
        db_url,
        KC_STORE_BATCH_SIZE=10,
        KC_STORE_FLUSH_SECONDS=60,
        KC_STORE_BUSY_TIMEOUT=0.05,
        KC_STORE_RETRY_SECONDS=30,
    )
    await pipeline.open_spider()
    for n in range(5):
        await pipeline.process_item(item(n))
    holder, locked = hold_lock(db_url.removeprefix("sqlite:///"), seconds=0.5)
    assert locked.wait(5)
    for n in range(5, 25):
        await pipeline.process_item(item(n))
    holder.join()
    await pipeline.close_spider()
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 25
    assert query(db_url, "SELECT COUNT(*) AS n FROM quarantine")[0]["n"] == 0
    assert pipeline.stats.get_value("kc/store/upserted") == 25
    assert pipeline.stats.get_value("kc/store/retries") >= 1
    runtime_for(pipeline.crawler).store.close()


class FlushFailsOnce(StorePipeline):
    """A flush that fails once, outside the store (a bug, a cancelled future, ...)."""

    failed = False

    async def flush(self) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("boom")
        await super().flush()


@coroutine_test
async def test_the_age_ticker_survives_an_exception_and_close_flushes(db_url: str) -> None:
    settings = {"KC_DATABASE_URL": db_url, "KC_STORE_BATCH_SIZE": 1000}
    pipeline = FlushFailsOnce.from_crawler(
        get_crawler(Spider, {**settings, "KC_STORE_FLUSH_SECONDS": 0.1})
    )
    await pipeline.open_spider()
    for n in range(10):
        await pipeline.process_item(item(n))
    await asyncio.sleep(0.5)  # the first age flush fails; the ticker keeps ticking
    assert pipeline.failed
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 10
    for n in range(10, 15):
        await pipeline.process_item(item(n))
    await pipeline.close_spider()
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 15
    runtime_for(pipeline.crawler).store.close()


@coroutine_test
async def test_close_flushes_even_when_the_ticker_died(db_url: str) -> None:
    settings = {"KC_DATABASE_URL": db_url, "KC_STORE_BATCH_SIZE": 1000}
    pipeline = FlushFailsOnce.from_crawler(
        get_crawler(Spider, {**settings, "KC_STORE_FLUSH_SECONDS": 60})
    )
    await pipeline.open_spider()
    for n in range(10):
        await pipeline.process_item(item(n))
    pipeline.failed = True
    pipeline._ticker = asyncio.get_running_loop().create_task(_raise())
    await asyncio.sleep(0)
    await pipeline.close_spider()
    assert query(db_url, "SELECT COUNT(*) AS n FROM pages")[0]["n"] == 10
    runtime_for(pipeline.crawler).store.close()


async def _raise() -> None:
    raise RuntimeError("a ticker that died")


# -- a shared crawl: links to pages another process has not stored yet ------------------


def shared_pipeline(db_url: str, **settings: Any) -> StorePipeline:
    """A store pipeline of a crawl shared with other processes (KC_REDIS_URL)."""
    crawler = get_crawler(Spider, {"KC_DATABASE_URL": db_url, **settings})
    crawler.spider = SimpleNamespace(shared_frontier=True)
    return StorePipeline.from_crawler(crawler)


def links(db_url: str) -> dict[str, str | None]:
    rows = query(
        db_url,
        "SELECT p.canonical_url AS page, r.canonical_url AS rep FROM pages p "
        "LEFT JOIN pages r ON r.id = p.duplicate_of",
    )
    return {r["page"]: r["rep"] for r in rows}


def copy_of(n: int, rep: int) -> PageItem:
    page = item(rep)
    page.url = page.final_url = f"http://e.com/copy-{n}"
    page.canonical_url = f"https://e.com/copy-{n}"
    page.duplicate_of, page.duplicate_kind, page.duplicate_score = (
        ("s", item(rep).canonical_url),
        "exact",
        1.0,
    )
    return page


def stored_elsewhere(db_url: str, *pages: PageItem) -> None:
    """Another process of the crawl commits its batch with ``pages``."""
    with open_store(db_url) as other:
        other.write([to_record(p) for p in pages])


@coroutine_test
async def test_a_link_to_a_page_another_process_stores_later_is_written_then(
    db_url: str,
) -> None:
    pipeline = shared_pipeline(db_url, KC_STORE_BATCH_SIZE=1000, KC_STORE_FLUSH_SECONDS=0.1)
    await pipeline.open_spider()
    # this process: a copy of page 1 (which the other process fetched), and a decision
    # about page 2, which the other process has not stored yet either
    await pipeline.process_item(copy_of(1, rep=1))
    update = DuplicateUpdate(
        ("s", item(2).canonical_url), ("s", item(3).canonical_url), "near", 0.9
    )
    await pipeline.process_item(item(3))
    pipeline._ops.append(update)
    await pipeline.flush()
    assert links(db_url) == {"https://e.com/copy-1": None, "https://e.com/3": None}
    assert pipeline.stats.get_value("kc/store/links_deferred") == 2
    stored_elsewhere(db_url, item(1), item(2))
    await asyncio.sleep(0.4)  # the next batch by age writes the waiting links
    assert links(db_url) == {
        "https://e.com/copy-1": "https://e.com/1",
        "https://e.com/3": None,
        "https://e.com/1": None,
        "https://e.com/2": "https://e.com/3",
    }
    await pipeline.close_spider()
    assert pipeline.stats.get_value("kc/store/links_resolved") == 2
    assert not pipeline.stats.get_value("kc/store/unlinked")
    assert not pipeline.stats.get_value("kc/store/dropped_updates")
    runtime_for(pipeline.crawler).store.close()


@coroutine_test
async def test_close_waits_for_the_other_process_and_a_newer_decision_wins(
    db_url: str,
) -> None:
    pipeline = shared_pipeline(db_url, KC_STORE_BATCH_SIZE=1000, KC_STORE_FLUSH_SECONDS=60)
    await pipeline.open_spider()
    await pipeline.process_item(copy_of(1, rep=1))
    await pipeline.process_item(copy_of(2, rep=2))
    await pipeline.flush()
    later = item(2)  # copy-2 is decided again: no duplicate now
    later.url = later.final_url = "http://e.com/copy-2"
    later.canonical_url = "https://e.com/copy-2"
    await pipeline.process_item(later)
    loop = asyncio.get_running_loop()
    # page 1 and 2 are stored by the other process while this one is closing
    loop.call_later(0.6, stored_elsewhere, db_url, item(1), item(2))
    await pipeline.close_spider()
    assert links(db_url) == {
        "https://e.com/copy-1": "https://e.com/1",
        "https://e.com/copy-2": None,
        "https://e.com/1": None,
        "https://e.com/2": None,
    }
    runtime_for(pipeline.crawler).store.close()


@coroutine_test
async def test_a_link_to_a_page_never_stored_is_given_up_at_close(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_pipeline, "_PEER_WAIT_SECONDS", 0.3)
    pipeline = shared_pipeline(db_url, KC_STORE_BATCH_SIZE=1000, KC_STORE_FLUSH_SECONDS=0.1)
    await pipeline.open_spider()
    await pipeline.process_item(copy_of(1, rep=1))
    started = time.monotonic()
    await pipeline.close_spider()
    assert 0.3 <= time.monotonic() - started < 5
    assert links(db_url) == {"https://e.com/copy-1": None}  # stored, as no duplicate
    assert pipeline.stats.get_value("kc/store/dropped_updates") == 1
    runtime_for(pipeline.crawler).store.close()
