"""The ``schedule`` service with a stand-in launcher: parallelism bounds, no overlap per source,
skips logged, exit statuses, the stop sequence (SIGTERM to running crawls, then SIGKILL)."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from knowledge_crawler.cli.schedule import _absolute_database
from knowledge_crawler.schedule.local import find_project_dir
from knowledge_crawler.schedule.service import RunResult, Schedule

REPO = Path(__file__).resolve().parents[2]


class FakeLauncher:
    """Each run takes ``seconds`` (or until terminated, when ``stubborn`` until killed)."""

    def __init__(
        self, seconds: float, outcomes: dict[str, str] | None = None, stubborn: bool = False
    ) -> None:
        self.seconds = seconds
        self.outcomes = outcomes or {}
        self.stubborn = stubborn
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.spans: dict[str, list[tuple[float, float]]] = {}
        self.terminated = threading.Event()
        self.killed = threading.Event()

    def run(self, source_id: str, started: Callable[[str], None]) -> RunResult | None:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        began = time.monotonic()
        started("fake")
        stop = self.killed if self.stubborn else self.terminated
        stop.wait(self.seconds)
        with self.lock:
            self.active -= 1
            self.spans.setdefault(source_id, []).append((began, time.monotonic()))
        if stop.is_set():
            return RunResult("interrupted", "exit 130")
        return RunResult(self.outcomes.get(source_id, "finished"), "exit 0")

    def terminate(self) -> None:
        self.terminated.set()

    def kill(self) -> None:
        self.killed.set()


def signal_after(seconds: float, signum: int = signal.SIGTERM) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, args=(os.getpid(), signum))
    timer.start()
    return timer


def test_once_bounds_parallel_runs_and_exits_0_when_all_finished() -> None:
    launcher = FakeLauncher(0.2)
    service = Schedule(launcher, {"a": 60, "b": 60, "c": 60}, max_parallel=2)
    assert service.run_once() == 0
    assert launcher.peak == 2
    assert {sid: len(spans) for sid, spans in launcher.spans.items()} == {"a": 1, "b": 1, "c": 1}


def test_once_exits_1_when_a_run_failed() -> None:
    service = Schedule(FakeLauncher(0.01, {"b": "failed"}), {"a": 60, "b": 60})
    assert service.run_once() == 1


def test_recurring_runs_never_overlap_are_bounded_and_stop_on_sigterm(
    caplog: pytest.LogCaptureFixture,
) -> None:
    launcher = FakeLauncher(0.35)
    service = Schedule(launcher, {"a": 0.1, "b": 0.1}, max_parallel=1)
    previous = signal.getsignal(signal.SIGTERM)
    timer = signal_after(1.6)
    with caplog.at_level(logging.INFO, logger="knowledge_crawler.schedule"):
        status = service.run_forever()
    timer.join()
    assert status == 0
    assert signal.getsignal(signal.SIGTERM) == previous  # handlers restored
    assert launcher.peak == 1
    assert launcher.terminated.is_set() and not launcher.killed.is_set()
    for spans in launcher.spans.values():
        spans.sort()
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    assert len(launcher.spans["a"]) >= 2 and len(launcher.spans["b"]) >= 1
    text = caplog.text
    assert "run due now skipped" in text
    assert "SIGTERM: stopping" in text
    started = text.count(" started (fake)")
    ended = text.count(" finished (exit 0) in ") + text.count(" interrupted (exit 130) in ")
    assert started == ended == sum(len(s) for s in launcher.spans.values())


def test_sigint_exits_130_and_a_crawl_that_ignores_sigterm_is_killed() -> None:
    launcher = FakeLauncher(60, stubborn=True)
    service = Schedule(launcher, {"a": 60}, stop_timeout=0.3)
    timer = signal_after(0.5, signal.SIGINT)
    began = time.monotonic()
    assert service.run_forever() == 130
    timer.join()
    assert launcher.terminated.is_set() and launcher.killed.is_set()
    assert time.monotonic() - began < 5


def test_relative_sqlite_paths_are_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _absolute_database("sqlite:///data/k.db") == f"sqlite:///{tmp_path}/data/k.db"
    assert _absolute_database("sqlite:////srv/k.db") == "sqlite:////srv/k.db"
    assert _absolute_database("sqlite:///:memory:") == "sqlite:///:memory:"
    assert _absolute_database("postgresql://u@h/db") == "postgresql://u@h/db"


def test_the_project_folder_is_found_from_the_working_directory_or_the_checkout(
    tmp_path: Path,
) -> None:
    assert find_project_dir(REPO / "knowledge_crawler" / "cli") == REPO
    assert find_project_dir(tmp_path) == REPO  # this checkout (an editable install)
    other = tmp_path / "other"
    (other / "sub").mkdir(parents=True)
    (other / "scrapy.cfg").write_text("[settings]\ndefault = knowledge_crawler.settings\n")
    assert find_project_dir(other / "sub") == other
    (other / "sub" / "scrapy.cfg").write_text("[settings]\ndefault = another.settings\n")
    assert find_project_dir(other / "sub") == other  # another project's scrapy.cfg: passed over
