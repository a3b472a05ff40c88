"""A crawl killed with SIGKILL at any moment and started again ends with the same rows.

Sources: a paginated JSON API (Link-header pages) and a sitemap index. The API is
slowed down so that the kill lands mid-pagination; the resumed crawl must find the
pages the dead one discovered but did not store (the frontier), continue the API
from its checkpoint, and write nothing twice.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.e2e.crawl_process import REPO, command, count, crawl_to_end, env, rows
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def seeds(tmp_path: Path, site: TestSite) -> str:
    manifest = site.manifest()["discovery"]
    api = manifest["apis"][0]["url"].replace("per_page=20", "per_page=5")
    sitemap = manifest["sitemaps"][0]["url"]
    path = tmp_path / "resume.toml"
    path.write_text(
        f"""
[[source]]
id = "api"
start_urls = ["{site.url}"]
follow_links = false
api = {{ url = "{api}" }}

[[source]]
id = "maps"
start_urls = ["{site.url}about"]
follow_links = false
sitemaps = ["{sitemap}"]
""",
        encoding="utf-8",
    )
    return str(path)


@pytest.mark.parametrize("kill_after_pages", [3, 30])
def test_a_killed_crawl_resumes_to_the_same_rows(
    site: TestSite, tmp_path: Path, kill_after_pages: int
) -> None:
    seeds_file = seeds(tmp_path, site)
    whole = tmp_path / "whole.db"
    crawl_to_end(whole, seeds_file)
    expected = rows(whole)
    articles = len(site.manifest()["articles"])
    counters = query(f"sqlite:///{whole}", "SELECT counters FROM crawl_runs")[0]["counters"]
    assert len({r for r in expected if r[0] == "api"}) > articles // 2, counters

    db = tmp_path / "killed.db"
    site.slow("/api/", 0.3)
    process = subprocess.Popen(
        command(seeds_file), cwd=REPO, env=env(db), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        stored = count(db, "SELECT COUNT(*) FROM page_meta WHERE source_id = 'api'")
        if stored >= kill_after_pages and count(db, "SELECT COUNT(*) FROM checkpoints"):
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    site.slow("/api/", 0)
    partial = rows(db)
    assert partial < expected, "the kill must land mid-crawl for this test to mean anything"

    crawl_to_end(db, seeds_file)
    assert rows(db) == expected  # nothing lost
    assert count(db, "SELECT COUNT(*) FROM page_versions") == 0  # nothing written twice
    left = query(f"sqlite:///{db}", "SELECT * FROM frontier")
    stored = {
        (r["source_id"], r["canonical_url"]): r
        for r in query(
            f"sqlite:///{db}",
            "SELECT source_id, canonical_url, first_seen_at, last_checked_at FROM pages",
        )
    }
    assert left == [], [(r, stored.get((r["source_id"], r["canonical_url"]))) for r in left]
    outcomes = [r["outcome"] for r in query(f"sqlite:///{db}", "SELECT outcome FROM crawl_runs")]
    assert outcomes == ["abandoned", "finished"]
