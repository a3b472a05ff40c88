"""A per-site spider derived from the knowledge spider keeps its pipeline and adds its rules:
its own discovery, link rules, a content selector and extra fields."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from scrapy.http import TextResponse

from knowledge_crawler.spiders.example_journal import ExampleJournalSpider
from knowledge_crawler.spiders.example_site import ExampleSiteSpider
from knowledge_crawler.testsite import TestSite
from knowledge_crawler.transform.extract import extract, extract_selected, stored_form
from tests.helpers import (
    coroutine_test,
    crawl_settings,
    pages_by_url,
    query,
    run_crawl,
    site_key,
)

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


# -- the site author's hooks: link rules, content selector, extra fields ------------------


class _Fetched:
    """The URL of every response the crawl received (a bound method: signals keep weak refs)."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def on_response(self, response: Any, request: Any, spider: Any) -> None:
        self.urls.append(response.url)


async def _crawl(db_url: str, spider: Any, **spider_args: str) -> tuple[Any, list[str]]:
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerRunner

    fetched = _Fetched()
    runner = AsyncCrawlerRunner(crawl_settings(db_url))
    crawler = runner.create_crawler(spider)
    crawler.signals.connect(fetched.on_response, signal=signals.response_received)
    await crawler.crawl_async(**spider_args)
    return crawler, fetched.urls


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@coroutine_test
async def test_journal_spider_selects_articles_stores_extras_and_obeys_its_link_rules(
    site: TestSite, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="knowledge_crawler.pipelines.extract")
    crawler, fetched = await _crawl(db_url, ExampleJournalSpider, seeds=site.url)
    stats = crawler.stats.get_stats()
    manifest = site.manifest()
    pages = pages_by_url(db_url)
    articles = {a["path"]: a for a in manifest["articles"] if a["status"] == 200}

    # Every article is stored, its content the <article class="post"> rendered as markdown.
    stored_articles = {p: pages[site_key(site, p)] for p in articles if site_key(site, p) in pages}
    assert set(stored_articles) == set(articles)
    assert stats["kc/extract/selected"] == len(articles)
    structured = 0
    copies: set[str] = set()  # print and syndicated copies the articles link to
    for path, page in stored_articles.items():
        html = site.fetch(path).text
        copies.update(re.findall(r'href="(/(?:print|syndicated)/[^"]+)"', html))
        selected = extract_selected(html, "article.post")
        assert selected is not None
        content, headings, words = stored_form(selected.markdown, selected.headings)
        assert page["content"] == content, path
        assert json.loads(page["headings"]) == list(headings)
        assert page["word_count"] == words
        assert page["title"] == articles[path]["title"]
        # the page's chrome around the article is not content
        for chrome in ("Related articles", "Comments are closed", "Share this article"):
            assert chrome not in page["content"], (path, chrome)
        body = html.split('<article class="post">', 1)[1].split("</article>", 1)[0]
        if "<table>" in body and "<pre>" in body and "<ul>" in body:
            structured += 1
            assert "| Option | Typical cost | Rating |\n| --- | --- | --- |" in page["content"]
            assert "\n```\n# " in page["content"]  # the settings block, fenced
            assert re.search(r"^- \S", page["content"], re.MULTILINE)
        # The extra fields: author and date, and price and stock where a product box shows.
        extra = json.loads(page["extra"])
        assert extra["author"] and page["content"].startswith(f"By {extra['author']} · ")
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", extra["published"])
        if articles[path]["price"] is None:
            assert set(extra) == {"author", "published"}
        else:
            price = float(articles[path]["price"].lstrip("$").replace(",", ""))
            assert extra["price"] == price
            assert extra["in_stock"] is articles[path]["in_stock"]
    assert structured > 0

    # Link rules: the article tools link print and syndicated copies and tags from <main>;
    # they are denied, and the header, sidebar and footer (/about) are not followed at all.
    paths = {_path(u) for u in fetched}
    assert copies and not copies & paths
    assert not {p for p in paths if p.startswith(("/print/", "/syndicated/", "/tag/"))}
    assert "/about" not in paths
    assert stats["kc/discovery/link_denied"] > 0

    # Pages without <article class="post"> fall back to automatic extraction, counted.
    home = pages[site_key(site, "/")]
    assert json.loads(home["extra"]) == {}
    automatic = extract(site.fetch("/").text)
    assert home["content"] == stored_form(automatic.markdown, automatic.headings)[0]
    assert "Latest articles" in home["content"]
    article_keys = {site_key(site, a) for a in articles}
    missed = [p for p in pages.values() if p["canonical_url"] not in article_keys]
    assert stats["kc/extract/selector_missed"] == len(missed) > 0
    warnings = [r.getMessage() for r in caplog.records if "content_selector" in r.getMessage()]
    assert len(warnings) == 1 and "'article.post' matched no text on http" in warnings[0]


class _BadExtras(ExampleJournalSpider):
    """Extras that JSON cannot hold on articles; a hook that raises elsewhere."""

    name = "bad_extras"

    def extra_fields(self, response: TextResponse) -> dict[str, Any]:
        if "/articles/" in response.url:
            return {"seen": {1, 2}}
        raise RuntimeError("no article here")


class _MissingContent(ExampleJournalSpider):
    name = "missing_content"
    content_selector = "//div[@id='no-such-element']"


@coroutine_test
async def test_bad_extras_and_a_missing_selector_never_lose_a_page(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "few.toml"
    starts = [site.article_url(0), site.article_url(1), f"{site.url}about"]
    seeds.write_text(
        f'[[source]]\nid = "few"\nfollow_links = false\nstart_urls = {json.dumps(starts)}\n'
    )
    crawler, _ = await _crawl(db_url, _BadExtras, seeds=str(seeds))
    stats = crawler.stats.get_stats()
    rows = query(db_url, "SELECT canonical_url, extra FROM pages")
    assert len(rows) == 3 and {r["extra"] for r in rows} == {"{}"}
    assert stats["kc/extract/extra_invalid"] == 2
    assert stats["kc/spider/extra_fields_failed"] == 1
    assert "kc/store/quarantined" not in stats

    other_db = f"sqlite:///{tmp_path}/missing.db"
    crawler, _ = await _crawl(other_db, _MissingContent, seeds=str(seeds))
    stats = crawler.stats.get_stats()
    assert stats["kc/extract/selector_missed"] == 3 and "kc/extract/selected" not in stats
    for row in query(other_db, "SELECT canonical_url, content FROM pages"):
        path = _path(row["canonical_url"])
        automatic = extract(site.fetch(path).text)
        assert row["content"] == stored_form(automatic.markdown, automatic.headings)[0]
        assert row["content"]
