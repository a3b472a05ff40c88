"""``scrapy crawl`` that checks a knowledge spider's input first and tells how the crawl ended.

For the ``knowledge`` spider and every per-site spider derived from it:

* a bad seeds file or argument, a per-site spider's bad link rule or selector
  (``follow``, ``deny``, ``link_selector``, ``content_selector``), a database
  that cannot be opened, written or does not suit the settings, or an archive
  folder that cannot be created, prints one line naming what is wrong (file,
  source, key; spider and attribute; path and reason) and exits with status 2,
  before any request;
* another writer holding the lease on one of its sources (a crawl, a refresh,
  ``reextract``; F-STATE) prints one line naming the holder and exits with status 2,
  before any request and without recording a run; with ``-s
  KC_LEASE_WAIT_SECONDS=N`` the crawl waits up to N seconds for the lease first;
* the exit status follows the run's recorded outcome (``kc/outcome``):
  0 ``finished``; 1 ``failed`` (none of the start URLs could be fetched, the
  database could not be written, the crawl lost its writer lease or its shared crawl's
  Redis (``KC_REDIS_GRACE_SECONDS``), the dedupe state's temporary file failed, or
  the stage workers could not start), with one line saying why; 130 ``interrupted``
  (Ctrl-C or SIGTERM); 2 ``refused`` (the lease was taken by another writer first).

A refresh with nothing due says so in one line, with when the next stored page is due.
A name no spider has (``scrapy crawl knowldge``) is one line with the closest name and
the project's spiders, exit status 2.

Other spiders run as with Scrapy's own command.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.spiderloader import get_spider_loader

from knowledge_crawler.crawl.chromium import check_browser
from knowledge_crawler.crawl.runtime import check_database, check_lease, close_unclosed
from knowledge_crawler.crawl.stage_pool import start_forkserver, stop_forkserver, worker_count
from knowledge_crawler.errors import ConfigError, LeaseHeldError
from knowledge_crawler.pipelines.archive import check_archive
from knowledge_crawler.spiders.knowledge import KnowledgeSpider, check_arguments
from knowledge_crawler.sync.deletion import span_words

EXIT_STATUS = {"finished": 0, "failed": 1, "interrupted": 130, "refused": 2}


def failure_reason(stats: Mapping[str, Any]) -> str:
    """One line on why a crawl failed, from its stats."""
    if stats.get("kc/store/failed"):
        return str(stats.get("kc/store/error") or "the database could not be written")
    if stats.get("kc/dedupe/state_failed"):
        return str(stats.get("kc/dedupe/error") or "the dedupe state file failed")
    if stats.get("kc/lease/lost"):
        return str(stats["kc/lease/lost"])
    if stats.get("kc/stages/pool_failed"):
        return str(stats.get("kc/stages/error") or "the stage worker pool could not start")
    if stats.get("kc/frontier/redis_lost"):
        return str(stats["kc/frontier/redis_lost"])
    requested = int(stats.get("kc/start/requested", 0))
    errors = {
        key.removeprefix("kc/fetch/error/"): int(value)
        for key, value in sorted(stats.items())
        if key.startswith("kc/fetch/error/")
    }
    ignored = int(stats.get("kc/fetch/ignored", 0))
    why = ", ".join(f"{kind}={n}" for kind, n in errors.items())
    if ignored:
        why = ", ".join(filter(None, [why, f"refused (robots.txt or scope)={ignored}"]))
    return f"none of the {requested} start URLs could be fetched ({why or 'no response'})"


def nothing_due(stats: Mapping[str, Any], now: datetime | None = None) -> str:
    """One line for a refresh that requested nothing: why, and when a page is next due."""
    if not stats.get("kc/refresh/known"):
        return "nothing to refresh: no page of these sources is stored yet (crawl them first)"
    next_due = stats.get("kc/refresh/next_due_at")
    if not next_due:
        return "nothing was due: no stored page of these sources needs a check now"
    moment = datetime.fromisoformat(str(next_due).replace("Z", "+00:00"))
    wait = max(timedelta(0), moment - (now or datetime.now(UTC)))
    return (
        f"nothing was due: the next of {stats['kc/refresh/known']} stored pages is due at "
        f"{moment:%Y-%m-%d %H:%M:%S}Z (in {span_words(wait)})"
    )


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Runs before Scrapy configures logging or creates the crawler process,
        # so a bad argument costs one line on stderr and no request.
        super().process_options(args, opts)
        assert self.settings is not None
        if len(args) == 1 and self._unknown(args[0]):
            sys.exit(2)
        spider = self._spider_class(args[0]) if len(args) == 1 else None
        if spider is None:
            return
        try:
            spider.check_spider_class()
            sources = check_arguments(dict(opts.spargs))
            check_database(self.settings)
            check_lease(self.settings, sources, spider.name, opts.spargs.get("mode", "crawl"))
            check_archive(self.settings)
            check_browser(sources, self.settings)
            if self.settings.get("KC_REDIS_URL"):  # scrapy-redis only for a shared crawl
                from knowledge_crawler.crawl.frontier import check_redis

                check_redis(self.settings)
        except (ConfigError, LeaseHeldError) as exc:
            print(f"scrapy crawl {args[0]}: error: {exc}", file=sys.stderr)
            sys.exit(2)
        if opts.spargs.get("mode", "crawl") == "crawl" and worker_count(
            self.settings.getint("KC_STAGE_WORKERS")
        ):
            # The stage workers' libraries load on another core while the crawl starts.
            # A refresh mostly meets 304s: its workers start with its first changed page.
            start_forkserver()

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or not self._is_knowledge_spider(args[0]):
            super().run(args, opts)
            return
        assert self.crawler_process is not None
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        try:
            self.crawler_process.start()
            close_unclosed(crawler)  # stopped while its spider was opening
        finally:
            stop_forkserver()  # nothing of the crawl outlives its exit
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
            return
        stats = crawler.stats.get_stats() if crawler.stats is not None else {}
        if "kc/outcome" not in stats and stats.get("kc/lease/waiting"):
            # Ctrl-C or SIGTERM stopped Scrapy while the crawl waited for its lease
            stats["kc/outcome"] = "interrupted"
        outcome = str(stats.get("kc/outcome", "failed"))
        self.exitcode = EXIT_STATUS.get(outcome, 1)
        if outcome == "failed":
            print(f"scrapy crawl {args[0]}: error: {failure_reason(stats)}", file=sys.stderr)
        elif outcome == "refused":
            print(f"scrapy crawl {args[0]}: error: {stats['kc/lease/refused']}", file=sys.stderr)
        elif outcome == "interrupted" and "kc/run_id" not in stats:
            print(
                f"scrapy crawl {args[0]}: interrupted before it started (waiting for the writer "
                "lease); nothing was written",
                file=sys.stderr,
            )
        elif outcome == "interrupted":
            print(f"scrapy crawl {args[0]}: interrupted; the run is recorded", file=sys.stderr)
        elif opts.spargs.get("mode") == "refresh" and not stats.get("downloader/request_count"):
            print(f"scrapy crawl {args[0]}: {nothing_due(stats)}", file=sys.stderr)

    def _unknown(self, name: str) -> bool:
        """Whether no spider has that name; if so, one line naming the spiders there are
        instead of Scrapy's traceback."""
        assert self.settings is not None
        names = sorted(get_spider_loader(self.settings).list())
        if name in names:
            return False
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(
            f"scrapy crawl {name}: error: no spider named {name!r} in this project{hint} "
            f"(its spiders: {', '.join(names) or 'none'}; `scrapy list` lists them)",
            file=sys.stderr,
        )
        return True

    def _is_knowledge_spider(self, name: str) -> bool:
        return self._spider_class(name) is not None

    def _spider_class(self, name: str) -> type[KnowledgeSpider] | None:
        """The spider class of that name if it is a knowledge spider, else None."""
        assert self.settings is not None
        try:
            spider = get_spider_loader(self.settings).load(name)
        except KeyError:
            return None  # Scrapy's own command reports the unknown name
        return spider if issubclass(spider, KnowledgeSpider) else None
