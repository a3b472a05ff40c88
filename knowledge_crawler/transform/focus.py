"""The article inside a frame: paragraph-density scoring (pure, lxml trees only).

trafilatura looks for the main content with a cascade of expressions, from article
containers (``articleBody``, ``post-content`` ...) down to any element whose class or id
says ``content`` or starts with ``main``; when none gives enough text it recovers every
paragraph of the page. The broad ends of that cascade take a whole page column: the
article with the teasers, tickers and "more stories" around it; the recovery takes
reader comments and footers as well. The narrow ends take less often too much: an
``<article>`` or ``entry-content`` box that also holds the comments, a side box of
other stories, a subscription form.

:func:`narrow` finds, inside such a frame, the element that holds the article by
scoring paragraphs as Readability does: each paragraph of 25 characters or more gives
its parent ``1 + commas + min(length / 100, 3)`` and its grandparent half of that;
a ``<div>`` starts at 5, a class or id that names an article (``article``, ``body``,
``content``, ``post``, ``story`` ...) adds 25 and one that names boilerplate
(``comment``, ``related``, ``share``, ``footer`` ...) takes 25 off; the total is scaled by
the share of the element's text that is not link text. Siblings of the best element
that score at least a fifth of it (and 10) are part of the article: their parent is
taken. The frame is narrowed only when all of these hold, so that a documentation page
whose sections are all content keeps its frame:

* the element's own class or id names an article and none of boilerplate; or it names
  neither and holds the frame's scored paragraphs, all but 5 % of their text (CNN's 2013
  story column is ``cnn_strycntntlft``; the alternative there is every paragraph of the
  page), those in boxes named as boilerplate aside (reader comments, cards of related
  stories: a recipe site's column);
* what the narrowing leaves out is mostly links or boxes named as boilerplate (at least
  30 % of its text: menus, teaser headlines, tickers, a ``promo`` box of prose), not
  prose of unnamed boxes (at 20 % of links alone it dropped parts of stories on
  held-out pages: docs/extraction.md, tenth pass); or the rest of it, less the page's
  headers and headings, is under a tenth of the element's text: a standfirst, a
  breadcrumb, an author's line or a copyright line beside a story, where a part of the
  story left out would be larger (a part in a sibling box of the element's tag and
  class, its lead say, keeps the frame however short), and the frame is an article's
  container, not the whole ``<body>`` (where the prose beside the densest block may be
  anything: a layout table's question above its answer);
* the element holds at least 500 characters, 300 of them in scored paragraphs.

Tags are those of trafilatura's cleaned tree (links are ``ref`` there; ``a`` is counted
too, for trees that were not converted).
"""

from __future__ import annotations

import re
from typing import Any, cast

from lxml.etree import XPath

from knowledge_crawler.transform.fastpaths import remembered_search

__all__ = ["MIN_PARAGRAPH", "boilerplate_box", "narrow", "text_length"]

_ARTICLE = re.compile(
    r"article|body|content|entry|hentry|main|page|post|text|blog|story", re.IGNORECASE
)
_BOILERPLATE = re.compile(
    r"comment|com-|contact|foot|masthead|media|meta|outbrain|promo|related|scroll|shoutbox"
    r"|sidebar|skyscraper|sponsor|shopping|tags|tool|widget|teaser|recommend|share|social"
    r"|newsletter",
    re.IGNORECASE,
)
_LINKS = ("ref", "a")
MIN_PARAGRAPH = 25  # characters: shorter paragraphs are not scored
_SIBLING_SHARE = 0.2  # of the best score, for a sibling to be part of the article
_SIBLING_MIN = 10.0
_LEFT_OUT_LINKS = 0.3  # least share of link text in what narrowing leaves out
_LEFT_OUT_PROSE = 0.1  # of the element's text: the most other prose narrowing may leave out
_MIN_CHARS = 500
_MIN_PARAGRAPH_CHARS = 300
_STRAY_PARAGRAPHS = 0.05  # of a frame's scored paragraph text, outside an unnamed article


