"""Crawls as subprocesses: ``python -m scrapy crawl knowledge ...`` in the folder of the
project's ``scrapy.cfg``, one session each."""

from __future__ import annotations

import configparser
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from knowledge_crawler.schedule.service import SETTINGS_MODULE, SPIDER, RunResult, settings_note

__all__ = ["EXIT_OUTCOMES", "LocalLauncher", "find_project_dir"]

#: ``scrapy crawl`` exit status -> the outcome it stands for (commands/crawl.py).
EXIT_OUTCOMES = {0: "finished", 1: "failed", 2: "refused", 130: "interrupted"}


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
        return text + settings_note(self.settings)

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
