"""Main-content extraction: an HTML page -> title, clean markdown and plain text.

Pure module: no Scrapy, no database, no I/O. The heavy dependency (trafilatura, ~0.3 s to
import) is imported lazily on the first :func:`extract` call, so importing this module
is cheap. This module orchestrates; each step lives in its own pure module:

1. bytes are decoded with :func:`~knowledge_crawler.transform.decode.decode_html`
   (header charset, BOM, ``<meta>``, else strict UTF-8, else statistical detection);
2. the page is parsed once with lxml; title (:mod:`~knowledge_crawler.transform.title`)
   and declared language (:mod:`~knowledge_crawler.transform.language`) are read from
   that tree, then a cheap pre-pass drops subtrees that are never content (scripts,
   styles, media, form controls, ``<head>``) so trafilatura's whole-tree passes have
   less to walk;
3. trafilatura's main extractor runs in *fast* mode (no readability/jusText
   comparison pass, which is where most of its time goes) with *recall* focus, on
   our tree without copying it first; its slowest XPath selections are replaced by
   equal ones that do not call back into Python per element
   (:mod:`~knowledge_crawler.transform.fastpaths`), and a tree copy that only the
   comparison pass reads is skipped, as is the copy of the raw tree when the page's
   HTML is at hand (the one fallback that reads the raw tree gets the page parsed
   again);
4. the extracted element tree is rendered by our own serializer
   (:mod:`~knowledge_crawler.transform.render`) into markdown (headings, paragraphs,
   lists, tables, code blocks; link and image URLs and inline emphasis dropped so that
   the text is stable and token-cheap) and into plain text; the headline is dropped (it
   is ``Extraction.title``), and so are a kicker above it, pull quotes, lines that only
   date the page and the lines that close a story (:func:`_story_blocks`).

Measurements are in ``docs/extraction.md``. :func:`extract` never raises on junk HTML:
it returns an :class:`Extraction` with empty markdown instead. ``decode_html`` and
``looks_like_html`` are re-exported here for existing importers.

:func:`extract_selected` is the other way in, for a page whose main content a per-site
spider names with a CSS or XPath selector: steps 1 and 2 as above, then the matched
elements instead of steps 3-4, rendered by the same serializer
(:func:`~knowledge_crawler.transform.render.html_blocks`); of step 4's drops, only a
leading heading that is the title applies to them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from knowledge_crawler.transform import fastpaths
from knowledge_crawler.transform._text import WORD_RE, norm, squash
from knowledge_crawler.transform.clean import clean_text
from knowledge_crawler.transform.decode import (
    decode_html,
    decode_html_utf8,
    holds_html_tags,
    looks_like_html,
)
from knowledge_crawler.transform.focus import boilerplate_box, narrow
from knowledge_crawler.transform.language import declared_language, guess_language
from knowledge_crawler.transform.prepass import HEADINGS, NEVER_CONTENT, prune
from knowledge_crawler.transform.pullquotes import pull_quotes
from knowledge_crawler.transform.render import (
    Block,
    collect_blocks,
    html_blocks,
    markdown_headings,
    markdown_to_text,
    render_markdown,
    render_text,
)
from knowledge_crawler.transform.selector import select_elements
from knowledge_crawler.transform.stamps import (
    credit_line,
    dated_line,
    label_line,
    name_line,
    timestamp_line,
    timestamp_lines,
)
from knowledge_crawler.transform.title import page_title
from knowledge_crawler.transform.trailers import closing_lines, republished_line, story_end

if TYPE_CHECKING:
    import re

    from lxml.html import HtmlElement

__all__ = [
    "Extraction",
    "decode_html",
    "extract",
    "extract_selected",
    "extract_tree",
    "looks_like_html",
    "parse_page",
    "stored_form",
]


@dataclass(frozen=True, slots=True)
class Extraction:
    """What :func:`extract` found on one page."""

    title: str | None
    """From og:title, the first ``<h1>`` or ``<title>`` (site-name suffix removed)."""
    markdown: str
    """Main content as markdown, without link or image URLs; ``""`` if none found."""
    text: str
    """The same content as plain text, paragraphs separated by blank lines."""
    headings: tuple[str, ...]
    """Text of the headings inside the main content, in document order."""
    word_count: int
    """Number of ``\\w+`` tokens in :attr:`text`."""
    language: str | None
    """Primary language subtag (``"en"``, ``"pt"``, ...) or ``None`` if unknown."""

    def cleaned(self, patterns: Iterable[re.Pattern[str]] = ()) -> Extraction:
        """This page as the crawl stores it, both forms saying the same thing.

        :attr:`markdown` goes through :func:`~knowledge_crawler.transform.clean.clean_text`
        (with a source's ``boilerplate`` ``patterns``); :attr:`text`, :attr:`headings`
        and :attr:`word_count` are then derived from that cleaned markdown, so a banner
        that cleaning removed is gone from every field (see :func:`stored_form`).
        """
        markdown, headings, words = stored_form(self.markdown, self.headings, patterns)
        if markdown == self.markdown:
            return self
        text = markdown_to_text(markdown)
        return replace(self, markdown=markdown, text=text, headings=headings, word_count=words)


def stored_form(
    markdown: str, headings: Iterable[str], patterns: Iterable[re.Pattern[str]] = ()
) -> tuple[str, tuple[str, ...], int]:
    """Markdown as stored (cleaned), the headings it still has, and its word count.

    The word count is that of the plain-text form (list numbers and markup are not
    words), so the crawl and :meth:`Extraction.cleaned` agree.

    >>> stored_form("## Intro\\n\\n1. one\\n\\nSkip to content", ["Intro"])
    ('## Intro\\n\\n1. one', ('Intro',), 2)
    """
    cleaned = clean_text(markdown, patterns)
    left = Counter(markdown_headings(cleaned))
    kept: list[str] = []
    for heading in headings:
        if left[heading] > 0:
            left[heading] -= 1
            kept.append(heading)
    words = len(WORD_RE.findall(markdown_to_text(cleaned)))
    return cleaned, tuple(kept), words


_STATE: dict[str, Any] = {}


def _options() -> Any:
    """trafilatura's extraction options, built once (lazy import)."""
    opts = _STATE.get("options")
    if opts is None:
        import logging

        from trafilatura.settings import Extractor

        logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
        logging.getLogger("htmldate").setLevel(logging.CRITICAL)
        _speed_up_forum_check()
        _skip_unused_backup()
        _spare_raw_tree()
        _keep_reference_tables()
        _keep_parameter_lists()
        _keep_repeated_code()
        fastpaths.install()
        _focus_broad_frames()
        opts = Extractor(
            output_format="markdown",
            fast=True,
            recall=True,
            comments=False,
            formatting=True,
            tables=True,
            links=False,
            images=False,
        )
        _STATE["options"] = opts
    return opts


def _speed_up_forum_check() -> None:
    """Give trafilatura's forum-page check a faster equal.

    Before extracting, trafilatura looks for schema.org forum posts in the page's
    JSON-LD scripts with ``iterfind('.//script[@type="application/ld+json"]')``, whose
    predicate ElementPath tests in Python on every element of the page (3-4% of a
    page's stages). ``iter("script")`` finds the same elements in lxml's C code; the
    test of each is trafilatura's own. Left alone if trafilatura's internals differ
    (``tests/unit/test_extract.py`` checks it is in place and gives the same answers).
    """
    import trafilatura.core as core

    original = getattr(core, "_forum_thread_page", None)
    pattern = getattr(core, "_DISCUSSION_FORUM_POSTING_RE", None)
    if original is None or pattern is None or getattr(original, "_kc_fast", False):
        return

    def forum_thread_page(tree: HtmlElement) -> bool:
        return any(
            script.get("type") == "application/ld+json"
            and script.text
            and pattern.search(script.text) is not None
            for script in tree.iter("script")
        )

    forum_thread_page._kc_fast = True  # type: ignore[attr-defined]
    forum_thread_page.__wrapped__ = original  # type: ignore[attr-defined]
    core._forum_thread_page = forum_thread_page


def _skip_unused_backup() -> None:
    """Spare trafilatura a whole-tree copy that our options never read.

    ``_prepare_tree`` returns the cleaned tree and a copy of it from before tag
    conversion; only the readability/jusText comparison (not run in *fast* mode) and
    comment extraction (off) read that copy. With those options the copy is skipped
    (``None`` in its place), and the tree is cleaned by :func:`_fast_tree_cleaning`'s
    equal of trafilatura's ``tree_cleaning`` (if there is one); any other options get
    trafilatura's own function.
    """
    from copy import copy

    import trafilatura.core as core
    from trafilatura.htmlprocessing import convert_tags, tree_cleaning

    original = getattr(core, "_prepare_tree", None)
    if original is None or getattr(original, "_kc_fast", False):
        return
    cleaning = _fast_tree_cleaning() or tree_cleaning

    def prepare_tree(tree: HtmlElement, options: Any, url: str | None) -> tuple[Any, Any]:
        if not options.fast or options.comments:
            return original(tree, options, url)  # type: ignore[no-any-return]
        raw = _RAW.get()
        if raw is None or raw.tree is not tree:
            tree = copy(tree)
        elif raw.taken:  # prepared twice: trafilatura reads the raw tree after all
            raise _RawTreeNeeded
        else:
            raw.taken = True  # cleaned in place (see _spare_raw_tree)
        return convert_tags(cleaning(tree, options), options, url), None

    prepare_tree._kc_fast = True  # type: ignore[attr-defined]
    prepare_tree.__wrapped__ = original  # type: ignore[attr-defined]
    core._prepare_tree = prepare_tree


class _RawTreeNeeded(BaseException):
    """trafilatura reads a raw tree that its cleaning took without a copy (see
    :func:`_spare_raw_tree`). A ``BaseException``: trafilatura's ``except Exception``
    around its fallbacks must not swallow it."""


class _RawTree:
    """The raw tree of the extraction under way, which trafilatura's cleaning may take
    without a copy, and whether it has."""

    __slots__ = ("taken", "tree")

    def __init__(self, tree: HtmlElement) -> None:
        self.tree = tree
        self.taken = False


_RAW: ContextVar[_RawTree | None] = ContextVar("kc_raw_tree", default=None)

#: SHA-256 (first 16 hex digits) of the source of trafilatura's ``trafilatura_sequence``
#: that :func:`_spare_raw_tree` was checked against (trafilatura 2.3.1)
_SEQUENCE_SOURCE = "f03dc4d2946dacbd"


def _spare_raw_tree() -> None:
    """Let trafilatura clean the raw tree itself instead of a copy of it: the copy costs
    0.2 ms a page, and on the raw tree trafilatura's passes find the element objects
    that :func:`extract_tree` holds instead of making new ones (0.35-0.5 ms in all).

    ``trafilatura_sequence`` cleans a copy of the whole tree and keeps the original for
    what reads it afterwards; with our options (fast, no comments, recall focus) that is
    only the baseline fallback (a page whose extraction is short: about 1 in 100), which
    :func:`_main_content` then runs on a tree built again from the page's HTML (when it
    has it) as if the copy had been made. ``baseline`` is wrapped to say when it is
    given the taken tree. Installed only while ``trafilatura_sequence`` is the one this
    was checked against (its source's hash); otherwise the copy is always made.
    """
    import inspect
    from hashlib import sha256

    import trafilatura.core

    core: Any = trafilatura.core  # its names, looked up as its trafilatura_sequence does
    original = getattr(core, "baseline", None)
    sequence = getattr(core, "trafilatura_sequence", None)
    prepare = getattr(core, "_prepare_tree", None)
    if original is None or sequence is None or not getattr(prepare, "_kc_fast", False):
        return
    if getattr(original, "_kc_fast", False):
        return
    try:
        source = inspect.getsource(sequence)
    except (OSError, TypeError):  # pragma: no cover - no source to compare
        return
    if sha256(source.encode()).hexdigest()[:16] != _SEQUENCE_SOURCE:
        return

    def baseline(filecontent: Any) -> Any:
        raw = _RAW.get()
        if raw is not None and raw.taken and filecontent is raw.tree:
            raise _RawTreeNeeded
        return original(filecontent)

    baseline._kc_fast = True  # type: ignore[attr-defined]
    baseline.__wrapped__ = original  # type: ignore[attr-defined]
    core.baseline = baseline
    _STATE["spare_raw_tree"] = True


def _focus_broad_frames() -> None:
    """Narrow every frame of trafilatura's frame cascade to the article inside it, and
    try the page's article element before recovering every paragraph of the page.

    trafilatura's last two frame expressions (``BODY_XPATH[3]``: a class or id saying
    ``content``; ``[4]``: one starting with ``main``, or ``<main>``) often take a whole
    page column, teasers and tickers included; the first three (an article's box,
    ``<article>``, a story's box) less often, a box of comments or other stories inside
    the story's; when no frame gives enough text, it recovers every paragraph of the
    page, comments and footers included.
    :func:`~knowledge_crawler.transform.focus.narrow` finds the element that holds the
    article inside such a frame (or inside ``<body>``, as a last frame tried before that
    recovery), and only when it clearly does. Installed once, when the two expressions
    are still the ones :mod:`~knowledge_crawler.transform.fastpaths` replaced (so their
    place in the cascade is known); otherwise trafilatura's cascade is left as it is.
    """
    import trafilatura.xpaths as xp

    cascade: list[Any] = xp.BODY_XPATH  # trafilatura types it list[XPath]; any callable goes
    if any(isinstance(expr, _Narrowed | _Fullest | _ArticleOfPage) for expr in cascade):
        return
    names = [getattr(expr, "name", None) for expr in cascade]
    if names[3:] != ["BODY_XPATH[3]", "BODY_XPATH[4]"]:
        return
    for at in (0, 1, 2):
        cascade[at] = _Narrowed(_Fullest(cascade[at]))
    cascade[3] = _Narrowed(cascade[3])
    cascade[4] = _Narrowed(cascade[4])
    cascade.append(_ArticleOfPage())


class _Narrowed:
    """A frame expression whose frame is narrowed to the article inside it."""

    def __init__(self, expression: Callable[[Any], list[Any]]) -> None:
        self.__wrapped__ = expression  # what fastpaths.install and its tests look through
        self.name = getattr(expression, "name", repr(expression))

    def __call__(self, tree: Any) -> list[Any]:
        return [
            narrow(frame)
            for frame in self.__wrapped__(tree)[:1]
            if frame is not None and not boilerplate_box(frame)
        ]


#: a frame of fewer words than this is a box (a title block), when the same expression
#: finds another frame of :data:`_FULL_WORDS` words or more, :data:`_FULL_RATIO` as many
_BOX_WORDS = 50
_FULL_WORDS = 100
_FULL_RATIO = 3


class _Fullest:
    """A frame expression whose first frame, when it is a box of a few words (a title
    block classed ``title-article-content``), gives way to a later frame the same
    expression finds that holds the text (``primary-article-content``): trafilatura
    reads only the first, and with too little text there it goes on down the cascade,
    to a ``main-nav`` menu."""

    def __init__(self, expression: Callable[[Any], list[Any]]) -> None:
        self.__wrapped__ = expression
        self.name = getattr(expression, "name", repr(expression))

    def __call__(self, tree: Any) -> list[Any]:
        frames = self._frames(tree)
        if frames and frames[0] is not None:
            _join_continuations(frames[0])
        return frames

    def _frames(self, tree: Any) -> list[Any]:
        expression = self.__wrapped__
        frames = expression(tree)
        if not frames or frames[0] is None:
            return frames
        first = frames[0]
        words = _words_up_to(first, _BOX_WORDS)
        if words >= _BOX_WORDS:
            return frames
        test = getattr(expression, "test", None)  # a fastpaths.Selection keeps only the first
        candidates = getattr(expression, "candidates", None)
        later = (
            (el for el in candidates(tree) if el is not first and test(el))
            if test is not None and candidates is not None
            else iter(frames[1:])
        )
        for frame in later:
            if frame is None or first in frame.iterancestors() or frame in first.iterancestors():
                continue
            if _continuation(first, frame):
                return frames  # the story's first part: the rest joins it (_join_continuations)
            more = len(" ".join(frame.itertext()).split())
            if more >= _FULL_WORDS and more >= _FULL_RATIO * max(words, 1):
                return [frame, *(f for f in frames if f is not frame)]
        return frames


def _words_up_to(el: Any, most: int) -> int:
    """The words of ``el``'s text, counted up to ``most``: the frame of a story need not be
    read to its end to know it is no title box (every page asks)."""
    count = 0
    for text in el.itertext():
        count += len(text.split())
        if count >= most:
            return most
    return count


def _continuation(first: Any, later: Any) -> bool:
    """Whether ``later`` is a sibling of ``first`` of its tag and class: a part of the
    story ``first`` begins."""
    return (
        later.getparent() is first.getparent()
        and later.tag == first.tag
        and bool(first.get("class"))
        and later.get("class") == first.get("class")
    )


def _join_continuations(frame: Any) -> None:
    """Move into ``frame`` the content of its later siblings of the same tag and class:
    the rest of a story a page splits around a side rail or an ad (the Washington Post's
    two ``div.article_body``), of which trafilatura would read the first part only. A
    sibling that opens with a heading, or holds a headline or a header, is another story
    (a list of posts, a page that scrolls on to the next stories), not a part."""
    if not frame.get("class"):
        return
    for sibling in list(frame.itersiblings(frame.tag)):
        if not _continuation(frame, sibling):
            continue
        first = next((c for c in sibling if isinstance(c.tag, str)), None)
        if first is not None and first.tag in ("h1", "h2", "h3"):
            continue
        if next(sibling.iter("h1", "header"), None) is not None:
            continue  # a story of its own (a page that scrolls on to the next ones)
        if not "".join(sibling.itertext()).strip():
            continue
        if sibling.text and sibling.text.strip():
            if len(frame):
                last = frame[-1]
                last.tail = (last.tail or "") + " " + sibling.text
            else:
                frame.text = (frame.text or "") + " " + sibling.text
        for child in list(sibling):
            frame.append(child)  # its tail moves with it
        sibling.text = None


class _ArticleOfPage:
    """The last frame expression: the element holding the article inside ``<body>``, if
    one clearly does; no frame otherwise (trafilatura then recovers the page's text)."""

    name = "article of the page"

    def __call__(self, tree: Any) -> list[Any]:
        body = tree if tree.tag == "body" else next(tree.iter("body"), None)
        if body is None:
            return []
        found = narrow(body)
        return [] if found is body else [found]


#: SHA-256 (first 16 hex digits) of the source of trafilatura's ``tree_cleaning`` that
#: :func:`_fast_tree_cleaning` follows (trafilatura 2.3.1)
_TREE_CLEANING_SOURCE = "828e83a7393082de"


def _fast_tree_cleaning() -> Callable[[Any, Any], Any] | None:
    """trafilatura's ``tree_cleaning`` without its passes for tags the page lacks; None
    when trafilatura's function is not the one this copy follows (its source differs).

    It walks the whole tree once for each tag whose elements it deletes, some fifty
    (``aside``, ``footer``, ``form``, ``iframe``, ...), while a page has three or four
    of them, fewer still after the pre-pass
    (:func:`~knowledge_crawler.transform.prepass.prune`): 0.23 ms a page. One walk of lxml's
    finds which are there, and only those get their pass, in the same order. Deleting
    elements adds none, so a tag absent before the passes is absent at its turn too.
    Everything else is trafilatura's code as it is.
    """
    import inspect
    from copy import deepcopy
    from hashlib import sha256

    import trafilatura.htmlprocessing

    hp: Any = trafilatura.htmlprocessing  # its names, looked up as its tree_cleaning does
    try:
        source = inspect.getsource(hp.tree_cleaning)
    except (OSError, TypeError):  # pragma: no cover - no source to compare
        return None
    if sha256(source.encode()).hexdigest()[:16] != _TREE_CLEANING_SOURCE:
        return None

    def tree_cleaning(tree: HtmlElement, options: Any) -> Any:
        hp.recover_math(tree)
        cleaning_list, stripping_list = hp.MANUALLY_CLEANED.copy(), hp.MANUALLY_STRIPPED.copy()
        clean_forms = "form" in cleaning_list
        if clean_forms:
            cleaning_list.remove("form")
        if not options.tables:
            cleaning_list.extend(["table", "td", "th", "tr"])
        else:
            for elem in tree.iter("figure", "table"):
                if (
                    elem.find(".//table") is not None
                    if elem.tag == "figure"
                    else elem.get("role") in ("presentation", "none")
                ):
                    elem.tag = "div"
        if options.images:
            cleaning_list = [e for e in cleaning_list if e not in hp.PRESERVE_IMG_CLEANING]
            stripping_list.remove("img")
        hp.strip_tags(tree, stripping_list)
        tcopy = None
        if (
            options.focus == "recall"
            and tree.find(".//p") is not None
            and (
                "p" in cleaning_list
                or not any(
                    next(p.iterancestors(cleaning_list), tree) is tree for p in tree.iter("p")
                )
            )
        ):
            tcopy = deepcopy(tree)
        present = {element.tag for element in tree.iter(*cleaning_list)} if cleaning_list else ()
        for expression in cleaning_list:
            if expression in present:  # the only change: no pass for an absent tag
                for element in tree.iter(expression):
                    hp.delete_element(element)
        if tcopy is not None and tree.find(".//p") is None:
            tree = tcopy
        if clean_forms:
            hp._handle_forms(tree)
        return hp.prune_html(tree, options.focus)

    tree_cleaning.__wrapped__ = hp.tree_cleaning  # type: ignore[attr-defined]
    return tree_cleaning


def _keep_reference_tables() -> None:
    """Keep link-dense tables that are reference tables, not navigation.

    trafilatura deletes a table whose text is mostly link text as boilerplate (a menu
    laid out as a table). An index or cross-reference table (keyword, then links to
    where it is used) is as link-dense, but it has a header row and, in every body row,
    a cell with text and no link: a key the links are about. A menu has neither. Such a
    table is kept; any other goes by trafilatura's own test.
    """
    import trafilatura.main_extractor as main

    original = getattr(main, "link_density_test_tables", None)
    if original is None or getattr(original, "_kc_keep", False):
        return

    def link_density_test_tables(element: HtmlElement) -> bool:
        return bool(original(element)) and not _reference_table(element)

    link_density_test_tables._kc_keep = True  # type: ignore[attr-defined]
    link_density_test_tables.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(main, "link_density_test_tables", link_density_test_tables)  # noqa: B010


def _keep_parameter_lists() -> None:
    """Keep link-dense lists whose every item starts with its own text, not a link, and
    blocks whose only links are in-page links without text.

    trafilatura deletes a short list whose text is mostly short links as a menu. A
    parameter list (``name <string>``: a name, then a link to its type) is as link-dense,
    but each item begins with text that is not a link; a menu's items begin with one.
    It also deletes a short ``div`` whose links all lack text (it counts no link text,
    and takes that for a block of icon links). A DocBook callout list links each
    explanation back to its place in the code with an image (``<a href="#co1"><img>``):
    links that stay on the page and carry no text are markers, not navigation. Nor is a
    link inside code: a reference page links each type in a signature to where it is
    defined (gtk-doc's ``#define <a href="#NODE_IS_KEYED">NODE_IS_KEYED</a>``), and an
    entry that short (heading, signature, one sentence) was deleted whole.
    """
    import trafilatura.htmlprocessing as processing

    original = getattr(processing, "link_density_test", None)
    if original is None or getattr(original, "_kc_keep", False):
        return

    def link_density_test(element: HtmlElement, favor_precision: bool = False) -> Any:
        if next(element.iterdescendants("ref"), None) is None:
            return False, False  # no link: every test below (and trafilatura's) says so
        if element.tag == "list" and _parameter_list(element):
            return False, False
        if element.tag == "div" and _holds_reference_table(element):
            return False, False
        if element.tag == "div" and all(
            ((r.get("href") or "").startswith("#") and not "".join(r.itertext()).strip())
            or _in_code(r, element)
            for r in element.iter("ref")
        ):
            return False, False
        return original(element, favor_precision)

    link_density_test._kc_keep = True  # type: ignore[attr-defined]
    link_density_test.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(processing, "link_density_test", link_density_test)  # noqa: B010


def _keep_repeated_code() -> None:
    """Keep a code block whose text the page showed before.

    When trafilatura finds no frame element (DocBook, gtk-doc, texinfo) it collects the
    page's loose paragraphs, code and tables, and skips one whose text is part of what
    it collected already, to avoid repeating a block the main pass took. A reference
    page repeats code on purpose: the synopsis lists every signature, and each entry
    below shows its own again, with its parameters. Code blocks (a ``<pre>``, which the
    pre-pass gives a ``<code>`` inside) are compared by identity instead (a text no
    other element has); what the main pass took is still skipped, by trafilatura's
    record of the elements it consumed. Inline code is compared as before.
    """
    from itertools import count

    import trafilatura.main_extractor as main

    original = getattr(main, "_elem_text", None)
    if original is None or getattr(original, "_kc_keep", False):
        return
    serial = count()

    def elem_text(element: Any) -> str:
        text: str = original(element)
        if text and element.tag == "code" and element.find("code") is not None:
            return f"{text}\x00{next(serial)}"  # a <pre> (see prepass.prune), not inline code
        return text

    elem_text._kc_keep = True  # type: ignore[attr-defined]
    elem_text.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(main, "_elem_text", elem_text)  # noqa: B010


def _holds_reference_table(div: HtmlElement) -> bool:
    """A wrapper (DocBook's ``informaltable`` div) whose content is one reference table:
    the table's own test decides, not the link density of the wrapper."""
    children = [c for c in div if isinstance(c.tag, str)]
    return len(children) == 1 and children[0].tag == "table" and _reference_table(children[0])


def _in_code(link: HtmlElement, within: HtmlElement) -> bool:
    for up in link.iterancestors():
        if up.tag == "code":
            return True
        if up is within:
            return False
    return False


def _parameter_list(lst: HtmlElement) -> bool:
    """Two or more items, each with a word (not a number: "1.2." numbers a table of
    contents) before its first link."""
    items = [c for c in lst if c.tag == "item"]
    return (
        len(items) >= 1
        and len(items) == len(lst)
        and all(_LETTER.search(_lead_text(i)) for i in items)
    )


_LETTER = re.compile(r"[^\W\d_]")


def _lead_text(el: HtmlElement) -> str:
    """The text of ``el`` before its first link (``ref``), stripped."""
    parts: list[str] = []

    def walk(node: HtmlElement) -> bool:  # False once a link is reached
        if node.tag == "ref":
            return False
        parts.append(node.text or "")
        for child in node:
            if not walk(child):
                return False
            parts.append(child.tail or "")
        return True

    walk(el)
    return "".join(parts).strip()


def _reference_table(table: HtmlElement) -> bool:
    """A header row of ``th`` cells, then body rows each with a cell that has text and no
    link (``ref`` in trafilatura's tree, ``a`` before it); or, without a header, rows
    that each name a key (a short text, not a link) and say something of it: gtk-doc's
    parameter tables (``array`` | ``a <a>GArray</a>``)."""
    rows = [r for r in table.iter("tr") if next(r.iterancestors("table")) is table]
    if rows and all(_keyed_row(r) for r in rows):
        return True
    if len(rows) < 3 or not any(c.tag == "th" for c in rows[0]):
        return False
    for row in rows[1:]:
        cells = [c for c in row if c.tag in ("td", "th")]
        if len(cells) < 2:
            return False
        if not any(
            "".join(c.itertext()).strip() and c.find(".//ref") is None and c.find(".//a") is None
            for c in cells
        ):
            return False
    return True


#: a table's key cell has at most this many words (a parameter's or field's name)
_KEY_WORDS = 3


def _keyed_row(row: HtmlElement) -> bool:
    cells = [c for c in row if c.tag in ("td", "th", "cell")]
    if len(cells) < 2:
        return False
    key = "".join(cells[0].itertext()).split()
    if not key or len(key) > _KEY_WORDS or _has_link(cells[0]):
        return False
    return any("".join(c.itertext()).strip() for c in cells[1:])


def _has_link(el: HtmlElement) -> bool:
    return el.find(".//ref") is not None or el.find(".//a") is not None


#: bytes that are C0 control characters other than tab, newline and carriage return
_C0_CONTROLS = tuple(bytes([c]) for c in (*range(0, 9), 11, 12, *range(14, 32)))


def _without_controls(raw: bytes) -> bool:
    """Whether page bytes hold no C0 control character except tab, LF and CR.

    Then no ASCII-compatible decoding of them holds one either (in every such
    encoding, multi-byte ones included, a byte below 0x20 is that character and
    nothing else); UTF-16 and UTF-32 text has NUL bytes, so it is never taken for
    clean here. A ``memchr`` per control byte, at C speed: twice as fast as one pass
    of ``bytes.translate`` (which copies the page), far faster than a regular expression.
    """
    return not any(control in raw for control in _C0_CONTROLS)


def _parser() -> Any:
    """trafilatura's HTML parser settings, with lxml's C element-class lookup.

    ``lxml.html``'s own lookup is a Python callback run for every element object
    lxml creates (some 160 thousand on the dev set); it only tells form controls
    apart, which extraction drops anyway. Every element is an ``HtmlElement``.
    """
    parser = _STATE.get("parser")
    if parser is None:
        from lxml.etree import ElementDefaultClassLookup, HTMLParser
        from lxml.html import HtmlComment, HtmlElement, HtmlEntity, HtmlProcessingInstruction

        parser = HTMLParser(  # type: ignore[call-arg]  # (lxml-stubs lack default_doctype)
            collect_ids=False,
            default_doctype=False,
            encoding="utf-8",
            remove_comments=True,
            remove_pis=True,
        )
        parser.set_element_class_lookup(
            ElementDefaultClassLookup(
                element=HtmlElement,
                comment=HtmlComment,
                pi=HtmlProcessingInstruction,
                entity=HtmlEntity,
            )
        )
        _STATE["parser"] = parser
    return parser


def _parse(
    html: str, *, no_controls: bool = False, utf8: bytes | None = None
) -> HtmlElement | None:
    """The page's tree as trafilatura's ``load_html`` builds it from text.

    The same repairs (control characters, a doctype with a slash, a self-closing
    ``<html/>``), fallbacks and rejection of non-HTML, with three savings: the regular
    expression that removes control characters over the whole text is skipped when
    the caller knows there are none (``no_controls``, from :func:`_without_controls`
    and a check for U+FFFE/U+FFFF), elements get their class from :func:`_parser`,
    and when ``utf8`` is the text's UTF-8 encoding (the page's own bytes) and no
    repair changed the text, lxml parses those bytes: the same tree (the parser's
    encoding is UTF-8, which a ``<meta>`` charset does not override), without lxml
    converting the text first. ``tests/unit/test_extract.py`` compares the trees with
    ``load_html``'s.
    """
    from lxml.html import fromstring
    from trafilatura.utils import DOCTYPE_TAG, FAULTY_HTML, is_dubious_html, repair_faulty_html

    try:
        beginning = html[:50].lower()
        dubious = is_dubious_html(beginning)
        if no_controls and "\ufffe" not in html and "\uffff" not in html:
            if "doctype" in beginning:
                firstline, newline, rest = html.partition("\n")
                repaired = DOCTYPE_TAG.sub("", firstline, count=1)
                if repaired != firstline or not newline:
                    html = repaired + "\n" + rest
                    utf8 = None
            for line in html[:4096].splitlines()[:4]:
                if "<html" in line and line.endswith("/>"):
                    html = FAULTY_HTML.sub(r"\1>", html, count=1)
                    utf8 = None
                    break
            if utf8 is not None and _ASCII_SPACE_LEAD.match(html) is None:
                utf8 = None
        else:
            html = repair_faulty_html(html, beginning)
            utf8 = None
        source = html if utf8 is None else utf8
        parser = _parser()
        tree = None
        retried = False
        try:
            tree = fromstring(source, parser=parser)
        except ValueError:  # a text with an XML encoding declaration: parse its bytes
            tree = fromstring(html.encode("utf8", "surrogatepass"), parser=parser)
            retried = True
        except Exception:
            tree = None
        if (tree is None or len(tree) < 1) and not retried:
            tree = fromstring(html.encode("utf8", "surrogatepass"), parser=parser)
        if tree is not None and dubious and len(tree) < 2 and not _has_markup(html):
            return None
        return tree
    except Exception:
        return None


def _has_markup(html: str) -> bool:
    """Whether the start of a page holds an HTML tag (``<p``, ``<div``, ``<table`` ...).

    trafilatura rejects a text without "html" in its first 50 characters that parses to
    an element with fewer than two children, taking it for something other than HTML.
    A page that holds HTML tags is HTML, whatever wraps it: an SEC filing exhibit starts
    ``<DOCUMENT><TYPE>EX-99.1`` and lxml nests the whole page under ``<type>``."""
    return holds_html_tags(html[:4096].encode("utf-8", "replace"))


#: leading whitespace that ``lxml.html.fromstring``'s test for a whole document (``\s*``
#: then ``<html`` or ``<!doctype``) reads alike in text and in bytes: ASCII only
_ASCII_SPACE_LEAD = re.compile(r"[ \t\n\r\f\v]*(?!\s)")


def extract(html: str | bytes, *, url: str | None = None) -> Extraction:
    """Extract the main content of an HTML page.

    ``html`` may be text or raw bytes (decoded with :func:`decode_html`, without header
    information). Raises :class:`ValueError` only for other input types; junk HTML gives
    an :class:`Extraction` with empty markdown/text.
    """
    return extract_tree(parse_page(html), url=url, source=html)


def parse_page(html: str | bytes) -> HtmlElement | None:
    """The page parsed as :func:`extract` parses it; None for an empty or unparsable one.
    ``html`` as for :func:`extract`."""
    return _page_tree(html, "extract")


def extract_tree(
    tree: HtmlElement | None, *, url: str | None = None, source: str | bytes | None = None
) -> Extraction:
    """:func:`extract` of a page already parsed by :func:`parse_page`, which it changes
    (read anything else from the tree first). ``source``: the HTML ``tree`` was parsed
    from, if the caller has it (``parse_page(source)`` builds the same tree again): it
    spares the extraction a copy of the tree, made only for a rare fallback that can
    parse the page again instead."""
    if tree is None:
        return Extraction(None, "", "", (), 0, None)
    # Held until the end: while its elements' Python objects live, lxml hands them out
    # again instead of making and freeing one per element at every walk of the tree
    # (title, prune, trafilatura's passes on the raw tree), 0.15-0.2 ms a page.
    elements = list(tree.iter())
    title, declared = _page_facts(tree)
    blocks: list[Block] = []
    try:
        prune(tree)
        anchors = _heading_anchors(tree)
        repeats = _repeated_paragraphs(tree)
        body = _main_content(tree, url, None if source is None else lambda: _pruned(source))
        if body is not None:
            blocks = collect_blocks(body)
            if anchors and not any(b.kind == "h" for b in blocks):
                blocks = _restore_headings(blocks, anchors)
            if repeats:
                blocks = _restore_repeats(blocks, repeats)
    except Exception:  # RecursionError on absurdly deep trees, lxml errors, ...
        blocks = []
    del elements
    return _extraction(title, declared, _story_blocks(blocks, title))


def _pruned(html: str | bytes) -> HtmlElement:
    """The tree :func:`extract_tree` hands trafilatura, built again from the page."""
    tree = parse_page(html)
    if tree is None:  # pragma: no cover - it parsed the first time
        raise ValueError("the page no longer parses")
    prune(tree)  # what extract_tree does before trafilatura runs (the rest only reads)
    return tree


def extract_selected(html: str | bytes, selector: str) -> Extraction | None:
    """The page's main content as the elements ``selector`` matches, or None if none do.

    ``selector`` is CSS, or XPath when it starts with ``/`` or ``(``
    (:mod:`~knowledge_crawler.transform.selector`); every element it matches, outermost
    only, in document order, is rendered by
    :func:`~knowledge_crawler.transform.render.html_blocks`: headings, lists, tables and
    code keep their structure. Title and language come from the whole page, as in
    :func:`extract`, and a leading heading equal to the title is dropped likewise.
    None when the selector matches no element or only elements without text (the
    caller falls back to :func:`extract`). :class:`ValueError` for a bad selector or
    input that is neither text nor bytes.

    >>> page = ("<html><head><title>Guide</title></head><body><nav>Home</nav>"
    ...         "<main><h1>Guide</h1><p>Run <code>it</code>.</p></main></body></html>")
    >>> extract_selected(page, "main").markdown
    'Run it.'
    >>> extract_selected(page, "//article") is None
    True
    """
    tree = _page_tree(html, "extract_selected")
    if tree is None:
        return None
    elements = select_elements(tree, selector)  # before the facts: a bad selector raises
    if not elements:
        return None
    title, declared = _page_facts(tree)
    try:
        blocks = [b for el in elements for b in html_blocks(el, drop=NEVER_CONTENT)]
    except Exception:  # RecursionError on absurdly deep trees, lxml errors, ...
        return None
    result = _extraction(title, declared, _without_headline(blocks, title))
    return result if result.text else None


def _page_tree(html: str | bytes, caller: str) -> HtmlElement | None:
    """The page parsed, or None for an empty or unparsable one."""
    no_controls = False
    utf8 = None
    if isinstance(html, bytes | bytearray | memoryview):
        raw = bytes(html)
        no_controls = _without_controls(raw)
        html, same = decode_html_utf8(raw)
        if same and no_controls:
            utf8 = raw
    elif not isinstance(html, str):
        raise ValueError(f"{caller}() needs str or bytes, not {type(html).__name__}")
    if not no_controls and "\x00" in html:  # no_controls: no NUL byte, so no NUL
        html = html.replace("\x00", "")
    return _parse(html, no_controls=no_controls, utf8=utf8) if html.strip() else None


def _page_facts(tree: HtmlElement) -> tuple[str | None, str | None]:
    """The page's title and declared language (None each when it has none)."""
    try:
        title = page_title(tree)
    except Exception:
        title = None
    try:
        declared = declared_language(tree)
    except Exception:
        declared = None
    return title, declared


def _extraction(title: str | None, declared: str | None, blocks: list[Block]) -> Extraction:
    markdown = render_markdown(blocks)
    text = render_text(blocks)
    headings = tuple(b.text for b in blocks if b.kind == "h")
    language = declared or guess_language(text)
    return Extraction(
        title=title,
        markdown=markdown,
        text=text,
        headings=headings,
        word_count=len(WORD_RE.findall(text)),
        language=language,
    )


#: how many short headings (a section's name, a kicker) may stand before the headline
_BEFORE_HEADLINE = 2
_KICKER_WORDS = 8


def _headline_end(blocks: list[Block], title: str) -> int:
    """Where the body starts after the headline: the headline is metadata
    (``Extraction.title``), and so is a short heading or two above it (the section's
    name, a kicker), a short line with a date above it (a dateline), and a block above it
    that the text repeats after it (a teaser copy of the lead). 0 when no heading at the
    start is the title."""
    for at, block in enumerate(blocks[: _BEFORE_HEADLINE + 1]):
        if _is_headline(block, title):
            return at + 1
        if block.kind == "h" and len(block.text.split()) <= _KICKER_WORDS:
            continue
        if block.kind == "p" and (dated_line(block.text) or _breadcrumbs(block.text)):
            continue
        if not any(later.text == block.text for later in blocks[at + 1 :]):
            return 0
    return 0


#: what separates the steps of a breadcrumb trail ("Accueil > Actualités > ...")
_CRUMB = re.compile("\\s[>\u00bb\u203a]\\s")  # a greater-than sign or an angle quote
_CRUMBS_WORDS = 25


def _breadcrumbs(text: str) -> bool:
    """A breadcrumb trail: three steps or more of a short line ("Accueil > Actualités et
    humeurs > Décisions de l'AG"), the page's place in its site."""
    return len(_CRUMB.findall(text)) >= 2 and len(text.split()) <= _CRUMBS_WORDS


#: the label of a box of a story's key points, set above the story as a list
_HIGHLIGHTS = re.compile(
    r"(?:story\s+)?highlights|key\s+points|in\s+brief|at\s+a\s+glance"
    r"|das\s+wichtigste\s+in\s+kürze|auf\s+einen\s+blick|en\s+bref|l['\u2019]essentiel",
    re.IGNORECASE,
)


def _highlights_end(blocks: list[Block]) -> int:
    """Where the text starts after a box of the story's key points that opens it (CNN's
    "STORY HIGHLIGHTS" and its list): 0 when it does not open with one."""
    if len(blocks) < 2 or blocks[0].kind not in ("p", "h") or blocks[1].kind != "li":
        return 0
    if _HIGHLIGHTS.fullmatch(blocks[0].text.strip(" :")) is None:
        return 0
    end = 1
    while end < len(blocks) and blocks[end].kind == "li":
        end += 1
    return end


def _story_blocks(blocks: list[Block], title: str | None) -> list[Block]:
    """The automatic extraction's blocks without what is about the story rather than of
    it: the headline and a kicker above it (:func:`_headline_end`), a standfirst set as
    a heading or two right after it (:func:`_sentence_heading`), a byline, desk or
    credit line above the first paragraph (:func:`_name_lines`), pull quotes
    (:mod:`~knowledge_crawler.transform.pullquotes`), lines that only date the page
    (:mod:`~knowledge_crawler.transform.stamps`), drawn lines ("___"), the lines that
    close it (:mod:`~knowledge_crawler.transform.trailers`: paragraphs or quotes, as an
    author's note is often set as a quote) and what follows a late end of the story
    (:func:`~knowledge_crawler.transform.trailers.story_end`). A selector's elements
    (:func:`extract_selected`) are not guessed at: they lose only the headline."""
    blocks = _without_copies(blocks)
    start = _headline_end(blocks, title) if title else 0
    blocks = blocks[start:]
    for _ in range(2):
        if blocks and blocks[0].kind == "h" and _sentence_heading(blocks[0].text, bool(start)):
            blocks = blocks[1:]  # a standfirst set as a heading above the text
    blocks = blocks[_highlights_end(blocks) :]
    blocks = blocks[_name_lines(blocks) :]
    if blocks and blocks[0].kind == "p" and republished_line(blocks[0].text):
        blocks = blocks[1:]  # "This article originally appeared on ..."
    quotes = pull_quotes([b.text for b in blocks], [b.kind == "quote" for b in blocks])
    if quotes:
        blocks = [b for i, b in enumerate(blocks) if i not in quotes]
    blocks = [
        b
        for b in blocks
        if b.kind not in ("p", "li")
        or not (
            timestamp_line(b.text)
            or credit_line(b.text)
            or label_line(b.text)
            or _RULE.fullmatch(b.text) is not None
            or timestamp_lines(b.text)
        )
    ]
    run = len(blocks)  # where the paragraphs (and quotes) that end the text start
    while run and blocks[run - 1].kind in ("p", "quote"):
        run -= 1
    closing = closing_lines([b.text for b in blocks[run:]])
    blocks = blocks[: len(blocks) - closing] if closing else blocks
    return blocks[: story_end([b.text for b in blocks], [b.kind in ("p", "h") for b in blocks])]


#: a run of blocks that repeats, in order, blocks the text had before it, of this many
#: blocks and words or more, is the page's second copy of its text (a print or a mobile
#: version), not more of it
_COPY_BLOCKS = 3
_COPY_WORDS = 30
#: ... and a fifth of the text's words or more: a reference page repeats the parameter
#: lists of its functions, a shop page the features of two models
_COPY_SHARE = 0.2


def _without_copies(blocks: list[Block]) -> list[Block]:
    """``blocks`` without the runs that repeat an earlier run of them (see
    :data:`_COPY_BLOCKS`). A paragraph the page says twice alone stays twice
    (:func:`_restore_repeats` puts such paragraphs back)."""
    texts = [b.text if b.kind != "table" else _block_text(b) for b in blocks]
    if len(set(texts)) == len(texts):
        return blocks  # no block twice (most pages)
    total = sum(len(text.split()) for text in texts)
    first: dict[str, int] = {}
    for at, text in enumerate(texts):
        first.setdefault(text, at)
    copies: set[int] = set()
    at = 0
    while at < len(texts):
        earlier = first[texts[at]]
        if texts[at] and earlier < at:
            run = 0
            while at + run < len(texts) and earlier + run < at and texts[at + run]:
                if texts[at + run] != texts[earlier + run]:
                    break
                run += 1
            words = sum(len(texts[at + k].split()) for k in range(run))
            if run >= _COPY_BLOCKS and words >= max(_COPY_WORDS, _COPY_SHARE * total):
                copies.update(range(at, at + run))
                at += run
                continue
        at += 1
    return [b for at, b in enumerate(blocks) if at not in copies] if copies else blocks


#: a paragraph that is a drawn line ("___", "-----", "====="): AP's break between parts
_RULE = re.compile(r"\s*(?:_{3,}|-{3,}|={3,})\s*")


#: how many lines that only name someone may open the text
_NAME_LINES = 2
#: the fewest words of the paragraph that must follow such lines
_LEAD_WORDS = 15


def _name_lines(blocks: list[Block]) -> int:
    """How many paragraphs that only name someone or something open the text: a byline
    ("Von Gregory Lipinski"), a desk ("USA TODAY Sports", "ERFURTER STADTRAT"), a credit
    ("Courtesy G4", "Handout"), a source ("CNN"). Up to two lines of at most four words,
    each capitalised or a particle, no sentence punctuation, and a paragraph of 15 words
    or more after them; 0 otherwise (a text that opens with a short line and no such
    paragraph is left as it is)."""
    at = 0
    while at < _NAME_LINES and at + 1 < len(blocks) and blocks[at].kind == "p":
        if not name_line(blocks[at].text):
            break
        at += 1
    if at and (blocks[at].kind != "p" or len(blocks[at].text.split()) < _LEAD_WORDS):
        return 0
    return at


def _sentence_heading(text: str, after_headline: bool = False) -> bool:
    """A heading that is a sentence of :data:`_STANDFIRST_WORDS` words or more ending in a
    full stop: the standfirst a page sets as a heading ("Simon Wittenberg travels to the
    Eternal City ... exquisite whisky."), not a section's name (which ends in no stop,
    or asks a question). Right ``after_headline`` a heading that long is the deck
    whatever it ends with ("Are Urban Meyer and Nick Saban really closing practices
    because of agents?"): a section's name is shorter."""
    text = text.strip()
    return (after_headline or text.endswith(".")) and len(text.split()) >= _STANDFIRST_WORDS


_STANDFIRST_WORDS = 10


def _without_headline(blocks: list[Block], title: str | None) -> list[Block]:
    """``blocks`` without a first heading that is the title (``Extraction.title``)."""
    return blocks[1:] if blocks and title and _is_headline(blocks[0], title) else blocks


def _is_headline(block: Block, title: str) -> bool:
    return block.kind == "h" and _same_text(block.text, title)


#: how much of the text after a heading identifies where it stood (characters, without
#: whitespace: element boundaries put spaces in different places on the two sides)
_ANCHOR_CHARS = 36
#: shorter than this, the text after a heading is too common to place it
_ANCHOR_MIN = 10


def _heading_anchors(tree: HtmlElement) -> list[tuple[int, str, str]]:
    """(level, text, start of the text that follows it) of each heading of the page.

    Not the ``h1`` (the headline, which is :attr:`Extraction.title`), not a heading that
    is a link (a teaser, a table of contents) nor one whose text the page repeats
    ("Share" above and below an article): those are chrome. A heading followed at once
    by another one ("Details", then "xsltAddKey ()") stands before the same text.

    Read before trafilatura changes the tree: when it finds no frame element (DocBook,
    texinfo and gtk-doc put the text straight in ``<body>``) it collects the page's
    paragraphs, code and tables but none of its headings; :func:`_restore_headings`
    puts them back before the block they introduced.
    """
    found = []
    for h in tree.iter(*HEADINGS):
        if h.tag == "h1" or _linked(h):
            continue
        text = norm(" ".join(h.itertext()))
        if text:
            found.append((h, text))
    seen = Counter(text for _, text in found)
    anchors: list[tuple[int, str, str]] = []
    pending: list[tuple[int, str]] = []  # headings waiting for the next one's text
    for h, text in found:
        if seen[text] > 1:
            pending.clear()
            continue
        after, next_heading = _text_after(h)
        if len(after) >= _ANCHOR_MIN:
            anchors.extend((level, t, after) for level, t in pending)
            anchors.append((int(h.tag[1]), text, after))
            pending.clear()
        elif next_heading and not after:
            pending.append((int(h.tag[1]), text))
        else:
            pending.clear()
    return anchors


def _linked(h: HtmlElement) -> bool:
    """A heading that is (or sits in) a link: a teaser or a navigation entry."""
    if any(a.get("href") for a in h.iter("a")):
        return True
    return any(a.tag == "a" and a.get("href") for a in h.iterancestors())


class _Enough(Exception):
    pass


def _text_after(el: HtmlElement) -> tuple[str, bool]:
    """The first :data:`_ANCHOR_CHARS` characters of text after ``el`` in the document,
    whitespace removed, up to the next heading (found by walking forward from it, not
    through the whole page), and whether a heading ended the walk."""
    pieces: list[str] = []
    size = 0

    def add(text: str | None) -> None:
        nonlocal size
        if text and text.strip():
            pieces.append(text)
            size += len(text.strip())
            if size >= _ANCHOR_CHARS:
                raise _Enough

    def walk(node: HtmlElement) -> None:  # the node's own text and its descendants'
        if isinstance(node.tag, str):
            if node.tag in HEADINGS:
                raise _Enough(node)
            add(node.text)
            for child in node:
                walk(child)
                add(child.tail)

    node: HtmlElement | None = el
    heading = False
    try:
        while node is not None:
            add(node.tail)
            for sib in node.itersiblings():
                walk(sib)
                add(sib.tail)
            node = node.getparent()
    except _Enough as stop:
        heading = bool(stop.args)
    return squash("".join(pieces))[:_ANCHOR_CHARS], heading


def _restore_headings(blocks: list[Block], anchors: list[tuple[int, str, str]]) -> list[Block]:
    """``blocks`` with each heading of ``anchors`` before the block that starts with the
    text that followed it on the page, in page order (a heading whose text was not
    extracted is left out)."""
    starts = [squash(_block_text(b)) for b in blocks]
    out: list[Block] = []
    i = 0
    for level, text, after in anchors:
        for j in range(i, len(blocks)):
            if _anchored(starts[j], after):
                out.extend(blocks[i:j])
                out.append(Block("h", text, level=level))
                i = j
                break
    out.extend(blocks[i:])
    return out


#: a repeated paragraph shorter than this is a label ("Table of Contents", "Share"),
#: not a sentence of the text
_REPEAT_MIN_WORDS = 4


def _repeated_paragraphs(tree: HtmlElement) -> dict[str, list[str]]:
    """For each paragraph text the page has more than once: the start of the text after
    each of its paragraphs (see :func:`_text_after`), in page order.

    Read before trafilatura runs: when it finds no frame element, it collects loose
    paragraphs and skips one whose text it collected already, so a manual's tenth
    "For example, try the following" is lost; :func:`_restore_repeats` puts them back.
    """
    from lxml.etree import tostring

    seen: dict[str, list[HtmlElement]] = {}
    for para in tree.iter("p"):  # the source's text as it is: cheap, and repeats are alike
        raw = tostring(para, method="text", encoding=str, with_tail=False).strip()
        if raw:
            seen.setdefault(raw, []).append(para)
    repeats = {}
    for raw, paras in seen.items():
        text = norm(raw)
        if len(paras) > 1 and len(text.split()) >= _REPEAT_MIN_WORDS:
            repeats[text] = [_text_after(para)[0] for para in paras]
    return repeats


def _restore_repeats(blocks: list[Block], repeats: dict[str, list[str]]) -> list[Block]:
    """``blocks`` with each repeated paragraph the extraction kept at least once, but
    fewer times than the page has it, back in the places it stood: before the block
    that starts with the text that followed it (searched in page order), unless that
    block already follows it. A paragraph the extraction dropped every time (a repeated
    "Share" line) stays dropped."""
    kept = {b.text for b in blocks if b.kind == "p"}
    starts = [squash(_block_text(b)) for b in blocks]
    whole = "\x00".join(starts)
    before: dict[int, list[str]] = {}
    for text, afters in repeats.items():
        if text not in kept:
            continue
        missing = len(afters) - whole.count(squash(text))  # kept in any block, any form
        if missing <= 0:
            continue
        cursor = 0
        for after in afters:
            if len(after) < _ANCHOR_MIN:
                continue
            j = next((k for k in range(cursor, len(starts)) if _anchored(starts[k], after)), None)
            if j is None:
                continue
            cursor = j + 1
            if j and starts[j - 1].endswith(squash(text)):
                continue  # there already (as a paragraph, or the end of an item)
            before.setdefault(j, []).append(text)
            missing -= 1
            if missing == 0:
                break
    if not before:
        return blocks
    out: list[Block] = []
    for j, block in enumerate(blocks):
        out.extend(Block("p", text) for text in before.get(j, ()))
        out.append(block)
    return out


def _anchored(start: str, after: str) -> bool:
    """Whether a block whose squashed text is ``start`` is the one that followed an
    element whose following text was ``after`` (or is all of it, when short)."""
    return start.startswith(after) or (len(start) >= _ANCHOR_MIN and after.startswith(start))


def _block_text(b: Block) -> str:
    if b.kind == "table":
        return " ".join(c for r in (b.rows or []) for c in r)
    return b.text


def _same_text(a: str, b: str) -> bool:
    return WORD_RE.findall(a.casefold()) == WORD_RE.findall(b.casefold())


def _main_content(
    tree: HtmlElement, url: str | None, again: Callable[[], HtmlElement] | None = None
) -> Any:
    import trafilatura.core as core

    options = _options()
    if url:
        from copy import copy

        options = copy(options)
        options.url = options.source = url
    sequence = getattr(core, "trafilatura_sequence", None)
    if sequence is None:  # pragma: no cover - trafilatura's internals changed
        doc = core.bare_extraction(tree, options=options)
        return None if doc is None else getattr(doc, "body", None)
    # What bare_extraction does for our options, without its copy of the whole tree
    # (the tree is ours to change, see extract_tree) and without metadata.
    # ``again`` builds ``tree`` anew: trafilatura may then clean it without a copy
    # (_spare_raw_tree), and if it needs the raw tree after all, it runs on a new one.
    raw = None
    if again is not None and _STATE.get("spare_raw_tree") and options.focus != "balanced":
        raw = _RAW.set(_RawTree(tree))
    try:
        body, text, _comments, comments_text = sequence(tree, options, options.url)
    except _RawTreeNeeded:
        assert again is not None and raw is not None
        _RAW.reset(raw)
        raw = None
        body, text, _comments, comments_text = sequence(again(), options, options.url)
    finally:
        if raw is not None:
            _RAW.reset(raw)
    if len(text) < options.min_output_size and len(comments_text) < options.min_output_comm_size:
        return None
    return body
