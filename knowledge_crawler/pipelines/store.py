"""6. store: batched upserts, one transaction per batch, off the event loop.

Rows wait in memory until the batch holds ``KC_STORE_BATCH_SIZE`` rows, the
oldest has waited ``KC_STORE_FLUSH_SECONDS``, or the spider closes. Each flush
runs on one writer thread that owns all database writes.

No row is lost and none is written twice:

* rows leave memory only once their transaction has committed, and the
  ``kc/store/*`` stats count committed rows only;
* a transient database error (locked, busy, I/O, full) is retried with backoff
  for ``KC_STORE_RETRY_SECONDS``; rows that arrive meanwhile join the batch;
* when the retries run out, or the store fails otherwise, the crawl stops
  (close reason ``store_failed``, stats ``kc/store/failed`` and
  ``kc/store/error``, one ERROR line); at close the rows still in memory are
  tried once more and, if the database is still unusable, written to a rescue
  file beside it, ``<database>.unsaved-<run id>.jsonl``: one JSON object a
  line, ``{"page": {...}}`` or ``{"duplicate_update": {...}}``;
* the age ticker outlives any error, and ``close_spider`` always flushes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scrapy.crawler import Crawler

from knowledge_crawler.config import KcConfig
from knowledge_crawler.errors import StoreError, TransientStoreError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.runtime import STORE_FAILED
from knowledge_crawler.store import DuplicateUpdate, PageRecord, UpsertResult, record_dict

logger = logging.getLogger(__name__)

#: first and longest pause between two attempts at a batch (s)
_FIRST_DELAY = 0.1
_MAX_DELAY = 5.0
#: at most one "retrying" WARNING line per this many seconds
_WARN_EVERY = 10.0


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
        config = KcConfig.from_settings(crawler.settings)
        self.batch_size = config.store_batch_size
        self.flush_seconds = config.store_flush_seconds
        self.retry_seconds = config.store_retry_seconds
        #: rows not yet committed, in arrival order; a flush removes what it committed
        self._batch: list[PageRecord] = []
        self._updates: list[DuplicateUpdate] = []
        self._oldest = 0.0
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kc-store")
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._ticker: asyncio.Task[None] | None = None
        #: why the store failed (no more writes until close), or None
        self._failed: str | None = None
        self._closing = False
        self._close_task: asyncio.Task[None] | None = None

    async def open_spider(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def process_item(self, item: PageItem) -> PageItem:
        if not self._batch:
            self._oldest = time.monotonic()
        self._batch.append(to_record(item))
        self._updates.extend(item.dedupe_updates)
        if len(self._batch) >= self.batch_size and self._failed is None:
            await self.flush()
        return item

    async def _tick(self) -> None:
        """Flush by age. Stopped by ``_stop``, never cancelled: a flush in flight completes.

        An error in a flush is logged and the ticker goes on: the rows stay in
        memory for the next flush.
        """
        interval = min(self.flush_seconds / 2, 1.0)
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)
            try:
                if self._batch and time.monotonic() - self._oldest >= self.flush_seconds:
                    await self.flush()
            except Exception:
                logger.exception("store: a flush by age failed; its rows stay in memory")

    async def flush(self) -> None:
        """Write the rows in memory; they leave it only once committed.

        Transient errors are retried for ``KC_STORE_RETRY_SECONDS``; then, or on
        any other error, the store has failed (see :meth:`_fail`) and the rows
        stay for :meth:`close_spider`.
        """
        async with self._lock:
            if self._failed is not None:
                return
            n, m = len(self._batch), len(self._updates)
            if not n and not m:
                return
            started = time.monotonic()
            try:
                result = await self._write_retrying(self._batch[:n], self._updates[:m])
            except Exception as exc:
                self._fail(exc, time.monotonic() - started)
                return
            del self._batch[:n]
            del self._updates[:m]
            self._oldest = started  # rows that came in meanwhile are younger than that
        self._count(result)

    async def _write(
        self, batch: Sequence[PageRecord], updates: Sequence[DuplicateUpdate]
    ) -> UpsertResult:
        loop = asyncio.get_running_loop()
        run_id = self.runtime.run_id
        store = self.runtime.store
        return await loop.run_in_executor(
            self._writer,
            lambda: store.upsert_pages(batch, run_id=run_id, duplicate_updates=updates),
        )

    async def _write_retrying(
        self, batch: Sequence[PageRecord], updates: Sequence[DuplicateUpdate]
    ) -> UpsertResult:
        deadline = time.monotonic() + self.retry_seconds
        delay = _FIRST_DELAY
        warned = 0.0
        while True:
            try:
                return await self._write(batch, updates)
            except TransientStoreError as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                self.inc("store/retries")
                if time.monotonic() - warned >= _WARN_EVERY:
                    warned = time.monotonic()
                    logger.warning(
                        "store: %s; %d rows kept in memory, retrying for up to %.0f s more",
                        exc,
                        len(batch),
                        remaining,
                    )
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, _MAX_DELAY)

    def _fail(self, exc: BaseException, waited: float) -> None:
        """The database cannot be written: say so once, and stop the crawl."""
        if isinstance(exc, StoreError):
            message = str(exc)
        else:
            message = f"cannot write to {self.runtime.store.url}: {type(exc).__name__}: {exc}"
        if isinstance(exc, TransientStoreError):
            message += f" (retried for {waited:.0f} s, KC_STORE_RETRY_SECONDS)"
        message = " ".join(message.split())
        self._failed = message
        self.runtime.store_failed(message)
        logger.error(
            "store failed, stopping the crawl: %s; %d rows in memory are kept",
            message,
            len(self._batch),
            exc_info=not isinstance(exc, StoreError),
        )
        engine = self.crawler.engine
        if not self._closing and engine is not None and engine.spider is not None:
            # Not awaited: closing waits for the items in flight, this one included.
            self._close_task = asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=STORE_FAILED)
            )

    def _count(self, result: UpsertResult) -> None:
        self.inc("store/batches")
        self.inc("store/inserted", len(result.inserted))
        self.inc("store/changed", len(result.changed))
        self.inc("store/unchanged", len(result.unchanged))
        self.inc("store/upserted", result.loaded)
        self.inc("store/quarantined", len(result.quarantined))
        self.inc("store/unlinked", len(result.unlinked))
        self.inc("store/dropped_updates", len(result.dropped_updates))
        for key, error in result.quarantined:
            logger.error("quarantined %s %s: %s", key[0], key[1], error)
        for key in result.unlinked:
            logger.warning("%s %s: its representative is not stored; stored as no duplicate", *key)
        for update, why in result.dropped_updates:
            logger.warning("duplicate update of %s %s not applied: %s", *update.key, why)

    async def close_spider(self) -> None:
        self._closing = True
        self._stop.set()
        if self._ticker is not None:
            try:
                await self._ticker
            except Exception:
                logger.exception("store: the age ticker failed")
        try:
            await self.flush()
            if self._batch or self._updates:  # the store failed: one last try, then rescue
                await self._last_try()
        finally:
            self._writer.shutdown(wait=True)

    async def _last_try(self) -> None:
        n, m = len(self._batch), len(self._updates)
        batch, updates = self._batch[:n], self._updates[:m]
        try:
            result = await self._write(batch, updates)
        except Exception as exc:
            logger.warning("store: still cannot write: %s", " ".join(str(exc).split()))
            self._rescue(batch, updates)
            return
        del self._batch[:n]
        del self._updates[:m]
        self._count(result)
        logger.warning(
            "store: the database is back: the %d rows kept in memory are stored", len(batch)
        )

    def _rescue(self, batch: Sequence[PageRecord], updates: Sequence[DuplicateUpdate]) -> None:
        """Write rows that could not be stored to a file beside the database (or a temp dir)."""
        lines = [json.dumps({"page": record_dict(r)}, default=repr) + "\n" for r in batch]
        lines += [
            json.dumps({"duplicate_update": _update_dict(u)}, default=repr) + "\n" for u in updates
        ]
        for path in self._rescue_paths():
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.writelines(lines)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as exc:
                logger.error("store: cannot write the rescue file %s: %s", path, exc)
                continue
            del self._batch[: len(batch)]
            del self._updates[: len(updates)]
            self.inc("store/rescued", len(batch))
            self.stats.set_value("kc/store/rescue_file", str(path))
            logger.error(
                "store: %d rows and %d duplicate updates were not stored in %s; "
                "they are saved in %s (one JSON object a line)",
                len(batch),
                len(updates),
                self.runtime.store.url,
                path,
            )
            return
        for rec in batch:  # nowhere to write: at least say what is lost
            logger.critical("store: lost %s %s", rec.source_id, rec.canonical_url)

    def _rescue_paths(self) -> list[Path]:
        url = self.runtime.store.url
        path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
        run = self.runtime.run_id if self.runtime.run_id is not None else f"pid{os.getpid()}"
        name = f"{Path(path).name or 'knowledge'}.unsaved-{run}.jsonl"
        paths = [Path(tempfile.gettempdir()) / name]
        if path and path != ":memory:":
            paths.insert(0, Path(path).with_name(name))
        return paths


def _update_dict(update: DuplicateUpdate) -> dict[str, object]:
    return {
        "key": list(update.key),
        "duplicate_of": list(update.duplicate_of) if update.duplicate_of else None,
        "kind": update.kind,
        "score": update.score,
    }