#: the length of an element's text with its runs of white space as one space, in C
_LENGTH = XPath("string-length(normalize-space())")


def text_length(el: Any) -> int:
    """The length of ``el``'s text with its runs of white space as one space (in C)."""
    return int(cast(float, _LENGTH(el)))  # string-length() is a number


class _Lengths:
    """Text lengths of the elements of one frame, each measured once: a paragraph is
    scored, then counted in the best element and in the frame; a link is counted in
    every scored element above it."""

    def __init__(self) -> None:
        self.of: dict[Any, int] = {}

    def __call__(self, el: Any) -> int:
        length = self.of.get(el)
        if length is None:
            length = self.of[el] = text_length(el)
        return length

    def links(self, el: Any) -> int:
        return sum(self(a) for a in el.iter(*_LINKS))

    def paragraphs(self, el: Any) -> int:
        lengths = (self(p) for p in el.iter("p"))
        return sum(n for n in lengths if n >= MIN_PARAGRAPH)


#: the two tests of a class or id value, each answer remembered
#: (:func:`~knowledge_crawler.transform.fastpaths.remembered_search`: a page repeats its
#: classes, and sites share them)
_SAYS_BOILERPLATE = remembered_search(_BOILERPLATE.pattern, re.IGNORECASE)
_SAYS_ARTICLE = remembered_search(_ARTICLE.pattern, re.IGNORECASE)


def _says(value: str) -> tuple[bool, bool]:
    """Whether a class or id value names boilerplate, and whether it names an article."""
    return _SAYS_BOILERPLATE(value), _SAYS_ARTICLE(value)


def _class_weight(el: Any) -> int:
    weight = 0
    for value in (el.get("class"), el.get("id")):
        if value:
            boilerplate, article = _says(value)
            weight += (25 if article else 0) - (25 if boilerplate else 0)
    return weight


def _names_boilerplate(el: Any) -> bool:
    return any(value and _says(value)[0] for value in (el.get("class"), el.get("id")))


def _names_article(el: Any) -> bool:
    return not _names_boilerplate(el) and any(
        value and _says(value)[1] for value in (el.get("class"), el.get("id"))
    )


def boilerplate_box(el: Any) -> bool:
    """Whether ``el``'s class or id names boilerplate (``related``, ``comment``, ``share``
    ...) and neither names an article: a box of other stories or of comments, never an
    article's frame, however the frame expression that found it reads (the first
    ``<article>`` of a page that sets its related recipes as ``<article>`` cards)."""
    return _names_boilerplate(el) and not any(
        value and _says(value)[1] for value in (el.get("class"), el.get("id"))
    )


