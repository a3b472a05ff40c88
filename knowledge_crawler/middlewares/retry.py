"""Retries of failed page fetches, in place of Scrapy's RetryMiddleware (SPEC F-FETCH).

Scrapy's own middleware retries at once, a fixed number of times, and ignores
``Retry-After``. This one asks :func:`knowledge_crawler.sync.retry.next_attempt`
what a failure means, given the page's retry state (loaded from
``fetch_attempts`` when the crawl starts, so it survives restarts):

* network errors, timeouts and 5xx: exponential backoff with full jitter
  (``KC_RETRY_BASE_SECONDS``, ``KC_RETRY_MAX_ATTEMPTS``, ``KC_RETRY_MAX_SECONDS``);
  a retry due within ``KC_RETRY_WAIT_SECONDS`` waits in this crawl (the request
  holds its download slot meanwhile, so only its host waits), a later one is
  left to the next crawl, which picks it up when due; so is the retry of a page whose
  host could not be reached for its robots.txt either (``kc/retry/host_unreachable``):
  a host that is down ends its crawl in seconds;
* 429 (and 503 with ``Retry-After``): honours ``Retry-After`` (seconds or an
  HTTP date) and slows the host down (its download slot's delay), leaving other
  hosts alone;
* 401/403: no retry, held for review; 404/410: no retry, for the deletion policy;
* exhausted: dead-lettered (``knowledge-crawler dead-letters``).

The decision travels with the request (``meta["kc_retry"]``) to the spider's
errback, which yields a :class:`~knowledge_crawler.items.FailureItem`; the store
pipeline keeps the state apart from content. Counters: ``kc/retry/scheduled``,
``kc/retry/waited_ms``, ``kc/retry/deferred`` (left to a later crawl),
``kc/retry/dead_lettered``, ``kc/retry/review``, ``kc/retry/slowed_down``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from knowledge_crawler import meta
from knowledge_crawler.config import KcConfig
from knowledge_crawler.middlewares._base import SourceMiddleware
from knowledge_crawler.sync.retry import (
    UNREACHABLE_ERRORS,
    Action,
    AttemptDecision,
    Failure,
    FailureClass,
    RetryPolicy,
    limit_kind,
    next_attempt,
    parse_retry_after,
    slow_down,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["DECISION", "RetryMiddleware", "page_key"]

logger = logging.getLogger(__name__)

#: ``Request.meta`` key: the :class:`AttemptDecision` of the request's last failure
DECISION = meta.RETRY

#: statuses that are answers about the page, not failures to retry
_NOT_RETRIED = {304}


def page_key(request: Request) -> str | None:
    """The identity the retry state of a page request is kept under."""
    key = request.meta.get(meta.KEY)
    return key if isinstance(key, str) else None


class RetryMiddleware(SourceMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = KcConfig.from_settings(crawler.settings)
        self.policy = RetryPolicy(
            base=config.retry_base_seconds,
            max_attempts=config.retry_max_attempts,
            cap=config.retry_max_seconds,
        )
        self.wait_limit = config.retry_wait_seconds
        self._random = random.Random()

    async def process_response(self, request: Request, response: Response) -> Any:
        if response.status < 400 or response.status in _NOT_RETRIED:
            return response
        retry_after = parse_retry_after(_header(response, "Retry-After"), datetime.now(UTC))
        failure = Failure(response.status, f"http_{response.status}", retry_after)
        retried = await self._decide(request, failure, host_said_wait=retry_after)
        if retried is None:
            return response  # the spider sees it, and counts it
        # a page's answer the spider never sees: counted here (responses_429 and the like)
        self.inc(f"kc/fetch/status/{response.status}")
        return retried

    async def process_exception(self, request: Request, exception: BaseException) -> Any:
        from scrapy.exceptions import IgnoreRequest

        if isinstance(exception, IgnoreRequest):
            return None  # robots.txt, scope, size limits: refusals, not failures
        kind = limit_kind(str(exception)) or type(exception).__name__  # BodyTooLarge: permanent
        return await self._decide(request, Failure(None, kind))

    async def _decide(
        self, request: Request, failure: Failure, *, host_said_wait: float | None = None
    ) -> Request | None:
        """A retried request when the retry is due soon; else None (the failure goes on)."""
        source_id, source = self.source_of(request)
        key = page_key(request)
        if source_id is None or source is None or key is None:
            return None
        runtime = self.runtime
        state = runtime.attempts.get((source_id, key))
        decision = next_attempt(state, failure, datetime.now(UTC), self.policy, self._random.random)
        if decision.state is None:
            runtime.attempts.pop((source_id, key), None)
        else:
            runtime.attempts[(source_id, key)] = decision.state
        request.meta[DECISION] = decision
        if decision.failure_class is FailureClass.RATE_LIMITED:
            self._slow_down(request, host_said_wait)
        if decision.action is not Action.RETRY:
            self._count(decision)
            return None
        delay = decision.delay or 0.0
        unreachable = request.meta.get(meta.HOST_UNREACHABLE)
        if unreachable and failure.status is None and failure.error_kind in UNREACHABLE_ERRORS:
            # its robots.txt could not reach the host either: nothing of it answered this
            # crawl, so the retry is left to the next one rather than waited for here
            self.inc("kc/retry/deferred")
            self.inc("kc/retry/host_unreachable")
            return None
        if delay > self.wait_limit:
            self.inc("kc/retry/deferred")  # stored with its time; a later crawl retries it
            return None
        self.inc("kc/retry/scheduled")
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("kc/retry/waited_ms", round(delay * 1000))
        logger.debug("retrying %s in %.1f s (%s)", request.url, delay, failure.error_kind)
        await asyncio.sleep(delay)
        retry = request.replace(dont_filter=True)
        retry.meta.pop(DECISION, None)
        retry.priority = request.priority + 1  # it has waited: ahead of new work
        return retry

    def _count(self, decision: AttemptDecision) -> None:
        if decision.action is Action.DEAD_LETTER:
            self.inc("kc/retry/dead_lettered")
        elif decision.action is Action.REVIEW:
            self.inc("kc/retry/review")

    def _slow_down(self, request: Request, retry_after: float | None) -> None:
        """A host that answered 429: its slot waits longer between requests from now on."""
        engine = self.crawler.engine
        if engine is None:
            return
        downloader = engine.downloader
        slot = downloader.slots.get(downloader.get_slot_key(request))
        if slot is None:
            return
        before = slot.delay
        slot.delay = slow_down(
            before, retry_after, min_delay=before, max_delay=self.policy.cap, concurrency=1
        )
        if slot.delay > before:
            self.inc("kc/retry/slowed_down")
            logger.info("slowing down %s: %.2f s between requests", request.url, slot.delay)


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
