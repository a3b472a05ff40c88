"""A page's title from its parsed tree: og:title, the first ``<h1>`` or ``<title>``,
with the site-name suffix ("Headline | Site") removed (pure)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from knowledge_crawler.transform._text import norm

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["meta_content", "page_title", "strip_site_name"]

_TITLE_SEPARATORS_RE = re.compile(r"\s+[|\-\u2013\u2014\u00b7\u2022:\u00bb/~]+\s+")


def meta_content(tree: HtmlElement, *names: str) -> str:
    """The first non-empty ``<meta property|name=NAME content>`` among ``names``, or ``""``."""
    for name in names:
        for el in tree.iterfind(f".//meta[@property='{name}']"):
            content = norm(el.get("content"))
            if content:
                return content
        for el in tree.iterfind(f".//meta[@name='{name}']"):
            content = norm(el.get("content"))
            if content:
                return content
    return ""


def strip_site_name(title: str, site: str) -> str:
    """'Story headline | Site' -> 'Story headline' (also 'Site - Story headline')."""
    parts = _TITLE_SEPARATORS_RE.split(title)
    if len(parts) < 2:
        return title
    site_l = site.casefold()
    if site_l:
        kept = [p for p in parts if p.casefold() != site_l and p.casefold() not in site_l]
        if kept and len(kept) < len(parts):
            return " - ".join(kept) if len(kept) > 1 else kept[0]
    # no site name known: drop a short trailing segment if the rest is clearly longer
    head, last = " ".join(parts[:-1]), parts[-1]
    if len(last.split()) <= 4 and len(head) > 2 * len(last):
        return _TITLE_SEPARATORS_RE.split(title, maxsplit=len(parts) - 2)[0]
    return title


def page_title(tree: HtmlElement) -> str | None:
    """From og:title, the first ``<h1>`` or ``<title>`` (site-name suffix removed)."""
    title_el = tree.find(".//title")
    title_text = norm(title_el.text_content()) if title_el is not None else ""
    og = meta_content(tree, "og:title", "twitter:title")
    site = meta_content(tree, "og:site_name", "application-name")
    h1 = ""
    for el in tree.iter("h1"):
        h1 = norm(el.text_content())
        if h1:
            break
    candidates = [c for c in (og, h1) if c]
    # a clean og:title / h1 is one that the <title> contains (the <title> being
    # "Headline | Site"), or that carries no site suffix itself
    for cand in candidates:
        if title_text and cand != title_text and cand in title_text:
            return cand
    if og:
        cleaned = strip_site_name(og, site)
        if h1 and cleaned.casefold() == h1.casefold():
            return h1
        if cleaned != og or not title_text or og != title_text:
            return cleaned
    if title_text:
        cleaned = strip_site_name(title_text, site)
        if h1 and len(h1) >= 8 and h1.casefold() in title_text.casefold():
            return h1
        return cleaned
    return h1 or None
