"""Incremental sync on the loopback site: validators, 304s, versions, adaptive refresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.history import history
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, last_run, pages_by_url, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


key = site_key


pages = pages_by_url


#: a crawl whose known pages are in their temporary file and whose queue holds 8 requests
#: (KnownPages, KC_QUEUE_MEMORY_REQUESTS) decides exactly as one that holds everything
SMALL_MEMORY = {"KC_KNOWN_MEMORY_PAGES": "0", "KC_QUEUE_MEMORY_REQUESTS": "8"}


@pytest.mark.parametrize("memory", [{}, SMALL_MEMORY], ids=["in_memory", "small_memory"])
@coroutine_test
async def test_after_editing_five_pages_exactly_those_get_a_new_version(
    site: TestSite, db_url: str, memory: dict[str, str]
) -> None:
    await run_crawl(db_url, memory, seeds=site.url)
    before = pages(db_url)
    articles = site.manifest()["articles"]
    edited = {key(site, articles[i]["path"]) for i in (3, 9, 14, 22, 31)}
    for i in (3, 9, 14, 22, 31):
        site.mutate(i, "text", copies=False)
    crawler = await run_crawl(db_url, memory, seeds=site.url)
    after = pages(db_url)
    run = last_run(db_url)

    versions = query(
        db_url, "SELECT p.canonical_url FROM page_versions v JOIN pages p ON p.id = v.page_id"
    )
    assert {v["canonical_url"] for v in versions} == edited and len(versions) == 5
    assert run["responses_200_changed"] == 5 and run["pages_new"] == 0
    # Every other stored page was asked with its validators and answered 304, unparsed.
    validated = {u for u, r in before.items() if r["etag"] or r["last_modified"]}
    assert run["conditional_requests_sent"] == len(validated)
    assert run["responses_304"] == len(validated - edited)
    assert crawler.stats.get_value("kc/extract/ok") == len(before) - run["responses_304"]
    for url, row in after.items():
        if url in edited:
            assert row["last_changed_at"] > before[url]["last_changed_at"]
            assert row["etag"] != before[url]["etag"]
        else:
            assert row["content"] == before[url]["content"]
            assert row["last_changed_at"] == before[url]["last_changed_at"]
            assert row["last_checked_at"] > before[url]["last_checked_at"]


@coroutine_test
async def test_revisit_intervals_adapt_to_what_each_check_saw(site: TestSite, db_url: str) -> None:
    await run_crawl(db_url, seeds=site.url)
    first = pages(db_url)
    article = key(site, site.manifest()["articles"][0]["path"])
    other = key(site, site.manifest()["articles"][1]["path"])
    start = first[article]["check_interval"]
    assert start and first[article]["next_check_at"] > first[article]["last_checked_at"]
    site.mutate(0, "text", copies=False)
    await run_crawl(db_url, seeds=site.url)
    second = pages(db_url)
    assert second[article]["check_interval"] == max(3600, round(start * 0.5))  # changed
    assert second[other]["check_interval"] == round(start * 1.5)  # a 304: unchanged
    assert second[other]["next_check_at"] > first[other]["next_check_at"]


@coroutine_test
async def test_refresh_revalidates_only_the_due_pages_most_overdue_first(
    site: TestSite, db_url: str
) -> None:
    await run_crawl(db_url, seeds=site.url)
    articles = site.manifest()["articles"]
    due = [key(site, articles[i]["path"]) for i in (5, 6, 7)]
    import sqlite3

    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    with conn:
        conn.execute("UPDATE page_meta SET next_check_at = '2999-01-01T00:00:00.000000Z'")
        for n, url in enumerate(due):
            conn.execute(
                "UPDATE page_meta SET next_check_at = ? WHERE canonical_url = ?",
                (f"2020-01-0{n + 1}T00:00:00.000000Z", url),
            )
    conn.close()
    before = pages(db_url)
    site.mutate(6, "price", copies=False)
    crawler = await run_crawl(db_url, seeds=site.url, mode="refresh")
    after = pages(db_url)
    checked = {u for u in after if after[u]["last_checked_at"] != before[u]["last_checked_at"]}
    assert checked == set(due)
    assert crawler.stats.get_value("kc/start/requested") == 3
    assert crawler.stats.get_value("kc/discovery/candidates") == 3  # no link was followed
    assert last_run(db_url)["responses_200_changed"] == 1
    assert last_run(db_url)["mode"] == "refresh"


@coroutine_test
async def test_history_lists_a_pages_versions(site: TestSite, db_url: str, tmp_path: Path) -> None:
    await run_crawl(db_url, seeds=site.url)
    site.mutate(2, "text", copies=False)
    await run_crawl(db_url, seeds=site.url)
    url = site.url.rstrip("/") + site.manifest()["articles"][2]["path"] + "?utm_source=x"
    result = CliRunner().invoke(history, ["--db", db_url, url, "--json"])
    assert result.exit_code == 0, result.output
    versions = json.loads(result.output)
    assert len(versions) == 2 and versions[0]["replaced_at"] is None
    assert versions[0]["content_hash"] != versions[1]["content_hash"]
    human = CliRunner().invoke(history, ["--db", db_url, url])
    assert "2 versions" in human.output and "current" in human.output
    missing = CliRunner().invoke(history, ["--db", db_url, site.url + "nowhere"])
    assert missing.exit_code == 2 and "no stored page" in missing.output
