"""``knowledge-crawler schedule SEEDS_FILE``: recurring refresh crawls per source (APScheduler).

Every source of the file gets a job that runs a refresh crawl of that source alone,
``scrapy crawl knowledge -a seeds=FILE -a source=ID -a mode=refresh``, every ``min_interval``
of the source: the shortest interval any of its pages can be due again, so each page is
revalidated at most one interval after it is due, and a refresh with nothing due costs a
start-up and no request. The crawl runs as a subprocess of the same Python (``python -m
scrapy`` in the folder of the project's ``scrapy.cfg``) or, with ``--scrapyd URL``, as a
scrapyd job, followed until it ends.

The rules of a run (never twice at once, ``--max-parallel``, what SIGTERM and SIGINT do)
are the service's (:mod:`knowledge_crawler.schedule.service`). This module reads the
command line and puts the service and a launcher together. Imports no Scrapy.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import click

from knowledge_crawler.cli._common import DEFAULT_DATABASE_URL, PROG, BadInput
from knowledge_crawler.config import database_url
from knowledge_crawler.errors import SeedsError
from knowledge_crawler.schedule.local import LocalLauncher, find_project_dir
from knowledge_crawler.schedule.scrapyd import ScrapydError, ScrapydLauncher
from knowledge_crawler.schedule.service import PROJECT, Launcher, Schedule, log
from knowledge_crawler.sources import parse_duration, resolve_seeds

__all__ = ["schedule"]


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
    help="Database the crawls write: sqlite:///PATH (or just PATH; relative to this folder) "
    "or postgresql://...; also read from KC_DATABASE_URL. Local crawls default to "
    f"{DEFAULT_DATABASE_URL.removeprefix('sqlite:///')} in this folder, as the other commands.",
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
    "--wait",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="How long each crawl waits for another writer of its source (a manual crawl, "
    "reextract) to finish; default 0: the run is refused (exit 2) and logged.",
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
    wait: float | None,
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
    leaves the schedule going. Each crawl takes its source's writer lease: while
    another writer (a manual crawl, reextract) holds it, the run is refused
    (exit 2, logged with the holder) unless --wait gives it time to finish.

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
    if wait is not None:
        crawl_settings.append(f"KC_LEASE_WAIT_SECONDS={wait:g}")
    if database is None and not scrapyd_url:
        # the crawl runs in the project folder: the default is this folder's, where `stats`
        # and the other commands run from here look for it
        database = DEFAULT_DATABASE_URL
    if database:
        crawl_settings.append(f"KC_DATABASE_URL={_absolute_database(database_url(database))}")

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
