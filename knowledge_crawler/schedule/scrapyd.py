"""Crawls as scrapyd jobs: scheduled through scrapyd's JSON API, followed until they end."""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from knowledge_crawler.schedule.service import PROJECT, SPIDER, RunResult, log, settings_note

__all__ = ["ScrapydError", "ScrapydLauncher"]

_OUTCOME_IN_LOG = re.compile(r"'kc/outcome': '(\w+)'")


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
            started(f"scrapyd job {job} at {self.url}{settings_note(self.settings)}")
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
