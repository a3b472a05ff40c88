"""The garbage-collector extension: fewer young collections while a crawl runs, the
interpreter's own thresholds back when it stops, and every collection counted."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.spider import DefaultSpider
from scrapy.utils.test import get_crawler

from knowledge_crawler.config import ConfigError
from knowledge_crawler.extensions.gc import GarbageCollection


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)  # whatever a failing test left


def extension(**settings: object) -> GarbageCollection:
    crawler = get_crawler(DefaultSpider, dict(settings))
    crawler.stats.open_spider()
    return GarbageCollection.from_crawler(crawler)


def test_a_crawl_raises_the_young_threshold_and_puts_it_back(
    thresholds: tuple[int, int, int],
) -> None:
    ext = extension()
    ext.engine_started()
    assert gc.get_threshold() == (50_000, *thresholds[1:])
    ext.engine_stopped()
    assert gc.get_threshold() == thresholds
    ext.engine_stopped()  # a second stop changes nothing
    assert gc.get_threshold() == thresholds


def test_two_crawls_in_one_process_restore_once_the_last_stops(
    thresholds: tuple[int, int, int],
) -> None:
    first, second = extension(), extension(KC_GC_YOUNG_THRESHOLD=80_000)
    first.engine_started()
    second.engine_started()
    assert gc.get_threshold()[0] == 80_000
    first.engine_stopped()
    assert gc.get_threshold()[0] == 80_000  # the second crawl still runs
    second.engine_stopped()
    assert gc.get_threshold() == thresholds


def test_collections_are_counted_by_generation_while_the_crawl_runs() -> None:
    ext = extension()
    ext.engine_started()
    try:
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
    finally:
        ext.engine_stopped()
    gc.collect(2)  # after the stop: not this crawl's
    stats = ext.crawler.stats.get_stats()
    assert stats["kc/gc/collections/0"] >= 1
    assert stats["kc/gc/collections/2"] == 2
    assert isinstance(stats["kc/gc/ms"], int) and stats["kc/gc/ms"] >= 0


def test_zero_leaves_the_interpreter_alone_and_a_negative_value_is_refused() -> None:
    with pytest.raises(NotConfigured):
        extension(KC_GC_YOUNG_THRESHOLD=0)
    with pytest.raises(ConfigError, match="KC_GC_YOUNG_THRESHOLD"):
        extension(KC_GC_YOUNG_THRESHOLD=-1)
