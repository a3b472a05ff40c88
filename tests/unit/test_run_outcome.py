"""How a run's outcome follows from Scrapy's close reason and the crawl's stats."""

from __future__ import annotations

import doctest
import os
import subprocess
import time
from pathlib import Path

import pytest

from knowledge_crawler.crawl import runtime
from knowledge_crawler.crawl.runtime import child_processes, pid_alive, run_outcome


@pytest.mark.parametrize(
    ("reason", "stats", "outcome"),
    [
        ("finished", {}, "finished"),
        ("finished", {"kc/start/requested": 3, "kc/start/fetched": 1}, "finished"),
        ("finished", {"kc/start/requested": 3, "kc/start/fetched": 0}, "failed"),
        ("finished", {"kc/start/requested": 3}, "failed"),
        ("finished", {"kc/store/failed": 1}, "failed"),
        ("store_failed", {"kc/store/failed": 1}, "failed"),
        ("shutdown", {}, "interrupted"),
        ("shutdown", {"kc/store/failed": 1}, "failed"),
        ("closespider_pagecount", {}, "finished"),
        ("closespider_timeout", {"kc/start/requested": 1, "kc/start/fetched": 0}, "finished"),
        ("closespider_itemcount", {"kc/store/failed": 1}, "failed"),
        # the stage workers could not start, even when Ctrl-C came while it stopped
        ("stage_pool_failed", {"kc/stages/pool_failed": 1}, "failed"),
        ("shutdown", {"kc/stages/pool_failed": 1}, "failed"),
    ],
)
def test_run_outcome(reason: str, stats: dict[str, int], outcome: str) -> None:
    assert run_outcome(reason, stats) == outcome


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert not pid_alive(gone.pid)
    assert not pid_alive(0) and not pid_alive(-1)


def test_child_processes_are_the_live_children_whose_command_matches() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    other = subprocess.Popen(["sleep", "31"])
    try:
        assert {sleeper.pid, other.pid} <= set(child_processes(os.getpid()))
        assert sleeper.pid in child_processes(os.getpid(), b"30")
        assert other.pid not in child_processes(os.getpid(), b"30")
        assert child_processes(sleeper.pid) == []
    finally:
        sleeper.kill()
        other.kill()
        sleeper.wait()
        other.wait()
    assert sleeper.pid not in child_processes(os.getpid())


def test_pid_alive_counts_a_zombie_as_gone() -> None:
    zombie = subprocess.Popen(["true"])
    try:
        stat = Path(f"/proc/{zombie.pid}/stat")
        deadline = time.monotonic() + 5
        while stat.read_text().rpartition(")")[2].split()[0] != "Z":  # exited, unreaped
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not pid_alive(zombie.pid)
    finally:
        zombie.wait()


def test_doctests() -> None:
    assert doctest.testmod(runtime).failed == 0


def test_robots_txt_answers_are_not_counted_as_page_responses() -> None:
    from knowledge_crawler.crawl.runtime import run_counters

    stats = {
        "downloader/response_status_count/404": 3,  # two robots.txt 404s and one page
        "kc/fetch/status/404": 1,
        "downloader/response_status_count/429": 1,  # a robots.txt 429
    }
    counters = run_counters(stats)
    assert counters["responses_404"] == 1 and counters["responses_429"] == 0
