"""In-process crawls of the loopback test site, asserting on database rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, last_run, pages_by_url, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


key = site_key


pages = pages_by_url


@coroutine_test
async def test_first_crawl_stores_each_page_once_and_nothing_it_must_not(
    site: TestSite, db_url: str
) -> None:
    crawler = await run_crawl(db_url, seeds=site.url)
    manifest = site.manifest()
    stored = pages(db_url)

    # One row per identity, every article present once.
    [counts] = query(
        db_url, "SELECT COUNT(*) AS n, COUNT(DISTINCT source_id || canonical_url) AS d FROM pages"
    )
    assert counts["n"] == counts["d"] > 0
    articles = {key(site, a["path"]) for a in manifest["articles"]}
    assert articles <= set(stored)

    # Never a tracking-parameter variant, a fragment, a robots-disallowed or control page.
    for url in stored:
        assert not any(p in url for p in ("utm_", "gclid", "fbclid", "ref=", "#")), url
        assert "/private/" not in url and "/__control/" not in url, url
    assert manifest["private"], "the site must offer disallowed pages for this test to mean much"
    # refused by the spider before a Request is built (test_scrapy_citizen has the rest)
    assert crawler.stats.get_value("kc/discovery/robots_forbidden", 0) > 0

    # Boilerplate is gone from content; the article text is there.
    sample = stored[key(site, manifest["articles"][0]["path"])]
    assert sample["title"] and sample["word_count"] >= 100
    for junk in ("Page generated", "Accept all cookies", "Subscribe to our newsletter"):
        assert junk not in sample["content"]
    assert len(sample["content_hash"]) == 64

    # Thin pages are stored and flagged; non-HTML responses are not stored but counted.
    for path in manifest["thin"]:
        assert stored[key(site, path)]["thin"] == 1
    assert not any(u.endswith((".pdf", ".json")) for u in stored)

    # Exact copies are stored and point at their original.
    by_id = {r["id"]: r["canonical_url"] for r in stored.values()}
    for dup in manifest["exact_duplicates"]:
        row = stored[key(site, dup["path"])]
        assert row["duplicate_kind"] == "exact"
        assert by_id[row["duplicate_of"]] == key(site, dup["of"])

    run = last_run(db_url)
    assert run["finish_reason"] == "finished"
    assert run["pages_new"] == len(stored) and run["upserts_completed"] == len(stored)
    # Nothing lost between the pipelines and the database: every item is a stored page or
    # a URL recorded in the crawl state as redirected or refused.
    # (robots.txt refusals of links are recorded with the page that had them)
    outcomes = query(
        db_url,
        "SELECT COUNT(*) AS n FROM frontier "
        "WHERE state <> 'discovered' AND reason <> 'Forbidden by robots.txt'",
    )
    assert outcomes[0]["n"] > 0  # the site's /redirect/ links and its JSON
    assert crawler.stats.get_value("item_scraped_count") == len(stored) + outcomes[0]["n"]
    assert run["duplicates_found"] >= len(manifest["exact_duplicates"])


@coroutine_test
async def test_second_crawl_of_unchanged_site_rewrites_nothing(site: TestSite, db_url: str) -> None:
    await run_crawl(db_url, seeds=site.url)
    before = pages(db_url)
    await run_crawl(db_url, seeds=site.url)
    after = pages(db_url)

    assert set(after) == set(before)
    run = last_run(db_url)
    assert run["pages_new"] == 0 and run["responses_200_changed"] == 0
    # Every stored page with a validator was asked conditionally, and answered 304.
    validated = [r for r in before.values() if r["etag"] or r["last_modified"]]
    assert len(validated) >= 0.9 * len(before)
    assert run["conditional_requests_sent"] == len(validated)
    assert run["responses_304"] == len(validated)
    assert run["responses_304"] + run["responses_200_unchanged"] == len(before)
    assert query(db_url, "SELECT COUNT(*) AS n FROM page_versions")[0]["n"] == 0
    for url, row in after.items():
        old = before[url]
        assert row["first_seen_at"] == old["first_seen_at"]
        assert row["last_changed_at"] == old["last_changed_at"]
        assert row["content"] == old["content"]
        assert row["last_seen_at"] > old["last_seen_at"]


@coroutine_test
async def test_real_changes_move_the_hash_and_noise_does_not(site: TestSite, db_url: str) -> None:
    await run_crawl(db_url, seeds=site.url)
    before = pages(db_url)
    kinds = {0: "price", 1: "stock", 2: "text", 3: "append", 4: "whitespace", 5: "case"}
    for i, kind in kinds.items():
        site.mutate(i, kind)
    await run_crawl(db_url, seeds=site.url)
    after = pages(db_url)

    articles = site.manifest()["articles"]
    moved = {
        i
        for i in kinds
        if after[key(site, articles[i]["path"])]["content_hash"]
        != before[key(site, articles[i]["path"])]["content_hash"]
    }
    assert moved == {0, 1, 2, 3}
    assert last_run(db_url)["responses_200_changed"] == 4
    versions = query(
        db_url,
        "SELECT p.canonical_url, v.content FROM page_versions v JOIN pages p ON p.id = v.page_id",
    )
    assert {v["canonical_url"] for v in versions} == {
        key(site, articles[i]["path"]) for i in (0, 1, 2, 3)
    }
    for v in versions:
        assert v["content"] == before[v["canonical_url"]]["content"]


@coroutine_test
async def test_source_file_scope_depth_and_budget(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "site.toml"
    seeds.write_text(
        f"""
[[source]]
id = "scoped"
start_urls = ["{site.url}"]
depth_limit = 1
max_pages = 12
exclude = ["/tag/"]
"""
    )
    await run_crawl(db_url, seeds=str(seeds))
    rows = query(db_url, "SELECT source_id, canonical_url FROM pages")
    assert rows and {r["source_id"] for r in rows} == {"scoped"}
    assert len(rows) <= 12
    assert not any("/tag/" in r["canonical_url"] for r in rows)


@coroutine_test
async def test_legacy_encodings_decode_whether_declared_or_not(site: TestSite, db_url: str) -> None:
    await run_crawl(db_url, seeds=site.url)
    stored = pages(db_url)
    for page in site.manifest()["charsets"]:
        row = stored[key(site, page["path"])]
        assert page["text"] in row["content"], (page["encoding"], row["content"][:200])
        assert row["title"] == page["title"]


@coroutine_test
async def test_two_sources_sharing_pages_each_store_them(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "two.toml"
    seeds.write_text(
        "".join(
            f'[[source]]\nid = "{sid}"\nstart_urls = ["{site.url}articles"]\n'
            "follow_links = true\ndepth_limit = 1\n\n"
            for sid in ("one", "two")
        )
    )
    await run_crawl(db_url, seeds=str(seeds))
    by_source: dict[str, set[str]] = {"one": set(), "two": set()}
    for r in query(db_url, "SELECT source_id, canonical_url FROM pages"):
        by_source[r["source_id"]].add(r["canonical_url"])
    assert by_source["one"] and by_source["one"] == by_source["two"]
