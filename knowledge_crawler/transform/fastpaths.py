"""Faster equals of trafilatura's slowest whole-tree XPath selections (pure).

trafilatura finds boilerplate and the article container with XPath expressions whose
predicates call EXSLT ``re:test``: lxml runs each call in Python, once per candidate
element and attribute, so a page with a thousand ``<div>`` s pays thousands of
round trips from libxml2 into Python. On the dev set the five expressions below were
about 40 % of an extraction. Two plain ones (``contains(@class, ...)`` on a few tags,
no ``re:test``) are here too: libxml2 evaluates them over the whole tree three times
slower than a walk of those tags in Python.

Each :class:`Selection` here answers exactly what its XPath answers (the same
elements, in document order) with one walk in Python: lxml filters the tags in C,
the attribute tests are the same regular expressions (EXSLT ``re:test`` is Python's
``re.search``), and XPath's string value of a node set (``re:test(@id|@class, ...)``
tests only the attribute that comes first in the source) is kept. :func:`install`
puts them in place of the originals in trafilatura's lists (the lists are shared by
the modules that import them), after checking that the originals are the
expressions these were written from: if trafilatura changes them, nothing is
replaced and extraction stays correct, only slower. ``tests/unit/test_fastpaths.py``
compares every replacement with its original on real pages.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["Selection", "discards_class", "forget", "install", "remembered_search"]

Test = Callable[[Any], bool]


class Selection:
    """A callable ``selection(tree) -> list of elements`` like a compiled ``XPath``.

    Candidates are the descendants named ``tags`` (any element when ``None``), which
    lxml's ``iterdescendants`` finds in C (an XPath with predicates, even without
    ``re:test``, is three times slower); ``test`` decides for each. ``first`` keeps
    only the first match in document order (``(...)[1]``, or ``[1]`` on a step whose
    caller only takes the first result); ``also`` adds the elements of another
    selection (a union, in document order).
    """

    def __init__(
        self,
        name: str,
        original: Any,
        tags: tuple[str, ...] | None,
        test: Test,
        *,
        first: bool = False,
        also: Callable[[Any], list[Any]] | None = None,
    ) -> None:
        from lxml.etree import Element

        self.name = name
        self.original = original
        self.test = test
        self.first = first
        self.also = also
        self.tags: tuple[Any, ...] = (Element,) if tags is None else tags  # Element: no comments

    def candidates(self, tree: Any) -> Any:
        return tree.iterdescendants(*self.tags)

    def __call__(self, tree: Any) -> list[Any]:
        test = self.test
        if self.first:
            found = next((el for el in self.candidates(tree) if test(el)), None)
            result = [] if found is None else [found]
            if self.also is not None:
                extra = [el for el in self.also(tree) if el is not found]
                if extra:
                    result = _document_order(tree, result + extra)
            return result
        return [el for el in self.candidates(tree) if test(el)]

    def __repr__(self) -> str:
        return f"Selection({self.name})"


def _document_order(tree: Any, elements: list[Any]) -> list[Any]:
    wanted = set(elements)
    return [el for el in tree.iter() if el in wanted]


def _first_of(el: Any, a: str | None, b: str | None, names: tuple[str, str]) -> str:
    """XPath's string value of ``@a|@b`` given the element's values ``a`` and ``b`` of
    the two: the one that comes first in the source, or "" when it has neither."""
    if a is None:
        return b or ""
    if b is None:
        return a
    for key, value in el.items():
        if key in names:
            return str(value)
    return ""  # pragma: no cover - one of them is there


IC = ("id", "class")
IS = ("id", "style")


def remembered_search(pattern: str, flags: int = 0) -> Callable[[str], bool]:
    """``value -> re.search(pattern, value) is not None``, remembered per value: a page
    repeats its ids and classes (and sites share them), and a long alternation costs
    far more than a dict lookup."""
    search = re.compile(pattern, flags).search
    seen = _MEMOS.setdefault((pattern, flags), {})  # one per expression, however often planned

    def test(value: str) -> bool:
        found = seen.get(value)
        if found is None:
            found = search(value) is not None
            if len(seen) >= _MEMO:
                seen.clear()
            seen[value] = found
        return found

    return test


_MEMO = 8192  # values remembered per expression (a few hundred kB at most)
_MEMOS: dict[tuple[str, int], dict[str, bool]] = {}


def forget() -> None:
    """Empty the remembered answers (a benchmark times each page as if it came first)."""
    for seen in _MEMOS.values():
        seen.clear()


# -- the expressions, as trafilatura 2.3.1 writes them (xpaths.py) ----------------------


# The patterns of these two expressions are literals, tested with str methods (a regular
# expression costs several times more per new value; no memo needed).


def _mvp(value: str) -> bool:  # re:test(., 'mvp-post-add-(?:box|wrap)')
    return "mvp-post-add-box" in value or "mvp-post-add-wrap" in value


def _scroll(value: str) -> bool:  # re:test(., 'mvp-post-add-(?:box|wrap)|infinite-?scroll')
    return _mvp(value) or "infinite-scroll" in value or "infinitescroll" in value


def _comment(value: str) -> bool:  # re:test(., '^[Cc]omment(?!ary)')
    return value[:7] in ("comment", "Comment") and not value.startswith("ary", 7)


def _raw_tree_prune(xp: Any) -> list[Selection]:
    mvp, scroll = _mvp, _scroll

    def appended_articles(el: Any) -> bool:
        id_, cls = el.get("id") or "", el.get("class") or ""
        if not (scroll(id_) or scroll(cls)):
            return False
        return el.find(".//h1") is None or mvp(id_) or mvp(cls)

    def share_buttons(el: Any) -> bool:
        return "elementor-share-buttons" in (el.get("class") or "")

    tags = ("div", "section", "aside")
    return [
        Selection("RAW_TREE_PRUNE_XPATH[0]", xp[0], tags, appended_articles),
        Selection("RAW_TREE_PRUNE_XPATH[1]", xp[1], tags, share_buttons),
    ]


def _discard_image_elements(xp: Any) -> list[Selection]:
    def caption(el: Any) -> bool:
        get = el.get
        return "caption" in (get("id") or "") or "caption" in (get("class") or "")

    tags = ("div", "item", "list", "p", "section", "span")
    return [Selection("DISCARD_IMAGE_ELEMENTS[0]", xp[0], tags, caption)]


def _remove_comments_and_lists(xp: Any) -> list[Selection]:
    # _COMMENTS_ID is "[Cc]omment(?!ary)|comol", _COMMENTS_CLASS is
    # "^[Cc]omment(?!ary)|(?:article|post)-comments" (both inlined in the expression)

    def id_any(value: str) -> bool:  # '^(?:_COMMENTS_ID|disqus_thread|dsq-comments)'
        return _comment(value) or value.startswith(("comol", "disqus_thread", "dsq-comments"))

    def id_own(value: str) -> bool:  # '^(?:_COMMENTS_ID)'
        return _comment(value) or value.startswith("comol")

    def cls(value: str) -> bool:  # _COMMENTS_CLASS
        return _comment(value) or "article-comments" in value or "post-comments" in value

    def comments(el: Any) -> bool:
        id_ = el.get("id") or ""
        class_ok = cls(el.get("class") or "")
        if not (id_any(id_) or class_ok):
            return False
        return el.tag not in ("ol", "ul") or id_own(id_) or class_ok

    tags = ("div", "list", "section", "details", "ol", "ul")
    return [Selection("REMOVE_COMMENTS_AND_LISTS_XPATH[0]", xp[0], tags, comments)]


def _overall_discard(xp: Any, id_tokens: str, class_tokens: str) -> list[Selection]:
    cookie = remembered_search("cookie")
    by_id = remembered_search(id_tokens)
    by_class = remembered_search(class_tokens)

    def boilerplate(el: Any) -> bool:
        get = el.get
        id_, cls = get("id"), get("class")
        return (
            (id_ is not None and by_id(id_))
            or (cls is not None and by_class(cls))
            or ((id_ is not None or cls is not None) and cookie(_first_of(el, id_, cls, IC)))
            or "nav" in (get("role") or "").replace("N", "n")
            or get("data-lp-replacement-content") is not None
            or "MostPopularStories" in (get("data-component") or "")
        )

    hidden = remembered_search("hidden")
    reader_comments = remembered_search("reader-comments|akismet")
    hidden_class = remembered_search(
        "^hide-|comments-title|nocomments|-reply-|message|akismet|suggest-links|-hide-"
        "|hide-print| hidden| hide|noprint|notloaded"
    )

    def hidden_or_reply(el: Any) -> bool:
        get = el.get
        id_, cls, style = get("id"), get("class"), get("style")
        if id_ is None and style is None:  # most elements: a class or nothing
            if cls is not None and (
                cls == "comments-title" or hidden_class(cls) or cls.startswith("reply-")
            ):
                return True
            return bool(get("aria-hidden") == "true")
        if cls is not None and (cls == "comments-title" or hidden_class(cls)):
            return True
        if id_ is not None and reader_comments(id_):
            return True
        if style is not None and ("display:none" in style or "display: none" in style):
            return True
        return (
            (
                (id_ is not None or cls is not None)
                and _first_of(el, id_, cls, IC).startswith("reply-")
            )
            or ((id_ is not None or style is not None) and hidden(_first_of(el, id_, style, IS)))
            or get("aria-hidden") == "true"
        )

    tags = ("div", "item", "list", "p", "section", "span")
    return [
        Selection(
            "OVERALL_DISCARD_XPATH[0]",
            xp[0],
            tags,
            boilerplate,
        ),
        Selection(
            "OVERALL_DISCARD_XPATH[1]",
            xp[1],
            None,
            hidden_or_reply,
        ),
    ]


def _body(xp: Any, tokens: dict[str, str]) -> list[Selection]:
    containers = ("article", "div", "main", "section")
    art_id, art_class = remembered_search(tokens["art_id"]), remembered_search(tokens["art_class"])

    def article_body(el: Any) -> bool:
        get = el.get
        cls = get("class")
        id_ = get("id") or ""
        return (
            cls in ("post", "entry")
            or get("itemprop") == "articleBody"
            or id_ == "articleContent"
            or art_id(id_)
            or art_class(cls or "")
        )

    story_id, story_class = (
        remembered_search(tokens["story_id"]),
        remembered_search(tokens["story_class"]),
    )
    fulltext = remembered_search("fulltext", re.IGNORECASE)

    def story(el: Any) -> bool:
        get = el.get
        cls = get("class")
        id_ = get("id")
        return (
            get("role") == "article"
            or id_ in ("article", "story")
            or cls in ("postarea", "art-postcontent", "text", "cell", "story")
            or story_id(id_ or "")
            or fulltext(cls or "")
            or story_class(cls or "")
        )

    main_id, main_class = (
        remembered_search(tokens["main_id"]),
        remembered_search(tokens["main_class"]),
    )

    def main_content(el: Any) -> bool:
        get = el.get
        cls = get("class")
        id_ = get("id")
        return (
            id_ == "content"
            or cls == "content"
            or main_id(id_ or "")
            or main_class(cls or "")
            or "main-content" in (id_ or "").replace("C", "c").replace("M", "m")
            or "main-content" in (cls or "").replace("C", "c").replace("M", "m")
            or "page-content" in (cls or "").replace("C", "c").replace("P", "p")
        )

    def starts_main(el: Any) -> bool:
        get = el.get
        return (
            (get("class") or "").startswith("main")
            or (get("id") or "").startswith("main")
            or (get("role") or "").startswith("main")
        )

    def first_main(tree: Any) -> list[Any]:
        found = next(tree.iterdescendants("main"), None)
        return [] if found is None else [found]

    return [
        Selection("BODY_XPATH[0]", xp[0], containers, article_body, first=True),
        Selection("BODY_XPATH[2]", xp[2], containers, story, first=True),
        Selection("BODY_XPATH[3]", xp[3], containers, main_content, first=True),
        Selection(
            "BODY_XPATH[4]",
            xp[4],
            ("article", "div", "section"),
            starts_main,
            first=True,
            also=first_main,
        ),
    ]


# What each replaced expression must read like (whitespace collapsed), so that a
# trafilatura whose expression differs keeps its own.
def _source(xpath: Any) -> str:
    return " ".join(str(getattr(xpath, "path", "")).split())


def _fingerprint(xpath: Any) -> str:
    from hashlib import sha256

    return sha256(_source(xpath).encode()).hexdigest()[:16]


def _plan(xp: Any) -> list[tuple[list[Any], int, Selection]]:
    """(trafilatura list, index, replacement) for each expression to replace."""
    a = xp._alt
    tokens = {
        "art_id": a(xp._ARTICLE_CONTENT_ID_TOKENS),
        "art_class": a(xp._ARTICLE_CONTENT_CLASS_TOKENS),
        "story_id": a(xp._STORY_ID_TOKENS),
        "story_class": a(xp._STORY_CLASS_TOKENS),
        "main_id": a(xp._MAIN_CONTENT_ID_TOKENS),
        "main_class": a(xp._MAIN_CONTENT_CLASS_TOKENS),
    }
    plan: list[tuple[list[Any], int, Selection]] = []
    raw = _raw_tree_prune(xp.RAW_TREE_PRUNE_XPATH)
    plan += [(xp.RAW_TREE_PRUNE_XPATH, i, s) for i, s in enumerate(raw)]
    comments = _remove_comments_and_lists(xp.REMOVE_COMMENTS_AND_LISTS_XPATH)
    plan += [(xp.REMOVE_COMMENTS_AND_LISTS_XPATH, 0, comments[0])]
    overall = _overall_discard(
        xp.OVERALL_DISCARD_XPATH,
        a(xp._OVERALL_DISCARD_BOTH_TOKENS + xp._OVERALL_DISCARD_ID_TOKENS),
        a(xp._OVERALL_DISCARD_BOTH_TOKENS + xp._OVERALL_DISCARD_CLASS_TOKENS),
    )
    plan += [(xp.OVERALL_DISCARD_XPATH, i, s) for i, s in enumerate(overall)]
    images = _discard_image_elements(xp.DISCARD_IMAGE_ELEMENTS)
    plan += [(xp.DISCARD_IMAGE_ELEMENTS, 0, images[0])]
    body = _body(xp.BODY_XPATH, tokens)
    plan += [(xp.BODY_XPATH, i, s) for i, s in zip((0, 2, 3, 4), body, strict=True)]
    return plan


#: SHA-256 (first 16 hex digits) of the XPath source, whitespace collapsed, that each
#: replacement was written from (trafilatura 2.3.1)
EXPECTED_SOURCES: dict[str, str] = {
    "RAW_TREE_PRUNE_XPATH[0]": "77023cff86242dc8",
    "RAW_TREE_PRUNE_XPATH[1]": "3c7afe92279543d5",
    "REMOVE_COMMENTS_AND_LISTS_XPATH[0]": "ec1083e558ae70c0",
    "OVERALL_DISCARD_XPATH[0]": "d9e4b7d7125b4838",
    "OVERALL_DISCARD_XPATH[1]": "9abb7217d588fd5a",
    "DISCARD_IMAGE_ELEMENTS[0]": "271b5ef29bbc5bf0",
    "BODY_XPATH[0]": "8cab6e6e5b503a8d",
    "BODY_XPATH[2]": "3ac5a80dac974e64",
    "BODY_XPATH[3]": "a3befe41db4d28b9",
    "BODY_XPATH[4]": "bb974cd913d2443b",
}


def discards_class(token: str) -> bool:
    """Whether trafilatura deletes an element whose class is ``token`` as boilerplate
    (``OVERALL_DISCARD_XPATH``'s class test: a substring such as ``share-``, ``tags``,
    ``author``); False when trafilatura's token lists are not there."""
    test = _DISCARDS.get("class")
    if test is None:
        try:
            import trafilatura.xpaths as xp

            pattern = xp._alt(xp._OVERALL_DISCARD_BOTH_TOKENS + xp._OVERALL_DISCARD_CLASS_TOKENS)
            test = remembered_search(pattern)
        except (ImportError, AttributeError, TypeError, re.error):

            def test(value: str) -> bool:
                return False

        _DISCARDS["class"] = test
    return test(token)


_DISCARDS: dict[str, Callable[[str], bool]] = {}


def install() -> list[Selection]:
    """Put the replacements in trafilatura's lists; the ones installed (possibly none).

    Idempotent. An expression is replaced only if trafilatura's XPath still reads as
    the one its replacement was written from (:data:`EXPECTED_SOURCES`). A replacement
    that another step wrapped since (its ``__wrapped__``, as ``functools.wraps`` sets)
    counts as installed and stays wrapped.
    """
    from inspect import unwrap

    try:
        import trafilatura.xpaths as xp

        plan = _plan(xp)
    except (ImportError, AttributeError, IndexError, re.error, ValueError):
        return []
    installed: list[Selection] = []
    for target, index, selection in plan:
        current = unwrap(target[index])
        if isinstance(current, Selection):
            installed.append(current)
            continue
        if _fingerprint(current) != EXPECTED_SOURCES.get(selection.name):
            continue
        target[index] = selection
        installed.append(selection)
    return installed
