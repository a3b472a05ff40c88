"""0. archive: every page response into the raw archive, before anything else reads it.

Each :class:`~knowledge_crawler.items.PageItem` (HTML or not) is written as a WARC
``response`` record by :class:`knowledge_crawler.archive.warc.WarcWriter` (what a record
holds, and which headers are left out, is said there). The pipeline then puts the
record's location on the item (``archive_file``, relative to the archive folder, and
``archive_offset``), which the store keeps with the page's content, and drops the raw
body and headers from the item so they leave memory early.

Writing runs on one thread of its own (a single-worker executor), never on the
reactor thread: records are appended in the order items arrive, and each item
waits (``await``) for its own record, so a location is only ever handed on for a
record that is written and flushed. Items that arrive while the thread writes go
to it together, as the next batch: one hand-over a batch, not one a page. A
record that cannot be written (disk full, a folder that cannot be created) is
counted (``kc/archive/failed``) and logged; the page goes on without a location,
and the next record starts a new file.

Settings: ``KC_ARCHIVE_ENABLED``, ``KC_ARCHIVE_DIR``, ``KC_ARCHIVE_MAX_BYTES``.
Stats: ``kc/archive/records``, ``kc/archive/bytes`` (compressed), ``kc/archive/files``,
``kc/archive/failed``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scrapy.crawler import Crawler

from knowledge_crawler.archive.warc import ArchiveLocation, WarcWriter, archive_dir
from knowledge_crawler.config import KcConfig
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline

logger = logging.getLogger(__name__)

#: at most one "cannot archive" ERROR line per this many seconds
_WARN_EVERY = 10.0

#: what the writer thread needs of one record: the item, its headers and body, the run tag
_Record = tuple[PageItem, list[tuple[str, str]], bytes, str]


def check_archive(settings: Any) -> None:
    """With archiving on, the archive folder must be known and creatable: else
    :class:`ConfigError` naming it (``scrapy crawl`` stops before any request)."""
    config = KcConfig.from_settings(settings)
    if not config.archive_enabled:
        return
    directory = archive_dir(config.database_url, config.archive_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the archive folder {directory}: {exc.strerror or exc} "
            "(set KC_ARCHIVE_DIR, or KC_ARCHIVE_ENABLED=false)"
        ) from None


class ArchivePipeline(KcPipeline):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = KcConfig.from_settings(crawler.settings)
        self.enabled = config.archive_enabled
        #: the archive folder (None when archiving is off)
        self.directory: Path | None = (
            archive_dir(config.database_url, config.archive_dir) if self.enabled else None
        )
        self.max_bytes = config.archive_max_bytes
        self._writer: WarcWriter | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._warned = 0.0
        #: records waiting for the writer thread: their arguments and the future of each
        self._queued: list[tuple[_Record, asyncio.Future[ArchiveLocation]]] = []
        self._writing = False

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        headers, body = item.response_headers, item.body
        item.response_headers, item.body = [], None  # the item no longer holds them
        if not self.enabled or body is None:
            return item
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kc-archive")
        future: asyncio.Future[ArchiveLocation] = asyncio.get_running_loop().create_future()
        self._queued.append(((item, headers, body, self._tag()), future))
        if not self._writing:
            self._hand_over()
        try:
            where = await future
        except Exception as exc:
            self.inc("archive/failed")
            if time.monotonic() - self._warned >= _WARN_EVERY:
                self._warned = time.monotonic()
                logger.error(
                    "cannot archive %s in %s: %s (the page is stored without an archive record)",
                    item.final_url,
                    self.directory,
                    " ".join(str(exc).split()) or type(exc).__name__,
                )
            return item
        item.archive_file, item.archive_offset = where.file, where.offset
        self.inc("archive/records")
        self.inc("archive/bytes", where.length)
        return item

    def _hand_over(self) -> None:
        """The records queued, to the writer thread as one batch."""
        assert self._executor is not None
        batch, self._queued = self._queued, []
        self._writing = True
        done = asyncio.wrap_future(self._executor.submit(self._write_batch, [r for r, _ in batch]))
        done.add_done_callback(functools.partial(self._written, [f for _, f in batch]))

    def _write_batch(self, records: list[_Record]) -> list[ArchiveLocation | Exception]:
        """On the writer thread: each record in order; a record's failure is its own."""
        out: list[ArchiveLocation | Exception] = []
        for record in records:
            try:
                out.append(self._write(*record))
            except Exception as exc:
                out.append(exc)
        return out

    def _written(
        self,
        futures: list[asyncio.Future[ArchiveLocation]],
        done: asyncio.Future[list[ArchiveLocation | Exception]],
    ) -> None:
        self._writing = False
        error = done.exception() if not done.cancelled() else RuntimeError("cancelled")
        results: list[ArchiveLocation | BaseException] = (
            list(done.result()) if error is None else [error] * len(futures)
        )
        for future, result in zip(futures, results, strict=True):
            if future.done():
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
        if self._queued:
            self._hand_over()

    def _tag(self) -> str:
        """What the writer's file names carry: this crawl's run id, else the pid."""
        run_id = self.runtime.run_id
        return f"run{run_id}" if run_id is not None else f"pid{os.getpid()}"

    def _write(
        self, item: PageItem, headers: list[tuple[str, str]], body: bytes, tag: str
    ) -> ArchiveLocation:
        """On the writer thread: one record, in arrival order."""
        if self._writer is None:
            assert self.directory is not None
            self._writer = WarcWriter(self.directory, max_bytes=self.max_bytes, tag=tag)
        extra = {"KC-Rendered": "playwright"} if item.rendered else None
        return self._writer.write_response(
            item.final_url, item.http_status, headers, body, date=item.fetched_at, extra=extra
        )

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    async def close_spider(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._close)
        except OSError as exc:
            logger.error("cannot close the archive file in %s: %s", self.directory, exc)
        finally:
            executor.shutdown(wait=True)
        if self._writer is not None:
            self.stats.set_value("kc/archive/files", len(self._writer.files))
