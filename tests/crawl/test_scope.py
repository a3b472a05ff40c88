"""A request outside its source's scope is refused before it is fetched, redirects included.

The test site's ``/elsewhere/<slug>`` answers 301 to the article under the server's
other name (``127.0.0.1`` instead of ``localhost``); ``/redirect/<slug>`` answers 301
to the article on the same host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from scrapy import Spider, signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.utils.test import get_crawler

from knowledge_crawler import meta
from knowledge_crawler.crawl.runtime import runtime_for
from knowledge_crawler.middlewares.scope import ScopeMiddleware
from knowledge_crawler.sources import sources_from_urls
from knowledge_crawler.spiders.knowledge import KnowledgeSpider
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, crawl_settings, query

pytestmark = pytest.mark.crawl


class _Downloads:
    """Every request that reached the downloader (robots.txt included): a bound method,
    as signal handlers are weak references."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def on_request(self, request: Request, spider: Any) -> None:
        self.urls.append(request.url)

    def to_host(self, host: str) -> list[str]:
        return [u for u in self.urls if urlsplit(u).hostname == host]


async def crawl(db_url: str, **args: str) -> tuple[Any, _Downloads]:
    downloads = _Downloads()
    runner = AsyncCrawlerRunner(crawl_settings(db_url))
    crawler = runner.create_crawler(KnowledgeSpider)
    crawler.signals.connect(downloads.on_request, signal=signals.request_reached_downloader)
    await crawler.crawl_async(**args)
    return crawler, downloads


def slug(site: TestSite, i: int = 0) -> str:
    return site.article_path(i).rsplit("/", 1)[1]


@coroutine_test
async def test_redirect_to_another_sources_host_is_never_requested(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    # Both hosts are in the crawl (so Scrapy's offsite filter lets the redirect pass),
    # but the redirected request belongs to "local", whose scope is localhost only.
    target = f"{site.loopback_url}articles/{slug(site)}"
    seeds = tmp_path / "two.toml"
    seeds.write_text(
        "[[source]]\n"
        'id = "local"\n'
        f'start_urls = ["{site.url}elsewhere/{slug(site)}"]\n'
        "follow_links = false\n"
        "[[source]]\n"
        'id = "other"\n'
        f'start_urls = ["{site.loopback_url}about"]\n'
        "follow_links = false\n",
        encoding="utf-8",
    )
    crawler, downloads = await crawl(db_url, seeds=str(seeds))
    stats = crawler.stats.get_stats()
    assert target not in downloads.urls, downloads.urls
    assert f"{site.loopback_url}about" in downloads.urls  # the other source did crawl
    assert stats.get("kc/scope/refused_redirect") == 1
    assert stats.get("kc/scope/refused") == 1
    assert "kc/fetch/redirected_out_of_scope" not in stats
    stored = {r["source_id"] for r in query(db_url, "SELECT source_id FROM pages")}
    assert stored == {"other"}


@coroutine_test
async def test_redirect_to_an_excluded_path_is_never_requested(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    target = site.article_url(0)
    seeds = tmp_path / "excluded.toml"
    seeds.write_text(
        "[[source]]\n"
        'id = "local"\n'
        f'start_urls = ["{site.url}redirect/{slug(site)}", "{site.url}about"]\n'
        "exclude = ['/articles/']\n"
        "follow_links = false\n",
        encoding="utf-8",
    )
    crawler, downloads = await crawl(db_url, seeds=str(seeds))
    stats = crawler.stats.get_stats()
    assert target not in downloads.urls, downloads.urls
    assert stats.get("kc/scope/refused_redirect") == 1
    assert stats.get("kc/fetch/ignored") == 1  # the spider's errback saw the refusal
    [row] = query(db_url, "SELECT url FROM pages")
    assert row["url"] == f"{site.url}about"


@coroutine_test
async def test_redirect_to_a_host_of_no_source_is_never_requested(
    site: TestSite, db_url: str
) -> None:
    _, downloads = await crawl(db_url, seeds=f"{site.url}elsewhere/{slug(site)}")
    assert downloads.to_host("127.0.0.1") == []  # not even its robots.txt
    assert downloads.to_host("localhost")
    assert query(db_url, "SELECT url FROM pages") == []


# -- the middleware alone ------------------------------------------------------------------


@pytest.fixture
def middleware(db_url: str) -> Any:
    crawler = get_crawler(Spider, {"KC_DATABASE_URL": db_url})
    crawler.stats.open_spider()
    runtime = runtime_for(crawler)
    [source] = sources_from_urls("http://localhost:8000/")
    runtime.sources = {source.id: source}
    yield ScopeMiddleware.from_crawler(crawler), crawler, source.id
    runtime.store.close()


def test_requests_without_a_source_pass(middleware: Any) -> None:
    mw, crawler, _ = middleware
    assert mw.process_request(Request("http://elsewhere.example/")) is None
    assert crawler.stats.get_value("kc/scope/refused") is None


def test_in_scope_requests_pass_and_others_are_refused(middleware: Any) -> None:
    mw, crawler, sid = middleware
    assert (
        mw.process_request(Request("http://sub.localhost:8000/a", meta={meta.SOURCE: sid})) is None
    )
    with pytest.raises(IgnoreRequest, match="scope"):
        mw.process_request(Request("http://127.0.0.1:8000/a", meta={meta.SOURCE: sid}))
    redirected = Request(
        "http://127.0.0.1:8000/b",
        meta={meta.SOURCE: sid, "redirect_urls": ["http://localhost:8000/b"]},
    )
    with pytest.raises(IgnoreRequest):
        mw.process_request(redirected)
    assert crawler.stats.get_value("kc/scope/refused") == 2
    assert crawler.stats.get_value("kc/scope/refused_redirect") == 1


def test_a_request_of_an_unknown_source_is_refused(middleware: Any) -> None:
    mw, crawler, _ = middleware
    with pytest.raises(IgnoreRequest, match="unknown source"):
        mw.process_request(Request("http://localhost:8000/", meta={meta.SOURCE: "nope"}))
    assert crawler.stats.get_value("kc/scope/unknown_source") == 1


def test_the_middleware_is_enabled_before_robots_txt() -> None:
    settings = crawl_settings("sqlite:///unused.db")
    priorities = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    ours = priorities["knowledge_crawler.middlewares.scope.ScopeMiddleware"]
    assert ours < priorities["knowledge_crawler.middlewares.robots.RobotsMiddleware"]
