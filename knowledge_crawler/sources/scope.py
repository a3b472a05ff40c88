"""What a source is (SPEC F-SOURCES): its record, which URLs belong to it (scope) and
what a URL is called in it (identity: the canonical URL under the source's parameters).

Pure module: standard library and the pure canonicalisation, no Scrapy, no database.
Reading and validating a seeds file into these records is :mod:`.seeds`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal
from urllib.parse import urlsplit

from knowledge_crawler.transform.canonical import DEFAULT_TRACKING_PARAMS, canonical_url

__all__ = ["RENDER_MODES", "ApiConfig", "Source", "host_allowed", "host_of"]

#: how a source's pages are fetched (``render``)
RENDER_MODES: tuple[str, ...] = ("http", "playwright", "auto")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class ApiConfig:
    """A paginated JSON API that lists page URLs.

    The next page comes from the response's ``Link: <...>; rel="next"`` header
    (``next = "link"``) or from a cursor field of the JSON body sent back as the
    ``cursor_param`` query parameter (``next = "cursor"``). ``deleted_field``: the
    dotted path of an item's deleted flag (None: the API says nothing of deletions);
    an item whose flag is true names a page its publisher deleted, which is
    tombstoned at once.
    """

    url: str
    items_path: str = "items"
    url_field: str = "url"
    next: Literal["link", "cursor"] = "link"
    cursor_field: str | None = None
    cursor_param: str = "cursor"
    deleted_field: str | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """One validated source: where to start, what is in scope and how to crawl it."""

    id: str
    start_urls: tuple[str, ...]
    allowed_domains: tuple[str, ...]
    sitemaps: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()
    api: ApiConfig | None = None
    follow_links: bool = True
    depth_limit: int = 5
    max_pages: int = 0
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    keep_params: frozenset[str] = frozenset()
    tracking_params: frozenset[str] = DEFAULT_TRACKING_PARAMS
    boilerplate: tuple[re.Pattern[str], ...] = ()
    render: Literal["http", "playwright", "auto"] = "http"
    wait_for: str = "load"
    download_delay: float | None = None
    concurrency_per_host: int | None = None
    min_interval: timedelta = timedelta(hours=1)
    max_interval: timedelta = timedelta(days=7)
    missing_after: int = 2
    missing_window: timedelta = timedelta(days=1)
    near_duplicate_threshold: float = 0.85
    thin_words: int = 50

    def key(self, url: str) -> str:
        """The identity of ``url`` in this source: its canonical URL under the source's
        ``keep_params`` and ``tracking_params``. Raises :class:`ValueError` for a URL
        that has none (not http(s), no host).

        >>> source = Source("x", ("https://example.com/",), ("example.com",))
        >>> source.key("http://example.com/a/?utm_source=n")
        'https://example.com/a'
        """
        return canonical_url(
            url, keep_params=self.keep_params, tracking_params=self.tracking_params
        )

    def in_scope(self, url: str) -> bool:
        """Whether ``url`` belongs to this source.

        True when the URL is http(s), its host is one of ``allowed_domains`` or a
        subdomain of one (an allowed ``www.example.com`` also admits the bare
        ``example.com``, as the canonical URL drops ``www.``, but not its other
        subdomains), it matches one of ``include`` (when any are given) and none
        of ``exclude``. Patterns are searched in the full URL; the port is ignored.

        >>> s = Source("x", ("https://example.com/",), ("example.com",))
        >>> s.in_scope("https://blog.example.com/a"), s.in_scope("https://example.org/")
        (True, False)
        """
        host = host_of(url)
        if host is None or not host_allowed(host, self.allowed_domains):
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)


def host_of(url: str) -> str | None:
    """The lower-cased host of an absolute http(s) URL, without trailing dot; else None."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    return host.rstrip(".")


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") and host.count(".") >= 2 else host


def host_allowed(host: str, domains: Iterable[str]) -> bool:
    """``host`` is a domain, a subdomain of one, or the bare host of a ``www.`` domain."""
    for domain in domains:
        if host == domain or host.endswith("." + domain) or host == _strip_www(domain):
            return True
    return False
