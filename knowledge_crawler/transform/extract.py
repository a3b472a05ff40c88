"""Main-content extraction: an HTML page -> title, clean markdown and plain text.

Pure module: no Scrapy, no database, no I/O. The heavy dependency (trafilatura, ~0.3 s to
import) is imported lazily on the first :func:`extract` call, so importing this module
is cheap.

How it works (measurements in ``docs/extraction.md``):

1. bytes are decoded with :func:`decode_html` (header charset, BOM, ``<meta>``, else
   strict UTF-8, else statistical detection);
2. the page is parsed once with lxml; title and language are read from that tree, then
   a cheap pre-pass drops subtrees that are never content (scripts, styles, media,
   form controls, ``<head>``) so trafilatura's whole-tree passes have less to walk;
3. trafilatura's main extractor runs in *fast* mode (no readability/jusText
   comparison pass, which is where most of its time goes) with *recall* focus;
4. the extracted element tree is rendered by our own serializer into markdown
   (headings, paragraphs, lists, tables, code blocks; link and image URLs and inline
   emphasis dropped so that the text is stable and token-cheap) and into plain text;
   a leading heading equal to the title is dropped (it is ``Extraction.title``).

:func:`extract` never raises on junk HTML: it returns an :class:`Extraction` with
empty markdown instead.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["Extraction", "decode_html", "extract", "looks_like_html"]


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


# --------------------------------------------------------------------------- decoding

_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE
)


def _detect_encoding(body: bytes) -> str | None:
    """Fallback when neither header, BOM nor ``<meta>`` declare a charset."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        # a multi-byte sequence cut at the end of a truncated body is still UTF-8
        if exc.start >= len(body) - 3:
            return "utf-8"
    else:
        return "utf-8"
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - charset_normalizer comes with trafilatura
        return "cp1252"
    matches = [m for m in from_bytes(body[:65536]) if _web_codec(m.encoding)]
    if not matches:
        return "cp1252"
    best = matches[0]
    # Latin text often decodes equally well as cp1250/cp1257/...; windows-1252 is by far
    # the most common legacy encoding on the web (and the HTML default), so it wins ties.
    if best.encoding in _LATIN_SINGLE_BYTE:
        for match in matches:
            if (
                match.encoding == "cp1252"
                and match.chaos <= best.chaos + 0.01
                and match.coherence >= best.coherence - 0.05
            ):
                return "cp1252"
    return str(best.encoding)


# Encodings that web pages actually use (the WHATWG Encoding Standard's list, as Python
# codec names); charset detection otherwise likes DOS and Mac code pages for short text.
_WEB_CODECS = frozenset(
    {
        "utf_8", "utf_16", "utf_16_le", "utf_16_be", "cp866", "koi8_r", "koi8_u", "cp874",
        "gbk", "gb2312", "gb18030", "big5", "big5hkscs", "euc_jp", "iso2022_jp", "shift_jis",
        "cp932", "euc_kr", "cp949", "mac_roman", "mac_cyrillic", "tis_620",
    }
)  # fmt: skip
_LATIN_SINGLE_BYTE = frozenset(
    {"cp1250", "cp1252", "cp1254", "cp1257", "latin_1", "iso8859_2", "iso8859_15"}
)


def _web_codec(name: str) -> bool:
    return name in _WEB_CODECS or name.startswith(("cp125", "iso8859_")) or name == "latin_1"


def decode_html(body: bytes, content_type: str | None = None) -> str:
    """Decode an HTML response body to text.

    The charset comes from, in this order: a byte-order mark, the ``Content-Type``
    header (``content_type``), a ``<meta charset>``/``http-equiv`` declaration, else it
    is sniffed (strict UTF-8 first, then statistical detection). Labels are resolved the
    way browsers do (``iso-8859-1`` -> windows-1252, ``gb2312`` -> gb18030, ...).
    Undecodable bytes become U+FFFD; this function never raises on bytes input.
    """
    if not isinstance(body, bytes | bytearray | memoryview):
        raise ValueError(f"decode_html() needs bytes, not {type(body).__name__}")
    body = bytes(body)
    from w3lib.encoding import html_to_unicode

    header = content_type
    if header is not None and "charset" not in header.lower():
        header = None
    try:
        _enc, text = html_to_unicode(header, body, auto_detect_fun=_detect_encoding)
    except Exception:  # unknown label or codec failure: be lenient, never raise
        text = body.decode("utf-8", errors="replace")
    return str(text)


