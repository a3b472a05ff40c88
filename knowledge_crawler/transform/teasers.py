"""Links to other stories inside an article: "Related: <headline>" (pure, lxml trees).

News pages put links to other stories inside the article text, marked by a lead-in:
``<p><strong>Related: </strong><a href=...>Headline</a></p>``, or a line "You may also
like..." followed by paragraphs or a list of headline links. They are not the article
(benchmark labels leave them out), and an extractor that keeps paragraphs keeps them.

:func:`drop_teasers` removes, before extraction:

* a block whose text starts with a lead-in (:data:`LEAD_IN`: "Related", "Read more",
  "Now read", "You may also like", "More from ...", "Editors' Recommendations", "À lire
  aussi", "Leia também", "Lesen Sie auch", "Auch auf gofeminin.de" ...), or with a label of up
  to four words in capitals and a colon ("IN TEXAS:"), and whose remaining text is all
  link text, the lead-in again before each link aside ("STORY: <a>...</a><br>STORY:
  <a>...</a>");
* a block that holds only a lead-in, with the blocks right after it that are all
  link text (one headline link a paragraph, or a list of them);
* a list between two paragraphs whose every item is one link of three words or more
  (space.com's "Moon Rush: Private Lunar Lander Plans" after a paragraph);
* a paragraph that is one link of three words or more in capitals, as Fox sets the
  headline of another story between paragraphs ("CO-FOUNDER 'PROUD' OF HOME DEPOT
  EMPLOYEES ...", "GET FOX BUSINESS ON THE GO BY CLICKING HERE").

A block whose text after the lead-in is not all link text is prose ("Related research
shows ..."), and stays. "See also" ("Veja também", "Voir aussi" ...) is not a lead-in:
in documentation it introduces references that are part of the page.
"""

from __future__ import annotations

import re
from typing import Any

from knowledge_crawler.transform._text import norm, squash
from knowledge_crawler.transform.focus import MIN_PARAGRAPH, boilerplate_box, text_length

__all__ = ["LEAD_IN", "drop_teasers"]

#: lead-ins of links to other stories, at the start of a block's text
LEAD_IN = re.compile(
    r"(?:related(?:\s+(?:stories|articles|content|coverage|posts|links|news|reading))?"
    r"|read\s+more|read\s+also|also\s+read|now\s+read|read\s+next|more\s+from\s+[\w .'-]{1,40}"
    r"|more:"
    r"|you\s+(?:may|might)\s+also\s+(?:like|be\s+interested\s+in)|recommended(?:\s+for\s+you)?"
    r"|editors?[\u2019']?s?[\u2019']?\s+(?:recommendations?|picks?)|don[\u2019']?t\s+miss"
    r"|(?:à|a)?\s*lire\s+aussi|leia\s+(?:também|mais)"
    r"|lesen\s+sie\s+auch|mehr\s+zum\s+thema|lee\s+también|te\s+puede\s+interesar"
    r"|más\s+información|(?:also|auch)\s+(?:on|auf|bei)\s+[\w-]+\.\w{2,}(?:\.\w{2,})?)"
    r"\s*(?::|\.\.\.|…|»)?\s*",
    re.IGNORECASE,
)
#: how every lead-in begins (lower-cased): a cheap test before the expression
_STARTS = (
    "related",
    "read",
    "also",
    "more",
    "you ",
    "recommended",
    "don",
    "à",
    "a ",
    "lire",
    "leia",
    "lesen",
    "mehr",
    "lee",
    "te ",
    "más",
    "auch",
    "editor",
    "now",
)
_BLOCKS = ("p", "div", "li", "td", "h2", "h3", "h4", "h5", "h6")
#: what a lead-in is set in, in a block (``code``: "<code>ADD TO CART:</code> <a>...")
_INLINE = ("strong", "b", "em", "i", "span", "a", "code")
_LINK_SHARE = 0.9  # of the text after the lead-in, for it to be "all link text"
_LEAD_ONLY_WORDS = 6
_SHOUTED_WORDS = 3  # the fewest words of a headline link in capitals
_CAPS_LABEL_WORDS = 4  # the most words of a label in capitals before a headline link
_CAPS_LABEL_CHARS = 30
_HEADLINE_WORDS = 3  # the fewest words of a headline link in a list


def _link_chars(el: Any) -> int:
    return sum(len(squash(a.text_content())) for a in el.iter("a") if a.get("href"))


def _all_links(el: Any) -> bool:
    chars = len(squash(el.text_content()))
    return chars > 0 and _link_chars(el) >= _LINK_SHARE * chars


