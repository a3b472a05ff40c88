"""A crawl of the test site's whole fault section ends with every page in the state the
rules give, in bounded time, and stats explains what happened."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.stats import stats
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, query, run_crawl, site_key

pytestmark = pytest.mark.crawl

SETTINGS = {
    "KC_RETRY_BASE_SECONDS": 0.01,
    "KC_RETRY_MAX_SECONDS": 0.05,
    "KC_RETRY_MAX_ATTEMPTS": 3,
    "KC_RETRY_WAIT_SECONDS": 5,
    "DOWNLOAD_TIMEOUT": 1.5,  # above /faults/slow (1 s), below timeout-then-ok (2 s)
}


def outcome(pages: dict[str, Any], attempts: dict[str, Any], key: str) -> str:
    if key in pages:
        return str(pages[key]["status"])
    state = attempts.get(key)
    if state is not None and (state["dead_lettered_at"] or state["needs_review"]):
        return "dead_lettered"
    return "not_stored"


@coroutine_test
async def test_every_fault_ends_as_the_rules_say(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "faults.toml"
    seeds.write_text(
        f'[[source]]\nid = "f"\nstart_urls = ["{site.url}faults/"]\ndepth_limit = 3\n'
        "max_pages = 150\n",
        encoding="utf-8",
    )
    started = time.monotonic()
    crawler = await run_crawl(db_url, SETTINGS, seeds=str(seeds))
    assert time.monotonic() - started < 60
    pages = {r["canonical_url"]: r for r in query(db_url, "SELECT * FROM pages")}
    attempts = {r["canonical_url"]: r for r in query(db_url, "SELECT * FROM fetch_attempts")}
    manifest = site.manifest()
    checked = 0
    for case in manifest["faults"]:
        if not case.get("path") or not case.get("linked"):
            continue
        got = outcome(pages, attempts, site_key(site, case["path"]))
        expect = case["expect"]
        if expect == "dead_lettered":
            assert got in ("dead_lettered", *case["acceptable"]), (case["name"], got)
        elif expect == "not_stored":
            assert got in ("not_stored", "dead_lettered"), (case["name"], got)
            assert site_key(site, case["path"]) not in pages
        else:
            assert got in case["acceptable"], (case["name"], got, case["reason"])
        checked += 1
    assert checked >= 20
    # binary bytes and a gzip body labelled text/html are not pages: nothing stored
    assert crawler.stats.get_value("kc/extract/non_html", 0) >= 2
    # a redirect loop, a 20-hop chain and a decompression bomb are recorded, not retried
    kinds = {a["last_error"] for a in attempts.values()}
    assert {"TooManyRedirects", "BodyTooLarge", "http_503", "http_401", "http_403"} <= kinds
    # traps end within the source's limits
    hits = manifest["fault_hits"]
    assert sum(v for k, v in hits.items() if "calendar" in k) <= 10
    assert sum(v for k, v in hits.items() if "search" in k) <= 10
    # the private addresses were never requested (scope refuses them first here)
    assert not [u for u in pages if "169.254" in u or "10.0.0.1" in u]
    # stats explains it: fetch errors by kind, dead letters, review
    report = CliRunner().invoke(stats, ["--db", db_url])
    assert report.exit_code == 0, report.output
    assert "http_503=" in report.output and "TooManyRedirects=" in report.output
    assert "dead letters / held for review:" in report.output
