"""The store pipeline flushes by size, by age and at close, and never loses a row."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from scrapy import Spider
from scrapy.utils.test import get_crawler

from knowledge_crawler.errors import TransientStoreError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines.store import StorePipeline
from knowledge_crawler.runtime import runtime_for
from knowledge_crawler.store import utc_now
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
