"""Subprocess runs of the real commands with ``KC_DATABASE_URL=postgresql://...``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(
    args: list[str], env: dict[str, str], timeout: float = 180, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_scrapy_crawl_into_postgresql_then_the_commands_read_it(
    site: TestSite, postgres_url: str, tmp_path: Path
) -> None:
    crawl = [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}"]
    crawl += ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
    # With a password in the URL (the local server trusts it, and no line may show it).
    url = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    env = {"KC_DATABASE_URL": url}
    # KC_DATABASE_URL is all it takes: the raw archive goes to data/archive in the folder
    # the crawl runs in (a folder of one's own, with the project's settings by name)
    work = tmp_path / "work"
    work.mkdir()
    outside = {**env, "SCRAPY_SETTINGS_MODULE": "knowledge_crawler.settings"}
    done = run(crawl, outside, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Spider closed (finished)" in done.stderr and "s3cret" not in done.stderr
    assert list((work / "data" / "archive").glob("kc-*.warc.gz"))

    stats = run([str(BIN / "knowledge-crawler"), "stats", "--json"], env)
    assert stats.returncode == 0, stats.stderr
    report = json.loads(stats.stdout)
    assert report["database"].startswith("postgresql://postgres:***@")
    sanity = report["sanity"]
    assert sanity["total_rows"] > 0 and sanity["total_rows"] == sanity["distinct_identities"]
    [run_row] = report["runs"]
    assert (run_row["outcome"], run_row["pages_new"]) == ("finished", sanity["total_rows"])

    found = run([str(BIN / "knowledge-crawler"), "search", "article", "-k", "3", "--json"], env)
    assert found.returncode == 0, found.stderr
    assert len(found.stdout.splitlines()) == 3
