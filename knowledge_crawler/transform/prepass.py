"""The pre-pass over a page's tree before trafilatura reads it (pure, lxml trees).

:func:`prune` drops what is never main content and page chrome set inside the text, and
keeps what trafilatura would lose (its docstring lists each rule). It changes the tree in
place and runs once a page, before the frame cascade; everything it does is a tag walk
(an XPath with a Python predicate would cost a callback per element).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from knowledge_crawler.transform._text import WORD_RE, norm
from knowledge_crawler.transform.fastpaths import discards_class
from knowledge_crawler.transform.menus import link_bar, separated
from knowledge_crawler.transform.teasers import drop_teasers

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["HEADINGS", "NEVER_CONTENT", "drop_keeping_tail", "prune"]


#: never main content; trafilatura deletes these too, but only after several whole-tree
#: XPath passes and copies, which are cheaper on a tree without them
NEVER_CONTENT = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "iframe",
    "object",
    "embed",
    "canvas",
    "video",
    "audio",
    "picture",
    "map",
    "link",
    "meta",
    "select",
    "button",
    "input",
    "textarea",
    "head",
)


def prune(tree: HtmlElement) -> None:
    """Cheap pre-pass: drop subtrees that are never main content (C-speed, one walk),
    and keep code that trafilatura would lose.

    * A heading's permalink (``<a href="#id">#</a>``, ``¶``, ``§``) is not part of
      the heading's text: it goes, and so does a wiki's "[edit]" link.
    * A ``<figure>`` holding a ``<pre>`` is a code listing (file name, code, caption),
      not an illustration: it becomes a ``<div>`` (trafilatura deletes figures, and
      keeps only those that hold a table). Its caption and file-name ``<span>`` become
      paragraphs: as loose children of a ``<div>`` trafilatura's main extractor drops them.
    * Links to other stories marked by a lead-in ("Related: <headline>", "You may also
      like..." and the headline links after it) go
      (:func:`~knowledge_crawler.transform.teasers.drop_teasers`).
    * A ``<pre>`` without ``<code>`` gets one around its content: trafilatura turns a
      bare ``<pre>`` that does not look like code into a quotation, and inside a list
      item collapses its lines; ``<pre><code>`` it keeps as a code block, line breaks
      and indentation included. A language class on the ``<pre>`` moves to the code.
    * Text after a ``<pre>`` (the rest of a paragraph the ``<pre>`` interrupted) becomes
      a paragraph: trafilatura drops a code block's tail.
    * Text loose in a container between its blocks (an article's first paragraph as bare
      text after a box) becomes a paragraph (:func:`_loose_text_to_paragraphs`).
    * An ``<a>`` without ``href`` is a link target, not a link: its tag goes, its text
      stays. trafilatura counts it as a link with no text, and deletes a short block
      (a DocBook note: ``<h3><a name="id1"></a>Note</h3><p>...</p>``) whose links all
      lack text as a link block.
    * A bar of links that all lead to the next, previous or parent page (``rel="next"``,
      ``"prev"``, ``"up"``: texinfo's "Next: ..., Previous: ..., Up: ..." above each node)
      goes.
    * A ``<table>`` classed as navigation (``navigation``, ``nav...``: gtk-doc's
      previous/up/next bar, a wiki's navbox) goes, as trafilatura deletes such a
      ``<div>``; its rule does not look at tables.
    * An element whose class names ``meta`` and that holds a table (Node.js
      ``api_metadata``: a version-history table) loses those class tokens: trafilatura
      deletes any ``meta`` class as a byline or date line, which never holds a table.
    * A menu set as a bar of links with separators ("Home | Video | World") goes
      (:mod:`~knowledge_crawler.transform.menus`).
    * Reader comments under an id or class in another language than English
      (``comentarios``, ``komentarze``) go, as trafilatura removes ``comment...``.
    * A caption set as an italic paragraph after an image's paragraph, a picture's box
      (a ``<div>`` classed ``picBox``, ``image``, ``foto`` ...) with its caption, and a
      card set inside a paragraph over a name (a photo and links), go
      (:func:`_image_chrome`).
    * A MathML formula becomes inline code of its TeX source (:func:`_math_to_tex`).
    * A line break that ends a bold or italic run moves after it
      (:func:`_break_out_of_inline`).
    * An ``<aside>`` that holds the page's one ``<h1>`` is the story's column: it
      becomes a ``<div>``, which trafilatura reads (:func:`_unaside_the_title`).
    * An ``<aside>`` of the document's footnotes (Sphinx's ``footnote-list``, pandoc's
      ``doc-endnotes``) becomes a ``<div>``: the notes are the text's own
      (:func:`_footnotes`).
    * A table that lays out the page (three rows at most, no header cell, a cell of 80
      words or more) becomes ``<div>`` s, a cell of inline text a ``<p>``
      (:func:`_unwrap_layout_tables`): a story set in a layout cell came out as one
      table cell, its paragraphs run together.
    * A story's lead set apart as a ``<div>`` of text alone or a ``<p>`` (``art-lead``,
      ``article__lead``, ``chapo``) right before the story's box becomes the box's first
      paragraph (:func:`_story_lead`): trafilatura read the box without it.
    * An id that is the slug of its element's heading loses it
      (:func:`_slug_of_heading`): Sphinx, Django's and Markdown renderers name a section
      by its heading, and a heading's words ("General recommendations for authors and
      translators", "For application authors") are not the role the same word in an id
      names elsewhere (an author's box, comments), for which trafilatura and this pass
      delete the whole section.
    """
    from lxml.etree import Element, strip_elements

    strip_elements(tree, *NEVER_CONTENT, with_tail=False)
    # one walk finds the elements of the steps below (none of them adds such an element;
    # one that a step removes is changed, if at all, outside the tree)
    found: dict[str, list[HtmlElement]] = {
        "math": [],
        "h1": [],
        "figure": [],
        "pre": [],
        "br": [],
        "aside": [],
        "fieldset": [],
        "label": [],
    }
    headings: list[HtmlElement] = []
    for el in tree.iter(
        "math", "h1", "figure", "pre", "br", "aside", "fieldset", "label", *_SUBHEADINGS
    ):
        (headings if el.tag in _SUBHEADINGS else found[el.tag]).append(el)
    _unform(found["fieldset"], found["label"])
    for br in found["br"]:
        _break_out_of_inline(br)
    for math in found["math"]:
        _math_to_tex(math)
    _unaside_the_title(found["h1"])
    for aside in found["aside"]:
        if _footnotes(aside):
            aside.tag = "div"
    drop_teasers(tree, drop_keeping_tail, headings)
    for link in [a for h in tree.iter(*HEADINGS) for a in h.iter("a")]:
        if _is_permalink(link):
            drop_keeping_tail(link)
        elif "action=edit" in (link.get("href") or ""):
            edit = link.getparent()  # MediaWiki's "[edit]": its span, brackets included
            if edit is not None and "editsection" in (edit.get("class") or ""):
                drop_keeping_tail(edit)
    for figure in found["figure"]:
        if figure.find(".//pre") is not None:
            figure.tag = "div"
            for child in figure:
                if child.tag in ("figcaption", "span") and (child.text_content() or "").strip():
                    child.tag = "p"
    for pre in found["pre"]:
        if pre.find(".//code") is not None:
            continue
        code = Element("code")
        language = pre.get("class") or ""
        if "language-" in language or "lang-" in language:
            code.set("class", language)
        code.text, pre.text = pre.text, None
        for child in list(pre):
            code.append(child)  # its tail moves with it
        pre.append(code)
    for pre in found["pre"]:
        if pre.tail and pre.tail.strip():
            _tail_to_paragraph(pre)
    _loose_text_to_paragraphs(tree)
    targets: list[HtmlElement] = []
    bars: dict[HtmlElement, None] = {}  # ordered set
    menus: dict[HtmlElement, None] = {}
    for link in tree.iter("a"):
        if link.get("href") is None:
            targets.append(link)
            continue
        if separated(link):
            menus[link.getparent()] = None
        rel = link.get("rel")
        if rel and _REL_NAVIGATION.intersection(rel.lower().split()):
            block = next((up for up in link.iterancestors(*_REL_NAVIGATION_BLOCKS)), None)
            if block is not None:
                bars[block] = None
    for menu in menus:
        if link_bar(menu) and menu.getparent() is not None:
            drop_keeping_tail(menu)
    for link in targets:
        link.drop_tag()
    for post in tree.iter("blockquote"):
        if not _EMBEDDED_POST.search(post.get("class") or ""):
            continue
        for el in (post, *post.iterancestors()):
            _drop_class_tokens(el, lambda token: _EMBED_TOKEN.search(token) is not None)
    for bar in bars:
        if _rel_navigation(bar) and bar.getparent() is not None:
            drop_keeping_tail(bar)
    for table in list(tree.iter("table")):
        if _navigation_class(table.get("class") or "") and table.getparent() is not None:
            drop_keeping_tail(table)
            continue
        for el in table.iterancestors():
            _drop_class_tokens(el, lambda token: "meta" in token)
    _unwrap_layout_tables(tree)
    # A walk in Python: with the elements' objects held (extract_tree), it takes two
    # thirds of the time of the XPath ``descendant-or-self::*[contains(@class, 'sidebar')]``
    # and the same walk finds reader comments named in other languages
    boxes = []
    comments = []
    text_boxes: list[HtmlElement] = []
    leads = []
    posts = []
    for el in tree.iter(Element):
        classes = el.get("class")
        if classes:
            if "sidebar" in classes:
                boxes.append(el)
            if "hentry" in classes:
                posts.append(el)
            if (
                ("lead" in classes or "chapo" in classes or "perex" in classes)
                and el.tag in _LEAD_TAGS
                and _LEAD_CLASS.search(classes)
            ):
                leads.append(el)
            if classes[0] in "cCkK" and _COMMENTS.match(classes) and el.tag in _COMMENT_BOXES:
                comments.append(el)
                continue
            if "recirc" in classes and not _holds_story(el):
                comments.append(el)  # a "recirculation" box: headlines of other stories
                continue
        tag = el.tag
        ident = el.get("id")
        if ident and _slug_of_heading(el, ident):
            del el.attrib["id"]  # a section named by its heading: its words are not a role
        if tag in _COMMENT_BOXES:
            if tag == "div" and (text := el.text) and len(text) >= _DIV_PARAGRAPH_CHARS:
                text_boxes.append(el)
            ident = el.get("id")
            if ident and (
                (ident[0] in "cCkK" and _COMMENTS.match(ident))
                or ("omment" in ident and _COMMENT_ID.search(ident) and not _holds_story(el))
            ):
                comments.append(el)
    for el in comments:
        if el.getparent() is not None:
            drop_keeping_tail(el)
    for el in posts:
        _drop_class_tokens(el, discards_class)
    if text_boxes:
        _text_boxes_to_paragraphs(tree, text_boxes)
    for el in leads:
        story = _story_lead(el) if el.getparent() is not None else None
        if story is not None:
            el.tag = "p"  # the story's first paragraph, read with the story
            if story.tag != "p":
                _move_to_front(el, story)
    for box in boxes:
        if _inline_box(box):
            for el in box.iter():
                _drop_class_tokens(el, lambda token: "sidebar" in token)
    for el in _section_metadata(tree):
        _drop_class_tokens(el, lambda token: "meta" in token)
        blocks = [c for c in el if isinstance(c.tag, str) and c.tag in _BLOCK_LEVEL]
        if el.tag == "div" and not blocks:
            el.tag = "p"  # a line of text: trafilatura's main pass skips a <div> of spans
    for el in _image_chrome(tree):
        if el.getparent() is not None:
            drop_keeping_tail(el)


#: what joins the words of an id made from a heading ("general-recommendations-for-authors")
_SLUG_SPLIT = re.compile(r"[-_.:]+")
#: the fewest words of such an id: one word ("comments", "sidebar") names a box
_SLUG_WORDS = 2
#: the words of the boxes a page names after their heading ("Related posts", "Reader
#: comments", "More from this author", "Leave a reply"), and the small words between
#: them: an id of these words only is the box's, not a section's
_CHROME_WORDS = frozenset(
    """
    related share sharing social author authors comment comments reply replies
    reader readers footer nav navigation menu sidebar ad ads advert advertisement
    widget newsletter subscribe subscription tags tag byline bio about posts post
    articles article stories story links link more popular recommended read also
    follow us discussion meta latest top trending news you may might like other from
    by this the a an of on in to and or with your our leave join see policy
    guidelines rules form box list area block info contact email print tools note
    notes credits
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def _slug_of_heading(el: HtmlElement, ident: str) -> bool:
    """Whether ``ident`` is the slug of the heading ``el`` is or opens (one of its first
    three children): two words or more, each a word of the heading (after a prefix the
    heading lacks: "s-for-application-authors", "section-..."), one of them at least
    not a word of the boxes pages name that way (:data:`_CHROME_WORDS`): "related-work"
    and "social-impact" are sections, "related-posts" and "reader-comments" boxes."""
    heading = el if el.tag in HEADINGS else None
    for child in el[:3] if heading is None else ():
        if isinstance(child.tag, str) and child.tag in HEADINGS:
            heading = child
            break
    if heading is None:
        return False  # (asked first: most elements with an id open no heading)
    words = [w for w in _SLUG_SPLIT.split(ident.lower()) if w and not w.isdigit()]
    if len(words) < _SLUG_WORDS or all(w in _CHROME_WORDS for w in words):
        return False
    have = set(WORD_RE.findall(heading.text_content().lower()))
    if words[0] not in have:
        words = words[1:]
    return (
        len(words) >= _SLUG_WORDS
        and all(w in have for w in words)
        and not all(w in _CHROME_WORDS for w in words)
    )


#: a cell of this many words or more holds a page's text, not a datum
_LAYOUT_CELL_WORDS = 80
#: the most rows of a layout table (a page's frame: a header, a body, a footer)
_LAYOUT_ROWS = 3
_TABLE_SECTIONS = frozenset({"thead", "tbody", "tfoot"})


def _unwrap_layout_tables(tree: HtmlElement) -> None:
    """A table that lays out the page rather than holding data becomes ``<div>`` s: one
    of :data:`_LAYOUT_ROWS` rows at most, whose own cells include one of
    :data:`_LAYOUT_CELL_WORDS` words or more, and no header cell. trafilatura renders a
    table as a table, and a story set in a layout cell (``<td>`` of ``<br>``-separated
    paragraphs) came out as one cell of one row, its paragraphs run together."""
    for table in list(tree.iter("table")):
        rows = [
            row
            for part in table
            for row in (part if part.tag in _TABLE_SECTIONS else (part,))
            if row.tag == "tr"
        ]
        if not rows or len(rows) > _LAYOUT_ROWS:
            continue  # rows of long cells: a list set as a table (DocBook's questions)
        cells = [cell for row in rows for cell in row if cell.tag in ("td", "th")]
        if not cells or any(cell.tag == "th" for cell in cells):
            continue
        if not any(len(cell.text_content().split()) >= _LAYOUT_CELL_WORDS for cell in cells):
            continue
        for el in (table, *(part for part in table if part.tag in _TABLE_SECTIONS), *rows):
            el.tag = "div"
        for cell in cells:
            inline = not any(
                isinstance(child.tag, str) and child.tag in _BLOCK_LEVEL for child in cell
            )
            # a cell of inline text is a paragraph: trafilatura skips a <div> of inline text
            cell.tag = "p" if inline and (cell.text_content() or "").strip() else "div"


def _holds_story(el: HtmlElement) -> bool:
    """Whether ``el`` holds the headline or an ``<article>``: then a name that says
    comments or recirculation is the page's layout, not a box to drop."""
    return next(el.iter("h1", "article"), None) is not None


def _break_out_of_inline(br: HtmlElement) -> None:
    """A line break that ends an inline element (``<strong>Stream und Anmeldung<br>
    </strong>Die Tagung ...``) moves after it: trafilatura loses a break at the end of a
    bold run, and the bold line ran into the paragraph after it."""
    parent = br.getparent()
    if parent is None or parent.tag not in _BREAKABLE_INLINE or br.getnext() is not None:
        return
    if (br.tail or "").strip() or not (parent.tail or "").strip():
        return
    br.tail, parent.tail = parent.tail, None  # the break's own tail was whitespace
    parent.addnext(br)


_BREAKABLE_INLINE = frozenset({"strong", "b", "em", "i", "span", "u"})


def _math_to_tex(math: HtmlElement) -> None:
    """A MathML formula becomes inline code of its TeX source (the ``application/x-tex``
    annotation or ``alttext`` Wikipedia gives every formula), or of its text: trafilatura
    deletes ``<math>``, and the formula's place in a sentence was left empty. The
    formula's wrapper goes with it (MediaWiki's hidden MathML and its fallback image)."""
    from lxml.etree import Element

    tex = next(
        (
            note.text
            for note in math.iter("annotation")
            if note.get("encoding") == "application/x-tex" and note.text
        ),
        None,
    ) or math.get("alttext")
    text = _DISPLAYSTYLE.sub(r"\1", tex.strip()) if tex else norm(math.text_content())
    target = math
    for up in math.iterancestors("span"):
        if "math" not in (up.get("class") or ""):
            break
        target = up
    parent = target.getparent()
    if parent is None or not text:
        return
    code = Element("code")
    code.text, code.tail = text, target.tail
    parent.replace(target, code)


#: the wrapper Wikipedia puts around each formula's TeX
_DISPLAYSTYLE = re.compile(r"^\{\\displaystyle\s*(.*)\}$", re.DOTALL)


def _text_boxes_to_paragraphs(tree: HtmlElement, boxes: list[HtmlElement]) -> None:
    """``<div>`` elements of text alone become paragraphs when they hold more text than
    the page's paragraphs: the page writes its paragraphs as ``<div>`` elements (Der
    Spiegel's ``dig-absatz``). trafilatura reads a ``<div>`` as a paragraph only in a
    frame whose ``<p>`` elements hold little text, so a box of a few ``<p>`` lines beside
    the story (an edition's imprint) made it drop the whole story."""
    in_boxes = sum(len(box.text_content()) for box in boxes)
    in_paragraphs = 0
    for p in tree.iter("p"):
        in_paragraphs += len(p.text_content())
        if in_paragraphs >= in_boxes:
            return  # the page's text is in paragraphs (counted only as far as needed)
    if in_paragraphs < _DIV_MODE_CHARS:
        return  # trafilatura reads the page's <div> elements as paragraphs itself
    # and every <div> of their classes, so that none of the paragraphs stays a <div>
    classes = {box.get("class") for box in boxes} - {None}
    more = [div for div in tree.iter("div") if div.get("class") in classes] if classes else []
    for box in (*boxes, *more):
        if not any(isinstance(c.tag, str) and c.tag in _BLOCK_LEVEL for c in box):
            box.tag = "p"


#: a class that names a story's lead ("lead", "art-lead", "article__lead"; the French
#: "chapô", "af-chapo"; the Czech "perex"), not a utility class that merely contains the
#: word ("leading-tight") or a "leader"
_LEAD_CLASS = re.compile(r"(?:^|[\s_-])(?:lead|chapo|perex)(?:$|[\s_-])")
_LEAD_TAGS = frozenset({"div", "p"})
#: the fewest words of a lead
_LEAD_MIN_WORDS = 12
#: how many of a lead's later siblings are looked at for the story it opens
_LEAD_SIBLINGS = 3
#: what a story's paragraph holds at least, and its box (characters)
_STORY_PARAGRAPH_CHARS, _STORY_CHARS = 80, 400


def _story_lead(lead: HtmlElement) -> HtmlElement | None:
    """Where a story's first paragraph, set apart as a ``<div>`` of text alone or a
    ``<p>`` and classed as the lead (``<div class="art-lead">``, ``<p class="af-chapo">``),
    belongs: the story right after it (one of its next :data:`_LEAD_SIBLINGS` siblings: a
    long paragraph, or a box of :data:`_STORY_CHARS` characters or more), or None.
    trafilatura skips a ``<div>`` of inline text, and reads the story's box without the
    lead beside it, so the story lost its opening. The lead must read as a paragraph
    (:data:`_LEAD_MIN_WORDS` words or more, ending a sentence); a "lead" box elsewhere (a
    newsletter offer above a form) stays as it is."""
    if any(isinstance(c.tag, str) and c.tag in _BLOCK_LEVEL for c in lead):
        return None
    text = lead.text_content().strip()
    if len(text.split()) < _LEAD_MIN_WORDS or text[-1] not in _SENTENCE_ENDS:
        return None
    for at, sibling in enumerate(lead.itersiblings()):
        if at == _LEAD_SIBLINGS:
            break
        if sibling.tag == "p" and len(sibling.text_content()) >= _STORY_PARAGRAPH_CHARS:
            return sibling
        if sibling.tag in _STORY_BOXES and len(sibling.text_content()) >= _STORY_CHARS:
            return sibling
    return None


_STORY_BOXES = frozenset({"div", "section", "article"})
_SENTENCE_ENDS = frozenset('.!?"”»)…')


#: the least text a ``<div>`` starts with for it to be looked at as a paragraph (characters)
_DIV_PARAGRAPH_CHARS = 80
#: below this much text in ``<p>`` elements, trafilatura reads ``<div>`` elements as
#: paragraphs (its ``MIN_EXTRACTED_SIZE`` 250, times 3 when not favouring precision)
_DIV_MODE_CHARS = 750


def _unaside_the_title(titles: list[HtmlElement]) -> None:
    """An ``<aside>`` that holds the page's one ``<h1>`` (``titles``: the page's ``<h1>``
    elements) holds the story, not a side note: it becomes a ``<div>`` (trafilatura
    deletes every ``<aside>``)."""
    if len(titles) != 1:
        return
    for el in titles[0].iterancestors("aside"):
        el.tag = "div"


#: the roles of a document's notes (WAI-ARIA DPUB): pandoc sets its endnotes so
_NOTE_ROLES = frozenset({"doc-endnotes", "doc-endnote", "doc-footnote"})


def _footnotes(aside: HtmlElement) -> bool:
    """An ``<aside>`` that holds the document's footnotes or one of them (Sphinx's
    ``footnote-list`` and ``footnote``, pandoc's ``doc-endnotes``): the text's own
    notes, which trafilatura would delete with every ``<aside>``."""
    if (aside.get("role") or "") in _NOTE_ROLES:
        return True
    return any(token.startswith("footnote") for token in (aside.get("class") or "").split())


#: the longest caption set as a paragraph (characters)
_CAPTION_MAX = 300


def _image_chrome(tree: HtmlElement) -> list[HtmlElement]:
    """What an image brings into the text that is not the text, in one walk over images:

    * a picture's box with its caption (:func:`_picture_box`);
    * a caption set as a paragraph of its own: a ``<p>`` wholly in italics (or small
      print) right after a ``<p>`` that holds only an image, as editors without a figure
      element write them; or the element right after an image or its box whose text is
      the image's alt text (of three words or more: AppleInsider's captions);
    * a card set inside a paragraph's text: a ``<span>`` holding an image and two links
      or more (The Hill shows one over each politician's name, with a photo and links to
      stories), which a browser shows only when the name is pointed at. The card is the
      nearest such ``<span>`` above the image; the name the text links stays.
    """
    found = []
    boxes: set[HtmlElement] = set()
    for img in tree.iter("img"):
        holder = img.getparent()
        if holder is None:
            continue
        box = _picture_box(img)
        if box is not None:
            if box not in boxes:
                boxes.add(box)
                found.append(box)
            continue
        alt = img.get("alt")
        if alt and len(alt.split()) >= _ALT_CAPTION_WORDS:
            caption = _alt_caption(img, norm(alt))
            if caption is not None:
                found.append(caption)
        if holder.tag == "p":
            caption = _caption_after(holder)
            if caption is not None:
                found.append(caption)
            continue
        if holder.tag != "span":
            continue  # a card holds its photo in a span of its own
        card = None
        for up in img.iterancestors():
            tag = up.tag
            if tag == "p":
                if card is not None:
                    found.append(card)
                break
            if tag in _NOT_INLINE:
                break
            if card is None and tag == "span" and _links(up) >= 2:
                card = up
    return found


def _picture_box(img: HtmlElement) -> HtmlElement | None:
    """The ``<div>`` an image sits in, with its caption, when its class says it is a
    picture's box (DW's ``picBox``, ``image-container``, ``foto``): the nearest ``<div>``
    above the image, if it holds no heading and some text, at most
    :data:`_BOX_CAPTION_WORDS` words."""
    box = next(img.iterancestors("div"), None)
    if box is None:
        return None
    classes = box.get("class")
    if not classes or not _picture_class(classes):
        return None
    if next(box.iter(*HEADINGS), None) is not None:
        return None
    words = len(box.text_content().split())
    return box if 0 < words <= _BOX_CAPTION_WORDS else None


def _picture_class(classes: str) -> bool:
    """Whether a class attribute names a picture's box: one of its words (split at spaces,
    hyphens and underscores) starts with a picture's name (``picBox``, ``image-wrap``,
    ``wp-caption``), or is ``bild``/``bilder``; a word that only holds one does not
    (``topic``, ``politische-bildung``)."""
    lowered = classes.lower()
    if not any(name in lowered for name in _PICTURE_NAMES):
        return False  # the common case, in C
    return any(
        part.startswith(_PICTURE_PREFIXES) or part in _PICTURE_WORDS
        for part in _CLASS_PARTS.split(lowered)
    )


#: what a picture's box is named by (not ``media``: Bootstrap's ``media-body`` is text)
_PICTURE_PREFIXES = ("pic", "image", "img", "photo", "foto", "caption", "figure")
_PICTURE_WORDS = frozenset({"bild", "bilder"})
_PICTURE_NAMES = (*_PICTURE_PREFIXES, "bild")
_CLASS_PARTS = re.compile(r"[\s_-]+")
#: the most words of a picture's box: its caption and credit
_BOX_CAPTION_WORDS = 30

#: the fewest words of an image's alt text that a caption repeating it is known by
_ALT_CAPTION_WORDS = 3
#: a caption holds its text and a few inline elements at most
_CAPTION_CHILDREN = 3


def _alt_caption(img: HtmlElement, alt: str) -> HtmlElement | None:
    """The element just after the image (or after its box, two levels up) whose text is
    the image's alt text: a caption."""
    box = img
    for _ in range(3):
        sibling = box.getnext()
        while sibling is not None and sibling.tag in ("br", "noscript"):
            sibling = sibling.getnext()
        if (
            sibling is not None
            and isinstance(sibling.tag, str)
            and len(sibling) <= _CAPTION_CHILDREN
            and norm(sibling.text_content()) == alt
        ):
            return sibling
        box = box.getparent()
        if box is None:
            return None
    return None


def _caption_after(holder: HtmlElement) -> HtmlElement | None:
    """The paragraph after an image's own paragraph, if it is a caption."""
    if _has_text(holder):
        return None
    caption = holder.getnext()
    if caption is None or caption.tag != "p" or (caption.text or "").strip():
        return None
    if len(caption) != 1 or caption[0].tag not in ("em", "i", "small"):
        return None
    if (caption[0].tail or "").strip():
        return None
    if 0 < len(caption.text_content().strip()) <= _CAPTION_MAX:
        return caption
    return None


#: what ends the search for a paragraph above an image
_NOT_INLINE = frozenset({"div", "li", "td", "section", "article", "body", "figure", "ul"})


def _links(el: HtmlElement) -> int:
    return sum(1 for a in el.iter("a") if a.get("href"))


def _has_text(el: HtmlElement) -> bool:
    return any(text.strip() for text in el.itertext())


#: reader comments named in other languages than English, as trafilatura names them in
#: English (an id or class starting ``comment``): Spanish, Portuguese and Catalan
#: ``comentarios``, Polish ``komentarze``, Czech, Slovak, Slovene, Croatian and Indonesian
#: ``komentare``/``komentar``
_COMMENTS = re.compile(r"comentari|komentar", re.IGNORECASE)
_COMMENT_BOXES = frozenset({"div", "section", "ol", "ul", "aside"})
#: an id naming reader comments after a prefix (``sf_comment_list``, ``articleComments``),
#: which trafilatura's ``comment...`` does not catch
_COMMENT_ID = re.compile(r"(?:^|[-_])comments?(?:$|[-_])|[a-z]Comments?(?:$|[-_A-Z])")

#: elements that end a run of inline content
_BLOCK_LEVEL = frozenset(
    {"p", "div", "pre", "ul", "ol", "dl", "table", "blockquote", "section", "article"}
    | {"aside", "header", "footer", "nav", "figure", "hr", "form", "main", "details"}
    | {"h1", "h2", "h3", "h4", "h5", "h6"}
)


#: loose text shorter than this (characters, stripped) is a separator, not a paragraph
_LOOSE_MIN = 25
#: the containers whose loose text between blocks is made a paragraph
_LOOSE_CONTAINERS = frozenset({"div", "section", "article", "main", "td"})


def _loose_text_to_paragraphs(tree: HtmlElement) -> None:
    """Text that sits loose in a container between its blocks (after a box the page
    set before the first paragraph, or before the first block) becomes a paragraph,
    with the inline elements that follow it up to the next block: trafilatura keeps
    only paragraphs of a frame that holds blocks, so an article whose first paragraph
    is bare text after a "related" box lost that paragraph."""
    from lxml.etree import Element

    tails = [
        el
        for el in tree.iter(*_BLOCK_LEVEL)
        if el.tail
        and len(el.tail.strip()) >= _LOOSE_MIN
        and (parent := el.getparent()) is not None
        and parent.tag in _LOOSE_CONTAINERS
    ]
    for el in tails:
        _tail_to_paragraph(el)
    for box in tree.iter(*_LOOSE_CONTAINERS):
        text = box.text
        if not text or len(text.strip()) < _LOOSE_MIN:
            continue
        if not any(isinstance(c.tag, str) and c.tag in _BLOCK_LEVEL for c in box):
            continue  # a box of text alone is read as one paragraph already
        para = Element("p")
        para.text, box.text = text, None
        for child in list(box):
            if isinstance(child.tag, str) and child.tag in _BLOCK_LEVEL:
                break
            para.append(child)  # its tail moves with it
        box.insert(0, para)


def _tail_to_paragraph(el: HtmlElement) -> None:
    """The text after a block (``<pre>`` closes an open ``<p>``, so the rest of the
    sentence is the ``<pre>``'s tail) becomes a paragraph of its own, with the inline
    elements that follow it up to the next block: trafilatura drops a code block's tail.
    """
    from lxml.etree import Element

    para = Element("p")
    para.text, el.tail = el.tail, None
    for sibling in list(el.itersiblings()):
        if isinstance(sibling.tag, str) and sibling.tag in _BLOCK_LEVEL:
            break
        para.append(sibling)  # its tail moves with it
    el.addnext(para)


_PERMALINK_TEXT = frozenset({"#", "¶", "§", "🔗"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_SUBHEADINGS = ("h2", "h3", "h4", "h5", "h6")


def _is_permalink(link: HtmlElement) -> bool:
    """A link (inside a heading) to an anchor of the page whose text is only a symbol."""
    if not (link.get("href") or "").startswith("#"):
        return False
    return "".join(link.itertext()).strip() in _PERMALINK_TEXT


#: a social network's post quoted in an article, as its embed code classes a blockquote
_EMBEDDED_POST = re.compile(r"twitter-tweet|twitter-video|instagram-media|tiktok-embed")
#: class tokens by which trafilatura takes an embed or its wrapper for a share widget
_EMBED_TOKEN = re.compile(r"embed|social|share|widget|tweet|twitter|instagram|tiktok", re.I)


#: the blocks a bar of links to the next/previous/parent page is (its innermost one)
_REL_NAVIGATION_BLOCKS = ("p", "div", "ul", "table")
_REL_NAVIGATION = frozenset({"next", "prev", "previous", "up", "index", "contents", "start"})
#: at most this many words outside the links ("Next:", "Previous:", "Up:")
_REL_NAVIGATION_WORDS = 6


def _rel_navigation(block: HtmlElement) -> bool:
    """A bar of links to the next, previous or parent page (``rel="next"`` ...), as
    texinfo writes above every node: every link says so, and there are two or more."""
    links = list(block.iter("a"))
    if len(links) < 2 or any(True for _ in block.iterdescendants(*_REL_NAVIGATION_BLOCKS)):
        return False
    for link in links:
        if not _REL_NAVIGATION.intersection((link.get("rel") or "").lower().split()):
            return False
    words = len(block.text_content().split()) - sum(len(a.text_content().split()) for a in links)
    return words <= _REL_NAVIGATION_WORDS


#: a box set in the text: at least this many words, and a paragraph of at least
#: :data:`_BOX_NEIGHBOUR_WORDS` right before or after it
_BOX_MIN_WORDS = 10
_BOX_NEIGHBOUR_WORDS = 8


def _inline_box(box: HtmlElement) -> bool:
    """A ``sidebar``-classed element that is a box in the text (DocBook's ``<sidebar>``:
    "BACK TO BASICS", "VOCABULARY"; a docs page's example box), not the page's side
    column: a paragraph of text is its neighbour, and it is text, not a list of links.
    The neighbours first: a side column rarely has one, and its text is long to read."""
    if not any(_paragraph(near) for near in (box.getprevious(), box.getnext()) if near is not None):
        return False
    words = len(box.text_content().split())
    if words < _BOX_MIN_WORDS:
        return False
    linked = sum(len(a.text_content().split()) for a in box.iter("a") if a.get("href"))
    return linked * 2 <= words


def _paragraph(el: HtmlElement) -> bool:
    if not isinstance(el.tag, str):
        return False
    if el.tag != "p" and "para" not in (el.get("class") or "").split():
        return False
    return len(el.text_content().split()) >= _BOX_NEIGHBOUR_WORDS


def _section_metadata(tree: HtmlElement) -> list[HtmlElement]:
    """``meta``-classed elements that open a section of the page, not the article: right
    after a heading (``h2``-``h6``, not the page's first) that is not a link. An API
    reference notes under each entry's heading when it was added ("Added in: v8.5.0");
    a byline follows the headline, and a teaser's date follows a heading that links to
    the teased page."""
    headings = [h for h in tree.iter("h2", "h3", "h4", "h5", "h6")]
    found = []
    for h in headings[1:]:
        el = h.getnext()
        if el is None or "meta" not in (el.get("class") or ""):
            continue
        if any(not (a.get("href") or "#").startswith("#") for a in h.iter("a")):
            continue
        found.append(el)
    return found


def _drop_class_tokens(el: HtmlElement, drop: Callable[[str], bool]) -> None:
    """Take the class tokens ``drop`` names off ``el`` (trafilatura's boilerplate rules
    read them), the others stay."""
    classes = el.get("class")
    if classes and any(drop(token) for token in classes.split()):
        el.set("class", " ".join(token for token in classes.split() if not drop(token)))


def _navigation_class(classes: str) -> bool:
    return any(
        token.startswith("nav") or "navigation" in token for token in classes.lower().split()
    )


def _move_to_front(el: HtmlElement, box: HtmlElement) -> None:
    """Move ``el`` (a block) to the start of ``box``, before the box's own text; the text
    that followed ``el`` stays where it was."""
    _keep_tail(el)
    el.tail, box.text = box.text, None
    box.insert(0, el)


def _unform(fieldsets: list[HtmlElement], labels: list[HtmlElement]) -> None:
    """A ``<fieldset>`` outside a form becomes a ``<div>``, and a ``<label>`` outside a
    form inside a list item gives way to its text: a recipe's checklist of ingredients
    and steps (a check box before each line) is set so, and trafilatura deletes both
    tags with their text, as parts of a form. A form's own go with the form."""
    for fieldset in fieldsets:
        if next(fieldset.iterancestors("form"), None) is None:
            fieldset.tag = "div"
    for label in labels:
        holder = next(label.iterancestors("form", "li"), None)  # the nearest of the two
        if (
            holder is not None
            and holder.tag == "li"
            and next(holder.iterancestors("form"), None) is None
        ):
            label.drop_tag()


def drop_keeping_tail(el: HtmlElement) -> None:
    """Remove ``el`` with its text, but not the text that follows it in its parent."""
    if el.getparent() is not None:
        _keep_tail(el)
        el.getparent().remove(el)


def _keep_tail(el: HtmlElement) -> None:
    """Hand the text after ``el`` to what stands before it, before ``el`` leaves its
    place. The block ``el`` was kept the words on its two sides apart: a space keeps them
    apart still ("Dateline" and "Loose words" around a box are not "DatelineLoose")."""
    tail, el.tail = el.tail, None
    parent = el.getparent()
    if not tail or parent is None:
        return
    previous = el.getprevious()
    before = parent.text if previous is None else previous.tail
    if before and el.tag in _BLOCK_LEVEL and not before[-1].isspace() and not tail[0].isspace():
        tail = " " + tail
    if previous is None:
        parent.text = (before or "") + tail
    else:
        previous.tail = (before or "") + tail
