"""The malloc_trim extension: the heap's free pages handed back while a crawl runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.spider import DefaultSpider
from scrapy.utils.test import get_crawler

from knowledge_crawler.config import ConfigError
from knowledge_crawler.extensions import trim
from knowledge_crawler.extensions.trim import MallocTrim
from tests.helpers import coroutine_test

glibc = pytest.mark.skipif(trim.malloc_trim is None, reason="no glibc malloc_trim here")


def extension(**settings: object) -> MallocTrim:
    crawler = get_crawler(DefaultSpider, dict(settings))
    crawler.stats.open_spider()
    return MallocTrim.from_crawler(crawler)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@glibc
def test_freed_heap_memory_goes_back_to_the_system() -> None:
    # Small blocks (below glibc's mmap threshold) come from the heap; freeing all but the
    # last leaves their pages free but below a block still in use, so only a trim returns
    # them.
    blocks = [bytearray(8_000) for _ in range(20_000)]  # about 160 MB
    keep = blocks[-1]
    del blocks
    before = rss_kib()
    ext = extension()
    ext.trim()
    after = rss_kib()
    assert before - after > 100_000, (before, after)
    stats = ext.crawler.stats
    assert stats.get_value("kc/memory/trims") == 1
    assert stats.get_value("kc/memory/trimmed") == 1
    assert stats.get_value("kc/memory/trim_ms") >= 0
    assert keep


@glibc
@coroutine_test
async def test_it_trims_on_a_timer_while_the_engine_runs() -> None:
    ext = extension(KC_MALLOC_TRIM_SECONDS=0.2)
    ext.engine_started()
    assert ext._loop is not None and ext._loop.running and ext._loop.interval == 0.2
    try:
        await asyncio.sleep(0.7)  # the reactor runs the timer meanwhile
    finally:
        ext.engine_stopped()
    trims = ext.crawler.stats.get_value("kc/memory/trims")
    assert trims >= 2, trims
    assert ext._loop is None
    ext.engine_stopped()  # a second stop changes nothing
    await asyncio.sleep(0.3)
    assert ext.crawler.stats.get_value("kc/memory/trims") == trims  # and no trim after it


def test_zero_turns_it_off_and_a_negative_period_is_refused() -> None:
    with pytest.raises(NotConfigured):
        extension(KC_MALLOC_TRIM_SECONDS=0)
    with pytest.raises(ConfigError, match="KC_MALLOC_TRIM_SECONDS"):
        extension(KC_MALLOC_TRIM_SECONDS=-1)


def test_without_malloc_trim_the_extension_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trim, "malloc_trim", None)  # musl, macOS
    with pytest.raises(NotConfigured, match="malloc_trim"):
        extension()
