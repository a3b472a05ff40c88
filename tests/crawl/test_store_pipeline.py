"""The store pipeline flushes by size, by age and at close, and never loses a row."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from scrapy import Spider
from scrapy.utils.test import get_crawler

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines.store import StorePipeline
from knowledge_crawler.runtime import runtime_for
from knowledge_crawler.store import utc_now
from knowledge_crawler.transform.fingerprint import content_hash
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
