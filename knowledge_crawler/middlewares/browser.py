"""The download handler that renders pages in Chromium: scrapy-playwright, disciplined.

Installed for http and https by :func:`knowledge_crawler.crawl.chromium.install_browser`
only when a source renders. Requests without ``meta["playwright"]`` go to Scrapy's
HTTP/1.1 handler as always; Playwright itself starts with the first request that
needs a browser. On top of scrapy-playwright's handler:

* http and https share one handler, so a crawl runs one Playwright driver, not one
  per scheme, and the driver starts with the first request that needs a browser,
  not with the engine: a re-crawl whose pages all answer 304 starts none.
* Chromium comes from the machine (``KC_CHROMIUM_PATH``, or found on ``PATH``) and
  runs headless with :data:`~knowledge_crawler.crawl.chromium.LAUNCH_ARGS`.
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
* No render waits forever on a browser that stopped answering: once a render has its
  page slot, it must be done within :func:`render_deadline` (twice
  ``KC_BROWSER_TIMEOUT_SECONDS`` plus :data:`DEADLINE_SLACK_SECONDS`). Playwright's own
  timeouts run in its driver and do not cover a call the driver never answers (seen when
  Chromium is killed or stopped mid-render: ``new_page()`` then never returns). A render
  past its deadline fails with ``TimeoutError`` (retried like any timeout) and the browser
  is killed, so the next render gets a fresh one. Closing is bounded too
  (:data:`CLOSE_SECONDS`); past it the browser and the Playwright driver are killed. A
  crawl ends only once every process of its browsers has (``kc/render/killed_at_close``
  counts those still there :data:`REAP_SECONDS` after the close, then killed).

Counters: ``kc/render/blocked/<resource type>``, ``kc/safety/refused_private_browser``,
``kc/render/contexts_recycled``, ``kc/render/deadline_exceeded``, ``kc/render/browsers_killed``,
``kc/render/requeued``, ``kc/render/queue_deadline_exceeded``, ``kc/render/close_timeouts``;
scrapy-playwright's own ``playwright/...``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import signal
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal, Self
from weakref import WeakKeyDictionary

from playwright.async_api import Error as PlaywrightError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from knowledge_crawler.config import KcConfig
from knowledge_crawler.crawl.runtime import child_processes, group_members
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

__all__ = [
    "BLOCKED_RESOURCES",
    "CLOSE_SECONDS",
    "CONTEXT_PREFIX",
    "DEADLINE_SLACK_SECONDS",
    "QUEUE_DEADLINES",
    "BrowserDownloadHandler",
    "render_deadline",
]

logger = logging.getLogger(__name__)

#: Playwright resource types a crawler never needs to read a page's text
BLOCKED_RESOURCES = frozenset({"image", "font", "media"})
#: names of the contexts this handler opens and recycles: ``kc-0``, ``kc-1``, ...
CONTEXT_PREFIX = "kc-"

#: added to twice the browser timeout (a navigation, then a wait_for) for a render's deadline
DEADLINE_SLACK_SECONDS = 10.0
#: a render waits at most this many deadlines for a page slot (others render meanwhile)
QUEUE_DEADLINES = 10
#: how long closing the browser and Playwright may take before both are killed
CLOSE_SECONDS = 15.0
#: how long a closed browser's processes may take to end before they are killed (s)
REAP_SECONDS = 5.0


def render_deadline(browser_timeout_seconds: float) -> float:
    """Seconds a render may take once it has its page slot: a navigation and a wait_for,
    each bounded by the browser timeout, and the slack for opening, reading and closing."""
    return 2 * browser_timeout_seconds + DEADLINE_SLACK_SECONDS


class _RenderClock:
    """When the render running in this task got its page slot (None: still waiting)."""

    __slots__ = ("browser", "queued_on", "started")

    def __init__(self) -> None:
        self.started: float | None = None
        self.browser: object = None  #: the browser the render's page is opened in
        self.queued_on: asyncio.Semaphore | None = None  #: the page slots it waits for


#: the clock of the render the current task runs; set by ``_download_request``
_RENDER_CLOCK: contextvars.ContextVar[_RenderClock | None] = contextvars.ContextVar(
    "kc_render_clock", default=None
)


class _ClockedSemaphore(asyncio.Semaphore):
    """A context's page slots; taking one starts the deadline of the render that took it,
    so time spent queued behind other renders never counts against a render."""

    def __init__(self, value: int, handler: object) -> None:
        super().__init__(value)
        self._handler = handler

    async def acquire(self) -> Literal[True]:
        clock = _RENDER_CLOCK.get()
        if clock is not None:
            clock.queued_on = self
        await super().acquire()
        if clock is not None:
            clock.queued_on = None
            clock.started = asyncio.get_running_loop().time()
            clock.browser = getattr(self._handler, "browser", None)
        return True


def _drivers() -> set[int]:
    """The Playwright drivers this process runs."""
    return set(child_processes(os.getpid(), b"run-driver"))


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
        self._deadline = render_deadline(config.browser_timeout_seconds)
        self._driver: int | None = None  #: the Playwright driver's pid, once it runs

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        handler = _HANDLERS.get(crawler)
        if not isinstance(handler, cls):
            handler = _HANDLERS[crawler] = cls(crawler)
        return handler

    async def close(self) -> None:
        """Close the browser and Playwright once, however many schemes share the handler;
        kill both if closing takes longer than :data:`CLOSE_SECONDS`."""
        if self._closed:
            return
        self._closed = True
        groups = self._browser_groups()  # before the driver that launched them goes
        try:
            await asyncio.wait_for(super().close(), timeout=CLOSE_SECONDS)
        except TimeoutError:
            self.stats.inc_value("kc/render/close_timeouts")
            logger.warning(
                "closing the browser took longer than %.0fs: the browser and the Playwright "
                "driver are killed",
                CLOSE_SECONDS,
            )
            self._kill_browsers()
            self._kill_driver()
        await self._reap(groups)

    def _browser_groups(self) -> set[int]:
        """The process groups of the browsers the driver launched (each leads its own)."""
        groups: set[int] = set()
        if self._driver is not None:
            for pid in child_processes(self._driver):
                with suppress(OSError):
                    groups.add(os.getpgid(pid))
        groups.discard(os.getpgrp())  # never the crawl's own group
        return groups

    async def _reap(self, groups: set[int]) -> None:
        """Wait until no process of the closed browsers is left: a closed browser's
        renderers and helpers end a moment after it, and on a busy machine that moment
        came after the crawl had exited. Past :data:`REAP_SECONDS` they are killed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REAP_SECONDS
        left = {g for g in groups if group_members(g)}
        while left and loop.time() < deadline:
            await asyncio.sleep(0.05)
            left = {g for g in left if group_members(g)}
        for group in left:
            with suppress(OSError):
                os.killpg(group, signal.SIGKILL)
            self.stats.inc_value("kc/render/killed_at_close", len(group_members(group)))
        while left and loop.time() < deadline + REAP_SECONDS:
            await asyncio.sleep(0.05)
            left = {g for g in left if group_members(g)}

    # -- browsers that stop answering --------------------------------------------------

    def _kill_driver(self) -> None:
        if self._driver is not None:
            with suppress(OSError):
                os.kill(self._driver, signal.SIGKILL)

    def _kill_browsers(self) -> int:
        """Kill the browsers the driver launched (each leads its own process group, so its
        renderers and helpers go with it); the driver notices, and the next render launches
        a fresh browser. Returns how many were killed."""
        if self._driver is None:
            return 0
        killed = 0
        for pid in child_processes(self._driver):
            with suppress(OSError):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    os.kill(pid, signal.SIGKILL)
                killed += 1
        self.stats.inc_value("kc/render/browsers_killed", killed)
        return killed

    async def _create_browser_context(self, *args: Any, **kwargs: Any) -> Any:
        wrapper = await super()._create_browser_context(*args, **kwargs)
        if type(wrapper.semaphore) is asyncio.Semaphore:
            wrapper.semaphore = _ClockedSemaphore(self.config.max_pages_per_context, self)
        return wrapper

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
                    others = _drivers()
                    await self._launch()  # the Playwright driver; the browser comes later
                    ours = _drivers() - others  # Playwright keeps its driver's pid private
                    self._driver = ours.pop() if len(ours) == 1 else None
                    self._launched = True
        name = request.meta.get("playwright_context")
        if name is None or str(name).startswith(CONTEXT_PREFIX):  # not a context of the user's
            request.meta["playwright_context"] = self._context_name()
        try:
            return await self._render_within_deadline(request, spider)
        finally:
            await self._close_idle_contexts()

    async def _render_within_deadline(self, request: Request, spider: Spider | None) -> Response:
        """scrapy-playwright's render, given up (and the browser killed) when it has had its
        page slot for longer than the deadline. A render queued for the page slots of a
        context that is gone (its browser died with pages that never closed, so their slots
        are never given back) starts again in the context that replaces it."""
        clock, render = self._start_render(request, spider)
        loop = asyncio.get_running_loop()
        # a long stop for the wait for a slot, whatever holds it up
        queue_deadline = loop.time() + QUEUE_DEADLINES * self._deadline
        try:
            while True:
                if clock.started is None:
                    wait = 1.0  # queued for a page slot: no deadline yet
                    if loop.time() > queue_deadline:
                        _abandon(render, cancel=True)
                        self.stats.inc_value("kc/render/queue_deadline_exceeded")
                        waited = QUEUE_DEADLINES * self._deadline
                        raise TimeoutError(f"no page slot in the browser within {waited:.0f}s")
                    if clock.queued_on is not None and not self._slots_live(clock.queued_on):
                        _abandon(render, cancel=True)  # it holds nothing yet: no page, no slot
                        self.stats.inc_value("kc/render/requeued")
                        clock, render = self._start_render(request, spider)
                        continue
                else:
                    wait = clock.started + self._deadline - loop.time()
                    if wait <= 0:
                        break
                done, _ = await asyncio.wait({render}, timeout=wait)
                if done:
                    response: Response = render.result()
                    return response
        except asyncio.CancelledError:
            render.cancel()
            raise
        # the browser does not answer: leave the render to die with it (a cancelled render
        # would try to close its page, on the same browser)
        _abandon(render, cancel=False)
        self.stats.inc_value("kc/render/deadline_exceeded")
        # a browser launched since this render began is not the one that stopped answering
        current = getattr(self, "browser", None)
        killed = self._kill_browsers() if current is not None and current is clock.browser else 0
        logger.warning(
            "render of %s had no answer from the browser within %.0fs: %s",
            request.url,
            self._deadline,
            "the browser is killed and started again" if killed else "its browser is gone",
        )
        raise TimeoutError(f"the browser gave no answer within {self._deadline:.0f}s")

    def _start_render(
        self, request: Request, spider: Spider | None
    ) -> tuple[_RenderClock, asyncio.Future[Response]]:
        clock = _RenderClock()
        token = _RENDER_CLOCK.set(clock)
        try:  # the task copies the context, clock and all
            render = asyncio.ensure_future(super()._download_request(request, spider))
        finally:
            _RENDER_CLOCK.reset(token)
        return clock, render

    def _slots_live(self, slots: asyncio.Semaphore) -> bool:
        """Whether ``slots`` are the page slots of a context still open."""
        wrappers: dict[str, Any] = self.context_wrappers
        return any(wrapper.semaphore is slots for wrapper in wrappers.values())

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


def _abandon(render: asyncio.Future[Any], *, cancel: bool) -> None:
    """Give up on ``render`` (cancelled, or left to end with its browser); its outcome is
    retrieved when it comes, so asyncio does not report it as lost."""
    if cancel:
        render.cancel()
    render.add_done_callback(_retrieve_outcome)


def _retrieve_outcome(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
