"""``knowledge-crawler schedule SEEDS_FILE``: recurring refresh crawls per source (APScheduler).

Every source of the file gets a job that runs a refresh crawl of that source alone,
``scrapy crawl knowledge -a seeds=FILE -a source=ID -a mode=refresh``, every ``min_interval``
of the source: the shortest interval any of its pages can be due again, so each page is
revalidated at most one interval after it is due, and a refresh with nothing due costs a
start-up and no request. The crawl runs as a subprocess of the same Python (``python -m
scrapy`` in the folder of the project's ``scrapy.cfg``) or, with ``--scrapyd URL``, as a
scrapyd job, followed until it ends.

Rules: a source never runs twice at once (a run still going when the next is due is skipped
and logged); ``--max-parallel`` bounds the crawls running at once across sources; the first
runs start at once; each run logs one line when it starts and one when it ends (outcome,
exit status or scrapyd job, duration), and a failed run leaves the schedule going. SIGTERM
or SIGINT: no new run, every running crawl gets SIGTERM (it stops cleanly and records the
run ``interrupted``), is waited for up to ``--stop-timeout`` and then killed; exit 0 after
SIGTERM, 130 after SIGINT.

Imports no Scrapy (the crawls are other processes) and APScheduler only when it runs.
"""

from __future__ import annotations

import base64
import concurrent.futures
import configparser
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any, Protocol

import click

from knowledge_crawler.cli._common import PROG, BadInput
from knowledge_crawler.errors import SeedsError
from knowledge_crawler.sources import parse_duration, resolve_seeds

__all__ = [
    "LocalLauncher",
    "RunResult",
    "Schedule",
    "ScrapydLauncher",
    "find_project_dir",
    "schedule",
]

PROJECT = "knowledge_crawler"
SPIDER = "knowledge"
SETTINGS_MODULE = "knowledge_crawler.settings"
#: ``scrapy crawl`` exit status -> the outcome it stands for (commands/crawl.py).
EXIT_OUTCOMES = {0: "finished", 1: "failed", 2: "refused", 130: "interrupted"}
#: SIGTERM stops the service as asked: 0; SIGINT (Ctrl-C) says so: 128 + 2.
EXIT_AFTER_SIGNAL = {signal.SIGTERM: 0, signal.SIGINT: 130}
_OUTCOME_IN_LOG = re.compile(r"'kc/outcome': '(\w+)'")

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


# --------------------------------------------------------------------------- subprocess


def find_project_dir(start: Path | None = None) -> Path | None:
    """The folder of this project's ``scrapy.cfg``: the closest one at or above ``start``
    (default: the working directory) whose ``[settings] default`` is the project's, else the
    one of the checkout this package runs from; None when there is neither."""
    here = (start or Path.cwd()).resolve()
    checkout = Path(__file__).resolve().parents[2]
    for folder in [here, *here.parents, checkout]:
        cfg = folder / "scrapy.cfg"
        if cfg.is_file():
            parser = configparser.ConfigParser()
            try:
                parser.read(cfg, encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            if parser.get("settings", "default", fallback="") == SETTINGS_MODULE:
                return folder
    return None


def _exit_result(code: int, output: IO[bytes]) -> RunResult:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return RunResult("killed", f"killed by {name}")
    outcome = EXIT_OUTCOMES.get(code, "failed")
    detail = f"exit {code}"
    if code in (1, 2):  # the crawl's last words say why, in one line
        reason = _error_line(output)
        if reason:
            detail += f": {reason}"
    return RunResult(outcome, detail)


def _error_line(output: IO[bytes]) -> str | None:
    """The last ``...: error: ...`` line of a crawl's output (its one-line reason)."""
    output.flush()
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - 16384))
    lines = output.read().decode("utf-8", errors="replace").splitlines()
    for line in reversed(lines):
        if ": error: " in line:
            return line.split(": error: ", 1)[1].strip()
    return None


