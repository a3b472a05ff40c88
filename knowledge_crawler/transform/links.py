"""The links of a page: the targets of its ``<a>`` and ``<area>`` elements, made absolute.

Pure module (lxml, the standard library). One implementation for the spider, which
reads them from the response's own parse, and for the stage workers, which read them
from the parse the extraction uses (``transform.stages``), so that both find the same.
"""

from __future__ import annotations

import functools
import html as _html
import re
from collections.abc import Collection, Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

__all__ = ["canonical_link", "link_targets", "page_link_urls"]

#: every link target of a page, as plain strings
_HREFS = etree.XPath("//a/@href | //area/@href", smart_strings=False)
_REGION_HREFS = etree.XPath(
    "descendant-or-self::a/@href | descendant-or-self::area/@href", smart_strings=False
)


#: how much of a page's start is read for its ``<link rel=canonical>`` (it is in ``<head>``)
CANONICAL_SCAN = 32 * 1024
_LINK_TAG = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""([a-zA-Z:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")


def canonical_link(html: str, url: str) -> str | None:
    """The absolute URL of the page's first ``<link rel="canonical" href>`` (None: none).

    Read with a regex from the start of the page, not a parse, so that it costs next
    to nothing where the page is not otherwise parsed.

    >>> canonical_link('<head><link href="/a?x=1&amp;y=2" rel="Canonical"></head>',
    ...                "https://example.com/print/a")
    'https://example.com/a?x=1&y=2'
    >>> canonical_link('<link rel="stylesheet" href="/s.css">', "https://example.com/")
    """
    head = html[:CANONICAL_SCAN]
    end = head.lower().find("</head")
    if end >= 0:
        head = head[:end]
    for tag in _LINK_TAG.findall(head):
        attrs = {m[0].lower(): m[1] or m[2] or m[3] for m in _ATTR.findall(tag)}
        if "canonical" in attrs.get("rel", "").lower().split() and attrs.get("href"):
            href = _html.unescape(attrs["href"]).strip()
            try:
                absolute = urljoin(url, href)
            except ValueError:
                return None
            return absolute if absolute.startswith(("http://", "https://")) else None
    return None


def link_targets(root: Any, region: str | None = None) -> list[str]:
    """The ``href`` of each ``<a>`` and ``<area>`` of a parsed page (an lxml element), in
    document order; ``region``: an XPath of the parts to take them from (the links in
    the elements it selects, or that they are), None: the whole page.

    >>> from lxml import html
    >>> page = html.fromstring('<p><a href="/a">a</a><nav><a href="/b">b</a></nav></p>')
    >>> link_targets(page), link_targets(page, "//nav")
    (['/a', '/b'], ['/b'])
    """
    if region is None:
        return [str(href) for href in _HREFS(root)]  # type: ignore[union-attr]
    return [
        str(href)
        for part in root.xpath(region)
        if isinstance(part, etree._Element)  # an element, not text or an attribute
        for href in _REGION_HREFS(part)  # type: ignore[union-attr]
    ]


def page_link_urls(hrefs: Iterable[str], base: str, skipped: Collection[str]) -> list[str]:
    """Absolute http(s) URLs of a page's link targets against its ``base`` URL, in order,
    without repeats, leaving out links to files of the ``skipped`` extensions
    (``".jpg"``, ...).

    >>> page_link_urls([" /a ", "b.png", "/a", "mailto:x@y.z"], "https://e.com/d/", {".png"})
    ['https://e.com/a']
    """
    found: dict[str, None] = {}
    # What a link with a path of its own resolves to depends on the base's scheme, host
    # and folder only: it is looked up by those, as navigation links repeat on every page.
    folder = _folder(base) if isinstance(skipped, frozenset) else ""
    for href in hrefs:
        href = href.strip()
        if folder and _by_folder(href):
            url = _resolved(folder, href, skipped)  # type: ignore[arg-type]  # a frozenset
        else:
            url = _resolve(base, href, skipped)
        if url is not None:
            found.setdefault(url, None)
    return list(found)


def _by_folder(href: str) -> bool:
    """Whether ``href`` resolves the same against every base of one scheme, host and
    folder: a path from the site's root, or a relative path without a scheme. Not a
    query or fragment alone, an empty or protocol-relative link (those take the base's
    own path), nor one with the tabs or line breaks that URL parsing drops."""
    if not href or "\t" in href or "\r" in href or "\n" in href:
        return False
    if href[0] == "/":
        return href[1:2] != "/"
    if href[0] in "?#":
        return False
    return ":" not in href.split("/", 1)[0]


def _folder(base: str) -> str:
    """``base`` without its last path segment, query and fragment ("" if it has no host)."""
    parts = urlsplit(base)
    path = parts.path or "/"
    if not parts.scheme or not parts.netloc or not path.startswith("/"):
        return ""
    return f"{parts.scheme}://{parts.netloc}{path[: path.rfind('/') + 1]}"


def _resolve(base: str, href: str, skipped: Collection[str]) -> str | None:
    """``href`` made absolute against ``base``; None unless http(s) and not skipped."""
    url = urljoin(base, href)
    if not url.startswith(("http://", "https://")):
        return None
    path = urlsplit(url).path
    dot = path.rfind(".")
    if dot > path.rfind("/") and path[dot:].lower() in skipped:
        return None
    return url


#: :func:`_resolve` of links by the folder of their page, memoised (per process)
_resolved = functools.lru_cache(maxsize=16_384)(_resolve)
