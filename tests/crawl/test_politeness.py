"""A source's download_delay holds under AutoThrottle, on every host of the source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.http import Request, Response

from knowledge_crawler.spiders.knowledge import KnowledgeSpider
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, crawl_settings

pytestmark = pytest.mark.crawl

DELAY = 0.3


class _SlotDelays:
    """The delay of each response's download slot once the response is in (bound method:
    signal handlers are weak references)."""

    def __init__(self) -> None:
        self.crawler: Any = None
        self.delays: list[tuple[str, float]] = []

    def on_response(self, response: Response, request: Request, spider: Any) -> None:
        key = request.meta.get("download_slot")
        slot = self.crawler.engine.downloader.slots.get(key)
        if slot is not None and not request.url.endswith("/robots.txt"):
            self.delays.append((key, slot.delay))


@coroutine_test
async def test_autothrottle_keeps_a_sources_own_delay(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "polite.toml"
    seeds.write_text(
        "[[source]]\n"
        'id = "polite"\n'
        f'start_urls = ["{site.url}"]\n'
        f"download_delay = {DELAY}\n"
        "max_pages = 5\n",
        encoding="utf-8",
    )
    settings = crawl_settings(
        db_url,
        AUTOTHROTTLE_ENABLED=True,
        AUTOTHROTTLE_START_DELAY=0,
        AUTOTHROTTLE_TARGET_CONCURRENCY=4.0,
    )
    seen = _SlotDelays()
    crawler = AsyncCrawlerRunner(settings).create_crawler(KnowledgeSpider)
    seen.crawler = crawler
    crawler.signals.connect(seen.on_response, signal=signals.response_received)
    await crawler.crawl_async(seeds=str(seeds))

    # Loopback answers in milliseconds: Scrapy's AutoThrottle alone would take the
    # slot's delay to about latency / 4 within a few responses.
    assert len(seen.delays) >= 4, seen.delays
    assert {key for key, _ in seen.delays} == {"kc:polite"}
    assert min(delay for _, delay in seen.delays) >= DELAY, seen.delays
    assert crawler.stats.get_value("kc/throttle/held", 0) > 0


@coroutine_test
async def test_a_source_without_delay_is_not_slowed_by_autothrottle(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """``download_delay = 0`` in a source (a site one owns) takes its slot out of
    AutoThrottle, whose floor is the project's DOWNLOAD_DELAY (0.25 s) otherwise."""
    seeds = tmp_path / "own.toml"
    seeds.write_text(
        f'[[source]]\nid = "own"\nstart_urls = ["{site.url}"]\ndownload_delay = 0\nmax_pages = 8\n',
        encoding="utf-8",
    )
    # the project's own politeness: DOWNLOAD_DELAY 0.25 and AutoThrottle on
    settings = crawl_settings(db_url, DOWNLOAD_DELAY=0.25, AUTOTHROTTLE_ENABLED=True)
    seen = _SlotDelays()
    crawler = AsyncCrawlerRunner(settings).create_crawler(KnowledgeSpider)
    seen.crawler = crawler
    crawler.signals.connect(seen.on_response, signal=signals.response_received)
    await crawler.crawl_async(seeds=str(seeds))

    assert len(seen.delays) >= 6, seen.delays
    assert {key for key, _ in seen.delays} == {"kc:own"}
    assert max(delay for _, delay in seen.delays) == 0, seen.delays