_BINARY_MAGIC: tuple[bytes, ...] = (
    b"%PDF",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",  # JPEG
    b"RIFF",  # WEBP, WAV, AVI
    b"PK\x03\x04",  # zip, docx, xlsx, epub, jar
    b"\x1f\x8b",  # gzip
    b"BZh",
    b"\xfd7zXZ",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\x00\x00\x01\x00",  # ico
    b"wOFF",
    b"wOF2",
    b"\x00\x01\x00\x00",  # ttf
    b"OTTO",
    b"ID3",  # mp3
    b"OggS",
    b"fLaC",
    b"\x7fELF",
    b"MZ",
    b"\xd0\xcf\x11\xe0",  # old MS Office
    b"%!PS",
    b"\x00asm",
)
_NON_HTML_TYPES = (
    "application/pdf",
    "application/json",
    "application/javascript",
    "application/octet-stream",
    "application/zip",
    "application/gzip",
    "text/css",
    "text/javascript",
    "text/csv",
    "image/",
    "audio/",
    "video/",
    "font/",
)
_HTML_TAG_RE = re.compile(
    rb"<(?:!doctype\s+html|html|head|body|meta|title|div|p|span|a|table|article|section"
    rb"|main|h[1-6]|ul|ol|li|br|script|style|link|nav|header|footer|form|img|pre)[\s>/]",
    re.IGNORECASE,
)


def looks_like_html(body: bytes, content_type: str | None = None) -> bool:
    """Whether ``body`` is plausibly an HTML page (not PDF, image, JSON, other binary).

    An explicit non-HTML ``content_type`` (``application/pdf``, ``image/*``, JSON, ...)
    wins; otherwise the first bytes are sniffed: known binary signatures, NUL bytes and
    JSON are rejected, markup with HTML tags is accepted.
    """
    if content_type:
        mime = content_type.split(";", 1)[0].strip().lower()
        if mime.startswith(_NON_HTML_TYPES) or mime.endswith(("+json", "/json")):
            return False
    head = bytes(body[:4096])
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        if head.startswith(bom):
            if bom != b"\xef\xbb\xbf":  # UTF-16: decode a little and sniff that
                try:
                    head = head.decode("utf-16").encode("utf-8", "replace")
                except UnicodeDecodeError:
                    return False
            else:
                head = head[3:]
            break
    if head.startswith(_BINARY_MAGIC):
        return False
    stripped = head.lstrip()
    if not stripped:
        return False
    if b"\x00" in head:
        return False
    if stripped[:1] in (b"{", b"[") and not _HTML_TAG_RE.search(stripped[:512]):
        return False  # JSON
    if stripped.startswith(b"<?xml") and b"<html" not in head.lower():
        return False  # RSS/Atom/SVG/sitemaps are XML, not HTML pages
    return _HTML_TAG_RE.search(head) is not None


# --------------------------------------------------------------------------- extraction

_STATE: dict[str, Any] = {}
_WORD_RE = re.compile(r"\w+")
_WS_RE = re.compile(r"\s+")
# "an image ." after the image was dropped; only . and , (French puts spaces before ?!:;)
_SPACE_BEFORE_PUNCT_RE = re.compile(r"[ \t]+([.,])(?=\s|$)")


def _options() -> Any:
    """trafilatura's extraction options, built once (lazy import)."""
    opts = _STATE.get("options")
    if opts is None:
        import logging

        from trafilatura.settings import Extractor

        logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
        logging.getLogger("htmldate").setLevel(logging.CRITICAL)
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


def _norm(text: str | None) -> str:
    return _WS_RE.sub(" ", text or "").strip()


def _parse(html: str) -> HtmlElement | None:
    from trafilatura.utils import load_html

    try:
        tree = load_html(html)
    except Exception:
        return None
    return tree


