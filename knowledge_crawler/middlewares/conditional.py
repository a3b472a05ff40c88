"""Conditional GET for every stored page (SPEC F-FETCH, RFC 9110 13.1).

A downloader middleware: a request for a page the store already holds goes out
with the stored ``ETag`` as ``If-None-Match`` and the stored ``Last-Modified``
as ``If-Modified-Since`` (:func:`knowledge_crawler.sync.policy.conditional_headers`),
and asks for a ``304`` to reach the spider instead of the error back. The spider
turns a 304 into a :class:`~knowledge_crawler.items.NotModifiedItem`: no parse,
no pipeline stage but the store's touch.

The page is found by the canonical URL of the request: ``meta.KEY`` for a
request the spider built, the request's own URL for a redirect (a redirect
target is another page, with validators of its own). Headers the request
already carries are left as they are.

Counter: ``kc/fetch/conditional`` (requests sent with validators).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from knowledge_crawler import meta
from knowledge_crawler.runtime import Runtime, runtime_for
from knowledge_crawler.sync.policy import conditional_headers
from knowledge_crawler.transform.canonical import canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["ConditionalMiddleware"]


class ConditionalMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._runtime: Runtime | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        source_id = request.meta.get(meta.SOURCE)
        if source_id is None:
            return
        if self._runtime is None:
            self._runtime = runtime_for(self.crawler)
        runtime = self._runtime
        if not runtime.known:
            return
        key = request.meta.get(meta.KEY)
        if key is None or request.meta.get("redirect_urls"):
            source = runtime.sources.get(source_id)
            if source is None:
                return
            try:
                key = canonical_url(
                    request.url,
                    keep_params=source.keep_params,
                    tracking_params=source.tracking_params,
                )
            except ValueError:
                return
        known = runtime.known.get((source_id, key))
        if known is None:
            return
        headers = conditional_headers(known.etag, known.last_modified)
        if not headers:
            return
        for name, value in headers.items():
            request.headers.setdefault(name, value)
        allowed = list(request.meta.get("handle_httpstatus_list", ()))
        if 304 not in allowed:
            request.meta["handle_httpstatus_list"] = [*allowed, 304]
        request.meta[meta.CONDITIONAL] = True
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("kc/fetch/conditional")
