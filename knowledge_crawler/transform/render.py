"""trafilatura's extracted element tree -> our blocks -> markdown and plain text (pure).

:func:`collect_blocks` walks the tree trafilatura returns (its TEI-like tags: ``head``,
``p``, ``list``/``item``, ``table``/``row``/``cell``, ``code``, ``quote``) into a flat
list of :class:`Block`; :func:`render_markdown` and :func:`render_text` serialise it.
Markdown keeps headings, paragraphs, lists (nested items indented two spaces per
level), tables and fenced code (the fence grows when the code holds one); link and
image URLs and inline emphasis are dropped so that the text is stable and token-cheap.

:func:`html_blocks` gives the same blocks for an element of a page as it is (a
``<main>`` that a per-site spider's ``content_selector`` chose): it rewrites a copy
into that vocabulary first, so both paths share one serializer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from knowledge_crawler.transform._text import norm

__all__ = [
    "Block",
    "collect_blocks",
    "html_blocks",
    "markdown_headings",
    "markdown_to_text",
    "render_markdown",
    "render_text",
]

# "an image ." after the image was dropped; only . and , (French puts spaces before ?!:;)
_SPACE_BEFORE_PUNCT_RE = re.compile(r"[ \t]+([.,])(?=\s|$)")


@dataclass(slots=True)
class Block:
    """One block of main content: a heading, paragraph, list item, table, code or quote."""

    kind: str  # "h", "p", "li", "table", "code", "quote"
    text: str = ""
    level: int = 0  # heading level, or list depth (code: depth of the item it is under)
    marker: str = ""  # "-" or "1." for list items
    rows: list[list[str]] | None = None
    header: bool = False  # table: first row is a header row
    lang: str = ""  # code: the language its class names (``language-rust``), if any


_BLOCK_TAGS = frozenset({"p", "head", "list", "item", "table", "code", "quote", "div"})
_SKIP_TAGS = frozenset({"graphic", "fw", "note"})


#: stands for a <br> while inline text is joined (NUL never survives decoding in extract)
_BREAK = "\x00"


def _inline(el: Any, *, keep_breaks: bool = False) -> str:
    """Text of an element and its inline descendants (emphasis dropped, links as text)."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            tag = child.tag
            if tag == "lb":
                parts.append(_BREAK if keep_breaks else " ")
            elif tag in _SKIP_TAGS or not isinstance(tag, str):
                pass
            elif tag in _BLOCK_TAGS and not (tag == "code" and not _nested_block(child)):
                parts.append(" ")
                walk(child)
                parts.append(" ")
            else:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(el)
    raw = _SPACE_BEFORE_PUNCT_RE.sub(r"\1", "".join(parts))
    if keep_breaks:
        # Only <br> breaks a line; a newline in the HTML source is whitespace like any other.
        lines = (norm(line) for line in raw.split(_BREAK))
        return "\n".join(line for line in lines if line)
    return norm(raw)


def collect_blocks(body: Any) -> list[Block]:
    """The blocks of trafilatura's extracted ``body`` element, in document order."""
    out: list[Block] = []
    _collect(body, out, depth=0)
    return out


def _collect(el: Any, out: list[Block], depth: int) -> None:
    if el.text and el.text.strip() and el.tag not in ("list", "table", "row"):
        out.append(Block("p", norm(el.text)))
    for child in el:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIP_TAGS:
            pass
        elif tag == "head":
            text = _inline(child)
            if text:
                rend = child.get("rend") or "h2"
                level = int(rend[1]) if len(rend) == 2 and rend[1] in "123456" else 2
                out.append(Block("h", text, level=level))
        elif tag == "list":
            _collect_list(child, out, depth)
        elif tag == "table":
            _collect_table(child, out)
        elif tag == "code":
            for part in _code_parts(child):
                text = code_text(part).strip("\n")
                if text.strip():
                    out.append(Block("code", text, level=depth, lang=code_language(part)))
        elif tag == "quote":
            if any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS for c in child):
                sub: list[Block] = []
                _collect(child, sub, depth)
                for b in sub:
                    if b.kind in ("p", "h"):
                        out.append(Block("quote", b.text))
                    else:
                        out.append(b)
            else:
                text = _inline(child, keep_breaks=True)
                if text:
                    out.append(Block("quote", text))
        elif tag in ("div", "body", "item", "row", "cell"):
            _collect(child, out, depth)
        elif tag == "p" and any(_nested_block(c) or c.tag == "p" for c in child):
            _collect_mixed(child, out, depth)
        else:  # p, and inline elements stray at block level
            text = _inline(child, keep_breaks=tag == "p")
            if text:
                out.append(Block("p", text))
        if child.tail and child.tail.strip() and isinstance(child.tag, str):
            out.append(Block("p", norm(child.tail)))


