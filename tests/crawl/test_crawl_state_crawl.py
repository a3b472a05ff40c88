"""The crawl state (F-STATE) in real crawls of the loopback site: redirects recorded on
the URL that redirects, non-pages recorded once, links stored with the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import (
    coroutine_test,
    crawl_settings,
    last_run,
    pages_by_url,
    query,
    run_crawl,
    site_key,
)

pytestmark = pytest.mark.crawl


@coroutine_test
async def test_a_page_that_starts_redirecting_is_recorded_and_its_target_stored(
    site: TestSite, db_url: str
) -> None:
    await run_crawl(db_url, seeds=site.url)
    article = site.manifest()["articles"][6]
    old = site_key(site, article["path"])
    new = site_key(site, "/moved/" + article["path"].rstrip("/").rsplit("/", 1)[1])
    before = pages_by_url(db_url)[old]
    # The moved page is the same file with the same ETag: a request that carried the old
    # URL's validators to it would get a 304 for a page the store does not hold.
    site.move(6)
    await run_crawl(db_url, seeds=site.url)

    stored = pages_by_url(db_url)
    assert new in stored, "the target of the redirect is stored under its own key"
    target = stored[new]
    assert target["status"] == "active" and target["http_status"] == 200
    assert target["content_hash"] == before["content_hash"]
    assert target["duplicate_of"] is None  # not a copy of what the old URL used to hold
    moved = stored[old]
    assert moved["status"] == "tombstoned"
    assert moved["redirect_to"] == new
    assert moved["http_status"] == 301
    assert moved["content"] == before["content"]  # its content is kept
    assert moved["etag"] is None  # the validators were its content's
    assert moved["next_check_at"] > last_run(db_url)["started_at"]  # it stays checked
    [state] = query(db_url, "SELECT * FROM urls WHERE canonical_url = ?", old)
    assert (state["state"], state["target"], state["last_status"]) == ("redirected", new, 301)


@coroutine_test
async def test_a_non_page_in_a_sitemap_is_downloaded_once_not_on_every_crawl(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "files.toml"
    seeds.write_text(
        f'[[source]]\nid = "files"\nstart_urls = ["{site.url}about"]\nfollow_links = false\n'
        f'sitemaps = ["{site.url}sitemaps/files.xml"]\n',
        encoding="utf-8",
    )
    await run_crawl(db_url, seeds=str(seeds))
    pdf = site_key(site, "/files/report.pdf")
    [row] = query(db_url, "SELECT * FROM frontier WHERE canonical_url = ?", pdf)
    assert row["state"] == "refused"
    assert row["reason"].startswith("not HTML (application/pdf")
    assert row["next_due_at"] > row["checked_at"]
    first = json.loads(last_run(db_url)["counters"])
    assert first["kc/extract/non_html"] == 2  # the PDF and the JSON

    await run_crawl(db_url, seeds=str(seeds))
    again = json.loads(last_run(db_url)["counters"])
    assert again.get("kc/extract/non_html", 0) == 0  # neither downloaded again
    [state] = query(db_url, "SELECT state, reason FROM urls WHERE canonical_url = ?", pdf)
    assert state["state"] == "refused"


@coroutine_test
async def test_every_link_found_is_in_the_crawl_state_with_the_page_that_listed_it(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "one.toml"
    seeds.write_text(
        f'[[source]]\nid = "one"\nstart_urls = ["{site.url}"]\ndepth_limit = 0\n',
        encoding="utf-8",
    )
    await run_crawl(db_url, seeds=str(seeds))
    home = site_key(site, "/")
    assert set(pages_by_url(db_url)) == {home}  # depth 0: the home page alone is fetched
    links = query(db_url, "SELECT * FROM frontier WHERE source_id = 'one'")
    assert len(links) >= 5
    assert {(r["adapter"], r["found_on"], r["depth"], r["state"]) for r in links} == {
        ("link", home, 1, "discovered")
    }
    assert site_key(site, "/articles") in {r["canonical_url"] for r in links}


@coroutine_test
async def test_urls_that_wait_together_for_robots_txt_are_all_judged_by_it(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    # A resumed crawl starts with many URLs of one host at once: each must wait for the
    # host's robots.txt and be refused by it, not only the first few.
    private = [a["private"] for a in site.manifest()["articles"] if a.get("private")][:6]
    assert len(private) >= 4
    seeds = tmp_path / "private.toml"
    urls = ", ".join(f'"{site.url.rstrip("/")}{path}"' for path in private)
    seeds.write_text(
        f'[[source]]\nid = "p"\nstart_urls = [{urls}]\nfollow_links = false\n',
        encoding="utf-8",
    )
    await run_crawl(db_url, seeds=str(seeds))
    assert query(db_url, "SELECT canonical_url FROM pages") == []
    refused = query(db_url, "SELECT reason FROM frontier WHERE state = 'refused'")
    assert [r["reason"] for r in refused] == ["Forbidden by robots.txt"] * len(private)


async def crawl_watching_the_queue(db_url: str, seeds: str, **settings: Any) -> tuple[Any, int]:
    """A crawl in-process, and the most requests its queue held at once."""
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerRunner

    from knowledge_crawler.spiders.knowledge import KnowledgeSpider

    crawler = AsyncCrawlerRunner(crawl_settings(db_url, **settings)).create_crawler(KnowledgeSpider)
    queued = [0]

    def scheduled() -> None:
        stats = crawler.stats
        enqueued = stats.get_value("scheduler/enqueued", 0)
        queued.append(enqueued - stats.get_value("scheduler/dequeued", 0))

    crawler.signals.connect(scheduled, signal=signals.request_scheduled)
    await crawler.crawl_async(seeds=seeds)
    return crawler, max(queued)


@coroutine_test
async def test_a_full_queue_leaves_links_to_the_crawl_state_and_loses_none(
    db_url: str, tmp_path: Path
) -> None:
    # The queue is only a cache of the crawl state: with room for 6 requests, links found
    # while it is full are recorded, not requested, and requested from the crawl state as
    # it drains. The crawl stores what an unbounded one stores, with no page twice.
    whole = f"sqlite:///{tmp_path}/whole.db"
    with TestSite(pages=300) as site:
        unbounded, most = await crawl_watching_the_queue(
            whole, site.url, KC_QUEUE_MEMORY_REQUESTS=0, KC_ARCHIVE_DIR=str(tmp_path / "a1")
        )
        crawler, held = await crawl_watching_the_queue(
            db_url, site.url, KC_QUEUE_MEMORY_REQUESTS=6, KC_ARCHIVE_DIR=str(tmp_path / "a2")
        )
    stats = crawler.stats.get_stats()
    assert stats["kc/outcome"] == "finished"
    assert stats["kc/crawl_state/deferred"] > 0
    assert set(pages_by_url(db_url)) == set(pages_by_url(whole))
    # no page fetched twice: no more downloads than the unbounded crawl made (which
    # may make one more: an alias that redirects to a page it had already requested)
    responses = "downloader/response_status_count/200"
    assert stats[responses] <= unbounded.stats.get_value(responses)
    # the queue held no more than its bound (requests built for several pages at once
    # count before they are queued), where the unbounded crawl queued most of the site
    assert held <= 6 and most > 100
    discovered = "SELECT COUNT(*) AS n FROM frontier WHERE state = 'discovered'"
    assert query(db_url, discovered) == query(whole, discovered)
