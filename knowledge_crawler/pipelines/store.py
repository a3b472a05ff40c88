"""6. store: batched upserts, one transaction per batch, off the event loop.

Rows wait in memory until the batch holds ``KC_STORE_BATCH_SIZE`` rows, the
oldest has waited ``KC_STORE_FLUSH_SECONDS``, or the spider closes. Each flush
runs on one writer thread that owns all database writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from scrapy.crawler import Crawler

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.store import DuplicateUpdate, PageRecord, UpsertResult

logger = logging.getLogger(__name__)


def to_record(item: PageItem) -> PageRecord:
    return PageRecord(
        source_id=item.source_id,
        canonical_url=item.canonical_url,
        url=item.url,
        final_url=item.final_url,
        fetched_at=item.fetched_at,
        http_status=item.http_status,
        content_hash=item.content_hash,
        content=item.content,
        title=item.title,
        headings=tuple(item.headings),
        word_count=item.word_count,
        language=item.language,
        thin=item.thin,
        minhash=item.minhash,
        minhash_params=item.minhash_params,
        duplicate_of=item.duplicate_of,
        duplicate_kind=item.duplicate_kind,
        duplicate_score=item.duplicate_score,
        etag=item.etag,
        last_modified=item.last_modified,
    )


class StorePipeline(KcPipeline):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.batch_size = settings.getint("KC_STORE_BATCH_SIZE", 200)
        self.flush_seconds = settings.getfloat("KC_STORE_FLUSH_SECONDS", 2.0)
        if self.batch_size < 1 or self.flush_seconds <= 0:
            raise ConfigError("KC_STORE_BATCH_SIZE must be >= 1 and KC_STORE_FLUSH_SECONDS > 0")
        self._batch: list[PageRecord] = []
        self._updates: list[DuplicateUpdate] = []
        self._oldest = 0.0
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kc-store")
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._ticker: asyncio.Task[None] | None = None

    async def open_spider(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def process_item(self, item: PageItem) -> PageItem:
        if not self._batch:
            self._oldest = time.monotonic()
        self._batch.append(to_record(item))
        self._updates.extend(item.dedupe_updates)
        if len(self._batch) >= self.batch_size:
            await self.flush()
        return item

    async def _tick(self) -> None:
        """Flush by age. Stopped by ``_stop``, never cancelled: a flush in flight completes."""
        interval = min(self.flush_seconds / 2, 1.0)
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)
            if self._batch and time.monotonic() - self._oldest >= self.flush_seconds:
                await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            batch, self._batch = self._batch, []
            updates, self._updates = self._updates, []
            if not batch and not updates:
                return
            loop = asyncio.get_running_loop()
            run_id = self.runtime.run_id
            result: UpsertResult = await loop.run_in_executor(
                self._writer,
                lambda: self.runtime.store.upsert_pages(
                    batch, run_id=run_id, duplicate_updates=updates
                ),
            )
        self.inc("store/batches")
        self.inc("store/inserted", len(result.inserted))
        self.inc("store/changed", len(result.changed))
        self.inc("store/unchanged", len(result.unchanged))
        self.inc("store/upserted", result.loaded)
        self.inc("store/quarantined", len(result.quarantined))
        for key, error in result.quarantined:
            logger.error("quarantined %s %s: %s", key[0], key[1], error)

    async def close_spider(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            await self._ticker
        try:
            await self.flush()
        finally:
            self._writer.shutdown(wait=True)
