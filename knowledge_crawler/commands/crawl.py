"""``scrapy crawl`` that validates the knowledge spider's arguments before any request.

A bad seeds file or argument, or a database that does not suit the settings,
prints one line naming what is wrong (file, source, key) and exits with
status 2, instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.runtime import check_database
from knowledge_crawler.spiders.knowledge import check_arguments


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Runs before Scrapy configures logging or creates the crawler process,
        # so a bad argument costs one line on stderr and no request.
        super().process_options(args, opts)
        if args and args[0] == "knowledge":
            try:
                check_arguments(dict(opts.spargs))
                assert self.settings is not None
                check_database(self.settings)
            except ConfigError as exc:
                print(f"scrapy crawl knowledge: error: {exc}", file=sys.stderr)
                sys.exit(2)