def extract(html: str | bytes, *, url: str | None = None) -> Extraction:
    """Extract the main content of an HTML page.

    ``html`` may be text or raw bytes (decoded with :func:`decode_html`, without header
    information). Raises :class:`ValueError` only for other input types; junk HTML gives
    an :class:`Extraction` with empty markdown/text.
    """
    if isinstance(html, bytes | bytearray | memoryview):
        html = decode_html(bytes(html))
    elif not isinstance(html, str):
        raise ValueError(f"extract() needs str or bytes, not {type(html).__name__}")
    if "\x00" in html:
        html = html.replace("\x00", "")
    tree = _parse(html) if html.strip() else None
    if tree is None:
        return Extraction(None, "", "", (), 0, None)
    try:
        title = _title(tree)
    except Exception:
        title = None
    try:
        declared_language = _declared_language(tree)
    except Exception:
        declared_language = None
    blocks: list[_Block] = []
    try:
        _prune(tree)
        body = _main_content(tree, url)
        if body is not None:
            blocks = _blocks(body)
    except Exception:  # RecursionError on absurdly deep trees, lxml errors, ...
        blocks = []
    if blocks and blocks[0].kind == "h" and title and _same_text(blocks[0].text, title):
        # the headline is metadata (Extraction.title), not body text
        blocks = blocks[1:]
    markdown = _render_markdown(blocks)
    text = _render_text(blocks)
    headings = tuple(b.text for b in blocks if b.kind == "h")
    language = declared_language or _guess_language(text)
    return Extraction(
        title=title,
        markdown=markdown,
        text=text,
        headings=headings,
        word_count=len(_WORD_RE.findall(text)),
        language=language,
    )


