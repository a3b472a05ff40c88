"""A real ``scrapy crawl knowledge`` process into a SQLite file, and what it stored: for
the tests that stop crawls (SIGKILL, Ctrl-C) and run them again."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.helpers import query

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
FAST += ["-s", "KC_STORE_FLUSH_SECONDS=0.1", "-s", "KC_STORE_BATCH_SIZE=5"]


def command(seeds_file: str, *settings: str) -> list[str]:
    """The crawl of ``seeds_file``, fast, with ``-s NAME=VALUE`` of each of ``settings``."""
    extra = [arg for setting in settings for arg in ("-s", setting)]
    return [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={seeds_file}", *FAST, *extra]


def env(db: Path) -> dict[str, str]:
    return {**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}"}


def rows(db: Path) -> set[tuple[str, str, str]]:
    """Every stored page: source, canonical URL and content hash."""
    return {
        (r["source_id"], r["canonical_url"], r["content_hash"])
        for r in query(f"sqlite:///{db}", "SELECT * FROM pages")
    }


def count(db: Path, sql: str) -> int:
    """``sql``'s one number, read while a crawl may write (0 when the file is not ready)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def crawl_to_end(db: Path, seeds_file: str, *settings: str) -> None:
    done = subprocess.run(
        command(seeds_file, *settings),
        cwd=REPO,
        env=env(db),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
