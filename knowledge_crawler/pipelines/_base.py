"""What every pipeline shares: the crawler, its stats and its runtime.

Stages 1-5 work on pages only: :meth:`KcPipeline.process_item` hands a
:class:`~knowledge_crawler.items.PageItem` to the stage's ``process_page`` and
passes every other outcome (a 304's :class:`~knowledge_crawler.items.NotModifiedItem`)
by untouched, so a page that did not change is never parsed.
"""

from __future__ import annotations

from typing import Any, Self

from scrapy.crawler import Crawler

from knowledge_crawler.crawl.runtime import Runtime, runtime_for
from knowledge_crawler.items import FailureItem, PageItem
from knowledge_crawler.store import FetchFailure, utc_now
from knowledge_crawler.sync.retry import Action, AttemptState

#: the actions after which a URL is not fetched again on its own (its frontier entry is done)
FINAL_ACTIONS = frozenset({"dead_letter", "review", "missing", "gone"})


def retry_record(item: FailureItem, state: AttemptState) -> FetchFailure:
    """The ``fetch_attempts`` row of a failure whose retry state was decided."""
    return FetchFailure(
        item.source_id,
        item.canonical_url,
        item.url,
        failed_at=item.failed_at,
        attempts=state.attempts,
        first_failed_at=state.first_failed_at,
        last_error=state.last_error,
        last_status=state.last_status,
        next_retry_at=state.next_retry_at,
        dead_lettered_at=state.dead_lettered_at,
        needs_review=item.action == "review",
        depth=item.depth,
        settled=item.action in FINAL_ACTIONS,
        evidence=item.evidence or "[]",
    )


def retry_later(item: PageItem, error: str) -> FailureItem:
    """A fetched page that a transient failure kept from being stored, as a failed fetch
    whose retry is due at once: the next crawl fetches it again (the pages that link to it
    may answer 304, so their links would not lead to it). ``error`` is the failure's kind."""
    now = utc_now()
    return FailureItem(
        source_id=item.source_id,
        canonical_url=item.request_key or item.canonical_url,
        url=item.url,
        depth=item.depth,
        failed_at=now,
        status=None,
        error=error,
        action=Action.RETRY.value,
        state=AttemptState(1, now, last_error=error, next_retry_at=now),
    )


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

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            return self.process_page(item)
        return item

    def process_page(self, item: PageItem) -> PageItem:
        """One page's stage; the base class leaves it as it is."""
        return item

    def inc(self, key: str, count: int = 1) -> None:
        if count:
            self.stats.inc_value(f"kc/{key}", count)
