"""A DNS resolver that will not hand a private address to a name the crawl does not own (F-SAFETY).

The request-time check (:mod:`knowledge_crawler.middlewares.safety`) refuses hosts
that are private by their spelling: literal addresses and local names. A public
looking name may still resolve to ``127.0.0.1``, ``10.x`` or ``169.254.169.254``
(a hostile DNS record, or DNS rebinding between two lookups); that is only known
when the name is resolved for the connection, so it is refused here: Scrapy's
``TWISTED_DNS_RESOLVER`` (2.19 deprecates ``DNS_RESOLVER``), a
:class:`~scrapy.resolver.CachingThreadedResolver` that checks every answer,
cached or not, against :func:`~knowledge_crawler.transform.addresses.address_kind`.

Allowed to resolve to a private address: the hosts of the crawl's own URLs, that
is every source's ``start_urls``, ``sitemaps``, ``feeds`` and API URL (an operator
who starts a source at ``http://intranet.example/`` means it), the hosts of the
proxies in the environment (``http_proxy``, ...), and every name when
``KC_ALLOW_PRIVATE_ADDRESSES`` is on.

Limits, by Scrapy's design:

* The resolver is one per process, built from the process's settings (a spider's
  ``custom_settings`` cannot change ``KC_ALLOW_PRIVATE_ADDRESSES`` for it), and a
  resolution does not know its request: a name is allowed when it belongs to
  *any* source of the crawls running in the process, not only to the source of
  the request. The request-time check holds each request to its own source for
  literal addresses and local names.
* It is installed by ``scrapy crawl`` (``CrawlerProcess``), not by a
  ``CrawlerRunner`` embedded in another program, which keeps its reactor's
  resolver. Download handlers that resolve names themselves (browsers, aiohttp,
  httpx) and proxies (which resolve the target) bypass it.
* A plain spider (no ``sources``), ``scrapy shell`` and ``scrapy fetch`` own no
  host: reaching a private address from them needs ``KC_ALLOW_PRIVATE_ADDRESSES``.

Twisted turns a failed lookup into its own "no results for hostname lookup"
error, so the refusal is remembered here (:func:`refused_address`) for
:class:`~knowledge_crawler.middlewares.safety.RefusedResolutionMiddleware`,
which fails the request with :class:`PrivateAddressRefused` instead, unretried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Self
from urllib.request import getproxies

from scrapy.resolver import CachingThreadedResolver
from scrapy.utils.datatypes import LocalCache
from twisted.internet.error import DNSLookupError

from knowledge_crawler.config import KcConfig
from knowledge_crawler.sources import Source
from knowledge_crawler.transform.addresses import address_kind, host_key, url_hosts

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from twisted.internet.base import ReactorBase
    from twisted.internet.defer import Deferred

__all__ = [
    "PrivateAddressRefused",
    "PrivateAddressResolver",
    "allow_private_addresses",
    "crawl_sources",
    "own_hosts",
    "refused_address",
]

logger = logging.getLogger(__name__)

#: names the resolver refused (host key -> the private address they resolved to)
_REFUSED: LocalCache[str, str] = LocalCache(10_000)


class PrivateAddressRefused(DNSLookupError):
    """A name resolved to a private, loopback or link-local address this crawl may not reach."""

    MESSAGE = "private address refused"


def allow_private_addresses(settings: BaseSettings | Mapping[str, Any]) -> bool:
    """``KC_ALLOW_PRIVATE_ADDRESSES``: every private destination allowed."""
    return KcConfig.from_settings(settings).allow_private_addresses


def refused_address(host: str) -> str | None:
    """The private address the resolver refused for ``host`` (its latest lookup), if it did."""
    return _REFUSED.get(host_key(host))


@lru_cache(maxsize=1024)
def own_hosts(source: Source) -> frozenset[str]:
    """The host keys of the URLs a source names itself: start URLs, sitemaps, feeds, API."""
    urls: list[str] = [*source.start_urls, *source.sitemaps, *source.feeds]
    if source.api is not None:
        urls.append(source.api.url)
    return url_hosts(urls)


def crawl_sources(crawlers: Iterable[Any]) -> list[Source]:
    """The sources of the knowledge spiders among ``crawlers`` (their ``spider.sources``)."""
    found: list[Source] = []
    for crawler in crawlers:
        sources = getattr(getattr(crawler, "spider", None), "sources", None)
        if isinstance(sources, Mapping):
            found.extend(s for s in sources.values() if isinstance(s, Source))
    return found


def _proxy_hosts() -> frozenset[str]:
    """The hosts of the proxies in the environment (``no_proxy`` is not one)."""
    proxies = (u for scheme, u in getproxies().items() if scheme != "no")
    return url_hosts(u if "://" in u else f"http://{u}" for u in proxies)


class PrivateAddressResolver(CachingThreadedResolver):
    """Scrapy's default resolver, refusing private answers for names the crawl does not own.

    ``crawlers`` returns the crawlers whose sources' hosts are allowed, looked at on
    every lookup (crawls start and end while the process runs).
    """

    def __init__(
        self,
        reactor: ReactorBase,
        cache_size: int,
        timeout: float,
        *,
        crawlers: Callable[[], Iterable[Any]] = tuple,
        allow_all: bool = False,
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.crawlers = crawlers
        self.allow_all = allow_all
        self.proxy_hosts = _proxy_hosts()

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: ReactorBase) -> Self:
        """Built by Scrapy with the crawler *process* (``crawlers``: those it runs);
        a single :class:`~scrapy.crawler.Crawler` works too."""
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0

        def crawlers() -> Iterable[Any]:
            return list(crawler.crawlers) if hasattr(crawler, "crawlers") else [crawler]

        return cls(
            reactor,
            cache_size,
            settings.getfloat("DNS_TIMEOUT"),
            crawlers=crawlers,
            allow_all=allow_private_addresses(settings),
        )

    def allowed(self, name: str) -> bool:
        """Whether ``name`` may resolve to a private address."""
        if self.allow_all:
            return True
        key = host_key(name)
        if key in self.proxy_hosts:
            return True
        return any(key in own_hosts(s) for s in crawl_sources(self.crawlers()))

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        d: Deferred[str] = super().getHostByName(name, timeout)
        d.addCallback(self._check, name)
        return d

    def _check(self, address: str, name: str) -> str:
        try:
            kind = address_kind(address)
        except ValueError:  # not an address: nothing to connect to
            return address
        key = host_key(name)
        if kind is None or self.allowed(name):
            _REFUSED.pop(key, None)
            return address
        if key not in _REFUSED:
            logger.warning(
                "refused to connect to %s: it resolves to %s, a %s address, and no source "
                "of this crawl starts there (KC_ALLOW_PRIVATE_ADDRESSES=true allows it)",
                name,
                address,
                kind,
            )
        _REFUSED[key] = address
        raise PrivateAddressRefused(f"{name} resolves to {address}, a {kind} address")
