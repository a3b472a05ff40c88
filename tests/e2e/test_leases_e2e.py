"""Two real ``scrapy crawl`` processes on one source of one database never write at once
(F-STATE): the second is refused in one line (exit 2), or waits with
``KC_LEASE_WAIT_SECONDS``; a killed or hung holder's lease ends and the next crawl runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.sources import resolve_seeds
from knowledge_crawler.testsite import TestSite
from tests.faults import stored_rows
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
SLOW = [
    *("-s", "DOWNLOAD_DELAY=0.1", "-s", "AUTOTHROTTLE_ENABLED=False"),
    *("-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "KC_STORE_FLUSH_SECONDS=0.2"),
    *("-s", "KC_STORE_BATCH_SIZE=3"),
]


def crawl(site: TestSite, *settings: str) -> list[str]:
    return [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}", *settings]


def source_id(site: TestSite) -> str:
    [source] = resolve_seeds(site.url)
    return source.id


def env_for(db: Path) -> dict[str, str]:
    return {**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}"}


def runs(db: Path) -> list[dict[str, Any]]:
    return query(f"sqlite:///{db}", "SELECT * FROM crawl_runs ORDER BY id")


def start(command: list[str], db: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            command, cwd=REPO, env=env_for(db), stdout=subprocess.DEVNULL, stderr=sink
        )


def wait_for_rows(db: Path, n: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while stored_rows(db) < n:
        assert process.poll() is None, "the first crawl ended before the test could meet it"
        assert time.monotonic() < deadline, "the first crawl stored nothing"
        time.sleep(0.05)


def test_a_second_crawl_is_refused_in_one_line_or_waits_and_then_runs(
    site: TestSite, tmp_path: Path
) -> None:
    db = tmp_path / "k.db"
    first = start(crawl(site, *SLOW), db, tmp_path / "first.log")
    try:
        wait_for_rows(db, 3, first)
        [running] = runs(db)
        refused = subprocess.run(
            crawl(site, *FAST), cwd=REPO, env=env_for(db), capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert refused.returncode == 2, refused.stderr[-2000:]
        [line] = refused.stderr.splitlines()
        assert line.startswith(
            f"scrapy crawl knowledge: error: source '{source_id(site)}' is being written "
            f"by crawl run {running['id']} (pid {first.pid} on "
        ), line
        assert line.endswith("; or wait for it with -s KC_LEASE_WAIT_SECONDS=SECONDS"), line
        waiter = subprocess.run(
            crawl(site, *FAST, "-s", "KC_LEASE_WAIT_SECONDS=180"), cwd=REPO, env=env_for(db),
            capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
        assert first.wait(timeout=120) == 0, (tmp_path / "first.log").read_text()[-2000:]
    finally:
        if first.poll() is None:
            first.kill()
    assert waiter.returncode == 0, waiter.stderr[-2000:]
    assert "waiting up to 180 s for the writer lease: source " in waiter.stderr
    # the refused crawl recorded nothing; the waiting one began once the first had ended
    before, after = runs(db)
    assert (before["outcome"], after["outcome"]) == ("finished", "finished")
    assert after["started_at"] > before["finished_at"]
    assert after["pages_new"] == 0 and after["responses_304"] > 0  # it found the first's pages
    assert query(f"sqlite:///{db}", "SELECT * FROM leases") == []


def test_a_killed_holder_or_a_hung_one_whose_lease_expired_lets_the_next_crawl_run(
    site: TestSite, tmp_path: Path
) -> None:
    db = tmp_path / "k.db"
    # Killed outright on this host: its pid is gone, so its lease is no one's.
    killed = start(crawl(site, *SLOW), db, tmp_path / "killed.log")
    try:
        wait_for_rows(db, 3, killed)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
    assert [lease["pid"] for lease in query(f"sqlite:///{db}", "SELECT * FROM leases")] == [
        killed.pid
    ]
    after_kill = subprocess.run(
        crawl(site, *FAST), cwd=REPO, env=env_for(db), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert after_kill.returncode == 0, after_kill.stderr[-2000:]

    # Hung (stopped: alive, no heartbeat): its lease lasts its time to live, then expires.
    # Its requests hang too, so that it is stopped between two transactions, not in one.
    site.reset()
    site.slow("/", 30)
    hung = start(crawl(site, *SLOW, "-s", "KC_LEASE_TTL_SECONDS=8"), db, tmp_path / "hung.log")
    try:
        deadline = time.monotonic() + 60
        while not [r for r in runs(db) if r["pid"] == hung.pid]:
            assert hung.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # the lease renewed with the run's id
        hung.send_signal(signal.SIGSTOP)
        site.slow("/", 0)
        [lease] = query(f"sqlite:///{db}", "SELECT * FROM leases")
        assert lease["pid"] == hung.pid
        quick = subprocess.run(
            crawl(site, *FAST), cwd=REPO, env=env_for(db), capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert quick.returncode == 2, quick.stderr[-2000:]
        patient = subprocess.run(
            crawl(site, *FAST, "-s", "KC_LEASE_WAIT_SECONDS=60"), cwd=REPO, env=env_for(db),
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    finally:
        hung.send_signal(signal.SIGKILL)
        hung.wait(timeout=30)
    assert patient.returncode == 0, patient.stderr[-2000:]
    last = runs(db)[-1]
    assert last["outcome"] == "finished" and last["started_at"] >= lease["expires_at"]


def test_ctrl_c_while_waiting_for_the_lease_stops_the_crawl_with_nothing_written(
    site: TestSite, tmp_path: Path
) -> None:
    from knowledge_crawler.store import LeaseHolder, open_store

    db = tmp_path / "k.db"
    other = LeaseHolder("elsewhere:9:x", "elsewhere:9:x", "elsewhere", 9, "reextract")
    with open_store(f"sqlite:///{db}") as store:
        assert store.acquire_leases([source_id(site)], other, ttl=300) == []
    log = tmp_path / "waiting.log"
    waiting = start(crawl(site, *FAST, "-s", "KC_LEASE_WAIT_SECONDS=300"), db, log)
    try:
        deadline = time.monotonic() + 60
        while "waiting up to" not in log.read_text("utf-8", "replace"):
            assert waiting.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        waiting.send_signal(signal.SIGINT)
        assert waiting.wait(timeout=30) == 130, log.read_text()[-2000:]
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert log.read_text().splitlines()[-1] == (
        "scrapy crawl knowledge: interrupted before it started (waiting for the writer lease); "
        "nothing was written"
    )
    assert runs(db) == [] and stored_rows(db) == 0
    assert [r["token"] for r in query(f"sqlite:///{db}", "SELECT * FROM leases")] == [other.token]


def test_a_sigterm_just_after_the_run_is_recorded_still_records_its_end(
    site: TestSite, tmp_path: Path
) -> None:
    # Scrapy's graceful stop has nothing to wait for while the spider is still opening
    # (its engine is not running yet) and stops the reactor at once: the run, recorded
    # on a thread meanwhile, stayed "running" ("error: none of the 0 start URLs could be
    # fetched", exit 1), 2 times in 6 on a loaded machine.
    db = tmp_path / "k.db"
    first = subprocess.run(
        crawl(site, *FAST), cwd=REPO, env=env_for(db), capture_output=True, check=False
    )
    assert first.returncode == 0, first.stderr[-2000:]
    for attempt in range(6):
        before = len(runs(db))
        log = tmp_path / f"refresh-{attempt}.log"
        process = start(crawl(site, *FAST, "-a", "mode=refresh"), db, log)
        try:
            deadline = time.monotonic() + 60
            while len(runs(db)) == before:
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.005)
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        text = log.read_text("utf-8", "replace")
        last = runs(db)[-1]
        assert last["outcome"] in ("finished", "interrupted"), (last["outcome"], text[-3000:])
        # 0 for a refresh that was done before the signal came, or killed by it as it exited
        assert code in (0, 130, -signal.SIGTERM), (code, text[-3000:])
        assert "Traceback" not in text and "never retrieved" not in text, text[-3000:]
