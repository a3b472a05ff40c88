"""Untrusted bytes -> a safe lxml tree: shared by the sitemap and feed parsers (pure, private).

The steps, each bounded:

1. :func:`decompress`: gzip is recognised by its magic bytes (whatever a header
   said) and inflated incrementally, never past ``max_size`` bytes of output, so
   a gzip bomb costs at most ``max_size`` of memory. Concatenated members are read;
   a truncated or corrupt stream keeps what inflated.
2. :func:`decode`: the charset comes from a byte-order mark, else the XML
   declaration, else UTF-8; a declaration that lies (``iso-8859-1`` over UTF-8
   bytes, ``utf-16`` over single-byte text, an unknown name) is overruled, and
   bytes that fit no charset fall back to windows-1252 / latin-1 instead of failing.
3. :func:`clean`: leading whitespace, BOMs, blank lines or a line of junk (a PHP
   warning) before ``<?xml`` go, the XML declaration goes (the text is re-encoded
   as UTF-8), characters XML forbids go, and the ``<!DOCTYPE ...>`` with its
   internal subset is cut out, so no entity is ever declared: a "billion laughs"
   file has nothing to expand.
4. :func:`parse`: lxml with entity resolution, DTD loading and network access off,
   size limits on (``huge_tree=False``) and ``recover=True``, so a truncated or
   broken file yields what parsed, plus the parser's complaints.
"""

from __future__ import annotations

import codecs
import re
import zlib
from dataclasses import dataclass
from urllib.parse import urljoin

from lxml import etree

__all__ = [
    "GZIP_MAGIC",
    "Decompressed",
    "ParsedXml",
    "clean",
    "decode",
    "decompress",
    "element_text",
    "load_xml",
    "localname",
    "looks_like_xml",
    "namespace",
    "parse",
    "resolve",
    "unclosed_at_end",
]

GZIP_MAGIC = b"\x1f\x8b"
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_DECLARED = re.compile(
    rb"""^\s*<\?xml\s[^>]{0,200}?encoding\s*=\s*["']([A-Za-z][A-Za-z0-9._:-]{0,39})["']"""
)
# Labels that mean windows-1252 on the web (WHATWG Encoding Standard).
_WINDOWS_1252_ALIASES = {"iso8859-1", "ascii", "cp1252"}
_DECLARATION = re.compile(r"<\?xml(?=[\s?])[^>]{0,300}?\?>")
_INVALID_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_PROLOG_ITEM = re.compile(r"\s+|<\?.*?\?>|<!--.*?-->", re.DOTALL)
_DOCTYPE_TOKEN = re.compile(r"""<!--|["'\[\]>]""")
_CHUNK = 64 * 1024  # gzip input fed per step
_JUNK_WINDOW = 4096  # how far an XML declaration is looked for behind leading junk
_MAX_DOCTYPE = 1024 * 1024  # a longer DOCTYPE is hostile: the document is dropped


@dataclass(frozen=True, slots=True)
class Decompressed:
    """The body to parse, and why it is incomplete (``None`` when it is whole)."""

    data: bytes
    problem: str | None = None


def decompress(body: bytes, max_size: int) -> Decompressed:
    """Inflate a gzip body (by magic bytes) to at most ``max_size`` bytes; pass others through.

    >>> import gzip
    >>> decompress(gzip.compress(b"<urlset/>"), 100).data
    b'<urlset/>'
    >>> decompress(gzip.compress(b"0" * 1000), 10).problem
    'decompressed size exceeds the cap of 10 bytes; the rest was ignored'
    """
    if max_size < 1:
        raise ValueError(f"max_size must be positive, got {max_size}")
    if not body.startswith(GZIP_MAGIC):
        if len(body) > max_size:
            problem = f"larger than {max_size} bytes; the rest was ignored"
            return Decompressed(body[:max_size], problem)
        return Decompressed(body)
    return _inflate(body, max_size)


