"""A crawl holds its sources' writer lease (F-STATE): in-process crawls of the test site,
on SQLite and on PostgreSQL.

The other writer is a real lease row taken through the store, as another process (of
another host: its pid cannot be judged from here) would take it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.sources import resolve_seeds
from knowledge_crawler.store import LeaseHolder, open_store, utc_now
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, run_crawl

pytestmark = pytest.mark.crawl

OTHER = LeaseHolder(
    holder="elsewhere:77:x", token="elsewhere:77:x", host="elsewhere", pid=77, command="refresh"
)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, db_url: str) -> str:
    if request.param == "sqlite":
        return db_url
    return str(request.getfixturevalue("postgres_url"))


def count(url: str, table: str) -> int:
    with open_store(url) as store:
        return int(store.query(f"SELECT COUNT(*) AS n FROM {table}")[0]["n"])


def source_id(site: TestSite) -> str:
    [source] = resolve_seeds(site.url)
    return source.id


@coroutine_test
async def test_a_crawl_refused_by_another_writers_lease_writes_nothing(
    site: TestSite, database: str, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    with open_store(database) as store:
        assert store.acquire_leases([source_id(site)], OTHER, ttl=60) == []
    crawler = await run_crawl(database, {"KC_ARCHIVE_DIR": str(archive)}, seeds=site.url)
    stats = crawler.stats.get_stats()
    assert stats["kc/outcome"] == "refused"
    assert stats["kc/lease/refused"].startswith(
        f"source '{source_id(site)}' is being written by refresh (pid 77 on elsewhere), "
        "last heartbeat "
    )
    assert stats.get("downloader/request_count", 0) == 0
    # no run record left 'running', no page, nothing archived; the holder keeps its lease
    assert count(database, "crawl_runs") == count(database, "page_meta") == 0
    assert not archive.exists() or not any(archive.iterdir())
    with open_store(database) as store:
        assert [lease.token for lease in store.leases()] == [OTHER.token]


@coroutine_test
async def test_a_crawl_holds_its_lease_while_it_runs_and_releases_it_at_the_end(
    site: TestSite, database: str, tmp_path: Path
) -> None:
    site.slow("/articles/", 0.05)
    seen: list[Any] = []
    done = threading.Event()

    def watch() -> None:
        with open_store(database) as store:
            while not done.is_set():
                seen.extend(lease for lease in store.leases() if lease.run_id is not None)
                time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        crawler = await run_crawl(database, {"KC_ARCHIVE_DIR": str(tmp_path / "a")}, seeds=site.url)
    finally:
        done.set()
        watcher.join()
    run_id = crawler.stats.get_value("kc/run_id")
    assert crawler.stats.get_value("kc/outcome") == "finished"
    assert seen, "the lease was never seen while the crawl ran"
    assert {(lease.source_id, lease.run_id, lease.pid, lease.command) for lease in seen} == {
        (source_id(site), run_id, os.getpid(), "crawl")
    }
    with open_store(database) as store:
        assert store.leases() == []


@coroutine_test
async def test_a_crawl_told_to_wait_runs_once_the_holder_is_done(
    site: TestSite, database: str, tmp_path: Path
) -> None:
    with open_store(database) as store:
        assert store.acquire_leases([source_id(site)], OTHER, ttl=60) == []
    released: list[str] = []

    def release() -> None:
        with open_store(database) as store:
            store.release_leases(OTHER)
        released.append(utc_now())

    threading.Timer(1.5, release).start()
    settings = {"KC_ARCHIVE_DIR": str(tmp_path / "a"), "KC_LEASE_WAIT_SECONDS": "60"}
    crawler = await run_crawl(database, settings, seeds=site.url)
    assert crawler.stats.get_value("kc/outcome") == "finished"
    assert crawler.stats.get_value("kc/lease/waited_ms") >= 1000
    with open_store(database) as store:
        [run] = store.query("SELECT * FROM crawl_runs")
        first_page = store.query("SELECT MIN(first_seen_at) AS t FROM page_meta")[0]["t"]
    assert run["outcome"] == "finished" and count(database, "page_meta") > 40
    # nothing was written, the run not even recorded, before the holder let go
    assert released and run["started_at"] > released[0] and first_page > released[0]


@coroutine_test
async def test_an_expired_lease_of_another_host_is_taken_over(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    with open_store(db_url) as store:
        assert store.acquire_leases([source_id(site)], OTHER, ttl=0.5) == []
    await asyncio.sleep(0.6)  # its holder sent no heartbeat: expired
    crawler = await run_crawl(db_url, {"KC_ARCHIVE_DIR": str(tmp_path / "a")}, seeds=site.url)
    assert crawler.stats.get_value("kc/outcome") == "finished"
    assert count(db_url, "page_meta") > 40