def _shouted_link(paragraph: Any) -> bool:
    """A paragraph that is one link in capitals: a headline of another story."""
    text = paragraph.text_content()
    if len(text.split()) < _SHOUTED_WORDS or not text.isupper():
        return False
    return _link_chars(paragraph) >= _LINK_SHARE * len(squash(text))


def _lead_in(el: Any) -> tuple[str, str] | None:
    """(lead-in, rest of the text) when the block's text starts with a lead-in."""
    text = norm(el.text_content())
    match = LEAD_IN.match(text)
    if match is None or not match.group().strip():
        end = _caps_label(text)
        return (text[:end], text[end:].lstrip()) if end else None
    return match.group(), text[match.end() :]


def _caps_label(text: str) -> int:
    """The length of a label in capitals that starts ``text`` ("IN TEXAS:"), colon
    included; 0 when there is none."""
    head, colon, _ = text[: _CAPS_LABEL_CHARS + 1].partition(":")
    if not colon or not head.isupper() or len(head.split()) > _CAPS_LABEL_WORDS:
        return 0
    return len(head) + 1


def drop_teasers(tree: Any, drop: Any, headings: list[Any] | None = None) -> int:
    """Remove the teaser blocks of ``tree`` with ``drop(element)`` (which keeps the text
    after an element); the number removed. ``headings``: the tree's ``h2``-``h6``, if
    the caller has found them already (:func:`card_lists` reads them).

    One walk over the blocks and the inline elements a lead-in is set in tests each
    one's own first text against the lead-ins; only the few that match are looked at
    as blocks.
    """
    found: list[Any] = []
    seen: set[Any] = set()
    for el in tree.iter(*_BLOCKS, *_INLINE):
        text = el.text
        if text is None:  # a block that starts with an element: one link in capitals?
            if len(el) == 1 and el.tag == "p" and _shouted_link(el):
                found.append(el)
            continue
        if text.isspace():
            continue  # a container's indentation
        text = text.lstrip()
        if text[:12].lower().startswith(_STARTS) and LEAD_IN.match(text) is not None:
            lead_in = True
        elif text.find(":", 1, _CAPS_LABEL_CHARS + 1) > 0 and _caps_label(text):
            lead_in = False
        else:
            continue
        block = el if el.tag in _BLOCKS else next(el.iterancestors(*_BLOCKS), None)
        if block is None or block in seen or (block.tag == "td" and not _lone_cell(block)):
            continue
        seen.add(block)
        lead = _lead_in(block)
        if lead is None:
            continue
        label, rest = lead
        if rest:
            links = _link_chars(block)
            # a label may head each of several links ("STORY: <a>..</a> STORY: <a>..</a>")
            chars = len(squash(rest)) - rest.count(label.strip()) * len(squash(label))
            if links and links >= _LINK_SHARE * chars:
                found.append(block)
            continue
        if not lead_in:
            continue  # a label in capitals alone may head anything
        if len(label.split()) > _LEAD_ONLY_WORDS or _link_chars(block):
            continue
        following = []
        for sibling in block.itersiblings():
            if not isinstance(sibling.tag, str) or not _all_links(sibling):
                break
            following.append(sibling)
        if following:
            found += [block, *following]
    found += [ul for ul in tree.iter("ul") if _headline_list(ul)]
    for box in card_lists(tree, headings):
        box.set("class", f"{box.get('class') or ''} {RELATED}".lstrip())
    for el in found:
        if el.getparent() is not None:
            drop(el)
    return len(found)


def _lone_cell(td: Any) -> bool:
    """A table cell that is the only one of its table with text: a table used as a box
    around one line ("ADD TO CART: <a>gift card</a>"), not a table of data."""
    table = next(td.iterancestors("table"), None)
    if table is None:
        return False
    return not any(
        cell is not td and squash(cell.text_content()) for cell in table.iter("td", "th")
    )


def _headline_list(ul: Any) -> bool:
    """A list between two paragraphs whose every item is one headline link."""
    before, after = ul.getprevious(), ul.getnext()
    if before is None or before.tag != "p" or after is None or after.tag != "p":
        return False
    items = [item for item in ul if isinstance(item.tag, str)]
    if len(items) < 2:
        return False
    for item in items:
        if item.tag != "li":
            return False
        links = [a for a in item.iter("a") if a.get("href")]
        if len(links) != 1 or len(links[0].text_content().split()) < _HEADLINE_WORDS:
            return False
        if len(squash(links[0].text_content())) < _LINK_SHARE * len(squash(item.text_content())):
            return False
    return True


