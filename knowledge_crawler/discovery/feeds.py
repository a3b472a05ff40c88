"""RSS and Atom feeds -> page candidates dated by their items (pure).

:func:`parse_feed` reads RSS 0.9x/2.0 (``<rss><channel><item><link>``, with a
permalink ``<guid>`` as fallback), RSS 0.90/1.0 (RDF: ``<item rdf:about>`` and
``<link>``) and Atom (``<entry><link rel="alternate" href>`` or a link without
``rel``, relative ``href`` resolved against ``xml:base`` on the link, the entry
or the feed, then ``base_url``). A FeedBurner ``origLink`` beats the proxy link.
Legacy charsets from the XML declaration (windows-1252, iso-8859-1, ...), CDATA,
missing namespace declarations, gzip, a BOM or blank lines before ``<?xml`` and
truncated files are read as leniently as sitemaps are, with entities never expanded.

Each item's ``lastmod`` is the latest of its dates (Atom ``updated``/``published``,
RSS ``pubDate``, ``dc:date``, ``dcterms:modified``), ISO-8601 UTC ending in ``Z``.

An Atom feed may also say which entries its publisher deleted (RFC 6721,
``<at:deleted-entry ref="ENTRY ID" when="TIME">``, namespace
``http://purl.org/atompub/tombstones/1.0``): each becomes a :class:`Deletion` of
the page its ``alternate`` link names (or its ``ref``, when that is an http(s) URL;
a ``tag:`` ref without a link names no page and is counted as skipped). When the
feed also has an entry for that page, the later of the entry's date and the
deletion's ``when`` holds (RFC 6721 section 3): an entry updated since is back, an
entry older than its deletion is left out of the candidates.
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
    Deletion,
    NotAFeed,
    absolute_http_url,
    merge_candidates,
    normalise_lastmod,
    plausible_lastmod,
)

__all__ = ["FeedFormat", "FeedResult", "feed_format", "parse_feed"]

FeedFormat = Literal["rss", "rdf", "atom"]

NOT_A_FEED = "not an RSS or Atom feed"
RDF_ABOUT = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"
_DATES = frozenset({"updated", "published", "pubDate", "date", "modified", "issued", "created"})
_HTML_TYPES = ("", "text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class FeedResult:
    """What one feed yields: its items' page URLs with their latest dates.

    ``truncated`` says the body was cut short or broken and only what parsed is
    here; ``warnings`` say why; ``skipped`` counts items (deleted entries included)
    without a usable URL; ``deleted``: the pages an Atom feed says were deleted.
    """

    format: FeedFormat
    title: str | None
    candidates: tuple[Candidate, ...]
    truncated: bool = False
    warnings: tuple[str, ...] = ()
    skipped: int = 0
    deleted: tuple[Deletion, ...] = ()

    @property
    def pages(self) -> list[str]:
        """The items' URLs, in feed order."""
        return [c.url for c in self.candidates]


def feed_format(root: etree._Element) -> FeedFormat | None:
    """Which feed format a parsed root element is, ``None`` when it is no feed."""
    name = _xml.localname(root)
    if name == "rss":
        return "rss"
    if name == "feed":
        return "atom"
    if name == "RDF" and any(_xml.localname(c) in ("channel", "item") for c in root):
        return "rdf"
    return None


def _children(element: etree._Element, name: str) -> list[etree._Element]:
    return [c for c in element if _xml.localname(c) == name]


def _text(element: etree._Element) -> str | None:
    text = _xml.element_text(element)
    return (text.strip() or None) if text is not None else None


def _url(raw: str | None, element: etree._Element, base_url: str | None) -> str | None:
    if raw is None:
        return None
    return absolute_http_url(_xml.resolve(raw, element, base_url))


def _orig_link(item: etree._Element, base_url: str | None) -> str | None:
    for node in _children(item, "origLink"):  # FeedBurner: the publisher's own URL
        url = _url(_xml.element_text(node), node, base_url)
        if url:
            return url
    return None


def _rss_link(item: etree._Element, base_url: str | None) -> str | None:
    for node in _children(item, "link"):
        href = node.get("href")
        if href is not None:  # an atom:link inside an RSS item
            rel = (node.get("rel") or "alternate").strip().lower()
            if rel.rpartition("/")[2] != "alternate":
                continue
            url = _url(href, node, base_url)
        else:
            url = _url(_xml.element_text(node), node, base_url)
        if url:
            return url
    for node in _children(item, "guid"):
        if (node.get("isPermaLink") or "true").strip().lower() == "false":
            continue
        url = absolute_http_url(_xml.element_text(node))  # a guid is absolute or no URL
        if url:
            return url
    about = item.get(RDF_ABOUT)
    if about is None:
        # rdf:about without (or with a wrong) namespace declaration
        about = next((str(v) for k, v in item.items() if _attr_name(str(k)) == "about"), None)
    return _url(about, item, base_url)


def _attr_name(key: str) -> str:
    return key.rpartition("}")[2].rpartition(":")[2]