def _nested_block(el: Any) -> bool:
    """Whether a child of a list item is a block of its own under the item.

    trafilatura gives a list item's ``<pre>`` and its inline ``<code>`` the same tag;
    only code that spans lines is a code block, a one-line ``code`` is part of the
    item's sentence (``name <string>``) and stays in place.
    """
    tag = el.tag
    if tag == "code":
        return "\n" in "".join(el.itertext()).strip("\n")
    return tag in ("list", "table", "quote")


def _code_parts(code: Any) -> list[Any]:
    """A code block, or the blocks it holds side by side: a ``<pre>`` with two
    ``<code>`` (the same example as ES module and CommonJS, one shown at a time) is
    two blocks, not one line run together."""
    inner = [c for c in code if isinstance(c.tag, str)]
    if (
        len(inner) > 1
        and all(c.tag == "code" for c in inner)
        and not (code.text or "").strip()
        and not any((c.tail or "").strip() for c in inner)
    ):
        return inner
    return [code]


_LANG_RE = re.compile(r"(?:^|\s)(?:language|lang)-([A-Za-z0-9_+#.-]{1,30})")


def code_text(code: Any) -> str:
    """A code block's text as it reads: its characters as they are, and a line break
    where a ``<br>`` (trafilatura's ``lb``) breaks the line (gtk-doc writes each
    parameter of a signature on its own line that way)."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if node.tag == "lb" or node.tag == "br":
            parts.append(_line_break(node))
        elif node.text:
            parts.append(node.text)
        for child in node:
            if isinstance(child.tag, str):
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(code)
    return "".join(parts)


def _line_break(br: Any) -> str:
    """A line break, unless the source breaks the line right after it already."""
    return "" if (br.tail or "").startswith(("\n", "\r")) else "\n"


def code_language(el: Any) -> str:
    """The language a code block's class names (``language-rust``, ``lang-py``), or "".

    Looks at the element and its ``code`` descendants (``<pre><code class=...>``).
    """
    for node in (el, *el.iter("code")):
        m = _LANG_RE.search(node.get("class") or "")
        if m:
            return m.group(1).lower()
    return ""


def _collect_mixed(p: Any, out: list[Block], depth: int) -> None:
    """A paragraph that holds blocks (trafilatura makes a ``<div>`` with a text run and a
    ``<pre>`` one ``<p>``): each run of text is a paragraph, each block keeps its kind,
    in document order."""
    from lxml.etree import Element

    run = Element("p")

    def flush() -> None:
        nonlocal run
        text = _inline(run, keep_breaks=True)
        if text:
            out.append(Block("p", text))
        run = Element("p")

    def add_text(text: str | None) -> None:
        if not text:
            return
        if len(run):
            run[-1].tail = (run[-1].tail or "") + text
        else:
            run.text = (run.text or "") + text

    add_text(p.text)
    for child in p:
        if not isinstance(child.tag, str):
            add_text(child.tail)
        elif _nested_block(child) or child.tag == "p":
            flush()
            _collect(_wrap(child), out, depth)
            add_text(child.tail)
        else:
            run.append(_copy(child))
            add_text(child.tail)
    flush()


def _collect_list(lst: Any, out: list[Block], depth: int) -> None:
    ordered = lst.get("rend") == "ol"
    definitions = lst.get("rend") == "dl"
    n = 0
    for item in lst:
        if item.tag != "item":
            if isinstance(item.tag, str) and item.tag not in _SKIP_TAGS:
                text = _inline(item)
                if text:
                    out.append(Block("p", text))
            continue
        n += 1
        marker = f"{n}." if ordered else "-"
        level = depth
        if definitions and (item.get("rend") or "").startswith("dd"):
            level = depth + 1  # a definition belongs under its term
        nested = [c for c in item if _nested_block(c)]
        if nested:
            _collect_item(item, out, level, marker)
        else:
            text = _inline(item)
            if text:
                out.append(Block("li", text, level=level, marker=marker))


def _collect_item(item: Any, out: list[Block], level: int, marker: str) -> None:
    """A list item holding blocks: its text, its nested blocks and the text between
    them, in document order; text after a nested block continues the item (a line
    without a marker of its own)."""
    parts: list[str] = [item.text or ""]
    marked = False

    def flush() -> None:
        nonlocal parts, marked
        text = norm(" ".join(parts))
        parts = []
        if text:
            out.append(Block("li", text, level=level, marker="" if marked else marker))
            marked = True

    for c in item:
        if _nested_block(c):
            flush()
            if c.tag == "list":
                _collect_list(c, out, level + 1)
            else:
                _collect(_wrap(c), out, level + 1)
        else:
            parts.append(_inline(c))
        parts.append(c.tail or "")
    flush()


def _wrap(el: Any) -> Any:
    from lxml.etree import Element

    holder = Element("div")
    holder.append(_copy(el))
    return holder


def _copy(el: Any) -> Any:
    from copy import deepcopy

    c = deepcopy(el)
    c.tail = None
    return c


def _collect_table(table: Any, out: list[Block]) -> None:
    rows: list[list[str]] = []
    header = False
    for i, row in enumerate(r for r in table.iter("row")):
        cells = [c for c in row if c.tag == "cell"]
        if not cells:
            continue
        if i == 0 and all(c.get("role") == "head" for c in cells):
            header = True
        rows.append([_inline(c) for c in cells])
    rows = [r for r in rows if any(r)]
    if not rows:
        return
    if len(rows) == 1 and len(rows[0]) == 1:  # layout table with one cell: a paragraph
        out.append(Block("p", rows[0][0]))
        return
    out.append(Block("table", rows=rows, header=header))


# -- an element of a page as it is -> the same vocabulary ---------------------------------

_HTML_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: text-level HTML elements: their text joins the paragraph around them
_HTML_INLINE = frozenset(
    {
        "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del",
        "dfn", "em", "font", "i", "ins", "kbd", "label", "mark", "nobr", "q", "rp", "rt",
        "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt",
        "u", "var",
    }
)  # fmt: skip
#: parts of a table that :func:`_collect_table` walks through to its rows
_HTML_TABLE_PARTS = frozenset({"thead", "tbody", "tfoot", "colgroup", "col"})
#: never text: dropped with their subtree (their tail stays)
_HTML_DROPPED = ("img", "hr", "wbr", "area", "source", "track")


def html_blocks(element: Any, *, drop: Iterable[str] = ()) -> list[Block]:
    """The blocks of an HTML element as a page has it (``<main>``, ``<article>``, a ``<div>``).

    A copy of ``element`` is rewritten into the vocabulary of :func:`collect_blocks`
    (``element`` itself is left as it is): ``h1``-``h6`` are headings; ``ul``, ``ol``
    and ``dl`` lists of items; a ``table`` its rows and cells (``th`` cells in the
    first row make a header row; a ``caption`` is a paragraph before the table);
    ``pre`` fenced code, its text as it is; ``blockquote`` a quote; ``br`` a line
    break inside a paragraph. Any other container (``div``, ``section``, ``article``,
    ``figure``, custom elements, ...) holds blocks, and a run of text and text-level
    elements (links, emphasis, inline ``code``) inside it is one paragraph. Images and
    rules are dropped, and so are the subtrees of the tags in ``drop``.

    >>> from lxml.html import fragment_fromstring as html
    >>> blocks = html_blocks(html("<div><h2>Setup</h2>Run <code>make</code>:<ul><li>once"
    ...                           "</li></ul><pre>make  all</pre></div>"))
    >>> print(render_markdown(blocks))
    ## Setup
    <BLANKLINE>
    Run make:
    <BLANKLINE>
    - once
    <BLANKLINE>
    ```
    make  all
    ```
    """
    from copy import deepcopy

    from lxml.etree import Element, strip_elements, strip_tags

    holder = Element("div")
    root = deepcopy(element)
    root.tail = None
    holder.append(root)
    strip_elements(holder, *_HTML_DROPPED, *drop, with_tail=False)
    for pre in list(holder.iter("pre")):
        for br in pre.iter("br"):
            br.text = _line_break(br)
        strip_tags(pre, "*")  # code keeps its text, whitespace and all, without markup
    # Children first: a container knows what its children became.
    for el in reversed(list(holder.iterdescendants())):
        if isinstance(el.tag, str):
            _to_vocabulary(el)
    return collect_blocks(holder)


def _to_vocabulary(el: Any) -> None:
    tag = el.tag.lower()
    role = el.get("role") if tag == "th" or tag == "td" else None
    el.attrib.clear()
    if tag in _HTML_HEADINGS:
        el.tag = "head"
        el.set("rend", tag)
    elif tag in ("ul", "ol", "dl"):
        el.tag = "list"
        el.set("rend", "ol" if tag == "ol" else "ul")
    elif tag in ("li", "dt", "dd"):
        el.tag = "item"
    elif tag == "table":
        for caption in el.findall("caption"):
            el.remove(caption)  # its tail is whitespace: a caption is the table's first child
            caption.tag, caption.tail = "p", None
            el.addprevious(caption)
    elif tag == "tr":
        el.tag = "row"
    elif tag in ("th", "td"):
        el.tag = "cell"
        if tag == "th" or role == "columnheader":
            el.set("role", "head")
    elif tag in _HTML_TABLE_PARTS or tag in ("p", "caption"):
        el.tag = tag
    elif tag == "pre":
        el.tag = "code"
    elif tag == "br":
        el.tag = "lb"
    elif tag == "blockquote":
        el.tag = "quote"
        _paragraph_runs(el)
    elif tag in _HTML_INLINE and not _holds_blocks(el):
        el.tag = "span"  # inline ``code``, ``q``, ... are text here, not blocks
    elif _holds_blocks(el):
        el.tag = "div"
        _paragraph_runs(el)
    else:
        el.tag = "p"  # a container of text and text-level elements only


def _holds_blocks(el: Any) -> bool:
    return any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS for c in el)


def _paragraph_runs(el: Any) -> None:
    """Wrap each run of text and inline children of a block container into one ``p``."""
    from lxml.etree import Element

    children: list[Any] = []
    run: Any = None

    def add_text(text: str | None) -> None:
        nonlocal run
        if not text:
            return
        if run is None:
            if not text.strip():
                return
            run = Element("p")
            children.append(run)
        if len(run):
            run[-1].tail = (run[-1].tail or "") + text
        else:
            run.text = (run.text or "") + text

    add_text(el.text)
    el.text = None
    for child in list(el):
        tail, child.tail = child.tail, None
        if isinstance(child.tag, str) and child.tag in _BLOCK_TAGS:
            run = None
            children.append(child)
        elif isinstance(child.tag, str):
            if run is None:
                run = Element("p")
                children.append(run)
            run.append(child)
        # comments and processing instructions go; their tail is text
        add_text(tail)
    el[:] = children


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    """Markdown: ``#`` headings, ``-``/``1.`` lists, pipe tables, fenced code, ``>`` quotes."""
    chunks: list[str] = []
    for b in blocks:
        if b.kind == "h":
            chunk = f"{'#' * b.level} {b.text}"
        elif b.kind == "li" and not b.marker:  # the item's text after a nested block
            chunk = f"{'  ' * (b.level + 1)}{b.text}"
        elif b.kind == "li":
            chunk = f"{'  ' * b.level}{b.marker} {b.text}"
        elif b.kind == "code":
            fence = "```"
            while fence in b.text:
                fence += "`"
            # under a list item the block is indented as the item's text, so the list
            # holds it (CommonMark strips that indentation from the code lines again)
            pad = "  " * b.level
            body = "\n".join(f"{pad}{line}" if line else "" for line in b.text.split("\n"))
            chunk = f"{pad}{fence}{b.lang}\n{body}\n{pad}{fence}"
        elif b.kind == "quote":
            chunk = "\n".join(f"> {line}" for line in b.text.split("\n"))
        elif b.kind == "table":
            rows = b.rows or []
            width = max(len(r) for r in rows)
            cells = [[_md_cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
            if not b.header:
                cells.insert(0, [""] * width)
            lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
            lines += ["| " + " | ".join(r) + " |" for r in cells[1:]]
            chunk = "\n".join(lines)
        else:
            chunk = b.text
        chunks.append(chunk)
    return _join(blocks, chunks)


def render_text(blocks: list[Block]) -> str:
    """Plain text: the same blocks without markup (table cells joined by tabs)."""
    chunks: list[str] = []
    for b in blocks:
        if b.kind == "table":
            chunk = "\n".join("\t".join(c for c in r) for r in (b.rows or []))
        elif b.kind == "li":
            chunk = f"{'  ' * b.level}{b.text}"
        else:
            chunk = b.text
        chunks.append(chunk)
    return _join(blocks, chunks)


def _join(blocks: list[Block], chunks: list[str]) -> str:
    """Blocks' rendered chunks: blank lines between blocks, one newline inside a list."""
    out: list[str] = []
    prev_kind = ""
    for b, chunk in zip(blocks, chunks, strict=True):
        if out:
            out.append("\n" if b.kind == "li" and prev_kind == "li" else "\n\n")
        out.append(chunk)
        prev_kind = b.kind
    return unicodedata.normalize("NFC", "".join(out)).strip()


_MD_FENCE_RE = re.compile(r"( *)(`{3,}|~{3,})([^`]*)")
_MD_HEADING_RE = re.compile(r"#{1,6} (.*)")
_MD_ITEM_RE = re.compile(r"( *)(?:-|\d{1,9}\.) (.*)")
_MD_QUOTE_RE = re.compile(r"> ?(.*)")
_MD_RULE_RE = re.compile(r"\|(?: ?:?-{3,}:? ?\|)+")
_MD_CELL_SPLIT_RE = re.compile(r" (?<!\\)\| ")


def markdown_to_text(markdown: str) -> str:
    """The plain-text form of markdown written by :func:`render_markdown`.

    Undoes the markup :func:`render_markdown` adds, so that ``markdown_to_text(
    render_markdown(blocks))`` has the words of ``render_text(blocks)`` in the same
    order: fence lines go (code lines stay as they are), ``#``, list markers (not the
    indentation of nested items) and ``>`` go, table rows become tab-separated cells
    without the separator row or the empty header row. This is how text that was
    stored as markdown (and then cleaned) is scored against plain-text ground truth.

    >>> markdown_to_text("## Title\\n\\n1. one\\n  - two\\n\\n| a | b \\\\| c |\\n| --- | --- |")
    'Title\\n\\none\\n  two\\n\\na\\tb | c'
    """
    return "\n".join(line for _, line in _markdown_lines(markdown))


def markdown_headings(markdown: str) -> tuple[str, ...]:
    """Text of the ``#`` headings of markdown written by :func:`render_markdown`.

    >>> markdown_headings("## One\\n\\n```\\n# not a heading\\n```\\n\\n### Two")
    ('One', 'Two')
    """
    return tuple(line for kind, line in _markdown_lines(markdown) if kind == "h")


def _markdown_lines(markdown: str) -> Iterator[tuple[str, str]]:
    """(kind, plain text) per line: "code", "h", "li", "quote", "row" or "p"."""
    fence = ""
    pad = 0  # the fence's indentation, taken off its code lines (a block under an item)
    for line in markdown.split("\n"):
        if fence:
            m = _MD_FENCE_RE.fullmatch(line.rstrip())
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence):
                fence = ""
            else:
                strip = min(pad, len(line) - len(line.lstrip(" ")))
                yield "code", line[strip:]
            continue
        m = _MD_FENCE_RE.fullmatch(line)
        if m:
            pad, fence = len(m.group(1)), m.group(2)
            continue
        if line.startswith("|"):
            if _MD_RULE_RE.fullmatch(line.rstrip()):
                continue
            inner = line.rstrip()[2:-2] if line.rstrip().endswith(" |") else line[1:]
            cells = [c.replace("\\|", "|") for c in _MD_CELL_SPLIT_RE.split(inner)]
            if any(c.strip() for c in cells):  # not the empty header row
                yield "row", "\t".join(cells)
            continue
        for kind, regex in (("h", _MD_HEADING_RE), ("li", _MD_ITEM_RE), ("quote", _MD_QUOTE_RE)):
            m = regex.fullmatch(line)
            if m:
                yield kind, "".join(m.groups())
                break
        else:
            yield "p", line
