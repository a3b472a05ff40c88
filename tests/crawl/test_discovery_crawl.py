"""Crawls that discover pages from sitemaps, feeds and paginated APIs, with checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from knowledge_crawler.transform.canonical import canonical_url
from tests.helpers import coroutine_test, query, run_crawl

pytestmark = pytest.mark.crawl


def keys(site: TestSite, paths: list[str]) -> set[str]:
    return {canonical_url(site.url.rstrip("/") + p) for p in paths}


def stored(db_url: str) -> set[str]:
    return {r["canonical_url"] for r in query(db_url, "SELECT canonical_url FROM pages")}


def checkpoints(db_url: str) -> dict[str, str]:
    return {r["adapter"]: r["cursor"] for r in query(db_url, "SELECT * FROM checkpoints")}


def source_file(tmp_path: Path, site: TestSite, **keys_: Any) -> str:
    lines = ["[[source]]", 'id = "d"', f'start_urls = ["{site.url}"]', "follow_links = false"]
    for name, value in keys_.items():
        lines.append(f"{name} = {json.dumps(value) if not isinstance(value, str) else value}")
    path = tmp_path / "discovery.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def discovery(site: TestSite) -> dict[str, Any]:
    return site.manifest()["discovery"]


@coroutine_test
async def test_a_sitemap_index_with_gzip_children_yields_every_listed_page(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    index = discovery(site)["sitemaps"][0]
    seeds = source_file(tmp_path, site, sitemaps=[index["url"]])
    crawler = await run_crawl(db_url, seeds=seeds)
    expected = keys(site, index["pages"]) | {canonical_url(site.url)}
    assert stored(db_url) == expected
    marks = checkpoints(db_url)
    for child in index["children"]:
        assert f"sitemap:{child['url']}" in marks
    assert crawler.stats.get_value("kc/discovery/sitemap/pages") == len(index["pages"])


@coroutine_test
async def test_robots_txt_sitemap_lines_and_a_headerless_gzip_sitemap(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    raw = discovery(site)["sitemaps"][1]
    seeds = source_file(tmp_path, site, sitemaps=[site.url + "robots.txt", raw["url"]])
    await run_crawl(db_url, seeds=seeds)
    all_pages = keys(site, discovery(site)["sitemaps"][0]["pages"])
    assert keys(site, raw["pages"]) <= stored(db_url)
    assert all_pages <= stored(db_url)


@coroutine_test
async def test_rss_atom_and_rdf_feeds(site: TestSite, db_url: str, tmp_path: Path) -> None:
    feeds = discovery(site)["feeds"]
    seeds = source_file(tmp_path, site, feeds=[f["url"] for f in feeds])
    await run_crawl(db_url, seeds=seeds)
    for feed in feeds:  # Atom's links are relative to xml:base, not to the feed URL
        assert keys(site, feed["pages"]) <= stored(db_url), feed["format"]
    assert set(checkpoints(db_url)) == {f"feed:{f['url']}" for f in feeds}


@pytest.mark.parametrize("style", [0, 1], ids=["link-header", "cursor"])
@coroutine_test
async def test_a_paginated_api_yields_every_page_and_checkpoints_its_end(
    site: TestSite, db_url: str, tmp_path: Path, style: int
) -> None:
    api = discovery(site)["apis"][style]
    table = (
        f'{{ url = "{api["url"]}", items_path = "{api["items_path"]}", next = "{api["next_mode"]}"'
    )
    if api["next_mode"] == "cursor":
        table += f', cursor_field = "{api["cursor_field"]}", cursor_param = "{api["cursor_param"]}"'
    seeds = source_file(tmp_path, site, api=table + " }")
    crawler = await run_crawl(db_url, seeds=seeds)
    assert keys(site, api["pages"]) <= stored(db_url)
    assert crawler.stats.get_value("kc/discovery/api/responses") == len(api["walk"])
    cursor = json.loads(checkpoints(db_url)["api"])
    assert cursor["next"] is None and cursor["last"].endswith(api["walk"][-1])
    assert query(db_url, "SELECT COUNT(*) AS n FROM frontier")[0]["n"] == 0  # all settled

    # The next run starts from the last API page (to see whether a next one appeared),
    # and revalidates the stored pages instead of refetching them.
    again = await run_crawl(db_url, seeds=seeds)
    assert again.stats.get_value("kc/discovery/api/responses") == 1
    assert again.stats.get_value("kc/extract/ok") in (None, 0)


@coroutine_test
async def test_a_second_sitemap_run_leaves_old_known_entries_to_validation(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    index = discovery(site)["sitemaps"][0]
    seeds = source_file(tmp_path, site, sitemaps=[index["url"]])
    await run_crawl(db_url, seeds=seeds)
    site.mutate(0, "text", copies=False)  # its lastmod moves past the mark
    again = await run_crawl(db_url, seeds=seeds)
    run = query(db_url, "SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1")[0]
    assert run["responses_200_changed"] == 1
    assert run["responses_304"] == len(index["pages"])  # root + every unchanged article
    assert again.stats.get_value("kc/discovery/known_older_than_mark") >= len(index["pages"]) - 1


@coroutine_test
async def test_a_listed_page_this_crawl_already_fetched_leaves_no_frontier_entry(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """A page the crawl fetched before a feed listed it was never settled from the frontier
    (it is not requested twice), so listing it there left an entry forever."""
    feed = discovery(site)["feeds"][0]
    seeds = source_file(tmp_path, site, feeds=[feed["url"]])
    await run_crawl(db_url, seeds=seeds)
    newest = feed["pages"][0]
    article = next(a["i"] for a in site.manifest()["articles"] if a["path"] == newest)
    site.mutate(article, "text", copies=False)
    site.slow("/feed", 1.0)  # the stored pages are revalidated before the feed is read
    await run_crawl(db_url, seeds=seeds)
    assert query(db_url, "SELECT canonical_url FROM frontier") == []
    [changed] = query(db_url, "SELECT COUNT(*) AS n FROM page_versions")
    assert changed["n"] == 1
