"""The plain Scrapy crawler the crawl benchmarks measure the project against.

    scrapy runspider bench/plain_spider.py -a start=URL -a urls_out=FILE   (a: crawl)
    scrapy runspider bench/plain_spider.py -a revalidate=FILE              (r: revalidate)

Run from a folder without a ``scrapy.cfg``, so none of the project's settings,
middlewares or pipelines apply: Scrapy's defaults, with the settings below.

(a) crawl: from ``start``, follows every ``<a href>`` of an HTML page on the start
URL's host, and drops a link already seen before it builds a Request, as the
knowledge spider does, by the key a careful plain crawler would use: w3lib's
canonical form without the usual tracking parameters (``utm_*``, ``gclid``, ...)
and without a trailing slash. No items, no pipelines. With ``urls_out`` it writes, at the
end, one line per 200 response: its URL, a tab and its ETag (empty without one).

(r) revalidate: requests each URL of such a file with its ETag as ``If-None-Match``,
following no links: how fast plain Scrapy revalidates a known URL list.

``-a stats_out=FILE`` writes the crawl's Scrapy stats there as JSON at the end.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response
from w3lib.url import canonicalize_url, url_query_cleaner

#: query parameters that name a campaign or a click, not a page
TRACKING = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
TRACKING += ("gclid", "fbclid", "mc_cid", "mc_eid", "ref")


def link_key(url: str) -> str:
    return canonicalize_url(url_query_cleaner(url, TRACKING, remove=True)).rstrip("/")


class PlainSpider(scrapy.Spider):
    name = "plain"
    custom_settings = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": True,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        # 304s are answers here, not errors to drop
        "HTTPERROR_ALLOWED_CODES": [304],
    }

    def __init__(
        self,
        start: str = "",
        urls_out: str = "",
        revalidate: str = "",
        stats_out: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.stats_out = stats_out
        self.start_url = start
        self.urls_out = urls_out
        self.revalidate = revalidate
        self.host = urlsplit(start).netloc
        self.seen: set[str] = set()
        self.fetched: list[tuple[str, str]] = []

    async def start(self) -> AsyncIterator[scrapy.Request]:
        if self.revalidate:
            for line in Path(self.revalidate).read_text(encoding="utf-8").splitlines():
                url, _, etag = line.partition("\t")
                headers = {"If-None-Match": etag} if etag else {}
                yield scrapy.Request(url, headers=headers, callback=self.checked, dont_filter=True)
            return
        self.seen.add(link_key(self.start_url))
        yield scrapy.Request(self.start_url, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        if response.status == 200:
            etag = response.headers.get("ETag")
            self.fetched.append((response.url, etag.decode("latin-1") if etag else ""))
        if not isinstance(response, HtmlResponse):
            return
        for href in response.xpath("//a/@href").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc != self.host:
                continue
            key = link_key(url)
            if key in self.seen:
                continue
            self.seen.add(key)
            yield scrapy.Request(url, dont_filter=True)

    def checked(self, response: Response, **kwargs: Any) -> None:
        self.crawler.stats.inc_value(f"plain/status/{response.status}")

    def closed(self, reason: str) -> None:
        if self.urls_out:
            lines = [f"{url}\t{etag}\n" for url, etag in self.fetched]
            Path(self.urls_out).write_text("".join(lines), encoding="utf-8")
        if self.stats_out:
            stats = self.crawler.stats.get_stats()
            Path(self.stats_out).write_text(json.dumps(stats, default=str), encoding="utf-8")
