"""XML sitemaps, sitemap indexes and plain-text sitemaps -> candidates (pure).

:func:`parse_sitemap` reads what real servers send, not only what
https://www.sitemaps.org/protocol.html describes: gzip whether or not a header
said so (inflated up to ``max_size``), a BOM or blank lines before ``<?xml``, the
sitemaps.org namespace missing, wrong or prefixed, CDATA in ``<loc>``, relative
``<loc>`` resolved against ``xml:base`` or ``base_url``, a truncated file (what
parsed is kept and ``truncated`` is set), and one-URL-per-line text sitemaps.
Entities are never expanded (see :mod:`knowledge_crawler.discovery._xml`).

A ``<urlset>`` yields ``"page"`` candidates, a ``<sitemapindex>`` ``"sitemap"``
candidates; only ``http(s)`` URLs are kept, each once. ``lastmod`` is normalised
to ISO-8601 UTC (``...Z``); a Google News ``publication_date`` stands in when
``lastmod`` is absent; an unparsable one, or (given ``now``) one more than a day
in the future, is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from lxml import etree

from knowledge_crawler.discovery import _xml
from knowledge_crawler.discovery.candidates import (
    DEFAULT_MAX_SIZE,
    Candidate,
    CandidateKind,
    NotASitemap,
    absolute_http_url,
    merge_candidates,
    normalise_lastmod,
    plausible_lastmod,
)

__all__ = ["SitemapResult", "looks_like_text_sitemap", "parse_sitemap"]

NOT_A_SITEMAP = "not a sitemap"


@dataclass(frozen=True, slots=True)
class SitemapResult:
    """What one sitemap yields.

    ``kind`` is ``"urlset"`` (page URLs) or ``"sitemapindex"`` (sitemap URLs);
    ``format`` is ``"xml"`` or ``"text"``. ``truncated`` says the body was cut
    short or broken and only what parsed is here; ``warnings`` say why, and
    ``skipped`` counts entries without a usable ``http(s)`` URL.
    """

    kind: Literal["urlset", "sitemapindex"]
    candidates: tuple[Candidate, ...]
    format: Literal["xml", "text"] = "xml"
    truncated: bool = False
    warnings: tuple[str, ...] = ()
    skipped: int = 0

    @property
    def pages(self) -> list[str]:
        """URLs of the ``"page"`` candidates."""
        return [c.url for c in self.candidates if c.kind == "page"]

    @property
    def sitemaps(self) -> list[str]:
        """URLs of the ``"sitemap"`` candidates (from a sitemap index)."""
        return [c.url for c in self.candidates if c.kind == "sitemap"]


def _text_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _is_url_line(line: str) -> bool:
    return line[:8].lower().startswith(("http://", "https://")) and not any(
        ch.isspace() for ch in line
    )


def looks_like_text_sitemap(text: str) -> bool:
    """Whether ``text`` is a plain-text sitemap: one or more lines, each one ``http(s)`` URL.

    >>> looks_like_text_sitemap("https://example.com/a\\n\\nhttps://example.com/b\\n")
    True
    >>> looks_like_text_sitemap("User-agent: *\\nSitemap: https://example.com/s.xml")
    False
    """
    lines = _text_lines(text)
    return bool(lines) and all(_is_url_line(line) for line in lines)


def _child(element: etree._Element, name: str) -> etree._Element | None:
    """The direct child ``name``, in the parent's namespace first (so ``image:loc`` never wins)."""
    fallback = None
    ns = _xml.namespace(element)
    for child in element:
        if _xml.localname(child) == name:
            if _xml.namespace(child) == ns:
                return child
            if fallback is None:
                fallback = child
    return fallback


def _lastmod(entry: etree._Element, now: datetime | None) -> str | None:
    node = _child(entry, "lastmod")
    if node is None:  # Google News sitemaps date their articles here instead
        news = _child(entry, "news")
        node = None if news is None else _child(news, "publication_date")
    text = None if node is None else _xml.element_text(node)
    return plausible_lastmod(normalise_lastmod(text), now)


