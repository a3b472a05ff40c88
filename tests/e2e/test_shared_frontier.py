"""Two ``scrapy crawl knowledge`` processes, one crawl: the shared frontier in Redis (F-SCALE).

Needs Redis (``KC_TEST_REDIS_URL``, default the local one) and PostgreSQL; skipped when
either does not answer, except under ``CI=true``, where the test fails instead. Every
key the crawl writes starts with a prefix of this test's own, and none is left behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.conftest import REDIS_URL
from tests.helpers import query
from tests.postgres import run_sql

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: Scrapy's line for each response (LOG_LEVEL=DEBUG)
CRAWLED = re.compile(r"Crawled \((\d+)\) <GET ([^>]+)>")


def crawl_command(seeds: str) -> list[str]:
    """``scrapy crawl knowledge`` of ``seeds``, fast, with a line for each response
    (LOG_LEVEL=DEBUG)."""
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
    debug = ["-s", "LOG_LEVEL=DEBUG"]
    return [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={seeds}", *fast, *debug]


def crawl_alone(crawl: list[str], db_url: str) -> set[str]:
    """Run ``crawl`` in one process without Redis into ``db_url``: the pages it stores,
    which the processes of a shared crawl must store together."""
    alone = subprocess.run(
        crawl,
        cwd=REPO,
        env={**os.environ, "KC_DATABASE_URL": db_url, "KC_REDIS_URL": ""},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert alone.returncode == 0, alone.stderr[-3000:]
    return {r["canonical_url"] for r in query(db_url, "SELECT canonical_url FROM pages")}


def shared_env(postgres_url: str, redis_prefix: str, tmp_path: Path) -> dict[str, str]:
    """The settings of the processes of one shared crawl: one database, one Redis."""
    return {
        "KC_DATABASE_URL": postgres_url,
        "KC_ARCHIVE_DIR": str(tmp_path / "archive"),
        "KC_REDIS_URL": REDIS_URL,
        "KC_REDIS_KEY_PREFIX": redis_prefix,
    }


def fetched_pages(stderr: str) -> list[tuple[str, str]]:
    """(status, URL) of each response of a crawl, robots.txt left out (every process reads it)."""
    return [(m[1], m[2]) for m in CRAWLED.finditer(stderr) if not m[2].endswith("/robots.txt")]


def crawl_together(crawl: list[str], env: dict[str, str], tmp_path: Path) -> list[tuple[int, str]]:
    """Start two crawl processes at once; (exit status, stderr) of each once both ended."""
    # stderr to files: a pipe that nobody reads while the other process runs would fill up
    # and stop its process.
    logs = [tmp_path / f"crawl-{i}.log" for i in range(2)]
    procs = []
    for log in logs:
        with log.open("wb") as sink:
            procs.append(
                subprocess.Popen(
                    crawl,
                    cwd=REPO,
                    env={**os.environ, **env},
                    stdout=subprocess.DEVNULL,
                    stderr=sink,
                )
            )
    for proc in procs:
        proc.wait(timeout=240)
    results = [
        (proc.returncode, log.read_text("utf-8", "replace"))
        for proc, log in zip(procs, logs, strict=True)
    ]
    for code, err in results:
        assert code == 0, err[-3000:]
        assert "Spider closed (finished)" in err, err[-3000:]
    return results


#: each page with the canonical URL of its representative (NULL: it is one)
DUPLICATES = (
    "SELECT p.canonical_url, r.canonical_url AS duplicate_of, p.duplicate_kind, "
    "r.duplicate_of AS rep_duplicate_of "
    "FROM pages p LEFT JOIN pages r ON r.id = p.duplicate_of"
)


def clusters(rows: list[tuple[object, ...]]) -> set[frozenset[str]]:
    """The duplicate clusters (a representative and its duplicates) of (page, representative) rows.

    Which page of a cluster represents it is the one processed first, which two
    processes may see in another order than one: the clusters, not their heads, compare.
    """
    groups: dict[str, set[str]] = {}
    for page, rep, *_ in rows:
        if rep is not None:
            groups.setdefault(str(rep), {str(rep)}).add(str(page))
    return {frozenset(g) for g in groups.values()}


def assert_keys_cleared(prefix: str) -> None:
    """The last process out cleared the crawl's keys."""
    import redis

    server = redis.Redis.from_url(REDIS_URL)
    try:
        assert list(server.scan_iter(match=f"{prefix}:*")) == []
    finally:
        server.close()


