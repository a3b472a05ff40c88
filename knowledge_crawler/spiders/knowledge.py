"""The ``knowledge`` spider: crawls the sources of a seeds file (or a URL list).

``scrapy crawl knowledge -a seeds=seeds/NAME.toml`` or ``-a seeds=URL[,URL...]``;
``-a source=ID`` keeps one source of the file; ``-a mode=crawl`` (default: the
URLs of the crawl state that are due and not stored (listed or linked, within
the depth limit), the start URLs, then every stored page of the sources, then the
links found) or ``-a mode=refresh`` (only the stored pages whose next check is due,
most overdue first, and listed URLs, without following links). The links a page's
parse finds that the crawl did not know travel with its item to the store
(``PageItem.outlinks``), so the crawl state holds them once the page does; a
redirect or a non-page answer is recorded on the requested URL
(:class:`UrlOutcomeItem`), and such a URL is not requested again before it is due.
A stored page is requested with its validators; a 304 becomes a
:class:`NotModifiedItem` and is not parsed.
Arguments whose name starts with ``_`` are accepted and kept as attributes
(scrapyd runs every job with ``-a _job=ID``; the run record keeps that id).
The spider only discovers and fetches: it yields :class:`PageItem` for each
response and follows in-scope links; the pipelines do everything else.

A per-site spider derived from it (``scrapy genspider -t knowledge NAME DOMAIN``,
``docs/spiders.md``) may set class attributes checked when it starts: ``follow``
and ``deny`` (URL regexes) and ``link_selector`` (CSS or XPath) narrow the links
followed from pages; ``content_selector`` (CSS or XPath) names the main content
instead of automatic extraction; and it may override :meth:`KnowledgeSpider.extra_fields`
to store extra values with each page.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, Self
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request, Response, TextResponse
from scrapy.robotstxt import RobotParser
from scrapy.settings import BaseSettings
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.response import get_base_url
from twisted.python.failure import Failure

from knowledge_crawler import __version__, meta
from knowledge_crawler.crawl.chromium import install_browser
from knowledge_crawler.crawl.known import RecentKeys, SeenKeys
from knowledge_crawler.crawl.runtime import SKIPPED_EXTENSIONS, runtime_for
from knowledge_crawler.discovery.links import LinkRules
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import FailureItem, NotModifiedItem, PageItem, UrlOutcomeItem
from knowledge_crawler.sources import Source, resolve_seeds
from knowledge_crawler.spiders._discovery import DiscoveryMixin
from knowledge_crawler.store import KnownPage, utc_now
from knowledge_crawler.sync.junk import answer_digest, body_junk
from knowledge_crawler.sync.retry import AttemptState, limit_kind
from knowledge_crawler.transform.canonical import canonical_url, fetch_url
from knowledge_crawler.transform.extract import decode_html, looks_like_html
from knowledge_crawler.transform.links import canonical_link, link_targets, page_link_urls
from knowledge_crawler.transform.selector import selector_xpath

logger = logging.getLogger(__name__)

MODES = ("crawl", "refresh")

#: how the crawl state learned of a URL other than from a listing: a page's link, a
#: redirect's target, a fetch of its own (a refusal); a refresh leaves these to a crawl
#: crawl state rows read at a time (``Store.frontier_due``)
_STATE_PAGE = 2000
_FOUND_BY_CRAWLING = frozenset({"link", "redirect", "fetch"})

#: why a URL was not fetched when robots.txt forbids it (Scrapy's words for it)
ROBOTS_REFUSAL = "Forbidden by robots.txt"

#: what :meth:`KnowledgeSpider.parse` yields (a per-site spider's parse may say so too)
ParseOutput = PageItem | NotModifiedItem | UrlOutcomeItem | Request

#: the spider middleware that reads a page's links when it is on (and parse() does not)
STAGE_MIDDLEWARE = "knowledge_crawler.middlewares.stages.StageMiddleware"

_HTML_TYPES = (b"text/html", b"application/xhtml+xml")


def page_links(response: TextResponse, region: str | None = None) -> list[str]:
    """Absolute http(s) URLs of the page's ``<a>``/``<area>`` links, in order, without repeats.

    A lean replacement for Scrapy's LinkExtractor (which cost about 14 ms a page,
    mostly in its extension filter): the same sources, one XPath on the response's own
    parse, a set lookup for skipped file extensions. ``region``: an XPath
    (``LinkRules.region``) of the parts of the page to take links from (links in them
    or that they are); None: the whole page. With stage workers, they find the same
    links in their own parse of the page (``transform.stages``).
    """
    hrefs = link_targets(response.selector.root, region)
    return page_link_urls(hrefs, get_base_url(response), SKIPPED_EXTENSIONS)


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def user_agent(contact: str) -> str:
    """The User-Agent every request carries: project, version and the operator's contact.

    >>> user_agent("mailto:ops@example.com")
    'knowledge_crawler/0.1.0 (+mailto:ops@example.com)'
    """
    return f"knowledge_crawler/{__version__} (+{contact})"


def fetch_error_kind(error: BaseException) -> str:
    """A short, stable name for why a fetch failed: ``http_404``, ``TimeoutError``, ..."""
    if isinstance(error, HttpError):
        return f"http_{error.response.status}"
    return limit_kind(str(error)) or type(error).__name__


def check_arguments(spargs: dict[str, str]) -> list[Source]:
    """The sources that ``-a`` arguments select; :class:`ConfigError` naming what is wrong."""
    # Names starting with "_" belong to the runner (scrapyd's _job), not to us.
    unknown = sorted(k for k in set(spargs) - {"seeds", "mode", "source"} if not k.startswith("_"))
    if unknown:
        raise ConfigError(f"unknown argument -a {unknown[0]}=... (known: seeds, mode, source)")
    seeds = spargs.get("seeds")
    if not seeds:
        raise ConfigError("missing -a seeds=FILE.toml or -a seeds=URL[,URL...]")
    mode = spargs.get("mode", "crawl")
    if mode not in MODES:
        raise ConfigError(f"-a mode={mode!r}: expected one of {', '.join(MODES)}")
    return resolve_seeds(seeds, only=spargs.get("source"))


def source_slot(source_id: str) -> str:
    """The download slot of a source with its own politeness (all its hosts share it)."""
    return f"kc:{source_id}"


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") and host.count(".") >= 2 else host


#: Scrapy extensions, and what turns each on
_SWITCHED_EXTENSIONS = (
    ("scrapy.extensions.remote_control.RemoteControl", "REMOTE_CONTROL_ENABLED"),
    ("scrapy.extensions.telnet.TelnetConsole", "TELNETCONSOLE_ENABLED"),
    ("scrapy.extensions.memdebug.MemoryDebugger", "MEMDEBUG_ENABLED"),
    ("scrapy.extensions.feedexport.FeedExporter", "FEEDS"),
)


def _enabled(settings: BaseSettings, name: str) -> bool:
    return bool(settings.getdict(name)) if name == "FEEDS" else settings.getbool(name)


#: links whose scope and canonical URL a spider remembers (navigation links repeat on
#: every page); about 18 MiB when full of 80-character URLs
LINK_MEMO = 65_536


class KnowledgeSpider(DiscoveryMixin, scrapy.Spider):
    name = "knowledge"
    allowed_domains: list[str] = []

    # -- what a per-site spider may set (checked when it starts: check_spider_class) --

    #: URL regexes: when any are given, a link found on a page is followed only if one
    #: matches it (searched in the absolute URL), on top of the source's scope
    follow: tuple[str, ...] = ()
    #: URL regexes: a link found on a page that one matches is not followed
    deny: tuple[str, ...] = ()
    #: CSS selector (XPath if it starts with ``/`` or ``(``) of the parts of a page that
    #: links are followed from, e.g. ``"nav.pagination, main"``; None: the whole page
    link_selector: str | None = None
    #: CSS selector (XPath if it starts with ``/`` or ``(``) of the page's main content,
    #: used instead of automatic extraction and rendered as markdown; a page where it
    #: matches no text is extracted automatically (``kc/extract/selector_missed``)
    content_selector: str | None = None

    def extra_fields(self, response: TextResponse) -> dict[str, Any]:
        """Extra values to store with this HTML page (``pages.extra``, a JSON object).

        Override it in a per-site spider, e.g. ``{"price": response.css(".price::text").get()}``.
        Values must be what JSON holds (str, int, float, bool, None, lists, dicts with
        string keys); a page whose extras are not is stored without them
        (``kc/extract/extra_invalid``), and so is one whose hook raises
        (``kc/spider/extra_fields_failed``). Called for every HTML page fetched (not
        for a 304, which is not parsed), before its links are followed.
        """
        return {}

    @classmethod
    def check_spider_class(cls) -> LinkRules:
        """The spider's link rules, checked with its ``content_selector``.

        :class:`ConfigError` naming the spider and the attribute when one is bad:
        ``spider 'shop': deny[0]: bad regex '(': missing ), ...``.
        """
        try:
            rules = LinkRules.of(cls.follow, cls.deny, cls.link_selector)
            if cls.content_selector is not None:
                try:
                    selector_xpath(cls.content_selector)
                except ValueError as exc:
                    raise ValueError(f"content_selector: {exc}") from None
        except ValueError as exc:
            raise ConfigError(f"spider {cls.name!r}: {exc}") from None
        return rules

    def __init__(
        self,
        seeds: str | None = None,
        mode: str = "crawl",
        source: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)  # keeps runner arguments such as ``_job`` as attributes
        args = {"seeds": seeds or "", "mode": mode} | ({"source": source} if source else {})
        self.link_rules = self.check_spider_class()
        self._extra_failed_logged = False
        self.mode = mode
        self.job_id: str | None = kwargs.get("_job")
        self._slots: dict[str, str] = {}  # source id -> its own download slot
        self.sources: dict[str, Source] = {s.id: s for s in check_arguments(args)}
        #: the pages requested in this crawl, by source
        self._seen: dict[str, SeenKeys] = {sid: SeenKeys() for sid in self.sources}
        #: URLs the crawl state says are not due yet (redirected, refused), by source
        self._waiting: dict[str, set[str]] = {sid: set() for sid in self.sources}
        #: links recorded on a page this run (``PageItem.outlinks``), requested or not
        #: (the latest: recording one again is only a repeated write)
        self._recorded: dict[str, RecentKeys] = {sid: RecentKeys() for sid in self.sources}
        #: _scoped_key of (source id, link), memoised: one lookup for a link seen before
        self._link_key = functools.lru_cache(maxsize=LINK_MEMO)(self._scoped_key)
        #: loggers whose level the crawl raised (see _skip_unlogged_records), with their own
        self._raised_loggers: list[tuple[logging.Logger, int]] = []
        #: several processes crawl together (KC_REDIS_URL): page requests go through the
        #: shared dupefilter, which also keeps the sources' max_pages budgets
        self.shared_frontier = False
        # One bound method for every page request: Scrapy remembers, per callback object,
        # whether it is a generator returning a value, and would otherwise read and parse
        # parse()'s source again for each response (0.3 ms a page).
        self._page_callback = self.parse
        self._page_errback = self.on_error
        #: the stage middleware reads each page's links (see from_crawler), not parse()
        self.links_later = False
        #: robots.txt rules per host (netloc) that Scrapy's RobotsTxtMiddleware has parsed
        #: (signal ``robots_parsed``): a link they forbid is dropped before its Request is
        #: built, as a seen link is; the middleware still refuses what comes before them
        self._robots: dict[str, RobotParser] = {}
        self._robots_agent = ""
        #: KC_QUEUE_MEMORY_REQUESTS (from_crawler)
        self._queue_bound = 0
        #: when the start judged which stored pages are due (see _start_requests)
        self._known_from = utc_now()
        #: links to request are deferred to the crawl state while the queue is full, until
        #: the start has ended (see _deferred_outputs); links deferred since its last pass
        self._deferring = True
        self._deferred = 0
        self._via_state = False
        self._in_transit = 0

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        # The User-Agent names the operator's contact, which may come from `-s KC_CONTACT=`:
        # built here, after the command line is read, unless USER_AGENT itself was given.
        if (settings.getpriority("USER_AGENT") or 0) < (settings.getpriority("KC_CONTACT") or 0):
            settings.set(
                "USER_AGENT",
                user_agent(settings.get("KC_CONTACT")),
                priority=settings.getpriority("KC_CONTACT") or "project",
            )
        # Scrapy's own extensions that are turned off are still imported to find that
        # out; the remote-control server alone pulls in aiohttp (about 0.5 s at start).
        off = [path for path, flag in _SWITCHED_EXTENSIONS if not _enabled(settings, flag)]
        if off:
            extensions = settings.getdict("EXTENSIONS")
            for path in off:
                extensions.setdefault(path, None)
            settings.set("EXTENSIONS", extensions, priority=settings.getpriority("EXTENSIONS") or 0)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        runtime = runtime_for(crawler)
        runtime.sources = dict(spider.sources)
        runtime.mode = spider.mode
        # Scrapy's offsite filtering (requests and redirects) knows the crawl's hosts;
        # the scope middleware then holds each request to its own source.
        domains = {d for s in spider.sources.values() for d in s.allowed_domains}
        spider.allowed_domains = sorted(domains | {_strip_www(d) for d in domains})
        spider._configure_slots(crawler)
        if crawler.settings.get("KC_REDIS_URL"):  # scrapy-redis only for a shared crawl
            from knowledge_crawler.crawl.frontier import install_frontier

            spider.shared_frontier = install_frontier(crawler)
        # a shared crawl's queue is in Redis, not in this process's memory
        spider._queue_bound = 0 if spider.shared_frontier else runtime.config.queue_memory_requests
        spider._deferring = bool(spider._queue_bound)
        if spider._deferring:
            crawler.signals.connect(spider._arrived, signal=signals.request_scheduled)
            crawler.signals.connect(spider._arrived, signal=signals.request_dropped)
        spider.links_later = (
            crawler.settings.getwithbase("SPIDER_MIDDLEWARES").get(STAGE_MIDDLEWARE) is not None
        )
        # Playwright and Chromium only for a crawl with a source that renders (F-RENDER)
        install_browser(crawler, spider.sources.values())
        crawler.signals.connect(spider._skip_unlogged_records, signal=signals.spider_opened)
        # the User-Agent the robots middleware checks a page request's URL for
        spider._robots_agent = crawler.settings.get("ROBOTSTXT_USER_AGENT") or crawler.settings.get(
            "USER_AGENT", ""
        )
        crawler.signals.connect(spider._robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(spider._restore_root_level, signal=signals.spider_closed)
        return spider

    def _skip_unlogged_records(self) -> None:
        """Raise the root and ``scrapy`` loggers to the lowest level the root's handlers
        take, for the crawl.

        Scrapy sets its loggers to DEBUG and has the root's handler drop what is below
        LOG_LEVEL, so every page's DEBUG lines ("Crawled", "Scraped from", dropped items)
        were built in full (caller lookup, record) to be thrown away. Left alone when a
        handler takes every level (``-s LOG_LEVEL=DEBUG``, a test's log capture) or the
        ``scrapy`` logger has handlers of its own.
        """
        levels = [h.level for h in logging.root.handlers]
        if not levels or min(levels) <= logging.DEBUG:
            return
        floor = min(levels)
        scrapy_logger = logging.getLogger("scrapy")
        raised: list[tuple[logging.Logger, int]] = [(logging.root, logging.root.level)]
        if not scrapy_logger.handlers:
            raised.append((scrapy_logger, scrapy_logger.level))
        self._raised_loggers = [(lg, level) for lg, level in raised if level < floor]
        for lg, _ in self._raised_loggers:
            lg.setLevel(floor)

    def _robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        self._robots[urlsplit(request.url).netloc] = robotparser

    def _robots_forbid(self, url: str) -> bool:
        """True when the parsed robots.txt of ``url``'s host forbids it to this crawl."""
        rules = self._robots.get(urlsplit(url).netloc)
        return rules is not None and not rules.allowed(url, self._robots_agent)

    def _restore_root_level(self) -> None:
        for lg, level in self._raised_loggers:
            lg.setLevel(level)
        self._raised_loggers = []

    def _configure_slots(self, crawler: Crawler) -> None:
        """Per-source politeness: one download slot per source, covering its subdomains."""
        slots: dict[str, dict[str, Any]] = dict(crawler.settings.getdict("DOWNLOAD_SLOTS"))
        for source in self.sources.values():
            if source.download_delay is None and source.concurrency_per_host is None:
                continue
            name = self._slots[source.id] = source_slot(source.id)
            slot: dict[str, Any] = {}
            if source.download_delay is not None:
                slot["delay"] = source.download_delay
            if source.concurrency_per_host is not None:
                slot["concurrency"] = source.concurrency_per_host
            slots[name] = slot
        if slots:
            crawler.settings.set("DOWNLOAD_SLOTS", slots, priority="spider")

    # -- discovery --------------------------------------------------------------

    async def start(self) -> AsyncIterator[Request | UrlOutcomeItem]:
        """What the crawl sets out to fetch, yielded as the queue has room for it.

        Scrapy takes a start's requests as fast as they come; the crawl state may hold a
        million URLs. Past ``KC_QUEUE_MEMORY_REQUESTS`` requests in the queue, the start
        waits until half of them have left it, so that the queue, not the crawl state,
        stays small. (A shared crawl's queue is in Redis: its count here stays 0.)
        """
        async for output in self._start_outputs():
            if isinstance(output, Request):
                await self._queue_room()
            yield output

    def _scheduled(self) -> int:
        """Requests in this process's queue now (from the scheduler's own counters)."""
        stats = self.crawler.stats
        return int(stats.get_value("scheduler/enqueued", 0)) - int(
            stats.get_value("scheduler/dequeued", 0)
        )

    def _queued(self) -> int:
        """Requests in the queue and page requests built and on their way to it (see
        _arrived)."""
        return self._scheduled() + self._in_transit

    def _arrived(self, request: Request) -> None:
        """A request reached the queue or was dropped on its way (signals)."""
        if request.meta.pop(meta.IN_TRANSIT, False):
            self._in_transit -= 1

    async def _queue_room(self) -> None:
        bound = self._queue_bound
        if not bound or self._queued() < bound:
            return
        self.crawler.stats.inc_value("kc/start/waited_for_queue")
        while self._queued() > bound // 2 and not self._crawl_idle():
            await asyncio.sleep(0.05)

    async def _start_outputs(self) -> AsyncIterator[Request | UrlOutcomeItem]:
        runtime = runtime_for(self.crawler)
        store = runtime.store
        ids = sorted(self.sources)
        due_by = utc_now()
        checkpoints, waiting = await asyncio.to_thread(
            lambda: (
                {sid: store.checkpoints(sid) for sid in ids},
                store.frontier_waiting(ids, due_by=due_by),
            )
        )
        # Redirected and refused URLs wait for their time: not requested before it, however
        # a listing or a link leads to them.
        for source_id, key in waiting:
            if source_id in self._waiting:
                self._waiting[source_id].add(key)
        # Before any request: every request for a stored page must carry its validators.
        known = await runtime.load_known()
        if self.mode == "crawl":
            for source in self.sources.values():
                for discovery in self.discovery_requests(source, checkpoints[source.id]):
                    yield discovery
        # The crawl state's URLs that are due and not stored: pages a discovery listed or
        # a stored page linked to that an earlier crawl did not store (stopped, or past its
        # depth limit or budget), redirects and refusals whose time came: first. A link
        # is taken as a link: within the depth limit, by the spider's rules, and by a crawl
        # only (a refresh revalidates what it knows).
        async for output in self._frontier_outputs(due_by, "kc/sync/frontier_resumed"):
            yield output
        if self.mode == "crawl":
            for source in self.sources.values():
                for url in source.start_urls:
                    request = self.request_for(source, url, depth=0)
                    if request is not None:
                        request.meta[meta.START] = True
                        self.crawler.stats.inc_value("kc/start/requested")
                        yield request
        # Failed pages whose retry is due (a later crawl picks up what an earlier one left);
        # dead letters and pages held for review wait for a person.
        now = utc_now()
        for failed in runtime.failed:
            owner = self.sources.get(failed.source_id)
            if owner is None or failed.dead_lettered_at or failed.needs_review:
                continue
            if failed.next_retry_at and failed.next_retry_at > now:
                continue
            request = self.request_for(owner, failed.url, failed.depth)
            if request is not None:
                self.crawler.stats.inc_value("kc/retry/due_from_store")
                yield request
        # The known inventory: every stored page within the source's depth limit (crawl)
        # or the due ones (refresh), most overdue first, each at the depth it was found
        # at: a page that answers 304 is not parsed, so its links come from here.
        # Tombstoned pages only when due (at the source's max_interval): one that answers
        # again is restored, whether or not a page linking it changed.
        self._known_from = now = utc_now()
        due = 0
        next_due: str | None = None  # a refresh: the first check not due yet
        for page in known.values():
            if not self._start_requests(page, now):
                if page.next_check_at and page.next_check_at > now and page.status != "tombstoned":
                    next_due = min(next_due or page.next_check_at, page.next_check_at)
                continue
            owner = self.sources[page.source_id]
            request = self.request_for(owner, page.final_url, page.depth)
            if request is None:
                continue
            if self.mode == "refresh":
                request.meta[meta.START] = True  # what a refresh set out to fetch
                self.crawler.stats.inc_value("kc/start/requested")
                request.priority = -due  # most overdue first
            due += 1
            self.crawler.stats.inc_value("kc/sync/known_requested")
            yield request
        if self.mode == "refresh":
            self.crawler.stats.set_value("kc/refresh/known", len(known))
            if next_due is not None:
                self.crawler.stats.set_value("kc/refresh/next_due_at", next_due)
        # Links found while the queue was full were recorded, not requested (see
        # link_requests): they are taken from the crawl state as the queue drains.
        async for output in self._deferred_outputs():
            yield output

    async def _frontier_outputs(
        self, due_by: str, counter: str, cursors: dict[str, tuple[int, str]] | None = None
    ) -> AsyncIterator[Request | UrlOutcomeItem]:
        """Requests for the crawl state's URLs that are due and not stored, read a page at
        a time, shallowest first: pages a discovery listed or a stored page linked to that
        were not stored yet (a stop, a depth limit or budget, a full queue), redirects and
        refusals whose time came. A link is taken as a link: within the depth limit, by the
        spider's rules, and by a crawl only (a refresh revalidates what it knows).

        ``cursors``: where a pass is in each source's rows, ``(depth, canonical_url)``;
        it goes on from there, and leaves them where it stopped."""
        store = runtime_for(self.crawler).store
        rules = self.link_rules
        cursors = {} if cursors is None else cursors
        for owner in [self.sources[sid] for sid in sorted(self.sources)]:
            while True:
                entries = await asyncio.to_thread(
                    store.frontier_due,
                    owner.id,
                    due_by=due_by,
                    after=cursors.get(owner.id),
                    limit=_STATE_PAGE,
                )
                for entry in entries:
                    if entry.depth > owner.depth_limit:
                        break  # shallowest first: the rest are deeper still
                    cursors[owner.id] = (entry.depth, entry.canonical_url)
                    if entry.adapter in _FOUND_BY_CRAWLING and self.mode != "crawl":
                        continue
                    if entry.adapter == "link" and rules.filters and not rules.allows(entry.url):
                        continue
                    request = self.request_for(owner, entry.url, entry.depth)
                    if request is not None:
                        self.crawler.stats.inc_value(counter)
                        yield request
                    elif self._robots and self._robots_forbid(
                        fetch_url(entry.url, tracking_params=owner.tracking_params)
                    ):
                        # refused before a Request was built: the crawl state says why
                        yield self._robots_refusal(
                            owner, entry.canonical_url, entry.url, entry.depth
                        )
                else:
                    if len(entries) == _STATE_PAGE:
                        continue
                break

    async def _deferred_outputs(self) -> AsyncIterator[Request | UrlOutcomeItem]:
        """The URLs deferred to the crawl state since the queue first filled, requested
        from it as the queue drains, until the crawl is idle with none left.

        Once a link has been deferred, every link is (see :meth:`queue_full`): requested
        in the crawl state's order, shallowest first, a page is reached by its shortest
        known path, as in a crawl whose queue holds everything. A pass goes on from where
        the last one stopped; links deferred just before it may still be on their way to
        the store with their page, and a URL may sort before where a pass is, so once the
        crawl is idle the store is flushed and a pass made from the start. An idle crawl
        whose pass from the start finds nothing ends this, and with it the start.
        """
        if not self._deferring or self.mode != "crawl":
            self._deferring = False
            return
        runtime = runtime_for(self.crawler)
        cursors: dict[str, tuple[int, str]] = {}
        half = self._queue_bound // 2
        while True:
            while not self._crawl_idle() and not (self._deferred and self._queued() <= half):
                await asyncio.sleep(0.05)
            idle = self._crawl_idle()
            if idle and not self._via_state:
                break  # nothing was ever deferred
            if idle:
                await runtime.flush_store()
                cursors = {}
            self._deferred = 0
            before = self.crawler.stats.get_value("kc/crawl_state/resumed", 0)
            async for output in self._frontier_outputs(
                utc_now(), "kc/crawl_state/resumed", cursors
            ):
                yield output
            found = self.crawler.stats.get_value("kc/crawl_state/resumed", 0) - before
            if idle and not found and not self._deferred:
                break
        self._deferring = False

    def queue_full(self) -> bool:
        """Whether a URL to request now goes to the crawl state instead: the queue holds
        ``KC_QUEUE_MEMORY_REQUESTS``, or an earlier URL went there (while the start can
        still take them from there)."""
        return self._deferring and (self._via_state or self._queued() >= self._queue_bound)

    def defer(self, source: Source, key: str) -> bool:
        """Leave the URL ``key`` of ``source``, which the crawl state records, to the start,
        which requests it from there once the queue drains; False when it is not to be
        requested now anyway (seen, or waiting for its time)."""
        if key in self._seen[source.id] or key in self._waiting[source.id]:
            return False
        self.crawler.stats.inc_value("kc/crawl_state/deferred")
        self._deferred += 1
        self._via_state = True
        return True

    def _crawl_idle(self) -> bool:
        """Nothing queued, downloading or being processed (the start aside)."""
        engine = self.crawler.engine
        assert engine is not None and engine.scraper.slot is not None
        idle = (
            self._scheduled() <= 0
            and not engine.downloader.active
            and engine.scraper.slot.is_idle()
        )
        if idle:
            # nothing is on its way to the queue: a request a middleware dropped without
            # a signal (too long a URL) no longer counts
            self._in_transit = 0
        return idle

    def _start_requests(self, page: KnownPage, now: str) -> bool:
        """Whether the start requests the stored ``page`` (at its own depth): within its
        source's depth limit, and due if it waits for its time (a refresh, a tombstone)."""
        waits = self.mode == "refresh" or page.status == "tombstoned"
        if waits and page.next_check_at and page.next_check_at > now:
            return False
        owner = self.sources.get(page.source_id)
        return owner is not None and page.depth <= owner.depth_limit

    def request_for(self, source: Source, url: str, depth: int) -> Request | None:
        """A request for ``url`` unless it is out of scope, already seen or over the budget.

        With a shared frontier the seen set and the budget here are this process's
        first filter; the shared dupefilter has the last word (knowledge_crawler.crawl.frontier).
        """
        key = self._link_key(source.id, url)
        if key is None:
            return None
        seen = self._seen[source.id]
        if key in seen:
            return None
        if key in self._waiting[source.id]:
            self.crawler.stats.inc_value("kc/crawl_state/not_due")
            return None
        # Shared or not, every page seen here counts in the source's budget: this
        # process's seen pages are never more than the crawl's.
        if source.max_pages and len(seen) >= source.max_pages:
            self.crawler.stats.inc_value("kc/discovery/over_max_pages")
            return None
        seen.add(key)
        fetch = fetch_url(url, tracking_params=source.tracking_params)
        # Refused here rather than by the robots middleware: a refused Request costs a
        # trip through the scheduler and an IgnoreRequest failure (a reference cycle).
        if self._robots and self._robots_forbid(fetch):
            self.crawler.stats.inc_value("kc/discovery/robots_forbidden")
            return None
        self.crawler.stats.inc_value("kc/discovery/candidates")
        request_meta: dict[str, Any] = {meta.SOURCE: source.id, meta.DEPTH: depth, meta.KEY: key}
        if self._deferring:
            # requests of many pages are built before the first of them is queued
            request_meta[meta.IN_TRANSIT] = True
            self._in_transit += 1
        slot = self._slots.get(source.id)
        if slot is not None:
            request_meta["download_slot"] = slot
        return Request(
            fetch,
            callback=self._page_callback,
            errback=self._page_errback,
            # Breadth first: a page is reached by its shortest link path, so the
            # depth limit cuts the same pages on every run.
            priority=-depth,
            meta=request_meta,
            # One process: the seen set above is the de-duplication, per source (Scrapy's
            # dupefilter would drop a page that two sources share from the second one).
            # Several: the shared dupefilter, whose fingerprint is source and key.
            dont_filter=not self.shared_frontier,
        )

    def _scoped_key(self, source_id: str, url: str) -> str | None:
        """The canonical URL of a link of that source; None when it is out of the
        source's scope or has none (memoised as ``_link_key``)."""
        source = self.sources[source_id]
        if not source.in_scope(url):
            return None
        try:
            return canonical_url(
                url, keep_params=source.keep_params, tracking_params=source.tracking_params
            )
        except ValueError:
            return None

    # -- fetch results ----------------------------------------------------------

    def parse(self, response: Response, **kwargs: Any) -> Iterator[ParseOutput]:
        source = self.sources[response.meta[meta.SOURCE]]
        depth: int = response.meta[meta.DEPTH]
        stats = self.crawler.stats
        stats.inc_value(f"kc/fetch/status/{response.status}")
        if response.meta.get(meta.START):
            stats.inc_value("kc/start/fetched")
        request_key = response.meta.get(meta.KEY)
        redirected = bool(response.meta.get("redirect_urls"))
        if response.status == 304:
            # RFC 9110 15.4.5: the stored content is still current. Nothing to parse.
            key = source.key(response.url)
            if redirected and key != request_key:
                yield from self._redirect_outcome(source, response, key)
            yield NotModifiedItem(
                source_id=source.id,
                canonical_url=key,
                url=(response.meta.get("redirect_urls") or [response.url])[0],
                checked_at=utc_now(),
                etag=_header(response, "ETag"),
                last_modified=_header(response, "Last-Modified"),
                request_key=request_key,
            )
            return
        if not source.in_scope(response.url):
            self.crawler.stats.inc_value("kc/fetch/redirected_out_of_scope")
            yield from self._redirect_outcome(source, response, None)
            return
        redirects = response.meta.get("redirect_urls") or [response.url]
        if redirected:
            key = source.key(response.url)
            if key != request_key:
                # The requested URL is recorded as redirecting here, whoever stores this page.
                yield from self._redirect_outcome(source, response, key)
                # A redirect may land on a page that is also requested directly (under
                # another URL variant): the page is then that request's, not this one's.
                seen = self._seen[source.id]
                if key in seen:
                    self.crawler.stats.inc_value("kc/discovery/redirect_to_known_page")
                    return
                seen.add(key)
        content_type = _header(response, "Content-Type")
        labelled_html = isinstance(response, HtmlResponse) or (
            isinstance(response, TextResponse)
            and (content_type or "").lower().encode().startswith(_HTML_TYPES)
        )
        # not empty, binary or gzip labelled text/html
        is_html = labelled_html and looks_like_html(response.body[:4096])
        extra = self._extra_fields(response) if is_html else {}
        # The links of a page are read wherever the source follows links, the depth limit
        # included: the ones past it are recorded (a deeper crawl later takes them from
        # the crawl state), not requested.
        follow = (
            isinstance(response, TextResponse)
            and is_html
            and self.mode == "crawl"  # a refresh revalidates what it knows, no more
            and source.follow_links
        )
        item = PageItem(
            source_id=source.id,
            url=redirects[0],
            final_url=response.url,
            http_status=response.status,
            fetched_at=utc_now(),
            content_type=content_type,
            # Decoded exactly as `knowledge-crawler extract` decodes a file (BOM,
            # header, <meta>, then detection), so a page stores the same text both ways.
            html=decode_html(response.body, content_type) if is_html else None,
            etag=_header(response, "ETag"),
            last_modified=_header(response, "Last-Modified"),
            depth=depth,
            request_key=response.meta.get(meta.KEY),
            # For the raw archive (the archive pipeline writes them, then lets them go)
            response_headers=[
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, values in response.headers.items()
                for value in values
            ],
            body=response.body,
            rendered=bool(response.meta.get("playwright")),
            content_selector=self.content_selector if is_html else None,
            extra=extra,
        )
        if labelled_html and not is_html:  # junk: extract judges it (a parse failure)
            item.junk = body_junk(response.body, content_type)
            item.junk_digest = answer_digest(item.junk.kind, response.body)
        if item.html is not None:
            # what the page's rel=canonical names, for dedupe (a regex over its head)
            canonical = canonical_link(item.html, response.url)
            if canonical is not None:
                item.canonical_link = self._link_key(source.id, canonical)
        if follow and self.links_later:
            # The stage middleware reads the links, from a stage worker's parse of the page
            # when there is one, and yields their requests right after the page.
            assert isinstance(response, TextResponse)
            item.follow = True
            item.link_region = self.link_rules.region
            item.encoding = response.encoding
        requests: list[Request] = []
        if follow and not self.links_later:
            assert isinstance(response, TextResponse)
            # before the item leaves: its new links go to the store with it
            requests = self.link_requests(item, page_links(response, self.link_rules.region))
        yield item
        yield from requests

    def links_of(self, response: TextResponse, region: str | None = None) -> list[str]:
        """:func:`page_links` of ``response`` (for the stage middleware)."""
        return page_links(response, region)

    def link_requests(self, item: PageItem, links: list[str]) -> list[Request]:
        """Requests for the links found on the page of ``item`` that the spider's rules
        and the source's scope let through, that are not seen yet and within the depth
        limit; the in-scope links the crawl did not know yet go on ``item.outlinks``, to
        be stored with the page, whether requested or not."""
        stats = self.crawler.stats
        rules = self.link_rules
        source = self.sources[item.source_id]
        depth = item.depth + 1
        deeper = depth <= source.depth_limit
        seen = self._seen[source.id]
        recorded = self._recorded[source.id]
        known = runtime_for(self.crawler).known
        if rules.region is not None and not links:
            stats.inc_value("kc/discovery/link_selector_empty")
        requests: list[Request] = []
        outlinks = item.outlinks
        targets: list[str] = []  # every in-scope link, known or not: the stored outlinks
        for link in links:
            key = self._link_key(source.id, link)
            if key is None:
                continue
            targets.append(key)
            if key in seen:
                continue
            page = known.get((source.id, key))
            if page is not None and self._start_requests(page, self._known_from):
                continue  # the start requests it, at its stored depth, as the queue drains
            if key not in recorded and page is None:
                recorded.add(key)
                if self._robots and self._robots_forbid(
                    fetch_url(link, tracking_params=source.tracking_params)
                ):
                    item.refused_links.append((key, link, ROBOTS_REFUSAL))
                    continue
                outlinks.append((key, link))
            if not deeper:
                continue
            if rules.filters and not rules.allows(link):
                stats.inc_value("kc/discovery/link_denied")
                continue
            if page is None and self.queue_full() and self.defer(source, key):
                continue  # recorded on this page or an earlier one
            request = self.request_for(source, link, depth)
            if request is not None:
                requests.append(request)
        if outlinks:
            stats.inc_value("kc/crawl_state/links_recorded", len(outlinks))
        item.links = targets
        return requests

    def _redirect_outcome(
        self, source: Source, response: Response, key: str | None
    ) -> Iterator[UrlOutcomeItem]:
        """The requested URL answered with a redirect to ``key`` (None: out of the source's
        scope): recorded on the requested URL, with its target."""
        requested = response.meta.get(meta.KEY)
        urls = response.meta.get("redirect_urls")
        if not isinstance(requested, str) or not urls:
            return
        reasons = response.meta.get("redirect_reasons") or []
        status = reasons[0] if reasons and isinstance(reasons[0], int) else None
        code = f" ({status})" if status else ""
        scope = "" if key is not None else " out of the source's scope"
        yield UrlOutcomeItem(
            source_id=source.id,
            canonical_url=requested,
            url=urls[0],
            state="redirected",
            checked_at=utc_now(),
            reason=f"redirected{code}{scope} to {response.url}",
            target=key if key is not None else response.url,
            target_url=response.url if key is not None else None,
            status=status,
            depth=response.meta.get(meta.DEPTH, 0),
        )

    def _extra_fields(self, response: Response) -> dict[str, Any]:
        """:meth:`extra_fields` of an HTML page; ``{}`` (counted and logged) if it raises."""
        assert isinstance(response, TextResponse)
        try:
            return self.extra_fields(response)
        except Exception as exc:
            self.crawler.stats.inc_value("kc/spider/extra_fields_failed")
            first = not self._extra_failed_logged
            self._extra_failed_logged = True
            logger.log(
                logging.WARNING if first else logging.DEBUG,
                "%s.extra_fields failed on %s: %r; the page is stored without extra fields",
                type(self).__name__,
                response.url,
                exc,
                exc_info=first,
            )
            return {}

    def _given_up_item(self, request: Request, kind: str) -> Iterator[FailureItem]:
        source = self.sources.get(request.meta.get(meta.SOURCE, ""))
        key = request.meta.get(meta.KEY)
        if source is None or not isinstance(key, str):
            return
        now = utc_now()
        yield FailureItem(
            source_id=source.id,
            canonical_url=key,
            url=(request.meta.get("redirect_urls") or [request.url])[0],
            depth=request.meta.get(meta.DEPTH, 0),
            failed_at=now,
            status=None,
            error=kind,
            action="dead_letter",
            state=AttemptState(1, now, last_error=kind, dead_lettered_at=now),
        )

    def _robots_refusal(self, source: Source, key: str, url: str, depth: int) -> UrlOutcomeItem:
        return UrlOutcomeItem(
            source_id=source.id,
            canonical_url=key,
            url=url,
            state="refused",
            checked_at=utc_now(),
            reason=ROBOTS_REFUSAL,
            depth=depth,
            due_at_once=True,
        )

    def _refusal(self, request: Request, why: str) -> Iterator[UrlOutcomeItem]:
        """A page request refused before it was fetched (robots.txt, scope, a private
        address), or its redirect refused: recorded on the requested URL. A robots.txt
        refusal is judged again by every crawl (it costs no download, and the host's
        robots.txt may change); the others wait for the source's longest interval."""
        source = self.sources.get(request.meta.get(meta.SOURCE, ""))
        key = request.meta.get(meta.KEY)
        if source is None or not isinstance(key, str):
            return
        urls = request.meta.get("redirect_urls")
        robots = "robots.txt" in why
        yield UrlOutcomeItem(
            source_id=source.id,
            canonical_url=key,
            url=urls[0] if urls else request.url,
            state="redirected" if urls else "refused",
            checked_at=utc_now(),
            reason=f"redirected to {request.url}, refused: {why}" if urls else why,
            target=request.url if urls else None,
            depth=request.meta.get(meta.DEPTH, 0),
            due_at_once=robots,
        )

    def on_error(self, failure: Failure) -> Iterator[FailureItem | UrlOutcomeItem]:
        """Count a failed fetch by kind (``kc/fetch/error/<kind>``) and yield what the retry
        middleware decided about it; robots and scope refusals are expected and counted
        apart (``kc/fetch/ignored``)."""
        error = failure.value
        stats = self.crawler.stats
        request = getattr(failure, "request", None)
        url = getattr(request, "url", "?")
        if isinstance(error, IgnoreRequest) and not isinstance(error, HttpError):
            given_up = limit_kind(str(error))
            if given_up is None:  # robots.txt, offsite, scope: refusals, not failures
                stats.inc_value("kc/fetch/ignored")
                logger.debug("ignored %s: %s", url, error)
                if request is not None:
                    yield from self._refusal(request, str(error))
                return
            # A redirect loop or a body over the size limit: no retry can help.
            stats.inc_value(f"kc/fetch/error/{given_up}")
            logger.warning("gave up on %s: %s", url, error)
            if request is not None:
                yield from self._given_up_item(request, given_up)
            return
        status: int | None = None
        answered = url
        if isinstance(error, HttpError):
            response: Response = error.response
            status, answered = response.status, response.url
            stats.inc_value(f"kc/fetch/status/{status}")
            logger.debug("HTTP %s for %s", status, answered)
        kind = fetch_error_kind(error) if error is not None else "unknown"
        stats.inc_value(f"kc/fetch/error/{kind}")
        if status is None:
            logger.warning("fetch failed for %s: %s: %s", url, kind, error)
        if request is None:
            return
        decision = request.meta.get(meta.RETRY)
        source = self.sources.get(request.meta.get(meta.SOURCE, ""))
        key = request.meta.get(meta.KEY)  # the retry state is kept under the requested page
        if source is None or decision is None or not isinstance(key, str):
            return
        yield FailureItem(
            source_id=source.id,
            canonical_url=key,
            url=(request.meta.get("redirect_urls") or [request.url])[0],
            depth=request.meta.get(meta.DEPTH, 0),
            failed_at=utc_now(),
            status=status,
            error=kind,
            action=decision.action.value,
            state=decision.state,
        )
