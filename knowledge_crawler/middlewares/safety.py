"""Refuse private, loopback and link-local destinations before anything is sent (F-SAFETY).

Two downloader middlewares; the decisions are the pure
:mod:`knowledge_crawler.transform.addresses`.

:class:`PrivateAddressMiddleware` (request time): a page request (``meta.SOURCE``)
or discovery request (``meta.DISCOVERY``) whose host is a private address by its
spelling (``10.0.0.1``, ``[::1]``, ``2130706433``, ``0x7f.1``) or a local name
(``localhost``, ``*.local``, ``metadata.google.internal``) is refused with
``IgnoreRequest``, unless that host is one the source names itself (its start
URLs, sitemaps, feeds or API URL). A redirect is a new request through the
downloader middlewares, so a redirect into private space is refused the same way
before it is requested. A redirect of a request that has no source (robots.txt)
may stay on the host it started from or go to a host of the crawl's sources, and
nowhere else private. Enable it below ``RobotsTxtMiddleware`` (100), which would
otherwise fetch the refused host's robots.txt first, and above ``ScopeMiddleware``
(60), which keeps refusing out-of-scope hosts under its own counters.

:class:`RefusedResolutionMiddleware` (connect time): when the project's resolver
(:mod:`knowledge_crawler.middlewares.resolver`) refused a name that resolves to a
private address, Scrapy sees only "cannot resolve host"; this middleware fails the
request with :class:`~knowledge_crawler.middlewares.resolver.PrivateAddressRefused`
instead (the spider's errback counts it as ``kc/fetch/error/PrivateAddressRefused``;
a robots.txt request gets ``IgnoreRequest``, which Scrapy takes quietly as "no
robots.txt"). Enable it above ``RetryMiddleware`` (550): exceptions go through
the middlewares from the highest number down, and a refusal is not worth a retry.

``KC_ALLOW_PRIVATE_ADDRESSES`` turns both off (every private destination allowed).

Counters: ``kc/safety/refused_private`` (every refusal), ``kc/safety/refused_private_redirect``
(those reached by a redirect), ``kc/safety/refused_private_dns`` (those refused when
the name was resolved).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from twisted.internet.error import DNSLookupError

from knowledge_crawler import meta
from knowledge_crawler.middlewares._base import SourceMiddleware
from knowledge_crawler.middlewares.resolver import (
    PrivateAddressRefused,
    allow_private_addresses,
    crawl_sources,
    own_hosts,
    refused_address,
)
from knowledge_crawler.transform.addresses import (
    address_kind,
    host_key,
    private_host_reason,
    url_host,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["PrivateAddressMiddleware", "RefusedResolutionMiddleware"]

logger = logging.getLogger(__name__)

REFUSED = "kc/safety/refused_private"
REFUSED_REDIRECT = "kc/safety/refused_private_redirect"
REFUSED_DNS = "kc/safety/refused_private_dns"
_HINT = "KC_ALLOW_PRIVATE_ADDRESSES=true allows it"


def _owner(request: Request) -> str | None:
    """The id of the source a page or discovery request works for; None for others."""
    owner = request.meta.get(meta.SOURCE) or request.meta.get(meta.DISCOVERY)
    return None if owner is None else str(owner)


class PrivateAddressMiddleware(SourceMiddleware):
    """Request time: private hosts by their spelling, unless the source's own (see above)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if allow_private_addresses(crawler.settings):
            raise NotConfigured("KC_ALLOW_PRIVATE_ADDRESSES is on")
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        owner = _owner(request)
        redirects: list[str] = request.meta.get("redirect_urls") or []
        if owner is None and not redirects:
            return  # robots.txt and other spiders' requests: the resolver guards those
        host = url_host(request.url)
        reason = None if host is None else private_host_reason(host)
        if host is None or reason is None:
            return
        key = host_key(host)
        if key in self._allowed(owner, redirects):
            return
        self.inc(REFUSED)
        if redirects:
            self.inc(REFUSED_REDIRECT)
        whose = f"source {owner!r}" if owner is not None else "this crawl"
        via = f" (redirected from {redirects[0]})" if redirects else ""
        level = logging.DEBUG if key in self._logged else logging.WARNING
        self._logged.add(key)
        logger.log(
            level, "refused %s%s: %s, not a host of %s (%s)", request.url, via, reason, whose, _HINT
        )
        raise IgnoreRequest(f"{reason}, not a host of {whose}")

    def _allowed(self, owner: str | None, redirects: list[str]) -> frozenset[str]:
        """Private hosts allowed: the source's own, or for a request of no source the
        crawl's and the one its redirects started from."""
        if owner is not None:
            source = self.runtime.sources.get(owner)
            return frozenset() if source is None else own_hosts(source)
        origin = url_host(redirects[0])
        hosts = {host_key(origin)} if origin is not None else set()
        for source in crawl_sources([self.crawler]):
            hosts |= own_hosts(source)
        return frozenset(hosts)


class RefusedResolutionMiddleware:
    """Connect time: a lookup the resolver refused fails as ``PrivateAddressRefused``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if not isinstance(exception, CannotResolveHostError | DNSLookupError):
            return
        host = url_host(request.url)
        address = refused_address(host) if host else None
        if address is None:
            return
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(REFUSED)
        stats.inc_value(REFUSED_DNS)
        if request.meta.get("redirect_urls"):
            stats.inc_value(REFUSED_REDIRECT)
        message = (
            f"{host} resolves to {address}, a {address_kind(address)} address, "
            f"not a host of this crawl ({_HINT})"
        )
        if _owner(request) is None and request.meta.get("dont_obey_robotstxt"):
            raise IgnoreRequest(f"robots.txt: {message}") from exception
        raise PrivateAddressRefused(message) from exception