def _scores(frame: Any, length: _Lengths) -> dict[Any, float]:
    """The score of each parent and grandparent of a scored paragraph inside ``frame``
    (``frame`` included)."""
    raw: dict[Any, float] = {}
    for paragraph in frame.iter("p"):
        chars = length(paragraph)
        if chars < MIN_PARAGRAPH:
            continue
        points = 1 + paragraph.text_content().count(",") + min(chars // 100, 3)
        el = paragraph
        for share in (1.0, 0.5):
            if el is frame:
                break  # its parent is outside the frame
            el = el.getparent()
            if el is None:
                break
            if el not in raw:
                raw[el] = _class_weight(el) + (5 if el.tag == "div" else 0)
            raw[el] += points * share
    scores = {}
    for el, score in raw.items():
        chars = length(el)
        scores[el] = score * (1 - length.links(el) / chars) if chars else 0.0
    return scores


def narrow(frame: Any) -> Any:
    """The element inside ``frame`` that holds the article, or ``frame`` itself when
    no element clearly does (see the module's rules)."""
    length = _Lengths()
    scores = _scores(frame, length)
    if not scores:
        return frame
    best = max(scores, key=scores.__getitem__)
    parent = best.getparent()
    if best is not frame and parent is not None:
        floor = max(_SIBLING_MIN, _SIBLING_SHARE * scores[best])
        if any(s is not best and scores.get(s, 0.0) >= floor for s in parent):
            best = parent  # the article runs over several siblings
    if best is not frame:
        best = _around_parts(frame, best, length)
    if best is frame:
        return frame
    paragraphs = length.paragraphs(best)
    if length(best) < _MIN_CHARS or paragraphs < _MIN_PARAGRAPH_CHARS:
        return frame
    if _names_boilerplate(best):
        return frame
    chrome = None
    if not _names_article(best):
        elsewhere = length.paragraphs(frame)
        if paragraphs < (1 - _STRAY_PARAGRAPHS) * elsewhere:
            chrome = _chrome(frame, best, length)
            if paragraphs < (1 - _STRAY_PARAGRAPHS) * (elsewhere - chrome[2]):
                return frame  # unnamed, and scored paragraphs lie outside it (not in chrome)
    left_out = length(frame) - length(best)
    if left_out <= 0:
        return frame
    links = length.links(frame) - length.links(best)
    if links / left_out >= _LEFT_OUT_LINKS:
        return best
    named, headers, _ = chrome or _chrome(frame, best, length)
    if (links + named) / left_out >= _LEFT_OUT_LINKS:
        return best
    if frame.tag == "body" or _in_parts(best, length):
        return frame
    prose = left_out - links - named - headers
    return best if prose < _LEFT_OUT_PROSE * length(best) else frame


def _around_parts(frame: Any, best: Any, length: _Lengths) -> Any:
    """The element that holds ``best`` and the other elements of its tag and class in
    ``frame`` that hold scored paragraphs of :data:`_MIN_PARAGRAPH_CHARS` or more, when
    the class names an article (``recipe-content``): a story set in parts of one class
    in different columns (a recipe's introduction beside its photos, its method under
    its ingredients); ``best`` when it has no such parts. A class of layout alone
    (``left relative``) or a shorter part (a standfirst in a box of the story's class)
    says nothing of the kind."""
    name = best.get("class")
    if not name or not _ARTICLE.search(name):
        return best
    above = set(best.iterancestors())
    parts = [
        el
        for el in frame.iter(best.tag)
        if el is not best
        and el.get("class") == name
        and el not in above
        and length.paragraphs(el) >= _MIN_PARAGRAPH_CHARS
        and not any(a is best for a in el.iterancestors())
    ]
    if not parts:
        return best
    common = best
    for part in parts:
        holders = set(part.iterancestors())
        while common is not frame and common not in holders:
            common = common.getparent()
    return common


def _in_parts(best: Any, length: _Lengths) -> bool:
    """Whether a sibling of ``best`` of its tag and class holds a scored paragraph: a
    story set in more than one box (the lead in an ``<article>`` of its own)."""
    parent = best.getparent()
    return parent is not None and any(
        el is not best
        and el.tag == best.tag
        and el.get("class") == best.get("class")
        and length.paragraphs(el) > 0
        for el in parent
    )


#: what a page sets above a story (the headline, the byline): lxml's tags and trafilatura's
_HEADERS = frozenset({"header", "head", "h1", "h2", "h3", "h4", "h5", "h6"})


def _chrome(frame: Any, best: Any, length: _Lengths) -> tuple[int, int, int]:
    """The text outside ``best`` in boxes whose class or id names boilerplate, and in the
    other headers and headings, less their links (counted already); and the scored
    paragraphs' text in those boxes (reader comments, cards of related stories). A box
    that holds ``best`` is looked into, not counted."""
    above = set(best.iterancestors())
    named = headers = paragraphs = 0
    stack = [c for c in frame if isinstance(c.tag, str)]
    while stack:
        el = stack.pop()
        if el is best:
            continue
        if el not in above and _names_boilerplate(el):
            named += length(el) - length.links(el)
            paragraphs += length.paragraphs(el)
        elif el not in above and el.tag in _HEADERS:
            headers += length(el) - length.links(el)
        else:
            stack.extend(c for c in el if isinstance(c.tag, str))
    return named, headers, paragraphs
