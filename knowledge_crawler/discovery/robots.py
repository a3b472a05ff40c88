"""robots.txt -> the sitemaps it names (pure).

Obeying robots.txt is Scrapy's ``RobotsTxtMiddleware`` (Protego); discovery only
needs its ``Sitemap:`` lines, read the way Protego reads them: any case, a
``Site-map`` spelling, comments after ``#``, the line anywhere in the file, not
tied to a user-agent group. Relative values are resolved against the robots.txt
URL; only ``http(s)`` URLs are kept, each once. Only the first
:data:`ROBOTS_MAX_SIZE` bytes are read, as Google does.
"""

from __future__ import annotations

import re

from knowledge_crawler.discovery import _xml
from knowledge_crawler.discovery.candidates import absolute_http_url

__all__ = [
    "ROBOTS_MAX_SIZE",
    "looks_like_robots",
    "robots_text",
    "sitemap_lines",
    "sitemaps_from_robots",
]

#: Bytes of a robots.txt that are read (Google reads 500 KiB).
ROBOTS_MAX_SIZE = 500 * 1024

_SITEMAP_LINE = re.compile(r"^\s*site-?map\s*:\s*(\S+)", re.IGNORECASE)
_DIRECTIVE = re.compile(
    r"^\s*(user-?agent|disallow|allow|site-?map|crawl-delay|host|request-rate|visit-time"
    r"|clean-param|noindex)\s*:",
    re.IGNORECASE,
)


def robots_text(body: bytes | str) -> str:
    """The text of a robots.txt body (gzip inflated, charset guessed, size capped)."""
    if isinstance(body, str):
        return body[:ROBOTS_MAX_SIZE]
    return _xml.decode(_xml.decompress(body, ROBOTS_MAX_SIZE).data)


def _significant_lines(text: str) -> list[str]:
    lines = (line.partition("#")[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def looks_like_robots(body: bytes | str) -> bool:
    """Whether ``body`` reads as a robots.txt: text, mostly ``Field: value`` directives.

    At least one known directive (``User-agent``, ``Disallow``, ``Allow``,
    ``Sitemap``, ``Crawl-delay``, ...) and at least half of the non-comment lines
    known directives; no NUL bytes; not markup.

    >>> looks_like_robots(b"User-agent: *\\nDisallow: /private\\n")
    True
    >>> looks_like_robots(b"<html><body>User-agent: *</body></html>")
    False
    """
    if isinstance(body, bytes) and b"\x00" in body[:ROBOTS_MAX_SIZE]:
        return False
    text = robots_text(body)
    if "\x00" in text or _xml.looks_like_xml(text):
        return False
    lines = _significant_lines(text)
    known = sum(1 for line in lines if _DIRECTIVE.match(line))
    return known > 0 and 2 * known >= len(lines)


def sitemap_lines(body: bytes | str) -> list[str]:
    """The raw values of a robots.txt's ``Sitemap:`` lines, as written, in file order.

    >>> sitemap_lines("Sitemap: /a.xml # main\\nUser-agent: *\\nsite-map:b.xml")
    ['/a.xml', 'b.xml']
    """
    values = []
    for line in robots_text(body).splitlines():
        match = _SITEMAP_LINE.match(line.partition("#")[0])
        if match is not None:
            values.append(match.group(1))
    return values


def sitemaps_from_robots(body: bytes | str, base_url: str | None = None) -> list[str]:
    """The sitemap URLs named by a robots.txt, absolute, each once, in file order.

    ``base_url`` is the robots.txt URL; without it a relative value is dropped.

    >>> sitemaps_from_robots(b"User-agent: *\\nSITEMAP: /sitemap.xml  # main\\n"
    ...                      b"sitemap:https://cdn.example.com/s.xml.gz\\n",
    ...                      "https://example.com/robots.txt")
    ['https://example.com/sitemap.xml', 'https://cdn.example.com/s.xml.gz']
    """
    found: dict[str, None] = {}
    for value in sitemap_lines(body):
        url = absolute_http_url(value, base_url)
        if url is not None:
            found.setdefault(url)
    return list(found)
