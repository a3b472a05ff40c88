"""robots.txt, obeyed for every request, also those that wait for the file together.

Scrapy's ``RobotsTxtMiddleware`` (2.13 and later) makes each request that arrives while
its host's robots.txt is still being fetched wait on one shared Deferred with
``maybe_deferred_to_future``; that adds a callback which hands the parser to its own
request and passes ``None`` down the chain, so the requests that waited after the first
found no parser and went out as if the host had no robots.txt. A crawl that starts with
many URLs of one host (resumed from the crawl state) fetched pages its robots.txt
disallows. Here each waiting request gets the parser and the Deferred keeps it for the
next one.

A robots.txt that cannot be fetched is one warning line (Scrapy's middleware logs it as an
error with a traceback) and, as in Scrapy, its host is crawled as if it had none. When the
host could not be reached at all (no name, refused, no route: ``UNREACHABLE_ERRORS``), the
requests for its pages carry the error kind (``meta["kc_host_unreachable"]``): the retry
middleware then leaves a page that fails the same way to the next crawl instead of waiting
in this one, so a crawl of a host that is down ends in seconds, its pages' retry state kept.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from knowledge_crawler import meta
from knowledge_crawler.sync.retry import TRANSIENT_ERRORS, UNREACHABLE_ERRORS

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

__all__ = ["RobotsMiddleware"]

logger = logging.getLogger(__name__)


class RobotsMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        #: hosts (netloc) whose robots.txt could not reach them, and the error kind
        self.unreachable: dict[str, str] = {}

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        await super().process_request(request)
        why = self.unreachable.get(urlparse_cached(request).netloc)
        if why is not None:
            request.meta[meta.HOST_UNREACHABLE] = why

    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        if netloc not in self._parsers:
            await self._fetch(request, netloc)
        pending = self._parsers.get(netloc)
        if not isinstance(pending, Deferred):
            return pending
        waiter: Deferred[RobotParser | None] = Deferred()

        def hand_on(parser: RobotParser | None) -> RobotParser | None:
            waiter.callback(parser)
            return parser  # for the requests that wait after this one

        pending.addCallback(hand_on)
        return await maybe_deferred_to_future(waiter)

    async def _fetch(self, request: Request, netloc: str) -> None:
        """Fetch and parse ``netloc``'s robots.txt (Scrapy's own steps, but for the log)."""
        self._parsers[netloc] = Deferred()
        url = urlparse_cached(request)
        robots = Request(
            f"{url.scheme}://{netloc}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            meta={"dont_obey_robotstxt": True},
            callback=NO_CALLBACK,
        )
        assert self.crawler.engine is not None
        try:
            response = await self.crawler.engine.download_async(robots)
            await self._parse_robots(response, netloc, request)
        except Exception as exc:
            kind = type(exc).__name__
            if kind in UNREACHABLE_ERRORS:
                self.unreachable[netloc] = kind
            if not isinstance(exc, IgnoreRequest):
                known = kind in TRANSIENT_ERRORS
                logger.warning(
                    "robots.txt of %s could not be fetched (%s: %s); its pages are fetched "
                    "as if it had none",
                    netloc,
                    kind,
                    str(exc).strip() or "no detail",
                    exc_info=not known,  # a traceback only for what is not a network failure
                )
            self._robots_error(exc, netloc)
        self._stats.inc_value("robotstxt/request_count")
