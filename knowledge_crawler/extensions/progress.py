"""Progress of a crawl, logged every ``KC_PROGRESS_SECONDS`` (default 10 s).

Scrapy's own ``LogStats`` speaks every 60 s and counts responses; a user
watching a crawl wants to know what reached the database. Each line reads::

    progress: 1,204 pages stored (+118, 11.8/s), 1,390 responses, 612 queued,
    8 in flight, 3 fetch errors, 5 retries

``stored`` counts rows committed by the store pipeline (``kc/store/upserted``),
``queued`` the scheduler's pending requests, ``in flight`` the requests being
downloaded (a request waiting to be retried is one), ``fetch errors`` the pages whose
fetch failed for this crawl, ``retries`` the failed fetches retried in it or left to the
next crawl. A last line is logged when the spider closes.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Self

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from knowledge_crawler.config import KcConfig

__all__ = ["Progress"]

logger = logging.getLogger(__name__)


class Progress:
    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self._task: Any = None
        self._stored_before = 0
        self._at_before = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = KcConfig.from_settings(crawler.settings).progress_seconds
        if interval <= 0:
            raise NotConfigured("KC_PROGRESS_SECONDS is 0: no progress lines")
        extension = cls(crawler, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        self._at_before = time.monotonic()
        self._task = create_looping_call(self.log)
        self._task.start(self.interval, now=False)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        self.log()

    def snapshot(self) -> dict[str, int]:
        """The numbers of one progress line."""
        stats = self.crawler.stats
        assert stats is not None
        engine = self.crawler.engine
        queued = in_flight = 0
        if engine is not None:
            scheduler = engine.scheduler
            if scheduler is not None and hasattr(scheduler, "__len__"):
                queued = len(scheduler)
            in_flight = len(engine.downloader.active)
        errors = sum(
            int(v)
            for k, v in stats.get_stats().items()
            if k.startswith("kc/fetch/error/") and isinstance(v, int)
        )
        return {
            "stored": int(stats.get_value("kc/store/upserted", 0)),
            "responses": int(stats.get_value("response_received_count", 0)),
            "queued": queued,
            "in_flight": in_flight,
            "errors": errors,
            "retries": int(stats.get_value("kc/retry/scheduled", 0))
            + int(stats.get_value("kc/retry/deferred", 0)),
        }

    def log(self) -> None:
        now = time.monotonic()
        snap = self.snapshot()
        added = snap["stored"] - self._stored_before
        elapsed = max(now - self._at_before, 1e-9)
        self._stored_before, self._at_before = snap["stored"], now
        logger.info(
            "progress: %s pages stored (+%s, %.1f/s), %s responses, %s queued, "
            "%s in flight, %s fetch error%s, %s retr%s",
            f"{snap['stored']:,}",
            f"{added:,}",
            added / elapsed,
            f"{snap['responses']:,}",
            f"{snap['queued']:,}",
            snap["in_flight"],
            snap["errors"],
            "" if snap["errors"] == 1 else "s",
            snap["retries"],
            "y" if snap["retries"] == 1 else "ies",
        )