def _from_xml(
    root: etree._Element, base_url: str | None, now: datetime | None, *, drop_last: bool
) -> tuple[Literal["urlset", "sitemapindex"], list[Candidate], int] | None:
    name = _xml.localname(root)
    if name == "urlset":
        entry_name, kind = "url", "page"
    elif name == "sitemapindex":
        entry_name, kind = "sitemap", "sitemap"
    else:
        return None
    candidate_kind: CandidateKind = "page" if kind == "page" else "sitemap"
    entries: list[Candidate | None] = []
    for entry in root.iter():
        if _xml.localname(entry) != entry_name:
            continue
        loc = _child(entry, "loc")
        raw = None if loc is None else _xml.element_text(loc)
        url = None
        if raw is not None and loc is not None:
            url = absolute_http_url(_xml.resolve(raw, loc, base_url))
        entries.append(
            None if url is None else Candidate(url, candidate_kind, _lastmod(entry, now))
        )
    if drop_last and entries:
        entries.pop()  # cut inside it: its <loc> or <lastmod> may be half there
    found = [c for c in entries if c is not None]
    return ("urlset" if name == "urlset" else "sitemapindex"), found, len(entries) - len(found)


def parse_sitemap(
    body: bytes,
    base_url: str | None = None,
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    now: datetime | None = None,
) -> SitemapResult:
    """The candidates of a sitemap, a sitemap index or a plain-text sitemap.

    ``base_url`` (the sitemap's own URL) resolves relative ``<loc>`` values;
    ``max_size`` caps the (decompressed) bytes read; ``now``, when given, drops
    a ``lastmod`` more than a day in the future. Raises :class:`NotASitemap`
    (one line, with the reason when the body was cut) for anything else.

    >>> r = parse_sitemap(b"<urlset><url><loc>/a</loc><lastmod>2024-05-01</lastmod></url>"
    ...                   b"</urlset>", "https://example.com/sitemap.xml")
    >>> r.kind, r.pages, r.candidates[0].lastmod
    ('urlset', ['https://example.com/a'], '2024-05-01T00:00:00Z')
    """
    unpacked = _xml.decompress(body, max_size)
    warnings = [unpacked.problem] if unpacked.problem else []
    text = _xml.decode(unpacked.data)
    if not _xml.looks_like_xml(text):
        if unpacked.problem and "\n" in text:
            text = text[: text.rfind("\n")]  # the cut may have broken the last line
        if not looks_like_text_sitemap(text):
            raise NotASitemap(_reason(NOT_A_SITEMAP, unpacked.problem))
        found = []
        skipped = 0
        for line in _text_lines(text):
            url = absolute_http_url(line, base_url)
            if url is None:
                skipped += 1
            else:
                found.append(Candidate(url, "page", None))
        return SitemapResult(
            "urlset",
            merge_candidates(found),
            format="text",
            truncated=unpacked.problem is not None,
            warnings=tuple(warnings),
            skipped=skipped,
        )
    parsed = _xml.parse(_xml.clean(text))
    read = None
    if parsed.root is not None:
        broken = bool(parsed.errors or unpacked.problem)
        entry_name = "sitemap" if _xml.localname(parsed.root) == "sitemapindex" else "url"
        drop_last = broken and _xml.unclosed_at_end(text, entry_name)
        read = _from_xml(parsed.root, base_url, now, drop_last=drop_last)
    if read is None:
        raise NotASitemap(_reason(NOT_A_SITEMAP, unpacked.problem))
    kind, found, skipped = read
    if parsed.errors:
        warnings.append(f"broken XML, kept what parsed ({parsed.errors[0]})")
    return SitemapResult(
        kind,
        merge_candidates(found),
        format="xml",
        truncated=bool(warnings),
        warnings=tuple(warnings),
        skipped=skipped,
    )


def _reason(message: str, problem: str | None) -> str:
    return f"{message} ({problem})" if problem else message
