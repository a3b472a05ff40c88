"""Bytes of a response -> text, and "is this an HTML page at all?" (pure).

:func:`decode_html` picks the charset the way browsers do (BOM, ``Content-Type``
header, ``<meta>``, else sniffing); :func:`looks_like_html` rejects PDFs, images,
JSON, feeds and other binary bodies before anything tries to parse them.
Only w3lib (and, for statistical detection, charset_normalizer) is imported, lazily.
"""

from __future__ import annotations

import re

__all__ = ["decode_html", "decode_html_utf8", "holds_html_tags", "looks_like_html"]

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
    return decode_html_utf8(bytes(body), content_type)[0]


def decode_html_utf8(body: bytes, content_type: str | None = None) -> tuple[str, bool]:
    """:func:`decode_html` of ``body`` (bytes), and whether ``body`` is that text's UTF-8
    encoding byte for byte: it was decoded as UTF-8, without a byte-order mark and without
    a replaced byte (the parser can then read ``body`` instead of encoding the text again).
    """
    from codecs import lookup

    from w3lib.encoding import html_to_unicode

    header = content_type
    if header is not None and "charset" not in header.lower():
        header = None
    try:
        enc, text = html_to_unicode(header, body, auto_detect_fun=_detect_encoding)
    except Exception:  # unknown label or codec failure: be lenient, never raise
        return body.decode("utf-8", errors="replace"), False
    text = str(text)
    try:
        utf8 = lookup(enc).name == "utf-8"
    except LookupError:  # pragma: no cover - html_to_unicode decoded with it
        utf8 = False
    same = utf8 and not body.startswith(b"\xef\xbb\xbf") and "\ufffd" not in text
    return text, same


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
    return holds_html_tags(head)


def holds_html_tags(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a body) holds an HTML tag: ``<html``,
    ``<p``, ``<div``, ``<table`` and the like."""
    return _HTML_TAG_RE.search(head) is not None
