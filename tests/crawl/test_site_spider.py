"""A per-site spider derived from the knowledge spider keeps its pipeline and adds its rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_crawler.spiders.example_site import ExampleSiteSpider
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, query, run_crawl

pytestmark = pytest.mark.crawl


@coroutine_test
async def test_example_site_spider_follows_pagination_only(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "listing.toml"
    seeds.write_text(
        f'[[source]]\nid = "listing"\nstart_urls = ["{site.url}articles"]\nfollow_links = false\n'
    )
    await run_crawl(db_url, spider=ExampleSiteSpider, seeds=str(seeds))
    urls = sorted(r["canonical_url"] for r in query(db_url, "SELECT canonical_url FROM pages"))
    listing = [u for u in urls if "/articles" in u]
    assert listing == urls  # nothing but the listing pages
    pages = [p for p in site.manifest()["listing"] if p.startswith("/articles")]
    assert len(urls) == len(pages) > 1  # every page of the article listing
    [run] = query(db_url, "SELECT spider, finish_reason FROM crawl_runs")
    assert run == {"spider": "example_site", "finish_reason": "finished"}


@coroutine_test
async def test_example_site_spider_survives_non_html_responses(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "json.toml"
    seeds.write_text(
        f'[[source]]\nid = "json"\nstart_urls = ["{site.url}api/data.json", "{site.url}about"]\n'
    )
    crawler = await run_crawl(db_url, spider=ExampleSiteSpider, seeds=str(seeds))
    errors = {k: v for k, v in crawler.stats.get_stats().items() if "spider_exceptions" in k}
    assert errors == {}
    assert crawler.stats.get_value("kc/extract/non_html") >= 1
