"""The links of a page: the targets of its ``<a>`` and ``<area>`` elements, made absolute.

Pure module (lxml, the standard library). One implementation for the spider, which
reads them from the response's own parse, and for the stage workers, which read them
from the parse the extraction uses (``transform.stages``), so that both find the same.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

__all__ = ["link_targets", "page_link_urls"]

#: every link target of a page, as plain strings
_HREFS = etree.XPath("//a/@href | //area/@href", smart_strings=False)
_REGION_HREFS = etree.XPath(
    "descendant-or-self::a/@href | descendant-or-self::area/@href", smart_strings=False
)


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
    for href in hrefs:
        url = urljoin(base, href.strip())
        if not url.startswith(("http://", "https://")):
            continue
        path = urlsplit(url).path
        dot = path.rfind(".")
        if dot > path.rfind("/") and path[dot:].lower() in skipped:
            continue
        found.setdefault(url, None)
    return list(found)
