"""The shared frontier's pieces: its settings, its keys, the page dupefilter and its budgets."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request

from knowledge_crawler import meta
from knowledge_crawler.config import KcConfig
from knowledge_crawler.crawl.frontier import (
    CrawlKeys,
    PageDupeFilter,
    check_redis,
    page_fingerprint,
)
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.sources import Source


def test_redis_settings_are_checked() -> None:
    assert KcConfig.from_settings({}).redis_url == ""
    with pytest.raises(ConfigError, match="KC_REDIS_URL: expected redis://"):
        KcConfig.from_settings({"KC_REDIS_URL": "http://redis.example"})
    with pytest.raises(ConfigError, match="KC_REDIS_KEY_PREFIX"):
        KcConfig.from_settings({"KC_REDIS_URL": "redis://h/0", "KC_REDIS_KEY_PREFIX": "a b"})


def test_unreachable_redis_is_one_line_without_the_password() -> None:
    check_redis({})  # not set: nothing to check
    with pytest.raises(ConfigError) as caught:
        check_redis({"KC_REDIS_URL": "redis://:s3cret@127.0.0.1:1/0"})
    message = str(caught.value)
    assert "Redis does not answer" in message and "s3cret" not in message
    assert "\n" not in message


def test_keys_and_fingerprints() -> None:
    keys = CrawlKeys.of("kc_x", "knowledge")
    assert keys.requests == "kc_x:knowledge:requests"
    assert keys.workers not in keys.state and keys.dupefilter in keys.state
    assert page_fingerprint("a", "https://x.test/p") != page_fingerprint("b", "https://x.test/p")


@pytest.fixture
def dupefilter(redis_server: Any, redis_prefix: str) -> Iterator[PageDupeFilter]:
    server = redis_server
    keys = CrawlKeys.of(redis_prefix, "knowledge")
    stats: dict[str, int] = {}

    def inc_value(key: str, count: int = 1) -> None:
        stats[key] = stats.get(key, 0) + count

    sources = {
        "docs": Source("docs", ("https://x.test/",), ("x.test",), max_pages=2),
        "blog": Source("blog", ("https://x.test/",), ("x.test",)),
    }
    spider: Any = SimpleNamespace(
        sources=sources, crawler=SimpleNamespace(stats=SimpleNamespace(inc_value=inc_value))
    )
    df = PageDupeFilter(server, key=keys.dupefilter)
    df.spider, df.budget_key = spider, keys.budget
    df.stats_seen = stats  # for the test's eyes
    try:
        yield df
    finally:
        server.delete(*keys.state, keys.workers)


def page(source: str, url: str, **extra: Any) -> Request:
    return Request(
        url, meta={meta.SOURCE: source, meta.KEY: url.replace("http:", "https:"), **extra}
    )


def test_a_page_is_scheduled_once_per_source_and_the_budget_is_the_crawls(
    dupefilter: PageDupeFilter,
) -> None:
    seen = dupefilter.request_seen
    stats: dict[str, int] = dupefilter.stats_seen
    assert not seen(page("docs", "http://x.test/a"))
    assert seen(page("docs", "http://x.test/a"))  # another process's, or this one's again
    assert not seen(page("blog", "http://x.test/a"))  # another source's page
    assert stats["kc/frontier/already_scheduled"] == 1
    # a redirect to another spelling of its own page is the page's own request
    assert not seen(
        page("docs", "http://x.test/a", redirect_urls=["http://x.test/a"]).replace(
            url="https://x.test/a"
        )
    )
    # a redirect to a page already scheduled is dropped
    redirect = page("blog", "http://x.test/old", redirect_urls=["http://x.test/old"])
    assert seen(redirect.replace(url="https://x.test/a"))
    # docs has max_pages = 2: the third new page is over it, whoever found it
    assert not seen(page("docs", "http://x.test/b"))
    assert seen(page("docs", "http://x.test/c", **{meta.START: True}))
    assert stats["kc/discovery/over_max_pages"] == 1
    assert stats["kc/start/requested"] == -1 and stats["kc/start/elsewhere"] == 1
    # requests that are not pages keep scrapy-redis's own fingerprint
    assert not seen(Request("https://x.test/sitemap.xml"))
    assert seen(Request("https://x.test/sitemap.xml"))
