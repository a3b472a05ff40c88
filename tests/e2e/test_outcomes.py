"""`scrapy crawl` tells the truth about how a crawl ended: exit status, one line, run record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]


def env_for(db: Path) -> dict[str, str]:
    return {**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}"}


def crawl(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "scrapy"), "crawl", "knowledge", *args],
        cwd=REPO,
        env=env_for(db),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def runs(db: Path) -> list[dict[str, object]]:
    return query(f"sqlite:///{db}", "SELECT * FROM crawl_runs ORDER BY id")


def test_a_crawl_that_fetches_none_of_its_start_urls_fails_with_one_line(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    result = crawl(db, "-a", "seeds=http://127.0.0.1:9/", "-s", "RETRY_ENABLED=False")
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "scrapy crawl knowledge: error: none of the 1 start URLs could be fetched "
        "(DownloadConnectionRefusedError=1)"
    )
    [run] = runs(db)
    assert run["outcome"] == "failed"
    stats = subprocess.run(
        [str(BIN / "knowledge-crawler"), "stats", "--json"],
        env=env_for(db),
        capture_output=True,
        text=True,
        check=True,
    )
    [reported] = json.loads(stats.stdout)["runs"]
    assert reported["fetch_errors"] == {"DownloadConnectionRefusedError": 1}
    human = subprocess.run(
        [str(BIN / "knowledge-crawler"), "stats"], env=env_for(db), capture_output=True, text=True
    )
    assert "DownloadConnectionRefusedError=1" in human.stdout


def test_a_scrapyd_job_id_is_accepted_and_recorded(site: TestSite, tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    result = crawl(db, "-a", f"seeds={site.url}", "-a", "_job=6487ec2c", *FAST)
    assert result.returncode == 0, result.stderr[-2000:]
    [run] = runs(db)
    assert run["job_id"] == "6487ec2c" and run["outcome"] == "finished"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_crawl_exits_non_zero_and_is_recorded_interrupted(
    site: TestSite, tmp_path: Path, signum: int
) -> None:
    db = tmp_path / "k.db"
    slow = ["-s", "DOWNLOAD_DELAY=0.1", "-s", "AUTOTHROTTLE_ENABLED=False"]
    slow += ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "KC_STORE_FLUSH_SECONDS=0.2"]
    process = subprocess.Popen(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}", *slow],
        cwd=REPO,
        env=env_for(db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    stored = 0
    while time.monotonic() < deadline and stored < 5:
        time.sleep(0.2)
        if db.exists():
            try:
                stored = query(f"sqlite:///{db}", "SELECT COUNT(*) AS n FROM pages")[0]["n"]
            except Exception:  # the schema may not be there yet
                stored = 0
    assert stored >= 5, "the crawl stored nothing to interrupt"
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr[-2000:]
    [run] = runs(db)
    assert run["outcome"] == "interrupted"
    [rows] = query(f"sqlite:///{db}", "SELECT COUNT(*) AS n FROM pages")
    assert 0 < rows["n"] < len(site.manifest()["articles"])
    assert run["upserts_completed"] == rows["n"]  # its true counters
