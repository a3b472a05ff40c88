"""``scrapy crawl`` that validates a knowledge spider's arguments before any request.

For the ``knowledge`` spider and every per-site spider derived from it, a bad
seeds file or argument, or a database that does not suit the settings, prints
one line naming what is wrong (file, source, key) and exits with status 2,
instead of a traceback. Other spiders run as with Scrapy's own command.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.spiderloader import get_spider_loader

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.runtime import check_database
from knowledge_crawler.spiders.knowledge import KnowledgeSpider, check_arguments


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Runs before Scrapy configures logging or creates the crawler process,
        # so a bad argument costs one line on stderr and no request.
        super().process_options(args, opts)
        assert self.settings is not None
        if len(args) != 1 or not self._is_knowledge_spider(args[0]):
            return
        try:
            check_arguments(dict(opts.spargs))
            check_database(self.settings)
        except ConfigError as exc:
            print(f"scrapy crawl {args[0]}: error: {exc}", file=sys.stderr)
            sys.exit(2)

    def _is_knowledge_spider(self, name: str) -> bool:
        assert self.settings is not None
        try:
            spider = get_spider_loader(self.settings).load(name)
        except KeyError:
            return False  # Scrapy's own command reports the unknown name
        return issubclass(spider, KnowledgeSpider)
