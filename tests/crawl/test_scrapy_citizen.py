"""The knowledge spider behaves as a Scrapy citizen: runner arguments, settings, slots, progress."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.http import Request, Response

from knowledge_crawler import __version__
from knowledge_crawler.crawl.known import SeenKeys
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.spiders.knowledge import KnowledgeSpider, check_arguments
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, crawl_settings, query, run_crawl

pytestmark = pytest.mark.crawl


class _Seen:
    """Collects what the downloader sent (a bound method: signal handlers are weak refs)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def on_response(self, response: Response, request: Request, spider: Any) -> None:
        self.requests.append(request)


async def crawl_recording(db_url: str, settings: dict[str, Any], **args: str) -> tuple[Any, _Seen]:
    from scrapy.crawler import AsyncCrawlerRunner

    seen = _Seen()
    runner = AsyncCrawlerRunner(crawl_settings(db_url, **settings))
    crawler = runner.create_crawler(KnowledgeSpider)
    crawler.signals.connect(seen.on_response, signal=signals.response_received)
    await crawler.crawl_async(**args)
    return crawler, seen


def test_runner_arguments_starting_with_underscore_are_accepted() -> None:
    # scrapyd runs every job with -a _job=ID; that must not be "unknown argument".
    [source] = check_arguments({"seeds": "http://127.0.0.1:9/", "_job": "abc"})
    assert source.id == "127.0.0.1_9"
    with pytest.raises(ConfigError, match="colour"):
        check_arguments({"seeds": "http://127.0.0.1:9/", "colour": "red"})


@coroutine_test
async def test_contact_given_with_dash_s_reaches_the_user_agent(
    site: TestSite, db_url: str
) -> None:
    _, seen = await crawl_recording(
        db_url, {"KC_CONTACT": "mailto:ops@example.org", "CLOSESPIDER_PAGECOUNT": 3}, seeds=site.url
    )
    agents = {r.headers.get("User-Agent", b"").decode() for r in seen.requests}
    assert agents == {f"knowledge_crawler/{__version__} (+mailto:ops@example.org)"}


@coroutine_test
async def test_an_explicit_user_agent_wins(site: TestSite, db_url: str) -> None:
    _, seen = await crawl_recording(
        db_url, {"USER_AGENT": "custom-agent/1", "CLOSESPIDER_PAGECOUNT": 2}, seeds=site.url
    )
    assert {r.headers.get("User-Agent") for r in seen.requests} == {b"custom-agent/1"}


@coroutine_test
async def test_links_robots_txt_forbids_are_dropped_before_a_request_is_built(
    site: TestSite, db_url: str
) -> None:
    crawler, seen = await crawl_recording(db_url, {}, seeds=site.url)
    stats = crawler.stats
    assert site.manifest()["private"]
    assert not [r.url for r in seen.requests if "/private/" in r.url]
    dropped = stats.get_value("kc/discovery/robots_forbidden", 0)
    assert dropped > 0
    # the middleware had none left to refuse: every page link came after robots.txt
    assert stats.get_value("robotstxt/forbidden", 0) == 0
    spider = crawler.spider
    [source] = spider.sources.values()
    assert spider.request_for(source, site.url + "private/never-linked", depth=1) is None
    assert stats.get_value("kc/discovery/robots_forbidden") == dropped + 1
    assert spider.request_for(source, site.url + "not-private/linked", depth=1) is not None


@coroutine_test
async def test_a_crawl_that_ignores_robots_txt_drops_nothing_for_it(
    site: TestSite, db_url: str
) -> None:
    crawler, seen = await crawl_recording(db_url, {"ROBOTSTXT_OBEY": False}, seeds=site.url)
    assert [r.url for r in seen.requests if "/private/" in r.url]
    assert crawler.stats.get_value("kc/discovery/robots_forbidden", 0) == 0


@coroutine_test
async def test_consoles_are_off_and_progress_is_on(
    site: TestSite, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="knowledge_crawler.extensions.progress")
    crawler = await run_crawl(db_url, {"KC_PROGRESS_SECONDS": 0.2}, seeds=site.url)
    names = {type(ext).__name__ for ext in crawler.extensions.middlewares}
    assert "Progress" in names
    assert not names & {"TelnetConsole", "RemoteControl"}
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress:")]
    assert lines, "no progress line"
    [stored] = query(db_url, "SELECT COUNT(*) AS n FROM pages")
    assert f"{stored['n']:,} pages stored" in lines[-1]  # the closing line tells the total


@coroutine_test
async def test_a_source_with_its_own_politeness_gets_one_slot_for_all_its_hosts(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "polite.toml"
    seeds.write_text(
        "[[source]]\n"
        'id = "polite"\n'
        f'start_urls = ["{site.url}"]\n'
        "download_delay = 0\n"
        "concurrency_per_host = 2\n"
        "max_pages = 8\n",
        encoding="utf-8",
    )
    crawler, seen = await crawl_recording(db_url, {}, seeds=str(seeds))
    pages = [r for r in seen.requests if not r.url.endswith("/robots.txt")]
    assert pages and {r.meta.get("download_slot") for r in pages} == {"kc:polite"}
    spider = crawler.spider
    # the same slot for any host of the source, subdomains included
    source = spider.sources["polite"]
    for url in (site.url + "a", site.url.replace("127.0.0.1", "news.127.0.0.1") + "b"):
        spider._seen["polite"] = SeenKeys()  # as if not requested yet
        request = spider.request_for(source, url, depth=1)
        assert request is not None and request.meta["download_slot"] == "kc:polite"
    assert crawler.settings.getdict("DOWNLOAD_SLOTS")["kc:polite"] == {
        "delay": 0.0,
        "concurrency": 2,
    }
