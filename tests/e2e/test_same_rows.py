"""One crawl, four ways, the same rows (F-SCALE): ``scrapy crawl`` into SQLite, into
PostgreSQL, split over two processes sharing Redis (into PostgreSQL), and as a scrapyd job.

Needs PostgreSQL, Redis and scrapyd's dependencies; under ``CI=true`` a missing service
fails the test. Which of two copies represents the other is the one processed first, which
concurrent crawls may see in either order: duplicates compare by their clusters.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from tests.conftest import REDIS_URL
from tests.e2e.scrapyd_server import ScrapydServer
from tests.e2e.test_shared_frontier import crawl_together
from tests.postgres import create_schema, drop_schema, run_sql

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = {"DOWNLOAD_DELAY": "0", "AUTOTHROTTLE_ENABLED": "False"}

PAGES = (
    "SELECT p.source_id, p.canonical_url, p.content_hash, p.content, p.title, p.headings, "
    "p.word_count, p.status, p.http_status, p.etag, p.last_modified, p.depth, "
    "r.canonical_url AS duplicate_of "
    "FROM pages p LEFT JOIN pages r ON r.id = p.duplicate_of"
)
PASSAGES = (
    "SELECT m.source_id, m.canonical_url, s.id FROM passages s JOIN page_meta m ON m.id = s.page_id"
)

Rows = dict[tuple[str, str], tuple[Any, ...]]


def dataset(pages: list[tuple[Any, ...]], passages: list[tuple[Any, ...]]) -> Rows:
    """Each page's columns, its duplicate cluster (or None) and its passage ids."""
    clusters: dict[str, set[str]] = {}
    for *_, url, rep in ((r[0], r[1], r[-1]) for r in pages):
        if rep is not None:
            clusters.setdefault(str(rep), {str(rep)}).add(str(url))
    cluster_of = {url: frozenset(group) for group in clusters.values() for url in group}
    ids: dict[tuple[str, str], list[str]] = {}
    for source_id, url, passage in passages:
        ids.setdefault((str(source_id), str(url)), []).append(str(passage))
    return {
        (str(r[0]), str(r[1])): (
            *r[2:-1],
            cluster_of.get(str(r[1])),
            tuple(sorted(ids.get((str(r[0]), str(r[1])), []))),
        )
        for r in pages
    }


def sqlite_dataset(db_url: str) -> Rows:
    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    try:
        return dataset(conn.execute(PAGES).fetchall(), conn.execute(PASSAGES).fetchall())
    finally:
        conn.close()


def postgres_dataset(url: str) -> Rows:
    return dataset(run_sql(url, PAGES), run_sql(url, PASSAGES))


def crawl(site: TestSite, env: dict[str, str]) -> None:
    command = [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}"]
    for name, value in FAST.items():
        command += ["-s", f"{name}={value}"]
    done = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "KC_REDIS_URL": "", **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_same_crawl_stores_the_same_rows_on_every_way_it_runs(
    site: TestSite,
    postgres_database: str,
    redis_prefix: str,
    scrapyd: ScrapydServer,
    tmp_path: Path,
) -> None:
    # 1. one process into SQLite: the rows every other way must store
    sqlite_url = f"sqlite:///{tmp_path / 'alone.db'}"
    crawl(site, {"KC_DATABASE_URL": sqlite_url})
    expected = sqlite_dataset(sqlite_url)
    assert len(expected) > 40
    assert sum(1 for row in expected.values() if row[-2] is not None) >= 8  # duplicates

    schemas = [create_schema(postgres_database) for _ in range(2)]
    try:
        # 2. one process into PostgreSQL
        crawl(site, {"KC_DATABASE_URL": schemas[0], "KC_ARCHIVE_DIR": str(tmp_path / "a1")})
        assert postgres_dataset(schemas[0]) == expected

        # 3. two processes sharing the frontier and the dedupe log in Redis
        site.slow("/", 0.1)  # slow pages keep both processes in the crawl together
        command = [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}"]
        for name, value in FAST.items():
            command += ["-s", f"{name}={value}"]
        env = {
            "KC_DATABASE_URL": schemas[1],
            "KC_ARCHIVE_DIR": str(tmp_path / "a2"),
            "KC_REDIS_URL": REDIS_URL,
            "KC_REDIS_KEY_PREFIX": redis_prefix,
        }
        crawl_together(command, env, tmp_path)
        site.slow("/", 0)
        assert postgres_dataset(schemas[1]) == expected
        assert len(run_sql(schemas[1], "SELECT DISTINCT pid FROM crawl_runs")) == 2
    finally:
        for schema in schemas:
            drop_schema(schema)

    # 4. a scrapyd job of the deployed egg
    job_url = f"sqlite:///{tmp_path / 'job.db'}"
    entry = scrapyd.wait_for(scrapyd.schedule({"KC_DATABASE_URL": job_url, **FAST}, seeds=site.url))
    assert "'kc/outcome': 'finished'" in scrapyd.job_log(entry)
    assert sqlite_dataset(job_url) == expected
