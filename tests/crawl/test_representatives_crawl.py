"""Representatives chosen by signals over a real crawl of the loopback site (issue 23)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.testsite import TestSite
from tests.crawl.test_dedupe_crawl import decisions
from tests.helpers import coroutine_test, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


@coroutine_test
async def test_a_print_copy_seen_first_is_the_duplicate_of_its_article(
    site: TestSite, db_url: str
) -> None:
    """The /print/ copy is crawled first (the first seed) and says rel=canonical to its
    article: the article, linked from listings and related lists, ends as the
    representative, the copy as its exact duplicate, and search and stats cite it."""
    manifest = site.manifest()
    dup = next(d for d in manifest["exact_duplicates"] if d["path"].startswith("/print/"))
    printed, article = site_key(site, dup["path"]), site_key(site, dup["of"])
    root = site.url.rstrip("/")
    site.slow(dup["of"], 1.0)  # the article, found through the home page, comes a second late
    crawler = await run_crawl(db_url, seeds=f"{root}{dup['path']},{site.url}")
    site.slow(dup["of"], 0)

    # seen before its article indeed (the home page, the other seed, may come before both)
    seen = {
        row["canonical_url"]: row["first_seen_at"]
        for row in query(db_url, "SELECT canonical_url, first_seen_at FROM pages")
    }
    assert seen[printed] < seen[article]
    got = decisions(db_url)
    assert got[printed] == (article, "exact", 1.0)
    assert got[article] == (None, None, None)
    assert crawler.stats.get_value("kc/dedupe/reassigned", 0) >= 1
    # the print copy's stored outlinks name the article as its canonical URL
    [canonical] = query(
        db_url,
        "SELECT to_url FROM outlinks WHERE source_id = ? AND from_url = ? AND canonical = 1",
        next(iter(crawler.spider.sources)),
        printed,
    )
    assert canonical["to_url"] == article
    [inlinks] = query(db_url, "SELECT count(*) AS n FROM outlinks WHERE to_url = ?", article)
    assert inlinks["n"] >= 3

    # search cites the article, never the copy
    i = next(a["i"] for a in manifest["articles"] if a["path"] == dup["of"])
    sentence = site.js_expected(i)["paragraphs"][2]
    result = CliRunner().invoke(cli, ["search", "--db", db_url, sentence, "-k", "5", "--json"])
    assert result.exit_code == 0, result.output
    found = [json.loads(line) for line in result.output.splitlines()]
    assert found and found[0]["canonical_url"] == article
    assert all(r["canonical_url"] != printed for r in found)
    # the duplicates listing names the article as the cluster's representative, and no
    # duplicate points at a page that is itself a duplicate
    listed = CliRunner().invoke(cli, ["duplicates", "--db", db_url, "--json"])
    assert listed.exit_code == 0, listed.output
    clusters = {
        c["representative"]["canonical_url"]: {d["canonical_url"] for d in c["duplicates"]}
        for c in json.loads(listed.output)
    }
    assert printed in clusters[article] and printed not in clusters
    stats = CliRunner().invoke(cli, ["stats", "--db", db_url, "--json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.output)["sanity"]["chained_duplicates"] == 0

    # a second crawl, restored from the store, changes nothing
    again = await run_crawl(db_url, seeds=f"{root}{dup['path']},{site.url}")
    assert decisions(db_url) == got
    assert again.stats.get_value("kc/dedupe/reassigned", 0) == 0


@coroutine_test
async def test_a_near_copy_seen_first_gives_way_to_the_more_linked_article(
    site: TestSite, db_url: str
) -> None:
    """The /syndicated/ near copy (no rel=canonical) is crawled first: the article, with
    more pages linking to it, ends as the representative, the copy as its near
    duplicate."""
    manifest = site.manifest()
    dup = manifest["near_duplicates"][0]
    copy, article = site_key(site, dup["path"]), site_key(site, dup["of"])
    site.slow(dup["of"], 1.0)  # the article, found through the home page, comes a second late
    await run_crawl(db_url, seeds=f"{site.url.rstrip('/')}{dup['path']},{site.url}")
    site.slow(dup["of"], 0)

    seen = {
        row["canonical_url"]: row["first_seen_at"]
        for row in query(db_url, "SELECT canonical_url, first_seen_at FROM pages")
    }
    assert seen[copy] < seen[article]  # the copy came first
    got = decisions(db_url)
    rep, kind, score = got[copy]
    assert (rep, kind) == (article, "near") and 0.85 <= score < 1.0
    assert got[article] == (None, None, None)
    inlinks = {
        r["to_url"]: r["n"]
        for r in query(
            db_url,
            "SELECT to_url, count(*) AS n FROM outlinks WHERE to_url IN (?, ?) GROUP BY to_url",
            copy,
            article,
        )
    }
    assert inlinks[article] > inlinks.get(copy, 0)
