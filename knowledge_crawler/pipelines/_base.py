"""What every pipeline shares: the crawler, its stats and its runtime."""

from __future__ import annotations

from typing import Self

from scrapy.crawler import Crawler

from knowledge_crawler.runtime import Runtime, runtime_for


class KcPipeline:
    """Base of the project's pipelines: keeps the crawler and the crawler's runtime."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime: Runtime = runtime_for(crawler)
        assert crawler.stats is not None
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def inc(self, key: str, count: int = 1) -> None:
        if count:
            self.stats.inc_value(f"kc/{key}", count)
