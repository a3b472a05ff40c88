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
    args: list[str], env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=REPO,
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
    # The raw archive has no database folder to sit beside: one line, exit 2, no password.
    refused = run(crawl, env, timeout=60)
    assert refused.returncode == 2, refused.stderr[-2000:]
    [line] = refused.stderr.strip().splitlines()
    assert "KC_ARCHIVE_DIR must be set" in line and "s3cret" not in line

    env["KC_ARCHIVE_DIR"] = str(tmp_path / "archive")
    done = run(crawl, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Spider closed (finished)" in done.stderr and "s3cret" not in done.stderr

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
