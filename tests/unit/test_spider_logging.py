"""The crawl builds no log record that no handler would take."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from knowledge_crawler.spiders.knowledge import KnowledgeSpider


@contextmanager
def root_handlers(*levels: int) -> Iterator[None]:
    """Only handlers of these levels on the root logger, and the levels Scrapy's logging
    set-up gives (root NOTSET, ``scrapy`` DEBUG); all put back after."""
    saved = logging.root.handlers[:]
    saved_levels = (logging.root.level, logging.getLogger("scrapy").level)
    handlers: list[logging.Handler] = []
    for level in levels:
        handlers.append(logging.NullHandler())
        handlers[-1].setLevel(level)
    logging.root.handlers = handlers
    logging.root.setLevel(logging.NOTSET)
    logging.getLogger("scrapy").setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logging.root.handlers = saved
        logging.root.setLevel(saved_levels[0])
        logging.getLogger("scrapy").setLevel(saved_levels[1])


def test_debug_records_are_not_built_when_every_handler_drops_them() -> None:
    spider = KnowledgeSpider(seeds="http://shop.example/")
    engine = logging.getLogger("scrapy.core.engine")
    ours = logging.getLogger("knowledge_crawler.x")
    with root_handlers(logging.WARNING, logging.ERROR):
        assert engine.isEnabledFor(logging.DEBUG)
        spider._skip_unlogged_records()  # at spider_opened
        assert not engine.isEnabledFor(logging.INFO) and engine.isEnabledFor(logging.WARNING)
        assert not ours.isEnabledFor(logging.INFO) and ours.isEnabledFor(logging.WARNING)
        spider._restore_root_level()  # at spider_closed
        assert engine.isEnabledFor(logging.DEBUG) and logging.root.level == logging.NOTSET


def test_a_handler_that_takes_every_level_keeps_every_record() -> None:
    spider = KnowledgeSpider(seeds="http://shop.example/")
    with root_handlers(logging.WARNING, logging.NOTSET):
        spider._skip_unlogged_records()
        assert logging.getLogger("scrapy.core.engine").isEnabledFor(logging.DEBUG)
