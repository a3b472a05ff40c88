"""Benchmark: a shared crawl (two ``scrapy crawl knowledge`` processes, one Redis frontier).

    .venv/bin/python bench/bench_shared.py [--pages N] [--processes P] [--repeat K]

Starts the loopback test site (``TestSite(pages=N, warm=True)``, default 300), then runs P
(default 2) crawl processes at once with ``KC_REDIS_URL`` (``KC_TEST_REDIS_URL``, default
the local Redis; a key prefix of the run's own) into one PostgreSQL schema of its own
(``KC_TEST_POSTGRES_URL``), K times (default 3), and prints each run's pages/s: responses
downloaded by all processes (``downloader/response_count``, robots.txt included) over the
wall time from the first start to the last exit. Not a test: a number to compare before
and after a change of the shared frontier.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import site_pid, wait_warm  # noqa: E402

BIN = Path(sys.executable).parent


def one_run(site_url: str, processes: int, redis_url: str, database: str) -> tuple[float, int]:
    from tests.postgres import create_schema, drop_schema, run_sql

    schema = create_schema(database, "bench")
    prefix = f"kc_bench_{secrets.token_hex(4)}"
    env = {
        **os.environ,
        "KC_DATABASE_URL": schema,
        "KC_REDIS_URL": redis_url,
        "KC_REDIS_KEY_PREFIX": prefix,
    }
    crawl = [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site_url}"]
    crawl += ["-s", "LOG_LEVEL=WARNING", "-s", "DOWNLOAD_DELAY=0"]
    crawl += ["-s", "AUTOTHROTTLE_ENABLED=False", "-s", "CONCURRENT_REQUESTS=16"]
    crawl += ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=16"]
    with tempfile.TemporaryDirectory() as tmp:
        env["KC_ARCHIVE_DIR"] = str(Path(tmp) / "archive")
        logs = [Path(tmp) / f"crawl-{i}.log" for i in range(processes)]
        started = time.monotonic()
        procs = []
        for log in logs:
            with log.open("wb") as sink:
                procs.append(
                    subprocess.Popen(
                        crawl, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=sink
                    )
                )
        for proc in procs:
            proc.wait(timeout=600)
        wall = time.monotonic() - started
        for proc, log in zip(procs, logs, strict=True):
            if proc.returncode != 0:
                sys.exit(f"bench_shared: a crawl failed:\n{log.read_text()[-3000:]}")
    runs = run_sql(schema, "SELECT counters FROM crawl_runs")
    responses = sum(int(json.loads(str(r[0])).get("downloader/response_count", 0)) for r in runs)
    drop_schema(schema)
    return wall, responses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from knowledge_crawler.testsite import TestSite
    from tests.postgres import session_database

    redis_url = os.environ.get("KC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    with TestSite(pages=args.pages, warm=True) as site, session_database() as database:
        wait_warm(site_pid(site))
        for i in range(args.repeat):
            wall, responses = one_run(site.url, args.processes, redis_url, database)
            print(
                f"run {i + 1}: {args.processes} processes, {responses} responses in "
                f"{wall:.1f} s: {responses / wall:.1f} pages/s",
                flush=True,
            )


if __name__ == "__main__":
    main()
