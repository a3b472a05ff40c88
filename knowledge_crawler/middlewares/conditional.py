"""Conditional GET for every stored page (SPEC F-FETCH, RFC 9110 13.1).

A downloader middleware: a request for a page the store already holds goes out
with the stored ``ETag`` as ``If-None-Match`` and the stored ``Last-Modified``
as ``If-Modified-Since`` (:func:`knowledge_crawler.sync.policy.conditional_headers`),
and asks for a ``304`` to reach the spider instead of the error back. The spider
turns a 304 into a :class:`~knowledge_crawler.items.NotModifiedItem`: no parse,
no pipeline stage but the store's touch.

The page is found by the canonical URL of the request: ``meta.KEY`` for a
request the spider built, the request's own URL for a redirect (a redirect
target is another page, with validators of its own: the ones Scrapy copied from
the redirected request are removed). Other headers the request already carries
are left as they are. A request for the browser
(``meta["playwright"]``, see :mod:`knowledge_crawler.middlewares.render`) gets
none: it is sent only once plain HTTP found the page changed or new.

Counter: ``kc/fetch/conditional`` (requests sent with validators).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from knowledge_crawler import meta
from knowledge_crawler.middlewares._base import SourceMiddleware
from knowledge_crawler.sync.policy import conditional_headers

if TYPE_CHECKING:
    from scrapy import Request

__all__ = ["ConditionalMiddleware"]

#: the request headers that make a GET conditional
_VALIDATORS = (b"If-None-Match", b"If-Modified-Since")


class ConditionalMiddleware(SourceMiddleware):
    def process_request(self, request: Request) -> None:
        if request.meta.get("playwright"):
            return
        redirected = bool(request.meta.get("redirect_urls"))
        if redirected:
            # Scrapy builds a redirect's request from the one redirected, headers and all:
            # the validators it carries are the other URL's, never this one's.
            for name in _VALIDATORS:
                request.headers.pop(name, None)
            request.meta.pop(meta.CONDITIONAL, None)
        _, source = self.source_of(request)
        known_pages = self.runtime.known if source is not None else None
        if not known_pages or source is None:
            return
        key = request.meta.get(meta.KEY)
        if key is None or redirected:
            try:
                key = source.key(request.url)
            except ValueError:
                return
        known = known_pages.get((source.id, key))
        if known is None:
            return
        headers = conditional_headers(known.etag, known.last_modified)
        if not headers:
            return
        for header, value in headers.items():
            request.headers.setdefault(header, value)
        allowed = list(request.meta.get("handle_httpstatus_list", ()))
        if 304 not in allowed:
            request.meta["handle_httpstatus_list"] = [*allowed, 304]
        request.meta[meta.CONDITIONAL] = True
        self.inc("kc/fetch/conditional")
