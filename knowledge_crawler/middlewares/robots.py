"""robots.txt, obeyed for every request, also those that wait for the file together.

Scrapy's ``RobotsTxtMiddleware`` (2.13 and later) makes each request that arrives while
its host's robots.txt is still being fetched wait on one shared Deferred with
``maybe_deferred_to_future``; that adds a callback which hands the parser to its own
request and passes ``None`` down the chain, so the requests that waited after the first
found no parser and went out as if the host had no robots.txt. A crawl that starts with
many URLs of one host (resumed from the crawl state) fetched pages its robots.txt
disallows. Here each waiting request gets the parser and the Deferred keeps it for the
next one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.robotstxt import RobotParser

__all__ = ["RobotsMiddleware"]


class RobotsMiddleware(RobotsTxtMiddleware):
    async def robot_parser(self, request: Request) -> RobotParser | None:
        pending = self._parsers.get(urlparse_cached(request).netloc)
        if not isinstance(pending, Deferred):
            return await super().robot_parser(request)
        waiter: Deferred[RobotParser | None] = Deferred()

        def hand_on(parser: RobotParser | None) -> RobotParser | None:
            waiter.callback(parser)
            return parser  # for the requests that wait after this one

        pending.addCallback(hand_on)
        return await maybe_deferred_to_future(waiter)
