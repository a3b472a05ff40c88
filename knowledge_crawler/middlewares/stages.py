"""Spider middleware: a page goes to a stage worker as soon as the spider yields it.

The knowledge spider yields each HTML page as a :class:`~knowledge_crawler.items.PageItem`
and, when this middleware is on, leaves its links to it (``PageItem.follow``). Here the
page is sent to the crawl's stage workers (``knowledge_crawler.crawl.stage_pool``), which
parse it once for its links and for stages 1-4 of its content, and the links come back
with the rest: the item leaves with its stages' results (``PageItem.prepared``, which
the pipelines then take) and is followed by the requests for its links, made by the
spider's own ``link_requests`` (its rules, the source's scope, the seen pages). So the
crawl's event loop neither parses pages nor extracts their content. Without workers
(``KC_STAGE_WORKERS=0``, a source they do not know) the links are read from the
response here, as the spider would; so they are while the workers are still starting
(a second or so, ``StagePool.ready``), and followed at once: the first pages of a crawl
would otherwise wait for the workers before any of their links is requested.

A page the workers could not do (its stages raised, it killed its worker, it ran past
the time limit, the pool could not start) leaves with the reason
(``PageItem.stage_failure``), which the extract stage records as a failure with retry
state; its links are not read here (a page that breaks the stages is not parsed on the
event loop) but when a later crawl fetches it again.

It sits closest to the spider (order 950), so that the requests it yields pass
through Scrapy's own spider middlewares (depth, URL length, referer, offsite) like the
spider's. Stats: ``kc/stages/links`` (pages whose links a worker read).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Self

from knowledge_crawler.crawl.runtime import Runtime, runtime_for
from knowledge_crawler.crawl.stage_pool import StagePageError, StagePoolFailed, StagePoolStopped
from knowledge_crawler.items import PageItem
from knowledge_crawler.transform.stages import PageInput

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["StageMiddleware"]

logger = logging.getLogger(__name__)


class StageMiddleware:
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

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for out in result:
            if not isinstance(out, PageItem) or out.html is None:
                yield out
                continue
            pool = self.runtime.stage_pool
            # No worker, or the workers still starting (a second or so): the links are
            # read here and followed at once, so the crawl does not wait for them.
            here = out.follow and (pool is None or not pool.ready)
            if here:
                for request in self._requests(response, out, None):
                    yield request
            found = await self._prepare(out, links=out.follow and not here)
            # before the item leaves: its new links (``outlinks``) go to the store with it
            later = []
            if out.follow and not here and out.stage_failure is None:
                later = self._requests(response, out, found)
            yield out
            for request in later:
                yield request

    def _requests(self, response: Response, item: PageItem, links: list[str] | None) -> Any:
        """The requests for a page's links: those a worker read, else read here."""
        spider: Any = self.crawler.spider
        if links is None:
            links = spider.links_of(response, item.link_region)
        return spider.link_requests(item, links)

    async def _prepare(self, item: PageItem, *, links: bool) -> list[str] | None:
        """The item's stages from a worker, if there is one; the links it read, if asked."""
        pool = self.runtime.stage_pool
        if pool is None or item.source_id not in pool.rules or item.html is None:
            return None
        page = PageInput(
            item.source_id,
            item.final_url,
            item.html,
            item.content_selector,
            links=links,
            link_region=item.link_region,
            encoding=item.encoding,
        )
        try:
            item.prepared = await pool.prepare(page)
        except (StagePageError, StagePoolFailed, StagePoolStopped) as exc:
            item.stage_failure = exc  # recorded by the extract stage, counted and logged
            return None
        if not links:
            return None
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("kc/stages/links")
        return list(item.prepared.links)
