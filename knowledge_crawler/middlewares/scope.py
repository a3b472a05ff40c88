"""Refuse a request outside its own source's scope before anything is fetched for it.

A downloader middleware: every request carrying a source (``meta.SOURCE``) must be
``source.in_scope(url)`` (host in the source's ``allowed_domains`` or a subdomain,
``include``/``exclude`` patterns), or it is refused with ``IgnoreRequest``. A redirect
is a new request that goes through the downloader middlewares again, so a redirect
out of scope (to another host, another source's host, or an excluded path) is refused
before it is requested, instead of being downloaded and thrown away.

Scrapy's own ``OffsiteMiddleware`` knows only the union of every source's
``allowed_domains`` (the spider's ``allowed_domains``); this one holds each request
to its own source. Enable it below ``RobotsTxtMiddleware`` (100), which would
otherwise fetch the new host's robots.txt first.

Counters: ``kc/scope/refused`` (every refusal), ``kc/scope/refused_redirect`` (those
reached by a redirect), ``kc/scope/unknown_source`` (a source this crawl does not
have: refused, as its scope is unknown). Requests without a source pass untouched.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from knowledge_crawler.middlewares._base import SourceMiddleware

if TYPE_CHECKING:
    from scrapy import Request

__all__ = ["ScopeMiddleware"]

logger = logging.getLogger(__name__)


class ScopeMiddleware(SourceMiddleware):
    def process_request(self, request: Request) -> None:
        source_id, source = self.source_of(request)
        if source_id is None:
            return
        if source is None:
            self._refuse(request, "kc/scope/unknown_source")
            raise IgnoreRequest(f"request of unknown source {source_id!r}")
        if source.in_scope(request.url):
            return
        redirected = bool(request.meta.get("redirect_urls"))
        self._refuse(request, "kc/scope/refused_redirect" if redirected else None)
        logger.debug(
            "refused %s: outside the scope of source %r%s",
            request.url,
            source_id,
            f" (redirected from {request.meta['redirect_urls'][0]})" if redirected else "",
        )
        raise IgnoreRequest(f"outside the scope of source {source_id!r}")

    def _refuse(self, request: Request, detail: str | None) -> None:
        self.inc("kc/scope/refused")
        if detail is not None:
            self.inc(detail)
