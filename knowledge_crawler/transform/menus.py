"""Bars of links set apart by separators: site menus (pure, lxml trees).

A page's header and footer menus are often one block of links with a separator between
them: ``<div><a>Home</a> | <a>Video</a> | <a>World</a> ...</div>``. When no element of
the page holds the article clearly, trafilatura recovers every paragraph of the page and
keeps such a bar as a line of text ("Home | Video | NewsPulse | U.S. | World").

:func:`drop_link_bars` removes, before extraction, a block whose children are all links
(three or more, each with text) and whose own text between them is only separators,
at least one bar (``|``), middle dot or bullet between each pair of links. Prose that
names three links ("see A, B and C") has words between them and stays; a list of links
(``<ul>``) is left to trafilatura, which judges it by its link density.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["drop_link_bars"]

_BARS = ("p", "div", "td", "span", "center", "nav", "li", "font", "small")
_SEPARATOR = re.compile(r"[|·•]")
_ONLY_SEPARATORS = re.compile("[\\s|·•\\-\u2013\u2014]*")
_MIN_LINKS = 3


def _separators(text: str | None) -> int:
    """How many separators ``text`` holds, or -1 when it holds anything else."""
    if not text:
        return 0
    if _ONLY_SEPARATORS.fullmatch(text) is None:
        return -1
    return len(_SEPARATOR.findall(text))


def _link_bar(block: Any) -> bool:
    separators = _separators(block.text)
    if separators < 0:
        return False
    links = 0
    for child in block:
        tag = child.tag
        if isinstance(tag, str):  # comments are skipped, their tails still count
            if tag != "a" or not child.get("href") or not child.text_content().strip():
                return False
            links += 1
        after = _separators(child.tail)
        if after < 0:
            return False
        separators += after
    return links >= _MIN_LINKS and separators >= links - 1


def drop_link_bars(tree: Any, drop: Any) -> int:
    """Remove the link bars of ``tree`` with ``drop(element)``; the number removed.

    A block is looked at only when it has three children or more, the first a link
    with a separator after it."""
    found = []
    for block in tree.iter(*_BARS):
        if len(block) < _MIN_LINKS:
            continue
        first = block[0]
        if first.tag != "a" or not first.tail or _SEPARATOR.search(first.tail) is None:
            continue
        if _link_bar(block):
            found.append(block)
    for block in found:
        if block.getparent() is not None:
            drop(block)
    return len(found)
