"""Discovery for the knowledge spider: sitemaps, feeds and paginated APIs -> page requests.

Scrapy glue around the pure parsers of :mod:`knowledge_crawler.discovery`. A
source's ``sitemaps`` (a robots.txt URL stands for its ``Sitemap:`` lines, as in
Scrapy's SitemapSpider), ``feeds`` and ``api`` are requested before its pages.
Each response becomes one :class:`~knowledge_crawler.items.DiscoveryItem` (the
pages it lists, then the adapter's checkpoint, written in that order in one
batch) and then the page requests, newest ``lastmod`` first.

Checkpoints (``checkpoints`` table, per source and key):

* ``api``: ``{"next": URL, "last": URL}``. A crawl resumes at ``next``; once the
  API is exhausted it starts again from ``last``, to see whether a next page
  has appeared. The pages an API page lists reach the frontier in the same
  transaction as the cursor that moves past it, so a killed crawl resumes
  without losing or repeating one.
* ``sitemap:URL`` and ``feed:URL``: the newest ``lastmod`` seen (a high-water
  mark). An entry older than the mark whose page is already stored is left to
  the known inventory, which revalidates it anyway; ``lastmod`` orders work, it
  never replaces validation.

Deletions: an Atom feed's ``at:deleted-entry`` (RFC 6721) and an API item whose
``deleted_field`` flag is true say the publisher deleted a page. For a stored page
that is not tombstoned yet, the discovery item carries it (with what said so), and
the store pipeline tombstones it at once, in the item's batch, before its checkpoint.
A feed's deletion at or before the stored mark was read by an earlier crawl and is
not applied again; its ``when`` moves the mark like an entry's date.

Counters: ``kc/discovery/<adapter>/responses``, ``.../pages``, ``.../errors/<kind>``,
``.../invalid``, ``.../deleted`` (stored pages said deleted), ``.../deleted_not_stored``,
``kc/discovery/known_older_than_mark``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scrapy.http import Request, Response
from twisted.python.failure import Failure

from knowledge_crawler import meta
from knowledge_crawler.crawl.runtime import runtime_for
from knowledge_crawler.discovery.api import parse_api_page
from knowledge_crawler.discovery.candidates import Candidate, Deletion, DiscoveryError
from knowledge_crawler.discovery.feeds import parse_feed
from knowledge_crawler.discovery.robots import sitemaps_from_robots
from knowledge_crawler.discovery.sitemaps import parse_sitemap
from knowledge_crawler.items import Deleted, Discovered, DiscoveryItem
from knowledge_crawler.store import utc_now

if TYPE_CHECKING:
    from knowledge_crawler.sources import Source

__all__ = ["API_CHECKPOINT", "DiscoveryMixin", "api_start"]

logger = logging.getLogger(__name__)

API_CHECKPOINT = "api"
#: discovery before pages: its listings feed the frontier early
DISCOVERY_PRIORITY = 100


def api_start(source: Source, checkpoint: str | None) -> str:
    """The API page a crawl starts from: the stored next page, else the last one, else the first."""
    assert source.api is not None
    if checkpoint:
        try:
            cursor = json.loads(checkpoint)
        except ValueError:
            cursor = {}
        if isinstance(cursor, dict):
            for key in ("next", "last"):
                if isinstance(cursor.get(key), str) and cursor[key]:
                    return str(cursor[key])
    return source.api.url


def _is_robots(url: str) -> bool:
    return url.split("?", 1)[0].rstrip("/").endswith("/robots.txt")


class DiscoveryMixin:
    """Discovery requests and responses; mixed into :class:`KnowledgeSpider`."""

    sources: dict[str, Source]
    crawler: Any

    def request_for(self, source: Source, url: str, depth: int) -> Request | None:
        raise NotImplementedError

    def queue_full(self) -> bool:
        raise NotImplementedError

    def defer(self, source: Source, key: str) -> bool:
        raise NotImplementedError

    # -- requests ---------------------------------------------------------------

    def discovery_requests(self, source: Source, checkpoints: dict[str, str]) -> list[Request]:
        """The source's sitemaps, feeds and API page to read first."""
        requests = [self._discovery(source, url, "sitemap") for url in source.sitemaps]
        requests += [self._discovery(source, url, "feed") for url in source.feeds]
        if source.api is not None:
            start = api_start(source, checkpoints.get(API_CHECKPOINT))
            requests.append(self._discovery(source, start, "api", API_CHECKPOINT))
        for request in requests:
            request.meta["kc_marks"] = checkpoints
        return requests

    def _discovery(
        self, source: Source, url: str, adapter: str, checkpoint: str | None = None
    ) -> Request:
        return Request(
            url,
            callback=self.parse_discovery,
            errback=self.on_discovery_error,
            priority=DISCOVERY_PRIORITY,
            dont_filter=True,
            meta={
                meta.DISCOVERY: source.id,
                meta.ADAPTER: adapter,
                meta.CHECKPOINT: checkpoint or f"{adapter}:{url}",
            },
        )

    # -- responses --------------------------------------------------------------

    def parse_discovery(
        self, response: Response, **kwargs: Any
    ) -> Iterator[DiscoveryItem | Request]:
        source = self.sources[response.meta[meta.DISCOVERY]]
        adapter: str = response.meta[meta.ADAPTER]
        key: str = response.meta[meta.CHECKPOINT]
        marks: dict[str, str] = response.meta.get("kc_marks") or {}
        stats = self.crawler.stats
        stats.inc_value(f"kc/discovery/{adapter}/responses")
        now = datetime.now(UTC)
        body = response.body
        candidates: tuple[Candidate, ...] | list[Candidate] = ()
        #: pages said deleted, each with what said so
        deletions: list[tuple[Deletion, str]] = []
        next_api: str | None = None
        try:
            if adapter == "sitemap" and _is_robots(response.url):
                for url in sitemaps_from_robots(body, response.url):
                    request = self._discovery(source, url, "sitemap")
                    request.meta["kc_marks"] = marks
                    yield request
                return
            if adapter == "sitemap":
                result = parse_sitemap(body, base_url=response.url, now=now)
                for url in result.sitemaps:
                    request = self._discovery(source, url, "sitemap")
                    request.meta["kc_marks"] = marks
                    yield request
                candidates = [c for c in result.candidates if c.kind == "page"]
            elif adapter == "feed":
                feed = parse_feed(body, base_url=response.url, now=now)
                candidates = feed.candidates
                deletions = [
                    (
                        d,
                        f"atom:deleted-entry in {response.url}"
                        + (f", when {d.at}" if d.at else ""),
                    )
                    for d in feed.deleted
                ]
            else:
                api = source.api
                assert api is not None
                link = response.headers.get("Link")
                page = parse_api_page(
                    body,
                    items_path=api.items_path,
                    url_field=api.url_field,
                    next_mode=api.next,
                    cursor_field=api.cursor_field,
                    link_header=link.decode("latin-1") if link else None,
                    page_url=response.url,
                    cursor_param=api.cursor_param,
                    deleted_field=api.deleted_field,
                )
                candidates = [Candidate(url, "page") for url in page.urls]
                flag = f"api item flagged {api.deleted_field!r} in {response.url}"
                deletions = [(Deletion(url), flag) for url in page.deleted]
                next_api = page.next_url
        except DiscoveryError as exc:
            stats.inc_value(f"kc/discovery/{adapter}/invalid")
            logger.warning("%s %s of source %r: %s", adapter, response.url, source.id, exc)
            return
        item, requests = self._listed(source, adapter, key, marks.get(key), candidates)
        if deletions:
            self._deleted(source, item, marks.get(key), deletions)
        if adapter == "api":
            item.checkpoint = json.dumps({"next": next_api, "last": response.url})
        yield item
        yield from requests
        if next_api is not None:
            request = self._discovery(source, next_api, "api", API_CHECKPOINT)
            request.meta["kc_marks"] = marks
            yield request

    def _listed(
        self,
        source: Source,
        adapter: str,
        key: str,
        mark: str | None,
        candidates: tuple[Candidate, ...] | list[Candidate],
    ) -> tuple[DiscoveryItem, list[Request]]:
        """The discovery item and the page requests for ``candidates``, newest first."""
        stats = self.crawler.stats
        known = runtime_for(self.crawler).known
        item = DiscoveryItem(source.id, adapter, utc_now(), checkpoint_key=key)
        requests: list[Request] = []
        newest = mark
        ordered = sorted(candidates, key=lambda c: c.lastmod or "", reverse=True)
        for candidate in ordered:
            if not source.in_scope(candidate.url):
                continue
            try:
                page_key = source.key(candidate.url)
            except ValueError:
                continue
            lastmod = candidate.lastmod
            if lastmod and (newest is None or lastmod > newest):
                newest = lastmod
            if mark and lastmod and lastmod < mark and (source.id, page_key) in known:
                stats.inc_value("kc/discovery/known_older_than_mark")
                continue
            if self.queue_full() and self.defer(source, page_key):
                # recorded (the listing's frontier entry), requested once the queue drains
                item.pages.append(Discovered(page_key, candidate.url, lastmod))
                continue
            request = self.request_for(source, candidate.url, 0)
            if request is None:
                # Already requested in this crawl (stored, queued, or listed by another
                # discovery response, whose frontier entry stands), or over the budget: a
                # frontier entry here would never be settled by this crawl.
                continue
            item.pages.append(Discovered(page_key, candidate.url, lastmod))
            requests.append(request)
        stats.inc_value(f"kc/discovery/{adapter}/pages", len(item.pages))
        if adapter != "api" and newest is not None:
            item.checkpoint = newest
        return item, requests

    def _deleted(
        self,
        source: Source,
        item: DiscoveryItem,
        mark: str | None,
        deletions: list[tuple[Deletion, str]],
    ) -> None:
        """Put on ``item`` the stored pages ``deletions`` name that are not tombstoned yet."""
        stats = self.crawler.stats
        known = runtime_for(self.crawler).known
        for deletion, signal in deletions:
            if not source.in_scope(deletion.url):
                continue
            try:
                page_key = source.key(deletion.url)
            except ValueError:
                continue
            if deletion.at and item.adapter != "api":
                if mark and deletion.at <= mark:
                    continue  # read by an earlier crawl
                if item.checkpoint is None or deletion.at > item.checkpoint:
                    item.checkpoint = deletion.at
            page = known.get((source.id, page_key))
            if page is None:
                stats.inc_value(f"kc/discovery/{item.adapter}/deleted_not_stored")
                continue
            if page.status == "tombstoned":
                continue
            item.deleted.append(Deleted(page_key, deletion.url, signal))
            stats.inc_value(f"kc/discovery/{item.adapter}/deleted")

    def on_discovery_error(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        adapter = request.meta.get(meta.ADAPTER, "discovery") if request is not None else "?"
        error = failure.value
        response = getattr(error, "response", None)
        kind = f"http_{response.status}" if response is not None else type(error).__name__
        self.crawler.stats.inc_value(f"kc/discovery/{adapter}/errors/{kind}")
        logger.warning("%s %s could not be read: %s", adapter, getattr(request, "url", "?"), kind)