def test_two_processes_fetch_each_page_once_into_one_dataset(
    site: TestSite, postgres_url: str, redis_prefix: str, db_url: str, tmp_path: Path
) -> None:
    crawl = crawl_command(site.url)
    # One process alone, as before (no Redis): the pages the crawl must store.
    expected = crawl_alone(crawl, db_url)
    assert len(expected) > 20
    alone_clusters = clusters([tuple(r.values()) for r in query(db_url, DUPLICATES)])
    assert len(alone_clusters) >= 4, alone_clusters

    # Slow pages keep both processes in the crawl together.
    site.slow("/", 0.15)
    env = shared_env(postgres_url, redis_prefix, tmp_path)
    # Each process moves its dedupe state into its temporary file after 5 pages.
    results = crawl_together([*crawl, "-s", "KC_DEDUPE_MEMORY_PAGES=5"], env, tmp_path)

    # Each page fetched once across both processes, and both fetched some.
    fetched = [fetched_pages(err) for _, err in results]
    assert all(fetched), [len(f) for f in fetched]
    urls = [url for _, url in fetched[0] + fetched[1]]
    twice = {url: n for url, n in Counter(urls).items() if n > 1}
    assert not twice

    # One row per page, the pages one process alone stores.
    rows = run_sql(postgres_url, "SELECT canonical_url FROM pages")
    assert len(rows) == len({r[0] for r in rows})
    assert {r[0] for r in rows} == expected

    # Duplicates are judged together: the copies one process found, whichever process
    # fetched each page, and never the duplicate of a duplicate.
    dup_rows = run_sql(postgres_url, DUPLICATES)
    assert [r for r in dup_rows if r[3] is not None] == []
    assert clusters(dup_rows) == alone_clusters
    judged = [
        json.loads(str(r[0])) for r in run_sql(postgres_url, "SELECT counters FROM crawl_runs")
    ]
    # each judged pages of its own, so the one that judged last applied the other's entries
    assert all(c.get("kc/extract/ok", 0) > 0 for c in judged)
    assert sum(c.get("kc/dedupe/shared_replayed", 0) for c in judged) > 0, judged
    assert all(c.get("kc/dedupe/state_moved_at_pages", 0) >= 5 for c in judged), judged

    # Both runs finished, side by side, and their 200s add up to the pages fetched.
    runs = run_sql(
        postgres_url, "SELECT outcome, started_at, finished_at, counters FROM crawl_runs"
    )
    assert [r[0] for r in runs] == ["finished", "finished"]
    (_, start_a, end_a, _), (_, start_b, end_b, _) = runs
    assert str(start_a) < str(end_b) and str(start_b) < str(end_a), "the runs did not overlap"
    # each recorded its run only once it held the source's writer lease: the two processes
    # of one shared crawl held it together, and both let go of it at the end
    assert run_sql(postgres_url, "SELECT count(*) FROM leases") == [(0,)]
    ok = sum(int(json.loads(str(r[3])).get("kc/fetch/status/200", 0)) for r in runs)
    assert ok == sum(1 for f in fetched for status, _ in f if status == "200")

    assert_keys_cleared(redis_prefix)


def test_two_processes_share_the_page_budget(
    site: TestSite, postgres_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "site.toml"
    seeds.write_text(f'[[source]]\nid = "budget"\nstart_urls = ["{site.url}"]\nmax_pages = 12\n')
    crawl = crawl_command(str(seeds))
    site.slow("/", 0.1)
    env = shared_env(postgres_url, redis_prefix, tmp_path)
    results = crawl_together(crawl, env, tmp_path)
    # 12 pages for the crawl, not 12 for each process
    urls = [url for _, err in results for _, url in fetched_pages(err)]
    assert len(urls) == len(set(urls)) <= 12
    [[rows]] = run_sql(postgres_url, "SELECT count(*) FROM pages")
    assert 0 < int(str(rows)) <= 12
    runs = run_sql(postgres_url, "SELECT counters FROM crawl_runs")
    over = sum(int(json.loads(str(r[0])).get("kc/discovery/over_max_pages", 0)) for r in runs)
    assert over > 0
    assert_keys_cleared(redis_prefix)


def test_a_process_killed_before_its_batch_commits_loses_no_page_of_the_crawl(
    site: TestSite, postgres_url: str, redis_prefix: str, db_url: str, tmp_path: Path
) -> None:
    """A request's lease ends once what the page taught the crawl is committed, not once it
    is scraped: a process killed with pages in its unwritten batch leaves their requests
    leased, another process takes them when the leases end, and the crawl's rows are those
    of a crawl never stopped (pages found only through links included)."""
    seeds = tmp_path / "links.toml"
    seeds.write_text(
        f'[[source]]\nid = "links"\nstart_urls = ["{site.url}"]\ndepth_limit = 5\n',
        encoding="utf-8",
    )
    crawl = crawl_command(str(seeds))
    expected = crawl_alone(crawl, db_url)
    assert len(expected) > 40  # hubs, articles, copies: found only through links

    # Two requests at a time each, on slow pages: the crawl outlasts the kill below by
    # seconds, whatever the machine's speed.
    site.slow("/", 0.3)
    env = {
        **os.environ,
        **shared_env(postgres_url, redis_prefix, tmp_path),
        "KC_REDIS_LEASE_SECONDS": "3",
    }
    crawl += ["-s", "CONCURRENT_REQUESTS=2"]
    # The process to be killed holds every row in memory: its batch would commit at close.
    holding = [*crawl, "-s", "KC_STORE_FLUSH_SECONDS=600", "-s", "KC_STORE_BATCH_SIZE=100000"]
    killed_log, survivor_log = tmp_path / "killed.log", tmp_path / "survivor.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for command, log in ((holding, killed_log), (crawl, survivor_log)):
            with log.open("wb") as sink:
                procs.append(subprocess.Popen(command, cwd=REPO, env=env, stderr=sink))
        # killed once it has scraped pages and the survivor is in the crawl too
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and procs[0].poll() is None:
            joined = "shared frontier in Redis" in survivor_log.read_text("utf-8", "replace")
            if joined and len(fetched_pages(killed_log.read_text("utf-8", "replace"))) >= 8:
                break
            time.sleep(0.05)
        procs[0].kill()
        procs[0].wait(timeout=30)
        procs[1].wait(timeout=240)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    err = survivor_log.read_text("utf-8", "replace")
    assert procs[1].returncode == 0, err[-3000:]
    killed_pages = fetched_pages(killed_log.read_text("utf-8", "replace"))
    assert len(killed_pages) >= 8, "the killed process must have scraped pages of its own"
    stored = {str(r[0]) for r in run_sql(postgres_url, "SELECT canonical_url FROM pages")}
    assert stored == expected, sorted(expected - stored)[:10]
    assert "kc/frontier/reclaimed" in err, err[-3000:]  # its requests were taken again
