"""Subprocess runs: a crawl killed outright, and databases that cannot be opened."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.faults import stored_rows
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]


def env_for(db: Path | str) -> dict[str, str]:
    return {**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}"}


def runs(db: Path) -> list[dict[str, object]]:
    return query(f"sqlite:///{db}", "SELECT * FROM crawl_runs ORDER BY id")


def test_a_killed_crawl_is_marked_abandoned_with_what_it_stored(
    site: TestSite, tmp_path: Path
) -> None:
    db = tmp_path / "k.db"
    slow = ["-s", "DOWNLOAD_DELAY=0.1", "-s", "AUTOTHROTTLE_ENABLED=False"]
    slow += ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "KC_STORE_FLUSH_SECONDS=0.2"]
    slow += ["-s", "KC_STORE_BATCH_SIZE=3"]
    process = subprocess.Popen(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}", *slow],
        cwd=REPO,
        env=env_for(db),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stored_rows(db) < 6:
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    written = stored_rows(db)
    assert 6 <= written < len(site.manifest()["articles"]), "nothing (or everything) to kill"
    [killed] = runs(db)
    assert (killed["outcome"], killed["finished_at"], killed["pid"]) == (
        "running",
        None,
        process.pid,
    )
    assert killed["host"] == socket.gethostname()
    # What it committed, it counted in the same transactions.
    assert killed["upserts_completed"] == killed["pages_new"] == written

    # Runs this host cannot judge are left alone: another host's, and a live process's.
    conn = sqlite3.connect(db)
    insert = (
        "INSERT INTO crawl_runs (spider, mode, sources, started_at, pid, host) "
        "VALUES ('knowledge', 'crawl', '[]', '2026-01-01T00:00:00.000000Z', ?, ?)"
    )
    conn.execute(insert, (process.pid, "another-host"))
    conn.execute(insert, (os.getpid(), socket.gethostname()))
    conn.commit()
    conn.close()

    again = subprocess.run(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}", *FAST],
        cwd=REPO,
        env=env_for(db),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"run {killed['id']} (pid {process.pid}" in again.stderr
    first, other_host, alive, second = runs(db)
    assert first["outcome"] == "abandoned" and first["finished_at"] is not None
    assert first["upserts_completed"] == first["pages_new"] == written  # as it left them
    assert (other_host["outcome"], alive["outcome"]) == ("running", "running")
    assert second["outcome"] == "finished" and second["finish_reason"] == "finished"
    total = stored_rows(db)
    assert second["pages_new"] == total - written
    assert query(f"sqlite:///{db}", "SELECT COUNT(*) AS n FROM quarantine")[0]["n"] == 0


def bad_databases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (database path, what the one line must say)."""
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 200)
    folder = tmp_path / "folder.db"
    folder.mkdir()
    return {
        "text file": (text, "file is not a database"),
        "directory": (folder, "directory"),
        "under a file": (text / "k.db", f"{text} is not a directory"),
    }


@pytest.mark.parametrize("case", ["text file", "directory", "under a file"])
@pytest.mark.parametrize("command", ["stats", "duplicates", "crawl"])
def test_a_database_that_cannot_be_opened_is_one_line_and_exit_2(
    tmp_path: Path, case: str, command: str
) -> None:
    path, reason = bad_databases(tmp_path)[case]
    if command == "crawl":
        args = [str(BIN / "scrapy"), "crawl", "knowledge", "-a", "seeds=http://127.0.0.1:9/"]
    else:
        args = [str(BIN / "knowledge-crawler"), command]
    result = subprocess.run(
        args, cwd=REPO, env=env_for(path), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert str(path) in lines[0] and reason in lines[0]
    assert "Traceback" not in result.stderr and not result.stdout
