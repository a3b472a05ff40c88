"""AutoThrottle never takes a download slot below the delay its settings give it.

Real crawler, real downloader and real slots (``DOWNLOAD_SLOTS`` read by Scrapy's
Downloader), no network: responses are handed to the extension as the
``response_downloaded`` signal would.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request
from scrapy.core.downloader import Downloader
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.spider import DefaultSpider
from scrapy.utils.test import get_crawler

from knowledge_crawler.extensions.throttle import SourceAutoThrottle

BASE = {
    "AUTOTHROTTLE_ENABLED": True,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": 2.0,
    "AUTOTHROTTLE_START_DELAY": 0.25,
    "AUTOTHROTTLE_MAX_DELAY": 10.0,
    "DOWNLOAD_DELAY": 0.0,
    "DOWNLOAD_SLOTS": {
        "kc:polite": {"delay": 3.0, "concurrency": 1},
        "kc:busy": {"concurrency": 2},
    },
}


@pytest.fixture
def throttled() -> Iterator[tuple[SourceAutoThrottle, Downloader, Any]]:
    crawler = get_crawler(DefaultSpider, dict(BASE))
    downloader = Downloader(crawler)
    crawler.engine = SimpleNamespace(downloader=downloader)  # all AutoThrottle reads of it
    throttle = build_from_crawler(SourceAutoThrottle, crawler)
    crawler.stats.open_spider()
    spider = build_from_crawler(DefaultSpider, crawler)
    throttle._spider_opened(spider)
    yield throttle, downloader, spider
    downloader.close()


def downloaded(
    throttle: SourceAutoThrottle,
    downloader: Downloader,
    spider: Any,
    slot: str | None,
    latency: float,
    status: int = 200,
) -> float:
    """Feed one response through the extension; the slot's delay afterwards."""
    meta: dict[str, Any] = {} if slot is None else {"download_slot": slot}
    request = Request("http://shop.example/a", meta=meta)
    key, real_slot = downloader._get_slot(request)
    request.meta["download_slot"] = key
    request.meta["download_latency"] = latency
    throttle._response_downloaded(Response(request.url, status=status), request, spider)
    return float(real_slot.delay)


def test_a_slot_with_its_own_delay_is_never_sped_up(throttled: Any) -> None:
    throttle, downloader, spider = throttled
    # Stock AutoThrottle would move 3.0 towards 0.005 (latency 0.01 / 2): 1.5, 0.75, ...
    for _ in range(5):
        assert downloaded(throttle, downloader, spider, "kc:polite", 0.01) == 3.0
    assert throttle.crawler.stats.get_value("kc/throttle/held") == 5


def test_it_is_still_slowed_down_above_that_delay(throttled: Any) -> None:
    throttle, downloader, spider = throttled
    # latency 10 s at target concurrency 2: AutoThrottle asks for 5 s
    assert downloaded(throttle, downloader, spider, "kc:polite", 10.0) == 5.0
    assert throttle.crawler.stats.get_value("kc/throttle/held") is None


def test_the_floor_wins_over_the_max_delay() -> None:
    crawler = get_crawler(DefaultSpider, {**BASE, "AUTOTHROTTLE_MAX_DELAY": 1.0})
    downloader = Downloader(crawler)
    crawler.engine = SimpleNamespace(downloader=downloader)
    throttle = build_from_crawler(SourceAutoThrottle, crawler)
    crawler.stats.open_spider()
    spider = build_from_crawler(DefaultSpider, crawler)
    throttle._spider_opened(spider)
    try:
        # a source asked for 3 s between requests; a global cap of 1 s does not overrule it
        assert downloaded(throttle, downloader, spider, "kc:polite", 0.01) == 3.0
    finally:
        downloader.close()


def test_slots_without_their_own_delay_adapt_as_before(throttled: Any) -> None:
    throttle, downloader, spider = throttled
    # a per-host slot (no settings) and a source slot that only sets concurrency
    for slot in (None, "kc:busy"):
        start = 0.25  # AUTOTHROTTLE_START_DELAY
        assert downloaded(throttle, downloader, spider, slot, 0.01) == pytest.approx(
            (start + 0.005) / 2
        )


def test_error_responses_do_not_lower_the_delay(throttled: Any) -> None:
    throttle, downloader, spider = throttled
    assert downloaded(throttle, downloader, spider, "kc:polite", 0.01, status=503) == 3.0


def test_scrapys_autothrottle_is_replaced_in_the_project_settings() -> None:
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("knowledge_crawler.settings", priority="project")
    extensions = settings.getwithbase("EXTENSIONS")
    stock = "scrapy.extensions.throttle.AutoThrottle"
    assert extensions[stock] is None
    # at the order Scrapy gives its own
    ours = extensions["knowledge_crawler.extensions.throttle.SourceAutoThrottle"]
    assert ours == settings.getdict("EXTENSIONS_BASE")[stock]