def _inflate(body: bytes, max_size: int) -> Decompressed:
    # Input goes in 64 KiB pieces, so neither many tiny members nor a long stream
    # ever copies the whole rest of the body; output is bounded by ``max_length``.
    out = bytearray()
    view = memoryview(body)
    pos = 0
    pending = b""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        if not pending:
            if pos >= len(body):
                break
            pending = bytes(view[pos : pos + _CHUNK])
            pos += len(pending)
        try:
            out += inflater.decompress(pending, max_size - len(out) + 1)
        except zlib.error as exc:
            return Decompressed(bytes(out), f"corrupt gzip data after {len(out)} bytes ({exc})")
        if len(out) > max_size:
            del out[max_size:]
            problem = f"decompressed size exceeds the cap of {max_size} bytes; the rest was ignored"
            return Decompressed(bytes(out), problem)
        if inflater.eof:
            rest = inflater.unused_data
            while len(rest) < 2 and pos < len(body):
                more = bytes(view[pos : pos + _CHUNK])
                pos += len(more)
                rest += more
            if not rest.startswith(GZIP_MAGIC):
                return Decompressed(bytes(out))  # trailing garbage after a whole member: ignored
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a further gzip member
            pending = rest
            continue
        pending = inflater.unconsumed_tail
    if not inflater.eof:
        return Decompressed(bytes(out), f"gzip data truncated after {len(out)} bytes")
    return Decompressed(bytes(out))


def _codec(label: str) -> str | None:
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _is_utf8_beyond_ascii(data: bytes) -> bool:
    if data.isascii():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode(data: bytes) -> str:
    """Text of an XML (or plain-text) document, whatever its charset claims. Never raises.

    >>> decode(b'<?xml version="1.0" encoding="windows-1252"?><t>caf\\xe9</t>')[-11:]
    '<t>café</t>'
    >>> decode(b'\\xef\\xbb\\xbf<t/>')
    '<t/>'
    """
    for bom, name in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(name, "replace")
    head = data[:4]
    if head == b"<\x00?\x00":  # UTF-16 without a BOM
        return data.decode("utf-16-le", "replace")
    if head == b"\x00<\x00?":
        return data.decode("utf-16-be", "replace")
    match = _DECLARED.match(data[:1024])
    declared = _codec(match.group(1).decode("ascii")) if match else None
    if declared is not None and declared.startswith(("utf-16", "utf-32")):
        declared = None  # no BOM and single-byte markup: the declaration is wrong
    if declared in _WINDOWS_1252_ALIASES:
        declared = "utf-8" if _is_utf8_beyond_ascii(data) else "cp1252"
    for name in dict.fromkeys((declared or "utf-8", "utf-8", "cp1252")):
        try:
            return data.decode(name)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1")


def _doctype_end(text: str, start: int) -> int | None:
    """Index just past the ``<!DOCTYPE`` starting at ``start``, ``None`` if it does not end.

    Linear: each quoted string or comment is skipped with one ``str.find``, and an
    unterminated one ends the scan (the document is then dropped, not searched again).
    """
    depth = 0
    limit = min(len(text), start + _MAX_DOCTYPE)
    pos = start + 9
    while (token := _DOCTYPE_TOKEN.search(text, pos, limit)) is not None:
        char = token.group()
        if char in ("'", '"', "<!--"):
            closer = "-->" if char == "<!--" else char
            close = text.find(closer, token.end(), limit)
            if close < 0:
                return None
            pos = close + len(closer)
            continue
        pos = token.end()
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif depth == 0:  # ">"
            return pos
    return None


def _skip_junk(text: str) -> str:
    """``text`` from its ``<?xml`` declaration on, when junk (a PHP warning) comes first."""
    if not text.startswith("<"):
        start = text.find("<?xml", 0, _JUNK_WINDOW)
        if start > 0:
            return text[start:]
    return text


def clean(text: str) -> str:
    """Drop what precedes the root element that could hurt: declaration, DOCTYPE, junk chars.

    >>> clean('\\ufeff\\n\\n <?xml version="1.0"?>\\n<!DOCTYPE x [<!ENTITY a "b">]><x/>')
    '\\n<x/>'
    """
    text = _skip_junk(_INVALID_XML_CHARS.sub("", text).lstrip(" \t\r\n\ufeff"))
    match = _DECLARATION.match(text)
    if match:
        text = text[match.end() :]
    pos = 0
    while True:
        item = _PROLOG_ITEM.match(text, pos)
        if item is None or item.end() == pos:
            break
        pos = item.end()
    if text[pos : pos + 9].upper() == "<!DOCTYPE":
        end = _doctype_end(text, pos)
        text = text[:pos] if end is None else text[:pos] + text[end:]
    return _escape_bare_ampersands(text)


#: a CDATA section (left as it is), or an ``&`` that starts no entity or character reference
_BARE_AMPERSAND = re.compile(
    r"<!\[CDATA\[.*?(?:\]\]>|$)|&(?!(?:[A-Za-z_][\w.-]*|#[0-9]+|#[xX][0-9A-Fa-f]+);)", re.S
)