class LocalLauncher:
    """Each run: ``python -m scrapy crawl knowledge ...`` in the project folder, in a session
    of its own (a Ctrl-C in the terminal reaches the scheduler only, which passes on one
    SIGTERM); its output goes to ``log_dir/SOURCE-TIME.log`` or is dropped (the reason of
    a failure is kept for the end line)."""

    def __init__(
        self,
        project_dir: Path,
        seeds: str,
        mode: str,
        settings: Sequence[str],
        log_dir: Path | None = None,
    ) -> None:
        self.project_dir = project_dir
        self.seeds = seeds
        self.mode = mode
        self.settings = list(settings)
        self.log_dir = log_dir
        self._lock = threading.Lock()
        self._running: dict[str, subprocess.Popen[bytes]] = {}
        self._closed = False

    def command(self, source_id: str) -> list[str]:
        cmd = [sys.executable, "-m", "scrapy", "crawl", SPIDER, "-a", f"seeds={self.seeds}"]
        cmd += ["-a", f"source={source_id}", "-a", f"mode={self.mode}"]
        for setting in self.settings:
            cmd += ["-s", setting]
        return cmd

    def describe(self, source_id: str) -> str:
        """The command, for the log: settings by name only (a value may hold a password)."""
        text = (
            f"scrapy crawl {SPIDER} -a seeds={self.seeds} -a source={source_id} -a mode={self.mode}"
        )
        return text + _settings_note(self.settings)

    def _output(self, source_id: str) -> IO[bytes]:
        if self.log_dir is None:
            return tempfile.TemporaryFile()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        return (self.log_dir / f"{source_id}-{stamp}.log").open("w+b")

    def run(self, source_id: str, started: Callable[[str], None]) -> RunResult | None:
        cmd = self.command(source_id)
        try:
            output = self._output(source_id)
        except OSError as exc:
            return RunResult("error", f"cannot open its log: {exc}")
        with output:
            with self._lock:
                if self._closed:
                    return None
                try:
                    process = subprocess.Popen(
                        cmd,
                        cwd=self.project_dir,
                        stdin=subprocess.DEVNULL,
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as exc:
                    return RunResult("error", f"cannot start {cmd[0]}: {exc}")
                self._running[source_id] = process
            try:
                started(f"pid {process.pid}: {self.describe(source_id)}")
                code = process.wait()
            finally:
                with self._lock:
                    self._running.pop(source_id, None)
            return _exit_result(code, output)

    def _signal_all(self, signum: int, *, group: bool) -> None:
        with self._lock:
            self._closed = True
            processes = list(self._running.values())
        for process in processes:
            try:
                if group:  # the crawl's own children too (a browser)
                    os.killpg(process.pid, signum)
                else:
                    process.send_signal(signum)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self._signal_all(signal.SIGTERM, group=False)

    def kill(self) -> None:
        self._signal_all(signal.SIGKILL, group=True)


# --------------------------------------------------------------------------- scrapyd


def _settings_note(settings: Sequence[str]) -> str:
    names = [s.partition("=")[0] for s in settings]
    return f" with settings {', '.join(names)}" if names else ""


class ScrapydError(Exception):
    """scrapyd could not be reached or refused a request."""


class ScrapydLauncher:
    """Each run: a scrapyd job (``schedule.json``: project knowledge_crawler, spider knowledge,
    ``seeds``, ``source``, ``mode`` and ``setting=NAME=VALUE``), followed with
    ``listjobs.json`` until it ends; its outcome is the ``kc/outcome`` of the job's log.
    Stopping cancels the running jobs with SIGTERM (``cancel.json``), then with SIGKILL."""

    def __init__(
        self,
        url: str,
        seeds: str,
        mode: str,
        settings: Sequence[str],
        poll_seconds: float = 1.0,
    ) -> None:
        parts = urllib.parse.urlsplit(url if url.endswith("/") else url + "/")
        self._auth: str | None = None
        if parts.username is not None:  # http://USER:PASSWORD@HOST:PORT/: scrapyd's basic auth
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            netloc = parts.netloc.rpartition("@")[2]
            parts = parts._replace(netloc=netloc)
        self.url = urllib.parse.urlunsplit(parts)  # never the password: it is logged
        self.seeds = seeds
        self.mode = mode
        self.settings = list(settings)
        self.poll_seconds = poll_seconds
        self._lock = threading.Lock()
        self._running: dict[str, str] = {}  # source id -> job id
        self._closed = False
        self._gave_up = threading.Event()

    # ---------------------------------------------------------------- HTTP

    def _request(
        self,
        url: str,
        data: bytes | None = None,
        method: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        headers = dict(headers or {})
        if self._auth:
            headers["Authorization"] = self._auth
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        return urllib.request.urlopen(request, timeout=30)

    def _call(self, endpoint: str, data: list[tuple[str, str]] | None = None) -> dict[str, Any]:
        body = None
        if data is not None:
            body = urllib.parse.urlencode(data).encode()
        try:
            with self._request(self.url + endpoint, body) as response:
                answer = json.load(response)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ScrapydError(f"scrapyd at {self.url}: {endpoint}: {reason}") from None
        if not isinstance(answer, dict) or answer.get("status") != "ok":
            message = answer.get("message") if isinstance(answer, dict) else answer
            raise ScrapydError(f"scrapyd at {self.url}: {endpoint}: {message}")
        return answer

    def check(self) -> None:
        """Raise :class:`ScrapydError` unless scrapyd answers and has the spider deployed."""
        self._call("daemonstatus.json")
        query = urllib.parse.urlencode({"project": PROJECT})
        try:
            spiders = self._call(f"listspiders.json?{query}").get("spiders", [])
        except ScrapydError as exc:
            raise ScrapydError(f"{exc} (deploy the project first: scrapyd-deploy)") from None
        if SPIDER not in spiders:
            raise ScrapydError(
                f"scrapyd at {self.url}: project {PROJECT} has no spider {SPIDER!r} "
                "(deploy the project first: scrapyd-deploy)"
            )

    def _outcome(self, job: str, entry: dict[str, Any]) -> RunResult:
        """The ``kc/outcome`` of the stats dump at the end of the job's log (scrapyd does not
        report an exit status)."""
        log_url = entry.get("log_url")
        if not log_url:
            return RunResult("unknown", f"job {job} ended; scrapyd keeps no log (logs_dir)")
        url = urllib.parse.urljoin(self.url, str(log_url))
        try:  # the stats dump is at the end: read the last 256 KiB
            with self._request(url, method="HEAD") as response:
                size = int(response.headers.get("Content-Length") or 0)
            tail = {"Range": f"bytes={size - 262144}-"} if size > 262144 else {}
            with self._request(url, headers=tail) as response:
                text = response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # stopped before Scrapy logged a line: a bad argument or database
                return RunResult(
                    "unknown", f"job {job} ended without a log: see scrapyd's own log for why"
                )
            return RunResult("unknown", f"job {job} ended; its log: HTTP {exc.code}")
        except OSError as exc:
            return RunResult("unknown", f"job {job} ended; its log: {exc}")
        found = _OUTCOME_IN_LOG.findall(text)
        if not found:
            return RunResult("unknown", f"job {job} ended; no kc/outcome in its log")
        return RunResult(found[-1], f"job {job}")

    # ---------------------------------------------------------------- runs

    def run(self, source_id: str, started: Callable[[str], None]) -> RunResult | None:
        data = [("project", PROJECT), ("spider", SPIDER), ("seeds", self.seeds)]
        data += [("source", source_id), ("mode", self.mode)]
        data += [("setting", setting) for setting in self.settings]
        with self._lock:
            if self._closed:
                return None
        try:
            job = str(self._call("schedule.json", data)["jobid"])
        except (ScrapydError, KeyError) as exc:
            return RunResult("error", f"not scheduled: {exc}")
        with self._lock:
            self._running[source_id] = job
            closed = self._closed
        if closed:  # stopped while it was being scheduled
            self._cancel(job, "TERM")
        try:
            started(f"scrapyd job {job} at {self.url}{_settings_note(self.settings)}")
            return self._follow(job)
        finally:
            with self._lock:
                self._running.pop(source_id, None)

    def _follow(self, job: str) -> RunResult:
        query = urllib.parse.urlencode({"project": PROJECT})
        failures = 0
        while not self._gave_up.is_set():
            try:
                jobs = self._call(f"listjobs.json?{query}")
                failures = 0
            except ScrapydError as exc:
                failures += 1
                if failures * self.poll_seconds >= 120:
                    return RunResult("unknown", f"job {job}: lost scrapyd: {exc}")
                self._gave_up.wait(self.poll_seconds)
                continue
            for entry in jobs.get("finished", []):
                if entry.get("id") == job:
                    return self._outcome(job, entry)
            if not any(
                e.get("id") == job for e in jobs.get("pending", []) + jobs.get("running", [])
            ):
                return RunResult("unknown", f"job {job} is no longer listed by scrapyd")
            self._gave_up.wait(self.poll_seconds)
        return RunResult("unknown", f"job {job}: stopped following it")

    def _cancel_all(self, signal_name: str) -> None:
        with self._lock:
            self._closed = True
            jobs = list(self._running.values())
        for job in jobs:
            self._cancel(job, signal_name)

    def _cancel(self, job: str, signal_name: str) -> None:
        try:
            self._call("cancel.json", [("project", PROJECT), ("job", job), ("signal", signal_name)])
        except ScrapydError as exc:
            log.warning("cannot cancel scrapyd job %s: %s", job, exc)

    def terminate(self) -> None:
        self._cancel_all("TERM")

    def kill(self) -> None:
        self._cancel_all("KILL")
        self._gave_up.set()


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


# --------------------------------------------------------------------------- the command


def _absolute_database(url: str) -> str:
    """A relative ``sqlite:///PATH`` made absolute from the working directory (the crawl
    runs elsewhere: in the project folder, or in scrapyd's)."""
    prefix = "sqlite:///"
    if url.startswith(prefix):
        path = url[len(prefix) :]
        if path and path != ":memory:" and not os.path.isabs(path):
            return prefix + os.path.abspath(path)
    return url


def _configure_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    formatter = logging.Formatter(f"%(asctime)s {PROG} schedule: %(message)s", "%Y-%m-%dT%H:%M:%SZ")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False


@click.command("schedule")
@click.argument("seeds_file", metavar="SEEDS_FILE")
@click.option("--source", "only", metavar="ID", help="Schedule only this source of the file.")
@click.option(
    "--scrapyd",
    "scrapyd_url",
    metavar="URL",
    help="Run each crawl as a job of this scrapyd (project knowledge_crawler deployed).",
)
@click.option(
    "--db",
    "database",
    envvar="KC_DATABASE_URL",
    metavar="URL",
    help="Database the crawls write (sqlite:///PATH); also read from KC_DATABASE_URL.",
)
@click.option(
    "--every",
    metavar="DURATION",
    help="Run every source this often instead of its min_interval (seconds, or 30s, 15m, 6h).",
)
@click.option(
    "--once", is_flag=True, help="Run each source once and exit (0 if all finished, else 1)."
)
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Crawls running at once, across sources.",
)
@click.option(
    "--mode",
    type=click.Choice(["refresh", "crawl"]),
    default="refresh",
    show_default=True,
    help="refresh: revalidate the due stored pages; crawl: a whole crawl each time.",
)
@click.option(
    "-s",
    "--set",
    "settings",
    multiple=True,
    metavar="NAME=VALUE",
    help="A Scrapy setting for every crawl (repeatable), e.g. -s LOG_LEVEL=INFO.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Keep each local crawl's output in DIR/SOURCE-TIME.log (default: dropped).",
)
@click.option(
    "--stop-timeout",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="After SIGTERM/SIGINT, how long running crawls may take to stop before SIGKILL.",
)
def schedule(
    seeds_file: str,
    only: str | None,
    scrapyd_url: str | None,
    database: str | None,
    every: str | None,
    once: bool,
    max_parallel: int,
    mode: str,
    settings: tuple[str, ...],
    log_dir: Path | None,
    stop_timeout: float,
) -> None:
    """Run recurring refresh crawls of each source of SEEDS_FILE until stopped.

    Every source gets its own schedule: a refresh crawl of that source alone
    (`scrapy crawl knowledge -a seeds=FILE -a source=ID -a mode=refresh`)
    every `min_interval` of the source, the shortest interval its pages can
    be due again; `--every` sets one interval for all (e.g. for cron or tests).
    The first runs start at once. A source never runs twice at once: a run
    still going when the next is due is skipped, and logged. A refresh only
    revalidates stored pages: crawl a new source once first (or `--mode crawl`).

    Crawls run as subprocesses of this Python in the project folder (its
    scrapy.cfg), or with --scrapyd URL as scrapyd jobs (the seeds file must be
    readable by scrapyd at its absolute path). Each run logs one line when it
    starts and one when it ends, with its outcome and duration; a failed run
    leaves the schedule going.

    \b
        knowledge-crawler schedule seeds/blog.toml
        knowledge-crawler schedule seeds/blog.toml --once --source docs
        knowledge-crawler schedule seeds/blog.toml --scrapyd http://127.0.0.1:6800/

    SIGTERM or SIGINT stops it: no new runs; running crawls get SIGTERM (each
    records its run interrupted), are waited for up to --stop-timeout, then
    killed. Exit status: 0 after SIGTERM, 130 after SIGINT; with --once, 0
    when every run finished, else 1; 2 on bad input (one line).
    """
    try:
        sources = resolve_seeds(seeds_file, only=only)
    except SeedsError as exc:
        raise BadInput(exc) from exc
    seeds = seeds_file.strip()
    if os.path.isfile(seeds):
        seeds = os.path.abspath(seeds)  # the crawl runs in another folder
    interval: float | None = None
    if every is not None:
        try:
            interval = parse_duration(every).total_seconds()
        except ValueError as exc:
            raise BadInput(f"--every {every!r}: {exc}") from exc
        if interval <= 0:
            raise BadInput(f"--every {every!r}: expected a duration above zero")
    for setting in settings:
        name, equals, _ = setting.partition("=")
        if not equals or not name.strip():
            raise BadInput(f"-s {setting!r}: expected NAME=VALUE")
    crawl_settings = list(settings)
    if database:
        crawl_settings.append(f"KC_DATABASE_URL={_absolute_database(database)}")

    launcher: Launcher
    if scrapyd_url and log_dir is not None:
        raise BadInput("--log-dir is for local crawls: scrapyd keeps each job's log")
    if scrapyd_url:
        scrapyd_launcher = ScrapydLauncher(scrapyd_url, seeds, mode, crawl_settings)
        try:
            scrapyd_launcher.check()
        except ScrapydError as exc:
            raise BadInput(exc) from exc
        launcher = scrapyd_launcher
    else:
        project_dir = find_project_dir()
        if project_dir is None:
            raise BadInput(
                f"no scrapy.cfg of {PROJECT} in {os.getcwd()} or above: run from the project "
                "folder, or give --scrapyd URL"
            )
        if log_dir is not None:
            try:
                log_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BadInput(f"--log-dir {log_dir}: {exc.strerror or exc}") from exc
            log_dir = log_dir.resolve()
        launcher = LocalLauncher(project_dir, seeds, mode, crawl_settings, log_dir)

    intervals = {s.id: interval or s.min_interval.total_seconds() for s in sources}
    _configure_logging()
    service = Schedule(launcher, intervals, max_parallel=max_parallel, stop_timeout=stop_timeout)
    status = service.run_once() if once else service.run_forever()
    click.get_current_context().exit(status)