# Never main content; trafilatura deletes these too, but only after several whole-tree
# XPath passes and copies, which are cheaper on a tree without them.
_NEVER_CONTENT = (
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


def _prune(tree: HtmlElement) -> None:
    """Cheap pre-pass: drop subtrees that are never main content (C-speed, one walk)."""
    from lxml.etree import strip_elements

    strip_elements(tree, *_NEVER_CONTENT, with_tail=False)


def _same_text(a: str, b: str) -> bool:
    return _WORD_RE.findall(a.casefold()) == _WORD_RE.findall(b.casefold())


def _main_content(tree: HtmlElement, url: str | None) -> Any:
    from trafilatura.core import bare_extraction

    options = _options()
    if url:
        from copy import copy

        options = copy(options)
        options.url = options.source = url
    doc = bare_extraction(tree, options=options)
    if doc is None:
        return None
    return getattr(doc, "body", None)


# --------------------------------------------------------------------------- title

_TITLE_SEPARATORS_RE = re.compile(r"\s+[|\-\u2013\u2014\u00b7\u2022:\u00bb/~]+\s+")


def _meta(tree: HtmlElement, *names: str) -> str:
    for name in names:
        for el in tree.iterfind(f".//meta[@property='{name}']"):
            content = _norm(el.get("content"))
            if content:
                return content
        for el in tree.iterfind(f".//meta[@name='{name}']"):
            content = _norm(el.get("content"))
            if content:
                return content
    return ""


def _strip_site(title: str, site: str) -> str:
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


def _title(tree: HtmlElement) -> str | None:
    title_el = tree.find(".//title")
    page_title = _norm(title_el.text_content()) if title_el is not None else ""
    og = _meta(tree, "og:title", "twitter:title")
    site = _meta(tree, "og:site_name", "application-name")
    h1 = ""
    for el in tree.iter("h1"):
        h1 = _norm(el.text_content())
        if h1:
            break
    candidates = [c for c in (og, h1) if c]
    # a clean og:title / h1 is one that the <title> contains (the <title> being
    # "Headline | Site"), or that carries no site suffix itself
    for cand in candidates:
        if page_title and cand != page_title and cand in page_title:
            return cand
    if og:
        cleaned = _strip_site(og, site)
        if h1 and cleaned.casefold() == h1.casefold():
            return h1
        if cleaned != og or not page_title or og != page_title:
            return cleaned
    if page_title:
        cleaned = _strip_site(page_title, site)
        if h1 and len(h1) >= 8 and h1.casefold() in page_title.casefold():
            return h1
        return cleaned
    return h1 or None


# --------------------------------------------------------------------------- language

_LANG_RE = re.compile(r"^[a-zA-Z]{2,3}(?=$|[-_])")


def _lang_code(value: str | None) -> str | None:
    if not value:
        return None
    m = _LANG_RE.match(value.strip())
    if not m:
        return None
    code = m.group(0).lower()
    return None if code in {"und", "xx", "zxx", "mul"} else code


def _declared_language(tree: HtmlElement) -> str | None:
    root = tree.getroottree().getroot()
    for value in (
        root.get("lang"),
        root.get("xml:lang"),
        root.get("{http://www.w3.org/XML/1998/namespace}lang"),
    ):
        code = _lang_code(value)
        if code:
            return code
    for el in tree.iterfind(".//meta[@http-equiv]"):
        if (el.get("http-equiv") or "").lower() == "content-language":
            code = _lang_code((el.get("content") or "").split(",")[0])
            if code:
                return code
    return _lang_code(_meta(tree, "og:locale"))


_STOPWORD_LISTS: dict[str, str] = {
    "en": "the and of to in is that for it with was on as are be this by",
    "de": "der die und das ist nicht mit sich auf ein eine den von zu dem",
    "fr": "le la les et des est une pour dans que qui pas sur du au avec",
    "es": "el la los las y que es en por una con para del se lo como",
    "pt": "o os as e que é em um uma para com não do da dos das se",
    "it": "il di che e la per una sono del della non con gli le è",
    "nl": "de het een en van is dat niet op te voor met zijn er",
    "ru": "и в не на что я с он как это по но из к то",  # noqa: RUF001
}
_STOPWORDS = {code: frozenset(words.split()) for code, words in _STOPWORD_LISTS.items()}
_SCRIPTS: tuple[tuple[str, int, int], ...] = (
    ("ko", 0xAC00, 0xD7A3),
    ("ja", 0x3040, 0x30FF),
    ("zh", 0x4E00, 0x9FFF),
    ("th", 0x0E00, 0x0E7F),
    ("el", 0x0370, 0x03FF),
    ("he", 0x0590, 0x05FF),
    ("ar", 0x0600, 0x06FF),
    ("hy", 0x0530, 0x058F),
    ("ka", 0x10A0, 0x10FF),
    ("hi", 0x0900, 0x097F),
)


def _guess_language(text: str) -> str | None:
    """Cheap guess: a distinctive script, else stop-word counts; None when unsure."""
    sample = text[:4000]
    if len(sample) < 40:
        return None
    counts: dict[str, int] = {}
    letters = 0
    for ch in sample:
        if not ch.isalpha():
            continue
        letters += 1
        o = ord(ch)
        if o < 0x0370:
            continue
        for code, lo, hi in _SCRIPTS:
            if lo <= o <= hi:
                counts[code] = counts.get(code, 0) + 1
                break
    if letters and counts:
        if counts.get("ja", 0) > 0.05 * letters:
            return "ja"
        code, n = max(counts.items(), key=lambda kv: kv[1])
        if n > 0.3 * letters:
            return code
    words = [w.lower() for w in _WORD_RE.findall(sample)]
    if len(words) < 8:
        return None
    scores = {code: sum(1 for w in words if w in stop) for code, stop in _STOPWORDS.items()}
    best = max(scores, key=lambda c: scores[c])
    ranked = sorted(scores.values(), reverse=True)
    if ranked[0] >= max(3, 0.05 * len(words)) and ranked[0] > 1.5 * ranked[1]:
        return best
    return None


# --------------------------------------------------------------------------- rendering


@dataclass(slots=True)
class _Block:
    kind: str  # "h", "p", "li", "table", "code", "quote"
    text: str = ""
    level: int = 0  # heading level, or list depth
    marker: str = ""  # "-" or "1." for list items
    rows: list[list[str]] | None = None
    header: bool = False  # table: first row is a header row


_BLOCK_TAGS = frozenset({"p", "head", "list", "item", "table", "code", "quote", "div"})
_SKIP_TAGS = frozenset({"graphic", "fw", "note"})


def _inline(el: Any, *, keep_breaks: bool = False) -> str:
    """Text of an element and its inline descendants (emphasis dropped, links as text)."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            tag = child.tag
            if tag == "lb":
                parts.append("\n" if keep_breaks else " ")
            elif tag in _SKIP_TAGS or not isinstance(tag, str):
                pass
            elif tag in _BLOCK_TAGS:
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
        lines = (_norm(line) for line in raw.split("\n"))
        return "\n".join(line for line in lines if line)
    return _norm(raw)


def _blocks(body: Any) -> list[_Block]:
    out: list[_Block] = []
    _collect(body, out, depth=0)
    return out


def _collect(el: Any, out: list[_Block], depth: int) -> None:
    if el.text and el.text.strip() and el.tag not in ("list", "table", "row"):
        out.append(_Block("p", _norm(el.text)))
    for child in el:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIP_TAGS:
            pass
        elif tag == "head":
            text = _inline(child)
            if text:
                rend = child.get("rend") or "h2"
                level = int(rend[1]) if len(rend) == 2 and rend[1] in "123456" else 2
                out.append(_Block("h", text, level=level))
        elif tag == "list":
            _collect_list(child, out, depth)
        elif tag == "table":
            _collect_table(child, out)
        elif tag == "code":
            text = "".join(child.itertext()).strip("\n")
            if text.strip():
                out.append(_Block("code", text))
        elif tag == "quote":
            if any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS for c in child):
                sub: list[_Block] = []
                _collect(child, sub, depth)
                for b in sub:
                    if b.kind in ("p", "h"):
                        out.append(_Block("quote", b.text))
                    else:
                        out.append(b)
            else:
                text = _inline(child, keep_breaks=True)
                if text:
                    out.append(_Block("quote", text))
        elif tag in ("div", "body", "item", "row", "cell"):
            _collect(child, out, depth)
        else:  # p, and inline elements stray at block level
            text = _inline(child, keep_breaks=tag == "p")
            if text:
                out.append(_Block("p", text))
        if child.tail and child.tail.strip() and isinstance(child.tag, str):
            out.append(_Block("p", _norm(child.tail)))


def _collect_list(lst: Any, out: list[_Block], depth: int) -> None:
    ordered = lst.get("rend") == "ol"
    n = 0
    for item in lst:
        if item.tag != "item":
            if isinstance(item.tag, str) and item.tag not in _SKIP_TAGS:
                text = _inline(item)
                if text:
                    out.append(_Block("p", text))
            continue
        n += 1
        marker = f"{n}." if ordered else "-"
        nested = [c for c in item if c.tag in ("list", "table", "code", "quote")]
        if nested:
            # text before/around nested lists belongs to the item itself
            parts: list[str] = [item.text or ""]
            for c in item:
                if c.tag not in ("list", "table", "code", "quote"):
                    parts.append(_inline(c))
                parts.append(c.tail or "")
            text = _norm(" ".join(parts))
            if text:
                out.append(_Block("li", text, level=depth, marker=marker))
            for c in nested:
                if c.tag == "list":
                    _collect_list(c, out, depth + 1)
                else:
                    _collect(_wrap(c), out, depth + 1)
        else:
            text = _inline(item)
            if text:
                out.append(_Block("li", text, level=depth, marker=marker))


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


def _collect_table(table: Any, out: list[_Block]) -> None:
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
        out.append(_Block("p", rows[0][0]))
        return
    out.append(_Block("table", rows=rows, header=header))


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _render_markdown(blocks: list[_Block]) -> str:
    chunks: list[str] = []
    for b in blocks:
        if b.kind == "h":
            chunk = f"{'#' * b.level} {b.text}"
        elif b.kind == "li":
            chunk = f"{'  ' * b.level}{b.marker} {b.text}"
        elif b.kind == "code":
            fence = "```"
            while fence in b.text:
                fence += "`"
            chunk = f"{fence}\n{b.text}\n{fence}"
        elif b.kind == "quote":
            chunk = "\n".join(f"> {line}" for line in b.text.split("\n"))
        elif b.kind == "table":
            rows = b.rows or []
            width = max(len(r) for r in rows)
            norm = [[_md_cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
            if not b.header:
                norm.insert(0, [""] * width)
            lines = ["| " + " | ".join(norm[0]) + " |", "|" + " --- |" * width]
            lines += ["| " + " | ".join(r) + " |" for r in norm[1:]]
            chunk = "\n".join(lines)
        else:
            chunk = b.text
        chunks.append(chunk)
    return _join(blocks, chunks)


def _render_text(blocks: list[_Block]) -> str:
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


def _join(blocks: list[_Block], chunks: list[str]) -> str:
    """Blocks' rendered chunks: blank lines between blocks, one newline inside a list."""
    out: list[str] = []
    prev_kind = ""
    for b, chunk in zip(blocks, chunks, strict=True):
        if out:
            out.append("\n" if b.kind == "li" and prev_kind == "li" else "\n\n")
        out.append(chunk)
        prev_kind = b.kind
    return unicodedata.normalize("NFC", "".join(out)).strip()
