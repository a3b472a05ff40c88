"""What the project's downloader middlewares share: the crawler and, looked up late, its runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from knowledge_crawler import meta
from knowledge_crawler.crawl.runtime import Runtime, runtime_for

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from knowledge_crawler.sources import Source

__all__ = ["SourceMiddleware"]


class SourceMiddleware:
    """A downloader middleware for the page requests of a knowledge crawl.

    The runtime is looked up on the first request with a source, not at
    construction: a spider that is not a knowledge spider never opens the store
    because of these middlewares.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._runtime: Runtime | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = runtime_for(self.crawler)
        return self._runtime

    def source_of(self, request: Request) -> tuple[str | None, Source | None]:
        """The request's source id (None: not a page request) and its source (None: unknown)."""
        source_id = request.meta.get(meta.SOURCE)
        if source_id is None:
            return None, None
        return source_id, self.runtime.sources.get(source_id)

    def inc(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)
