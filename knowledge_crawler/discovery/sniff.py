"""Tell a sitemap from a feed from a robots.txt by content, and read whichever it is (pure).

:func:`sniff` looks at (at most) the first MiB after gzip inflation: an XML root
``urlset`` is a sitemap, ``sitemapindex`` a sitemap index, ``rss``/``feed``/an
RSS 1.0 ``rdf:RDF`` a feed; plain text that is one URL per line is a (text)
sitemap and ``Field: value`` directives a robots.txt. :func:`discover` then
parses the whole body with the matching adapter, for ``knowledge-crawler
discover`` and for any caller that does not know in advance what a URL serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from knowledge_crawler.discovery import _xml
from knowledge_crawler.discovery.candidates import (
    DEFAULT_MAX_SIZE,
    Candidate,
    NotDiscoverable,
    absolute_http_url,
)
from knowledge_crawler.discovery.feeds import feed_format, parse_feed
from knowledge_crawler.discovery.robots import (
    looks_like_robots,
    sitemap_lines,
    sitemaps_from_robots,
)
from knowledge_crawler.discovery.sitemaps import looks_like_text_sitemap, parse_sitemap

__all__ = ["SNIFF_SIZE", "Discovery", "DiscoveryKind", "Sniffed", "discover", "sniff"]

Sniffed = Literal["sitemap", "sitemapindex", "feed", "robots", "unknown"]
DiscoveryKind = Literal["sitemap", "sitemapindex", "feed", "robots"]

#: Bytes (after inflation) that :func:`sniff` looks at.
SNIFF_SIZE = 1024 * 1024
NOTHING_TO_DISCOVER = "not a sitemap, feed or robots.txt"


def _whole_lines(text: str) -> str:
    """``text`` without its last line, which a cut may have broken."""
    return text[: text.rfind("\n")] if "\n" in text else text


def sniff(body: bytes) -> Sniffed:
    """What ``body`` is: a ``sitemap``, ``sitemapindex``, ``feed``, ``robots`` or ``unknown``.

    >>> sniff(b'<?xml version="1.0"?><rss version="2.0"><channel/></rss>')
    'feed'
    >>> sniff(b"User-agent: *\\nDisallow:\\n")
    'robots'
    >>> sniff(b"\\x89PNG\\r\\n")
    'unknown'
    """
    unpacked = _xml.decompress(body, SNIFF_SIZE)
    text = _xml.decode(unpacked.data)
    if unpacked.problem:
        text = _whole_lines(text) if not _xml.looks_like_xml(text) else text
    if _xml.looks_like_xml(text):
        root = _xml.parse(_xml.clean(text)).root
        if root is None:
            return "unknown"
        name = _xml.localname(root)
        if name == "urlset":
            return "sitemap"
        if name == "sitemapindex":
            return "sitemapindex"
        return "feed" if feed_format(root) is not None else "unknown"
    if "\x00" in text:
        return "unknown"
    if looks_like_text_sitemap(text):
        return "sitemap"
    if looks_like_robots(text):
        return "robots"
    return "unknown"


@dataclass(frozen=True, slots=True)
class Discovery:
    """What a sitemap, sitemap index, feed or robots.txt yields, without fetching a page.

    ``format`` details ``kind``: ``"xml"`` or ``"text"`` for sitemaps, ``"rss"``,
    ``"rdf"`` or ``"atom"`` for feeds, ``"robots.txt"``. ``truncated``,
    ``warnings`` and ``skipped`` are as in the adapters' results.
    """

    kind: DiscoveryKind
    format: str
    candidates: tuple[Candidate, ...]
    truncated: bool = False
    warnings: tuple[str, ...] = ()
    skipped: int = 0


def _named_robots(name: str | None) -> bool:
    if not name:
        return False
    try:
        path = urlsplit(name).path
    except ValueError:
        return False
    return path.replace("\\", "/").rsplit("/", 1)[-1].lower() == "robots.txt"


def discover(
    body: bytes,
    *,
    base_url: str | None = None,
    name: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    now: datetime | None = None,
) -> Discovery:
    """Sniff ``body`` and read it with the matching adapter.

    ``base_url`` resolves relative URLs (the document's own URL); ``name`` (a
    file name or URL) lets an empty or comment-only text file called
    ``robots.txt`` count as one. Raises :class:`NotDiscoverable` with the line
    ``not a sitemap, feed or robots.txt`` (plus the reason when the body was cut).

    >>> d = discover(b"Sitemap: /sitemap.xml\\n", base_url="https://example.com/robots.txt")
    >>> d.kind, d.candidates
    ('robots', (Candidate(url='https://example.com/sitemap.xml', kind='sitemap', lastmod=None),))
    """
    unpacked = _xml.decompress(body, max_size)
    data, problem = unpacked.data, unpacked.problem
    cut = (problem,) if problem else ()
    kind = sniff(data)
    if kind == "unknown" and _named_robots(name):
        text = _xml.decode(data[:SNIFF_SIZE])
        if "\x00" not in text and not _xml.looks_like_xml(text):
            kind = "robots"
    try:
        if kind in ("sitemap", "sitemapindex"):
            if problem and not _xml.looks_like_xml(_xml.decode(data[:SNIFF_SIZE])):
                data = data[: data.rfind(b"\n") + 1] or data  # a cut text sitemap: whole lines
            sitemap = parse_sitemap(data, base_url, max_size=max_size, now=now)
            return Discovery(
                "sitemap" if sitemap.kind == "urlset" else "sitemapindex",
                sitemap.format,
                sitemap.candidates,
                truncated=sitemap.truncated or bool(cut),
                warnings=cut + sitemap.warnings,
                skipped=sitemap.skipped,
            )
        if kind == "feed":
            feed = parse_feed(data, base_url, max_size=max_size, now=now)
            return Discovery(
                "feed",
                feed.format,
                feed.candidates,
                truncated=feed.truncated or bool(cut),
                warnings=cut + feed.warnings,
                skipped=feed.skipped,
            )
    except NotDiscoverable as exc:
        raise NotDiscoverable(_with_reason(problem)) from exc
    if kind == "robots":
        urls = sitemaps_from_robots(data, base_url)
        unusable = [v for v in sitemap_lines(data) if absolute_http_url(v, base_url) is None]
        return Discovery(
            "robots",
            "robots.txt",
            tuple(Candidate(url, "sitemap", None) for url in urls),
            truncated=bool(cut),
            warnings=cut,
            skipped=len(unusable),
        )
    raise NotDiscoverable(_with_reason(problem))


def _with_reason(problem: str | None) -> str:
    return f"{NOTHING_TO_DISCOVER} ({problem})" if problem else NOTHING_TO_DISCOVER
