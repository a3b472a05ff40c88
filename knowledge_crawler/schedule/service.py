"""The schedule service: each source's crawl run through a launcher, recurring
(APScheduler, every ``min_interval`` of the source) or once each.

Rules: a source never runs twice at once (a run still going when the next is due is skipped
and logged); ``max_parallel`` bounds the crawls running at once across sources; the first
runs start at once; each run logs one line when it starts and one when it ends (outcome,
exit status or scrapyd job, duration), and a failed run leaves the schedule going. SIGTERM
or SIGINT: no new run, every running crawl is asked to stop (:meth:`Launcher.terminate`),
is waited for up to ``stop_timeout`` and then killed; exit 0 after SIGTERM, 130 after SIGINT.

A launcher runs one crawl to its end: :mod:`.local` (a subprocess) or :mod:`.scrapyd` (a
scrapyd job). Imports no Scrapy (the crawls are other processes) and APScheduler only
when it runs.
"""

from __future__ import annotations

import concurrent.futures
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any, Protocol

__all__ = [
    "PROJECT",
    "SETTINGS_MODULE",
    "SPIDER",
    "Launcher",
    "RunResult",
    "Schedule",
    "log",
    "settings_note",
]

PROJECT = "knowledge_crawler"
SPIDER = "knowledge"
SETTINGS_MODULE = "knowledge_crawler.settings"
#: SIGTERM stops the service as asked: 0; SIGINT (Ctrl-C) says so: 128 + 2.
EXIT_AFTER_SIGNAL = {signal.SIGTERM: 0, signal.SIGINT: 130}

log = logging.getLogger("knowledge_crawler.schedule")


@dataclass(frozen=True)
class RunResult:
    """How one crawl ended: ``outcome`` (``finished``, ``failed``, ``interrupted``, ``refused``,
    ``killed``, ``unknown``, ``error`` when it could not start) and a short ``detail``."""

    outcome: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.outcome == "finished"


class Launcher(Protocol):
    """Runs one source's crawl to its end; stops every running crawl on request."""

    def run(self, source_id: str, started: Callable[[str], None]) -> RunResult | None:
        """Run the crawl and wait for it; ``started(description)`` once it runs.

        None when the launcher is stopping and started nothing."""

    def terminate(self) -> None:
        """Start no crawl any more; ask every running one to stop cleanly (SIGTERM)."""

    def kill(self) -> None:
        """Kill every crawl still running."""


def settings_note(settings: Sequence[str]) -> str:
    """What a launcher says of its settings in the log: their names only (a value may hold
    a password)."""
    names = [s.partition("=")[0] for s in settings]
    return f" with settings {', '.join(names)}" if names else ""


# --------------------------------------------------------------------------- the service


