"""The download handler that renders pages in Chromium: scrapy-playwright, disciplined.

Installed for http and https by :func:`knowledge_crawler.chromium.install_browser`
only when a source renders. Requests without ``meta["playwright"]`` go to Scrapy's
HTTP/1.1 handler as always; Playwright itself starts with the first request that
needs a browser. On top of scrapy-playwright's handler:

* http and https share one handler, so a crawl runs one Playwright driver, not one
  per scheme, and the driver starts with the first request that needs a browser,
  not with the engine: a re-crawl whose pages all answer 304 starts none.
* Chromium comes from the machine (``KC_CHROMIUM_PATH``, or found on ``PATH``) and
  runs headless with :data:`~knowledge_crawler.chromium.LAUNCH_ARGS`.
* Images, fonts and media are never downloaded (:data:`BLOCKED_RESOURCES`), and a
  page's subresource requests to hosts that are private by their spelling
  (``127.0.0.1``, ``[::1]``, ``localhost``) are refused unless a source names the
  host itself or ``KC_ALLOW_PRIVATE_ADDRESSES`` is on (F-SAFETY). Names that only
  resolve to a private address are Chromium's own lookup and are not checked.
* Pages share one browser context; after ``KC_BROWSER_CONTEXT_PAGES`` pages a fresh
  context takes over and the old one is closed as soon as its last page is, so
  the browser's memory does not grow with the crawl. At most
  ``KC_BROWSER_PAGES`` pages render at once in a context.
* A crashed or killed browser is launched again for the next request (scrapy-playwright's
  ``PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER``); a page it was rendering fails with
  ``TargetClosedError``, which scrapy-playwright tries again and then the retry
  middleware retries with backoff. The browser is closed when the crawl ends.

Counters: ``kc/render/blocked/<resource type>``, ``kc/safety/refused_private_browser``,
``kc/render/contexts_recycled``; scrapy-playwright's own ``playwright/...``.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Self
from weakref import WeakKeyDictionary

from playwright.async_api import Error as PlaywrightError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from knowledge_crawler.config import KcConfig
from knowledge_crawler.middlewares.resolver import (
    allow_private_addresses,
    crawl_sources,
    own_hosts,
)
from knowledge_crawler.transform.addresses import host_key, private_host_reason, url_host

if TYPE_CHECKING:
    from playwright.async_api import Request as PlaywrightRequest
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["BLOCKED_RESOURCES", "CONTEXT_PREFIX", "BrowserDownloadHandler"]

logger = logging.getLogger(__name__)

#: Playwright resource types a crawler never needs to read a page's text
BLOCKED_RESOURCES = frozenset({"image", "font", "media"})
#: names of the contexts this handler opens and recycles: ``kc-0``, ``kc-1``, ...
CONTEXT_PREFIX = "kc-"

#: the handler of each crawler: Scrapy builds one per scheme, and each would start its own
#: Playwright driver
_HANDLERS: WeakKeyDictionary[Crawler, BrowserDownloadHandler] = WeakKeyDictionary()


class BrowserDownloadHandler(ScrapyPlaywrightDownloadHandler):  # type: ignore[misc]
    """scrapy-playwright's handler with resource blocking and recycled contexts."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = KcConfig.from_settings(crawler.settings)
        self._crawler_ref = crawler
        self._context_pages = config.browser_context_pages
        self._generation = 0
        self._opened = 0  # pages given the current context
        self._allow_private = allow_private_addresses(crawler.settings)
        self._own_hosts: frozenset[str] | None = None
        self.abort_request = self._abort
        self._closed = False
        self._launched = False
        self._launch_lock = asyncio.Lock()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        handler = _HANDLERS.get(crawler)
        if not isinstance(handler, cls):
            handler = _HANDLERS[crawler] = cls(crawler)
        return handler

    async def close(self) -> None:
        """Close the browser and Playwright once, however many schemes share the handler."""
        if self._closed:
            return
        self._closed = True
        await super().close()

    # -- resource discipline -----------------------------------------------------------

    def _abort(self, request: PlaywrightRequest) -> bool:
        kind = request.resource_type
        if kind in BLOCKED_RESOURCES:
            self.stats.inc_value(f"kc/render/blocked/{kind}")
            return True
        if self._allow_private:
            return False
        host = url_host(request.url)
        if host is None or private_host_reason(host) is None:
            return False
        if host_key(host) in self._hosts():
            return False
        self.stats.inc_value("kc/safety/refused_private_browser")
        logger.debug("browser request to %s refused: a private host of no source", request.url)
        return True

    def _hosts(self) -> frozenset[str]:
        if self._own_hosts is None:
            hosts: set[str] = set()
            for source in crawl_sources([self._crawler_ref]):
                hosts |= own_hosts(source)
            self._own_hosts = frozenset(hosts)
        return self._own_hosts

    # -- recycled contexts -------------------------------------------------------------

    def _context_name(self) -> str:
        if self._opened >= self._context_pages:
            self._generation += 1
            self._opened = 0
        self._opened += 1
        return f"{CONTEXT_PREFIX}{self._generation}"

    async def _maybe_launch_in_thread(self) -> None:
        """Not at engine start (see :meth:`_download_request`)."""

    async def _download_request(self, request: Request, spider: Spider | None = None) -> Response:
        if not self._launched:
            async with self._launch_lock:
                if not self._launched:
                    await self._launch()  # the Playwright driver; the browser comes later
                    self._launched = True
        name = request.meta.get("playwright_context")
        if name is None or str(name).startswith(CONTEXT_PREFIX):  # not a context of the user's
            request.meta["playwright_context"] = self._context_name()
        try:
            response: Response = await super()._download_request(request, spider)
            return response
        finally:
            await self._close_idle_contexts()

    async def _close_idle_contexts(self) -> None:
        """Close the replaced contexts that have no page open any more."""
        current = f"{CONTEXT_PREFIX}{self._generation}"
        wrappers: dict[str, Any] = self.context_wrappers
        for name, wrapper in list(wrappers.items()):
            if not name.startswith(CONTEXT_PREFIX) or name == current or wrapper.context.pages:
                continue
            wrappers.pop(name, None)
            with suppress(PlaywrightError):
                await wrapper.context.close()
            self.stats.inc_value("kc/render/contexts_recycled")
