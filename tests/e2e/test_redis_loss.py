"""A shared crawl whose Redis dies mid-crawl fails within a minute, and loses nothing; one
whose Redis comes back within the grace goes on to the same rows (F-SCALE, issue 24).

Each test runs a Redis server of its own (``redis-server`` on a free port, nothing kept on
disk) and kills or stops it; the shared one is never touched. Skipped without ``redis-server``,
except under ``CI=true``, where the test fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.e2e.crawl_process import REPO, command, count, rows
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


class OwnRedis:
    """A ``redis-server`` of this test's own, on a free port, that can be killed and
    started again (empty: nothing is saved), or stopped and continued (keeping its keys)."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=1).ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # were it stopped
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def pause(self) -> None:
        """SIGSTOP: the server holds its connections and keys and answers nothing."""
        assert self.process is not None and self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    if shutil.which("redis-server") is None:
        message = "no redis-server on this machine"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    server = OwnRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


def crawl_env(db: Path, redis_url: str) -> dict[str, str]:
    return {**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}", "KC_REDIS_URL": redis_url}


def uninterrupted_rows(site_url: str, tmp_path: Path) -> set[tuple[str, str, str]]:
    """The rows of the crawl uninterrupted, one process, no Redis."""
    whole = tmp_path / "whole.db"
    done = subprocess.run(
        command(site_url), cwd=REPO, env=crawl_env(whole, ""), capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    expected = rows(whole)
    assert len(expected) > 40
    return expected


def wait_for_pages(process: subprocess.Popen[bytes], db: Path, log: Path, pages: int) -> None:
    deadline = time.monotonic() + 120
    while count(db, "SELECT COUNT(*) FROM page_meta WHERE http_status = 200") < pages:
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def crawl_under_way(
    site: TestSite, own_redis: OwnRedis, db: Path, log: Path
) -> subprocess.Popen[bytes]:
    """A shared crawl of the (slowed) site with its output in ``log``, once it has stored 5
    pages."""
    site.slow("/", 0.3)
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command(site.url), cwd=REPO, env=crawl_env(db, own_redis.url),
            stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    try:
        wait_for_pages(process, db, log, 5)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def test_a_crawl_whose_redis_dies_fails_within_a_minute_and_the_rerun_completes(
    site: TestSite, own_redis: OwnRedis, tmp_path: Path
) -> None:
    expected = uninterrupted_rows(site.url, tmp_path)

    db, log = tmp_path / "shared.db", tmp_path / "lost.log"
    process = crawl_under_way(site, own_redis, db, log)
    try:
        own_redis.kill()
        lost_at = time.monotonic()
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail("the crawl still runs 90 s after its Redis died")
        took = time.monotonic() - lost_at
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    err = log.read_text("utf-8", "replace")
    assert process.returncode == 1, err[-3000:]
    assert took < 60, f"the crawl took {took:.0f} s to end after its Redis died"
    assert "Redis" in err.splitlines()[-1], err[-3000:]
    [run] = query(f"sqlite:///{db}", "SELECT outcome, counters FROM crawl_runs")
    assert run["outcome"] == "failed"
    partial = rows(db)
    assert partial < expected, "Redis must die mid-crawl for this test to mean anything"

    # Redis back (empty): the next run resumes from the crawl state and ends with the rows
    # of the crawl that was never interrupted.
    site.slow("/", 0)
    own_redis.start()
    again = subprocess.run(
        command(site.url), cwd=REPO, env=crawl_env(db, own_redis.url), capture_output=True,
        text=True, timeout=240, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert rows(db) == expected


def test_a_crawl_whose_redis_comes_back_within_the_grace_goes_on_to_the_same_rows(
    site: TestSite, own_redis: OwnRedis, tmp_path: Path
) -> None:
    expected = uninterrupted_rows(site.url, tmp_path)

    db, log = tmp_path / "shared.db", tmp_path / "paused.log"
    process = crawl_under_way(site, own_redis, db, log)
    try:
        # Stopped past a Redis call's timeout (10 s), so the crawl sees it gone, and back
        # before the grace (KC_REDIS_GRACE_SECONDS, 10 s) from then ends: with its keys, and
        # with the commands sent before the timeouts still to run.
        own_redis.pause()
        time.sleep(15)
        assert process.poll() is None, log.read_text()[-3000:]
        own_redis.resume()
        site.slow("/", 0)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the crawl still runs 120 s after its Redis came back")
    finally:
        own_redis.resume()
        if process.poll() is None:
            process.kill()
            process.wait()
    err = log.read_text("utf-8", "replace")
    assert process.returncode == 0, err[-3000:]
    assert "answers again" in err, err[-3000:]
    [run] = query(f"sqlite:///{db}", "SELECT outcome, counters FROM crawl_runs")
    assert run["outcome"] == "finished"
    assert json.loads(run["counters"]).get("kc/frontier/redis_outages", 0) >= 1
    assert rows(db) == expected