def _escape_bare_ampersands(text: str) -> str:
    """``&`` as ``&amp;`` where it starts no reference, outside CDATA sections.

    A feed that writes a link's ``&`` bare (``?foo=1&bar=2``) is not well-formed, and
    the recovering parser would drop ``&bar`` as an unknown entity: a URL the file does
    not hold. Escaped, the text reads as its author meant it.

    >>> _escape_bare_ampersands("<a>?x=1&y=2&amp;z&#38;<![CDATA[&]]></a>")
    '<a>?x=1&amp;y=2&amp;z&#38;<![CDATA[&]]></a>'
    """
    if "&" not in text:
        return text
    return _BARE_AMPERSAND.sub(lambda m: m.group() if m.group() != "&" else "&amp;", text)


@dataclass(frozen=True, slots=True)
class ParsedXml:
    """The root element (``None`` when nothing parsed) and the parser's complaints."""

    root: etree._Element | None
    errors: tuple[str, ...] = ()


def parse(text: str) -> ParsedXml:
    """Parse cleaned XML text leniently and safely (no entities, no DTD, no network)."""
    parser = etree.XMLParser(
        encoding="utf-8",
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=True,
        remove_comments=True,
        remove_pis=True,
        collect_ids=False,
    )
    try:
        root = etree.fromstring(text.encode("utf-8", "replace"), parser)
    except (etree.XMLSyntaxError, ValueError):
        root = None
    errors = tuple(
        f"line {e.line}: {e.message.strip()}"
        for e in parser.error_log
        # An undeclared prefix (``sm:urlset`` without ``xmlns:sm``) is a missing namespace,
        # which the parsers tolerate by design, not breakage.
        if e.level >= etree.ErrorLevels.ERROR and e.domain != etree.ErrorDomains.NAMESPACE
    )
    if root is not None and not isinstance(root.tag, str):
        root = None
    return ParsedXml(root, errors)


def looks_like_xml(text: str) -> bool:
    """Whether the (decoded) text starts like markup after blanks, BOMs or a line of junk."""
    return _skip_junk(text.lstrip(" \t\r\n\ufeff\x00")).startswith("<")


def load_xml(data: bytes) -> ParsedXml:
    """:func:`decode`, :func:`clean` and :func:`parse` in one step."""
    return parse(clean(decode(data)))


def unclosed_at_end(text: str, name: str, window: int = 1 << 20) -> bool:
    """Whether the last ``name`` element of a cut or broken document never closed.

    In recover mode the parser closes whatever is open at the end, so the last
    ``<url>`` of a cut sitemap would come back with half a ``<loc>``; callers drop it.

    >>> unclosed_at_end("<urlset><url><loc>https://e.com/a</loc></url><url><loc>https://e", "url")
    True
    >>> unclosed_at_end("<urlset><url><loc>https://e.com/a</loc></url><u", "url")
    False
    """
    pattern = re.compile(rf"<(/?)(?:[A-Za-z_][\w.-]*:)?{re.escape(name)}(?=[\s>/])")
    tags = pattern.findall(text, max(len(text) - window, 0))  # the "/" of each tag, or ""
    return bool(tags) and tags[-1] == ""


def localname(element: etree._Element) -> str:
    """The tag without namespace or prefix (``{ns}loc``, ``sm:loc`` and ``loc`` are ``loc``)."""
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2].rpartition(":")[2]


def namespace(element: etree._Element) -> str:
    """The element's namespace URI, ``""`` when it has none."""
    tag = element.tag
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    return tag[1:].partition("}")[0]


def element_text(element: etree._Element) -> str | None:
    """The element's text (CDATA included), ``None`` when it holds an entity reference.

    An entity reference is never expanded; a value that needed one is unusable.
    """
    parts = [element.text or ""]
    for child in element:
        if not isinstance(child.tag, str):
            return None  # an unresolved entity (comments and PIs were removed at parse)
        inner = element_text(child)
        if inner is None:
            return None
        parts.append(inner)
        parts.append(child.tail or "")
    return "".join(parts)


def resolve(raw: str, element: etree._Element, base_url: str | None) -> str:
    """``raw`` resolved against the ``xml:base`` of ``element`` and its ancestors, then base_url."""
    raw = raw.strip()
    if raw[:8].lower().startswith(("http://", "https://")):
        return raw  # already absolute: no base can change it
    bases = []
    node: etree._Element | None = element
    while node is not None:
        value = node.get(XML_BASE)
        if value is not None and value.strip():
            bases.append(value.strip())
        node = node.getparent()
    base = base_url
    for value in reversed(bases):
        try:
            base = urljoin(base, value) if base else value
        except ValueError:
            continue
    if not base:
        return raw
    try:
        return urljoin(base, raw)
    except ValueError:
        return raw