#: the class token a box of cards of other stories gets (trafilatura deletes "related")
RELATED = "kc-related"
#: the fewest cards of a list of other stories, and the most words of one card
_CARDS = 3
_CARD_CHARS = 600  # some 80 words
#: the least share of a box's text in its cards (a heading or a line above them aside)
_CARDS_SHARE = 0.75
#: how far above its linked headline a card's box may be, and a link around the card
_CARD_DEPTH = 5
_AROUND_DEPTH = 3


def card_lists(tree: Any, headings: list[Any] | None = None) -> list[Any]:
    """Boxes of three or more cards of other stories: sibling boxes that each hold one
    headline that is all link (``<h3><a>Title</a></h3>``, or a heading inside a link
    around the card) and at most :data:`_CARD_CHARS` characters (the headline and a line of
    description, a time, a category). A story's own headings are not links, and a
    section of it is longer. The cards hold :data:`_CARDS_SHARE` of the box's text or
    more (the box is not a story's with cards among its paragraphs). The innermost such
    boxes, when the page has a story beside them (:data:`_STORY_CHARS` of paragraphs
    outside them and outside the page's chrome): without one, the cards are the page's
    own (a home page, a listing). :func:`drop_teasers` names them :data:`RELATED`
    instead of removing them: the narrowing of a frame counts a box so named as chrome
    beside the story, and trafilatura deletes it inside the frame it reads."""
    if headings is None:
        headings = list(tree.iter("h2", "h3", "h4", "h5", "h6"))
    if len(headings) < _CARDS:
        return []
    linked = [h for h in headings if _linked_headline(h)]
    if len(linked) < _CARDS:
        return []
    holders: dict[Any, dict[Any, int]] = {}  # a box -> its children -> linked headlines in it
    for heading in linked:
        node = heading
        for _ in range(_CARD_DEPTH):
            parent = node.getparent()
            if parent is None:
                break
            children = holders.setdefault(parent, {})
            children[node] = children.get(node, 0) + 1
            node = parent
    lists = []
    for box, cards in holders.items():
        if len(cards) < _CARDS or any(n != 1 for n in cards.values()):
            continue
        chars = [text_length(card) for card in cards]
        if max(chars) <= _CARD_CHARS and sum(chars) >= _CARDS_SHARE * text_length(box):
            lists.append(box)
    found = set(lists)
    outer = {a for box in lists for a in box.iterancestors() if a in found}
    lists = [box for box in lists if box not in outer]
    if lists and not _beside_a_story(tree, lists):
        return []  # no story beside the cards: they are the page's (a home page, a listing)
    return lists


#: the least text of paragraphs outside the cards for the cards to be beside a story
_STORY_CHARS = 500


def _beside_a_story(tree: Any, boxes: list[Any]) -> bool:
    """Whether the paragraphs outside ``boxes`` and outside the page's chrome (a header,
    footer, aside, nav or form, a box named as boilerplate: a cookie notice, a
    newsletter's) hold :data:`_STORY_CHARS` of text, less their links (a paragraph of
    links to the archive or the topics is no story), counting paragraphs of 25
    characters or more of it. Read until there is enough; each element above a
    paragraph is judged once."""
    open_: dict[Any, bool] = dict.fromkeys(boxes, False)  # element -> may hold the story

    def story_side(el: Any) -> bool:
        side = open_.get(el)
        if side is None:
            side = open_[el] = el.tag not in _CHROME and not boilerplate_box(el)
        return side

    total = 0
    for p in tree.iter("p"):
        if not all(story_side(a) for a in p.iterancestors()):
            continue
        chars = text_length(p) - sum(text_length(a) for a in p.iter("a"))
        if chars >= MIN_PARAGRAPH:
            total += chars
            if total >= _STORY_CHARS:
                return True
    return False


_CHROME = frozenset({"header", "footer", "aside", "nav", "form"})


def _linked_headline(heading: Any) -> bool:
    """A heading whose text is all the text of links to other pages: a headline (a
    heading that links to its own section, ``href="#..."``, is not one)."""
    links = [a for a in heading.iter("a") if _elsewhere(a)]
    around = None
    if not links:
        around = heading.getparent()
        for _ in range(_AROUND_DEPTH):  # a link around a card holds its heading closely
            if around is None or around.tag == "a":
                break
            around = around.getparent()
        if around is None or around.tag != "a":
            return False  # most headings (asked first: no text is read)
    text = squash(heading.text_content())
    if not text:
        return False
    if around is not None:
        return _elsewhere(around)
    return sum(len(squash(a.text_content())) for a in links) >= len(text)


def _elsewhere(link: Any) -> bool:
    href = (link.get("href") or "").strip()
    return bool(href) and not href.startswith("#")