class Schedule:
    """Runs each source's crawl through a launcher: recurring (APScheduler) or once each."""

    def __init__(
        self,
        launcher: Launcher,
        intervals: dict[str, float],
        max_parallel: int = 1,
        stop_timeout: float = 60.0,
    ) -> None:
        self.launcher = launcher
        self.intervals = intervals
        self.max_parallel = max_parallel
        self.stop_timeout = stop_timeout
        self._stopping = threading.Event()
        self._kill_now = threading.Event()
        self._signal: int | None = None
        self._previous_handlers: dict[int, Any] = {}
        self._cond = threading.Condition()
        self._running: set[str] = set()
        self._runs: dict[str, int] = dict.fromkeys(intervals, 0)

    # ---------------------------------------------------------------- one run

    def run_source(self, source_id: str) -> RunResult | None:
        """One run of a source, with its start and end lines; None when stopping."""
        with self._cond:
            if self._stopping.is_set() or source_id in self._running:
                return None
            self._running.add(source_id)
            self._runs[source_id] += 1
            number = self._runs[source_id]
        began = time.monotonic()
        try:

            def started(description: str) -> None:
                log.info("source %r: run %d started (%s)", source_id, number, description)

            try:
                result = self.launcher.run(source_id, started)
            except Exception as exc:  # a launcher bug must not stop the schedule
                log.exception("source %r: run %d: internal error", source_id, number)
                result = RunResult("error", f"internal error: {exc!r}")
            if result is None:
                return None
            took = time.monotonic() - began
            if result.outcome == "error":
                log.error("source %r: run %d could not start: %s", source_id, number, result.detail)
            else:
                level = logging.INFO if result.ok else logging.WARNING
                log.log(
                    level,
                    "source %r: run %d %s (%s) in %.1f s",
                    source_id,
                    number,
                    result.outcome,
                    result.detail,
                    took,
                )
            return result
        finally:
            with self._cond:
                self._running.discard(source_id)
                self._cond.notify_all()

    # ---------------------------------------------------------------- signals and stop

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._stopping.is_set():
            self._kill_now.set()  # a second signal: no more waiting
            return
        self._signal = signum
        self._stopping.set()

    def _install_signals(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous_handlers[signum] = signal.signal(signum, self._on_signal)

    def _restore_signals(self) -> None:
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)
        self._previous_handlers.clear()

    def _stop_running(self) -> None:
        """SIGTERM to every running crawl; wait for them, up to the stop timeout; kill."""
        with self._cond:
            running = sorted(self._running)
        name = signal.Signals(self._signal).name if self._signal else "stop"
        if running:
            log.info(
                "%s: stopping: no new runs; SIGTERM to the running crawls (%s), waiting up to %g s",
                name,
                ", ".join(repr(s) for s in running),
                self.stop_timeout,
            )
        else:
            log.info("%s: stopping: no new runs, no crawl running", name)
        self.launcher.terminate()
        if not self._wait_idle(self.stop_timeout):
            with self._cond:
                left = ", ".join(repr(s) for s in sorted(self._running))
            log.warning("crawls still running (%s): killing them", left)
            self.launcher.kill()
            self._wait_idle(30.0)

    def _wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._running:
                left = deadline - time.monotonic()
                if left <= 0 or self._kill_now.is_set():
                    return False
                self._cond.wait(min(left, 0.2))
        return True

    def _exit_status_after_signal(self) -> int:
        return EXIT_AFTER_SIGNAL.get(signal.Signals(self._signal or signal.SIGTERM), 0)

    # ---------------------------------------------------------------- modes

    def run_once(self) -> int:
        """Every source once (at most ``max_parallel`` at a time): 0 when all finished, else 1;
        after a signal, 0 (SIGTERM) or 130 (SIGINT)."""
        self._install_signals()
        pool = concurrent.futures.ThreadPoolExecutor(self.max_parallel, "kc-run")
        futures = [pool.submit(self.run_source, sid) for sid in self.intervals]
        try:
            while not self._stopping.is_set():
                _, pending = concurrent.futures.wait(futures, timeout=0.5)
                if not pending:
                    break
            if self._stopping.is_set():
                self._stop_running()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self._restore_signals()
        if self._signal is not None:
            return self._exit_status_after_signal()
        results = [f.result() for f in futures if not f.cancelled()]
        return 0 if len(results) == len(futures) and all(r and r.ok for r in results) else 1

    def run_forever(self) -> int:
        """Each source every its interval, the first runs at once, until SIGTERM or SIGINT."""
        from apscheduler.events import EVENT_JOB_MAX_INSTANCES
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler
        from apscheduler.triggers.interval import IntervalTrigger

        logging.getLogger("apscheduler").setLevel(logging.ERROR)  # its skips: our own line
        scheduler = BackgroundScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(self.max_parallel)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        )
        now = datetime.now(UTC)
        for source_id, seconds in self.intervals.items():
            scheduler.add_job(
                self.run_source,
                IntervalTrigger(seconds=seconds, timezone=UTC),
                args=[source_id],
                id=source_id,
                name=source_id,
                next_run_time=now,
            )
        scheduler.add_listener(self._on_skipped, EVENT_JOB_MAX_INSTANCES)
        self._install_signals()
        scheduler.start()
        log.info(
            "scheduling %s; at most %d crawl%s at once",
            ", ".join(f"{sid!r} every {_seconds(s)}" for sid, s in self.intervals.items()),
            self.max_parallel,
            "" if self.max_parallel == 1 else "s",
        )
        try:
            while not self._stopping.wait(0.5):
                pass
        finally:
            self._stopping.set()
            scheduler.shutdown(wait=False)
            self._stop_running()
            self._restore_signals()
        return self._exit_status_after_signal()

    def _on_skipped(self, event: Any) -> None:
        source_id = str(event.job_id)
        with self._cond:
            running = source_id in self._running
        slots = f"--max-parallel {self.max_parallel}"
        why = (
            "its previous run is still running"
            if running
            else f"its previous run still waits for a free slot ({slots})"
        )
        log.warning("source %r: run due now skipped: %s", source_id, why)


def _seconds(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
