"""Bars of links set apart by separators: site menus (pure, lxml trees).

A page's header and footer menus are often one block of links with a separator between
them: ``<div><a>Home</a> | <a>Video</a> | <a>World</a> ...</div>``. When no element of
the page holds the article clearly, trafilatura recovers every paragraph of the page and
keeps such a bar as a line of text ("Home | Video | NewsPulse | U.S. | World").

:func:`link_bar` tells a block whose children are all links
(three or more, each with text) and whose own text between them is only separators,
at least one bar (``|``), middle dot, bullet or breadcrumb arrow (U+203A, U+00BB) between
each pair of links; a link may sit in a ``<span>`` of its own (a breadcrumb's last,
current page). Prose that
names three links ("see A, B and C") has words between them and stays; a list of links
(``<ul>``) is left to trafilatura, which judges it by its link density. The extractor's
pre-pass removes such a block; it looks only at the blocks of links that a separator
follows (:func:`separated`), in the walk over the page's links it makes anyway.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["link_bar", "separated"]

_BARS = frozenset({"p", "div", "td", "span", "center", "nav", "li", "font", "small"})
_SEPARATOR = re.compile("[|·•\u203a\u00bb]")  # bar, dots, breadcrumb arrows
_ONLY_SEPARATORS = re.compile("[\\s|·•\u203a\u00bb\\-\u2013\u2014]*")
_MIN_LINKS = 3


def _separators(text: str | None) -> int:
    """How many separators ``text`` holds, or -1 when it holds anything else."""
    if not text:
        return 0
    if _ONLY_SEPARATORS.fullmatch(text) is None:
        return -1
    return len(_SEPARATOR.findall(text))


def link_bar(block: Any) -> bool:
    """Whether ``block`` is a bar of links (see the module's rules)."""
    if block is None or block.tag not in _BARS or len(block) < _MIN_LINKS:
        return False
    separators = _separators(block.text)
    if separators < 0:
        return False
    links = 0
    for child in block:
        tag = child.tag
        if isinstance(tag, str):  # comments are skipped, their tails still count
            link = child[0] if tag == "span" and len(child) == 1 and not child.text else child
            if link.tag != "a" or not link.get("href") or not link.text_content().strip():
                return False
            links += 1
        after = _separators(child.tail)
        if after < 0:
            return False
        separators += after
    return links >= _MIN_LINKS and separators >= links - 1


def separated(link: Any) -> bool:
    """Whether a separator follows ``link``: its block may be a bar (the pre-pass asks
    in the walk over the page's links it makes anyway)."""
    tail = link.tail
    return bool(tail) and _SEPARATOR.search(tail) is not None