def _atom_link(entry: etree._Element, base_url: str | None) -> str | None:
    fallback = None
    for node in _children(entry, "link"):
        rel = (node.get("rel") or "alternate").strip().lower()
        if rel.rpartition("/")[2] != "alternate":  # also the IANA URI form of the rel
            continue
        href = node.get("href")
        url = _url(href if href is not None else _xml.element_text(node), node, base_url)
        if url is None:
            continue
        if (node.get("type") or "").strip().lower() in _HTML_TYPES:
            return url
        if fallback is None:
            fallback = url
    return fallback


def _deletion(node: etree._Element, base_url: str | None, now: datetime | None) -> Deletion | None:
    """An ``at:deleted-entry``: the page it names (its link, else an http(s) ``ref``)."""
    ref = (node.get("ref") or "").strip() or None
    url = _atom_link(node, base_url) or absolute_http_url(ref)
    if url is None:
        return None
    return Deletion(url, plausible_lastmod(normalise_lastmod(node.get("when")), now), ref)


def _deletions(
    deleted: list[Deletion], entries: list[Candidate]
) -> tuple[tuple[Deletion, ...], list[Candidate]]:
    """The deletions that hold and the entries that do: for a page both list, the later."""
    dated = {c.url: c.lastmod for c in entries}
    held: dict[str, Deletion] = {}
    for d in deleted:
        if d.url in dated and (d.at is None or (dated[d.url] or "") > d.at):
            continue  # updated since it was deleted: back
        if d.url not in held or (d.at or "") > (held[d.url].at or ""):
            held[d.url] = d
    kept = [c for c in entries if c.url not in held]
    return tuple(held.values()), kept


def _lastmod(item: etree._Element, now: datetime | None) -> str | None:
    dates = [
        normalise_lastmod(_xml.element_text(node))
        for node in item
        if _xml.localname(node) in _DATES
    ]
    latest = max((d for d in dates if d is not None), default=None)
    return plausible_lastmod(latest, now)


def _title(root: etree._Element, fmt: FeedFormat) -> str | None:
    owner = root
    if fmt != "atom":
        channels = _children(root, "channel")
        if not channels:
            return None
        owner = channels[0]
    titles = _children(owner, "title")
    return _text(titles[0]) if titles else None


def parse_feed(
    body: bytes,
    base_url: str | None = None,
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    now: datetime | None = None,
) -> FeedResult:
    """The page candidates of an RSS or Atom feed.

    ``base_url`` (the feed's own URL) resolves relative links; ``max_size`` caps
    the (decompressed) bytes read; ``now``, when given, drops a date more than a
    day in the future. Raises :class:`NotAFeed` (one line) for anything else.

    >>> r = parse_feed(b'<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://e.com/blog/">'
    ...                b'<entry><link href="post-1"/><updated>2024-05-01T10:00:00+02:00</updated>'
    ...                b'</entry></feed>')
    >>> r.format, r.pages, r.candidates[0].lastmod
    ('atom', ['https://e.com/blog/post-1'], '2024-05-01T08:00:00Z')
    """
    unpacked = _xml.decompress(body, max_size)
    warnings = [unpacked.problem] if unpacked.problem else []
    text = _xml.decode(unpacked.data)
    parsed = _xml.parse(_xml.clean(text)) if _xml.looks_like_xml(text) else _xml.ParsedXml(None)
    fmt = None if parsed.root is None else feed_format(parsed.root)
    if parsed.root is None or fmt is None:
        problem = unpacked.problem
        raise NotAFeed(f"{NOT_A_FEED} ({problem})" if problem else NOT_A_FEED)
    root = parsed.root
    entry_name = "entry" if fmt == "atom" else "item"
    entries: list[Candidate | None] = []
    deleted: list[Deletion] = []
    deleted_skipped = 0
    for item in root.iter():
        name = _xml.localname(item)
        if fmt == "atom" and name == "deleted-entry":
            deletion = _deletion(item, base_url, now)
            if deletion is None:
                deleted_skipped += 1
            else:
                deleted.append(deletion)
            continue
        if name != entry_name:
            continue
        url = _orig_link(item, base_url) or (
            _atom_link(item, base_url) if fmt == "atom" else _rss_link(item, base_url)
        )
        entries.append(None if url is None else Candidate(url, "page", _lastmod(item, now)))
    broken = bool(parsed.errors or unpacked.problem)
    if broken and entries and _xml.unclosed_at_end(text, entry_name):
        entries.pop()  # cut inside it: its link or date may be half there
    found = [c for c in entries if c is not None]
    skipped = len(entries) - len(found) + deleted_skipped
    if parsed.errors:
        warnings.append(f"broken XML, kept what parsed ({parsed.errors[0]})")
    candidates = merge_candidates(found)
    held: tuple[Deletion, ...] = ()
    if deleted:
        held, kept = _deletions(deleted, list(candidates))
        candidates = tuple(kept)
    return FeedResult(
        fmt,
        _title(root, fmt),
        candidates,
        truncated=bool(warnings),
        warnings=tuple(warnings),
        skipped=skipped,
        deleted=held,
    )
