"""HTTP or browser for each page request (SPEC F-RENDER).

:class:`RenderMiddleware`, a downloader middleware, applies the pure policy of
:mod:`knowledge_crawler.sync.render` to page requests (``meta.SOURCE``) of sources
whose ``render`` is ``playwright`` or ``auto``; discovery and robots.txt requests
are never rendered. A request goes to the browser by carrying scrapy-playwright's
``meta["playwright"]``, which :class:`~knowledge_crawler.middlewares.browser.BrowserDownloadHandler`
reads:

* at request time, for a page the store does not hold (or holds without
  validators) when the source always renders, or when ``auto`` has learned
  that rendering helps on the host;
* after a plain HTTP answer: a 200 HTML page of a ``playwright`` source (the
  conditional check found it changed) or a script shell of an ``auto`` source
  (:func:`knowledge_crawler.transform.shell.shell_signs`) is requested again,
  without validators, in the browser. A 304 never starts a browser.

The source's ``wait_for`` says when a rendered page is read: ``load``,
``domcontentloaded`` or ``networkidle`` (the page's load state), or else a CSS
selector that must appear (after ``load``), for pages that fetch their content
after loading. Both wait at most ``KC_BROWSER_TIMEOUT_SECONDS``.

Enable it below ``HttpCompressionMiddleware`` (590), whose decompressed body it
reads, and above the retry middleware (550): ``RenderMiddleware`` = 575.

:func:`knowledge_crawler.crawl.chromium.install_browser` (called by the knowledge spider
when one of its sources renders) puts the browser download handler in place;
a crawl without such sources never starts Playwright.

Counters: ``kc/render/browser_first`` (requests sent to the browser at once),
``kc/render/after_http`` (fetched again in the browser), ``kc/render/shell``
(script shells seen by ``auto``), ``kc/render/helped`` and ``kc/render/not_helped``
(what rendering a shell gave), ``kc/render/pages`` (rendered responses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.http import Response

from knowledge_crawler import meta
from knowledge_crawler.config import KcConfig
from knowledge_crawler.crawl.chromium import LOAD_STATES
from knowledge_crawler.middlewares._base import SourceMiddleware
from knowledge_crawler.sync.policy import conditional_headers
from knowledge_crawler.sync.render import browser_after, browser_first, host_verdict
from knowledge_crawler.transform.addresses import url_host
from knowledge_crawler.transform.shell import render_helped, shell_signs

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from knowledge_crawler.sources import Source

__all__ = ["BROWSER", "HTTP_WORDS", "RenderMiddleware"]

#: scrapy-playwright's request meta key: render this request in the browser
BROWSER = "playwright"
#: meta key: visible words of the HTTP answer that sent a request to the browser
HTTP_WORDS = "kc_http_words"
_VALIDATORS = ("If-None-Match", "If-Modified-Since")
_HTML_TYPES = (b"text/html", b"application/xhtml+xml")


class RenderMiddleware(SourceMiddleware):
    """Sends page requests of rendering sources to the browser (see the module doc)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = KcConfig.from_settings(crawler.settings)
        self.timeout_ms = config.browser_timeout_seconds * 1000
        #: host -> [renders of its shells that helped, that did not]
        self._renders: dict[str, list[int]] = {}

    def verdict(self, url: str) -> bool | None:
        """What rendering has done for the host of ``url`` (see ``sync.render.host_verdict``)."""
        counts = self._renders.get(url_host(url) or "")
        return None if counts is None else host_verdict(counts[0], counts[1])

    def process_request(self, request: Request) -> None:
        if request.meta.get(BROWSER):
            return
        _, source = self.source_of(request)
        if source is None or source.render == "http":
            return
        if browser_first(
            source.render,
            known=self._validated(request, source),
            host_verdict=self.verdict(request.url),
        ):
            self.to_browser(request.meta, source)
            self.inc("kc/render/browser_first")

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if request.meta.get(BROWSER):
            self.inc("kc/render/pages")
            self._judge(request, response)
            return response
        _, source = self.source_of(request)
        if source is None or source.render == "http":
            return response
        content_type = (response.headers.get("Content-Type") or b"").lower()
        is_html = content_type.startswith(_HTML_TYPES)
        words: int | None = None
        shell = False
        if source.render == "auto" and response.status == 200 and is_html:
            signs = shell_signs(response.body)
            shell, words = signs.is_shell, signs.words
            if shell:
                self.inc("kc/render/shell")
        if not browser_after(
            source.render,
            status=response.status,
            is_html=is_html,
            shell=shell,
            host_verdict=self.verdict(response.url),
        ):
            return response
        self.inc("kc/render/after_http")
        return self._browser_request(request, source, words)

    # -- helpers ------------------------------------------------------------------------

    def _validated(self, request: Request, source: Source) -> bool:
        """Whether the store holds this page with validators: its request is a conditional
        check that plain HTTP can answer."""
        key = request.meta.get(meta.KEY)
        if key is None or request.meta.get("redirect_urls"):
            try:
                key = source.key(request.url)
            except ValueError:
                return False
        known = self.runtime.known.get((source.id, key))
        return known is not None and bool(conditional_headers(known.etag, known.last_modified))

    def to_browser(self, request_meta: dict[str, Any], source: Source) -> None:
        """Mark request meta for the browser, with the source's wait strategy."""
        request_meta[BROWSER] = True
        wait = source.wait_for
        if wait in LOAD_STATES:
            request_meta["playwright_page_goto_kwargs"] = {"wait_until": wait}
            request_meta.pop("playwright_page_methods", None)
        else:
            from scrapy_playwright.page import PageMethod  # plain class, no Playwright import

            request_meta["playwright_page_goto_kwargs"] = {"wait_until": "load"}
            request_meta["playwright_page_methods"] = [
                PageMethod("wait_for_selector", wait, timeout=self.timeout_ms)
            ]

    def _browser_request(self, request: Request, source: Source, words: int | None) -> Request:
        """The same page request, for the browser: no validators, not filtered as seen."""
        headers = request.headers.copy()
        for name in _VALIDATORS:
            headers.pop(name, None)
        request_meta = dict(request.meta)
        request_meta.pop(meta.CONDITIONAL, None)
        statuses = [s for s in request_meta.get("handle_httpstatus_list", ()) if s != 304]
        if statuses:
            request_meta["handle_httpstatus_list"] = statuses
        else:
            request_meta.pop("handle_httpstatus_list", None)
        if words is not None:
            request_meta[HTTP_WORDS] = words
        self.to_browser(request_meta, source)
        return request.replace(headers=headers, meta=request_meta, dont_filter=True)

    def _judge(self, request: Request, response: Response) -> None:
        """After rendering an ``auto`` shell: did the browser find more text?"""
        before = request.meta.get(HTTP_WORDS)
        if not isinstance(before, int) or response.status != 200:
            return
        helped = render_helped(before, shell_signs(response.body).words)
        counts = self._renders.setdefault(url_host(request.url) or "", [0, 0])
        counts[0 if helped else 1] += 1
        self.inc("kc/render/helped" if helped else "kc/render/not_helped")
