"""Discovery endpoints of the loopback test site: sitemaps, feeds and a paginated JSON API.

Every body here is a pure function of the site model and a :class:`Snapshot` of the article
states (which articles are deleted, how often each one changed).  Bodies are built on first
request and cached per snapshot generation, so a 5,000-article site starts as fast as before and
a sitemap is rendered once per change of the site, not once per request.

Only *live* articles (status 200) are listed as pages; each is listed under its canonical URL,
``http://localhost:PORT/articles/<slug>``, in article-index order (feeds: newest first).  Two
say which articles were deleted: the Atom feed (an RFC 6721 ``at:deleted-entry`` for each) and
the JSON API asked with ``include_deleted=1`` (each deleted article an item with
``"deleted": true``).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import threading
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from functools import cached_property
from html import escape
from typing import Any, TypeVar, cast

from ._content import SiteModel

__all__ = [
    "DEFAULT_FEED_ITEMS",
    "DEFAULT_PER_PAGE",
    "DEFAULT_SITEMAP_CHUNK",
    "MAX_PER_PAGE",
    "BadParameter",
    "Discovery",
    "Resource",
    "Snapshot",
    "article_last_modified",
    "w3c",
]

DEFAULT_SITEMAP_CHUNK = 1000
DEFAULT_FEED_ITEMS = 20
DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 1000

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
ATOM_NS = "http://www.w3.org/2005/Atom"
TOMBSTONES_NS = "http://purl.org/atompub/tombstones/1.0"
XML = "application/xml"
GZIP = "application/x-gzip"
JSON = "application/json"
RSS = "application/rss+xml; charset=utf-8"
ATOM = "application/atom+xml; charset=utf-8"
RDF = "application/rdf+xml; charset=utf-8"
_DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'
_SITE_NAME = "Localhost Journal"
_CURSOR_PREFIX = "from:"
_CACHE_LIMIT = 256

T = TypeVar("T")


class BadParameter(ValueError):
    """A query parameter the discovery endpoints cannot use (answered with 400)."""


def article_last_modified(published: datetime, version: int) -> datetime:
    """An article's Last-Modified: stable per version, strictly increasing with ``version``."""
    return (published + timedelta(days=3, hours=version)).replace(microsecond=0)


def w3c(moment: datetime) -> str:
    """W3C datetime (sitemaps, Atom, API): ``2024-03-05T12:34:56+00:00``."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat()


def _x(text: str) -> str:
    """Text or attribute value escaped for XML."""
    return escape(text, quote=True)


def _etag(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


@dataclass(frozen=True)
class Snapshot:
    """Article states as the discovery endpoints see them; ``generation`` counts every change."""

    generation: int = 0
    #: version of every article that changed at least once (others are at version 0)
    versions: Mapping[int, int] = field(default_factory=dict)
    #: articles answering 404 or 410
    deleted: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Resource:
    """One discovery response body with its validators."""

    body: bytes
    content_type: str
    etag: str
    last_modified: datetime
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Item:
    """One live article as the discovery endpoints list it."""

    i: int
    path: str
    url: str
    title: str
    published: datetime
    updated: datetime


class Discovery:
    """Renders (and caches) the sitemaps, feeds and API pages of one site."""

    def __init__(
        self,
        model: SiteModel,
        origin: str,
        *,
        sitemap_chunk: int = DEFAULT_SITEMAP_CHUNK,
        feed_items: int = DEFAULT_FEED_ITEMS,
    ) -> None:
        if sitemap_chunk < 1 or feed_items < 1:
            raise ValueError("sitemap_chunk and feed_items must be >= 1")
        self.model = model
        self.origin = origin.rstrip("/")
        self.sitemap_chunk = sitemap_chunk
        self.feed_items = feed_items
        self._lock = threading.Lock()
        self._generation = -1
        self._cache: dict[tuple[object, ...], object] = {}
        self._pristine_modified: dict[tuple[int, int], datetime] = {}

    # -- cache -----------------------------------------------------------------------------

    def _cached(self, snap: Snapshot, key: tuple[object, ...], build: Callable[[], T]) -> T:
        """``build()`` once per snapshot generation (older snapshots are never cached)."""
        with self._lock:
            if snap.generation > self._generation:
                self._generation = snap.generation
                self._cache.clear()
            if snap.generation == self._generation and key in self._cache:
                return cast(T, self._cache[key])
        value = build()
        with self._lock:
            if snap.generation == self._generation:
                if len(self._cache) >= _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[key] = value
        return value

    # -- articles --------------------------------------------------------------------------

    @cached_property
    def _newest_first(self) -> tuple[int, ...]:
        arts = self.model.articles
        return tuple(
            sorted(range(self.model.pages), key=lambda i: (-arts[i].published.timestamp(), i))
        )

    def item(self, snap: Snapshot, i: int) -> Item:
        a = self.model.articles[i]
        return Item(
            i=i,
            path=a.path,
            url=self.origin + a.path,
            title=a.title,
            published=a.published,
            updated=article_last_modified(a.published, snap.versions.get(i, 0)),
        )

    def live(self, snap: Snapshot) -> list[int]:
        """Indices of the articles answering 200, in index order."""
        return self._cached(
            snap,
            ("live",),
            lambda: [i for i in range(self.model.pages) if i not in snap.deleted],
        )

    def deleted(self, snap: Snapshot) -> list[int]:
        """The deleted articles, newest Last-Modified (the feed's ``when``) first."""
        return sorted(snap.deleted, key=lambda i: (-self.item(snap, i).updated.timestamp(), i))

    def newest(self, snap: Snapshot) -> list[int]:
        """The feed's articles: the ``feed_items`` newest live articles, newest first."""

        def build() -> list[int]:
            out: list[int] = []
            for i in self._newest_first:
                if len(out) == self.feed_items:
                    break
                if i not in snap.deleted:
                    out.append(i)
            return out

        return self._cached(snap, ("newest",), build)

    def _resource_modified(self, snap: Snapshot, ids: range) -> datetime:
        """Last-Modified of a resource covering articles ``ids`` (deleted ones included).

        The newest pristine Last-Modified in scope plus one hour per change in scope: never
        before any entry's ``lastmod`` and strictly increasing with every change of the scope,
        so ``If-Modified-Since`` stays truthful.
        """
        key = (ids.start, ids.stop)
        base = self._pristine_modified.get(key)
        if base is None:
            arts = self.model.articles
            published = max((arts[i].published for i in ids), default=_EMPTY_FEED)
            base = self._pristine_modified[key] = article_last_modified(published, 0)
        changes = sum(v for i, v in snap.versions.items() if i in ids)
        return base + timedelta(hours=changes)

    def _resource(
        self,
        snap: Snapshot,
        body: bytes,
        content_type: str,
        scope: range | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Resource:
        ids = range(self.model.pages) if scope is None else scope
        return Resource(
            body=body,
            content_type=content_type,
            etag=_etag(content_type.encode() + b"\n" + body),
            last_modified=self._resource_modified(snap, ids),
            headers=dict(headers or {}),
        )

    # -- sitemaps --------------------------------------------------------------------------

    @property
    def sitemap_children(self) -> int:
        return max(1, -(-self.model.pages // self.sitemap_chunk))

    def child_path(self, n: int) -> str:
        """Path of sitemap child ``n`` (1-based) as the index lists it: odd ones gzipped."""
        return f"/sitemaps/articles-{n}.xml" + (".gz" if n % 2 else "")

    def child_range(self, n: int) -> range:
        start = (n - 1) * self.sitemap_chunk
        return range(start, min(start + self.sitemap_chunk, self.model.pages))

    def child_ids(self, snap: Snapshot, n: int) -> list[int]:
        return [i for i in self.child_range(n) if i not in snap.deleted]

    def _urlset(self, snap: Snapshot, ids: Sequence[int]) -> bytes:
        rows = [_DECL, f'<urlset xmlns="{SITEMAP_NS}">\n']
        for i in ids:
            it = self.item(snap, i)
            rows.append(f"<url><loc>{_x(it.url)}</loc><lastmod>{w3c(it.updated)}</lastmod></url>\n")
        rows.append("</urlset>\n")
        return "".join(rows).encode()

    def child_lastmod(self, snap: Snapshot, n: int) -> datetime | None:
        """Newest ``lastmod`` among child ``n``'s entries (``None`` when it lists nothing)."""
        ids = self.child_ids(snap, n)
        return max((self.item(snap, i).updated for i in ids), default=None)

    def sitemap_index(self, snap: Snapshot) -> Resource:
        def build() -> Resource:
            rows = [_DECL, f'<sitemapindex xmlns="{SITEMAP_NS}">\n']
            for n in range(1, self.sitemap_children + 1):
                lastmod = self.child_lastmod(snap, n)
                rows.append(f"<sitemap><loc>{_x(self.origin + self.child_path(n))}</loc>")
                if lastmod is not None:
                    rows.append(f"<lastmod>{w3c(lastmod)}</lastmod>")
                rows.append("</sitemap>\n")
            rows.append("</sitemapindex>\n")
            return self._resource(snap, "".join(rows).encode(), XML)

        return self._cached(snap, ("sitemap-index",), build)

    def sitemap_child(self, snap: Snapshot, n: int, gz: bool) -> Resource | None:
        """Child ``n`` as XML or as a gzip file; every child is served both ways."""
        if not 1 <= n <= self.sitemap_children:
            return None

        def build() -> Resource:
            xml = self._urlset(snap, self.child_ids(snap, n))
            if gz:
                return self._resource(snap, gzip.compress(xml, mtime=0), GZIP, self.child_range(n))
            return self._resource(snap, xml, XML, self.child_range(n))

        return self._cached(snap, ("sitemap-child", n, gz), build)

    def raw_gzip_sitemap(self, snap: Snapshot) -> Resource:
        """Every live article, gzip bytes served as plain ``application/xml`` (no gzip header)."""

        def build() -> Resource:
            body = gzip.compress(self._urlset(snap, self.live(snap)), mtime=0)
            return self._resource(snap, body, XML)

        return self._cached(snap, ("raw-gzip",), build)

    # -- feeds -----------------------------------------------------------------------------

    def _feed_items(self, snap: Snapshot) -> list[Item]:
        return [self.item(snap, i) for i in self.newest(snap)]

    def rss(self, snap: Snapshot) -> Resource:
        def build() -> Resource:
            items = self._feed_items(snap)
            built = max((it.updated for it in items), default=_EMPTY_FEED)
            rows = [
                _DECL,
                f'<rss version="2.0" xmlns:atom="{ATOM_NS}">\n<channel>\n',
                f"<title>{_SITE_NAME}</title>\n<link>{self.origin}/</link>\n",
                "<description>Essays, guides and reviews.</description>\n",
                "<language>en</language>\n",
                f"<lastBuildDate>{format_datetime(built, usegmt=True)}</lastBuildDate>\n",
                f'<atom:link href="{self.origin}/feed.rss" rel="self" '
                'type="application/rss+xml"/>\n',
            ]
            arts = self.model.articles
            for it in items:
                rows.append(
                    f"<item><title>{_x(it.title)}</title><link>{_x(it.url)}</link>"
                    f'<guid isPermaLink="true">{_x(it.url)}</guid>'
                    f"<pubDate>{format_datetime(it.published, usegmt=True)}</pubDate>"
                    f"<description>{_x(arts[it.i].summary)}</description></item>\n"
                )
            rows.append("</channel>\n</rss>\n")
            return self._resource(snap, "".join(rows).encode(), RSS)

        return self._cached(snap, ("rss",), build)

    def atom(self, snap: Snapshot) -> Resource:
        """Atom 1.0; ``xml:base`` is ``/articles/`` and entry links are bare slugs.  Each
        deleted article follows as an ``at:deleted-entry`` (RFC 6721): ``ref`` its entry
        id, ``when`` the time it was deleted (its Last-Modified then), and its link."""

        def build() -> Resource:
            items = self._feed_items(snap)
            gone = [self.item(snap, i) for i in self.deleted(snap)]
            updated = max((it.updated for it in (*items, *gone)), default=_EMPTY_FEED)
            rows = [
                _DECL,
                f'<feed xmlns="{ATOM_NS}" xmlns:at="{TOMBSTONES_NS}" '
                f'xml:base="{self.origin}/articles/">\n',
                "<id>tag:localhost,2024:localhost-journal</id>\n",
                f"<title>{_SITE_NAME}</title>\n",
                "<subtitle>Essays, guides and reviews.</subtitle>\n",
                f"<updated>{w3c(updated)}</updated>\n",
                '<link rel="self" type="application/atom+xml" href="/feed.atom"/>\n',
                '<link rel="alternate" type="text/html" href="/"/>\n',
            ]
            arts = self.model.articles
            for it in items:
                a = arts[it.i]
                rows.append(
                    f"<entry><id>tag:localhost,2024:article:{it.i}</id>"
                    f"<title>{_x(it.title)}</title>"
                    f'<link rel="alternate" type="text/html" href="{_x(a.slug)}"/>'
                    f"<published>{w3c(it.published)}</published>"
                    f"<updated>{w3c(it.updated)}</updated>"
                    f"<author><name>{_x(a.author)}</name></author>"
                    f"<summary>{_x(a.summary)}</summary></entry>\n"
                )
            for it in gone:
                rows.append(
                    f'<at:deleted-entry ref="tag:localhost,2024:article:{it.i}" '
                    f'when="{w3c(it.updated)}">'
                    f'<link rel="alternate" type="text/html" href="{_x(arts[it.i].slug)}"/>'
                    "<at:comment>Removed by the editors.</at:comment></at:deleted-entry>\n"
                )
            rows.append("</feed>\n")
            return self._resource(snap, "".join(rows).encode(), ATOM)

        return self._cached(snap, ("atom",), build)

    def rdf(self, snap: Snapshot) -> Resource:
        """RSS 1.0 (RDF): items listed in the channel's ``rdf:Seq`` and again as ``<item>``."""

        def build() -> Resource:
            items = self._feed_items(snap)
            rows = [
                _DECL,
                '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
                'xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">\n',
                f'<channel rdf:about="{self.origin}/feed-rss1.rdf">\n',
                f"<title>{_SITE_NAME}</title>\n<link>{self.origin}/</link>\n",
                "<description>Essays, guides and reviews.</description>\n<items><rdf:Seq>\n",
            ]
            rows += [f'<rdf:li rdf:resource="{_x(it.url)}"/>\n' for it in items]
            rows.append("</rdf:Seq></items>\n</channel>\n")
            arts = self.model.articles
            for it in items:
                rows.append(
                    f'<item rdf:about="{_x(it.url)}"><title>{_x(it.title)}</title>'
                    f"<link>{_x(it.url)}</link>"
                    f"<description>{_x(arts[it.i].summary)}</description>"
                    f"<dc:date>{w3c(it.published)}</dc:date></item>\n"
                )
            rows.append("</rdf:RDF>\n")
            return self._resource(snap, "".join(rows).encode(), RDF)

        return self._cached(snap, ("rdf",), build)

    # -- JSON API --------------------------------------------------------------------------

    @staticmethod
    def per_page(raw: str | None) -> int:
        if raw is None or raw == "":
            return DEFAULT_PER_PAGE
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_PER_PAGE:
            raise BadParameter(f"per_page must be an integer in [1, {MAX_PER_PAGE}]")
        return int(raw)

    @staticmethod
    def page_number(raw: str | None) -> int:
        if raw is None or raw == "":
            return 1
        if not raw.isdigit() or int(raw) < 1:
            raise BadParameter("page must be a positive integer")
        return int(raw)

    @staticmethod
    def encode_cursor(start: int) -> str:
        """Opaque cursor: unpadded URL-safe base64 of ``from:<first article index>``."""
        raw = base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{start}".encode()).decode()
        return raw.rstrip("=")

    @staticmethod
    def decode_cursor(cursor: str | None) -> int:
        if cursor is None or cursor == "":
            return 0
        try:
            text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            text = ""
        number = text.removeprefix(_CURSOR_PREFIX)
        if not text.startswith(_CURSOR_PREFIX) or not number.isdigit():
            raise BadParameter("cursor is not one this API handed out")
        return int(number)

    def _api_item(self, snap: Snapshot, i: int) -> dict[str, Any]:
        it = self.item(snap, i)
        item: dict[str, Any] = {"url": it.url, "title": it.title, "updated": w3c(it.updated)}
        if i in snap.deleted:
            item["deleted"] = True
        return item

    def link_page_path(self, page: int, per_page: int, include_deleted: bool = False) -> str:
        """The path the ``Link: rel="next"`` header names for ``page`` (2 and later)."""
        flag = "&include_deleted=1" if include_deleted else ""
        return f"/api/articles?page={page}&per_page={per_page}{flag}"

    def api_link_page(
        self, snap: Snapshot, page: int, per_page: int, include_deleted: bool = False
    ) -> Resource:
        """Page ``page`` of ``/api/articles``; the next page is in a ``Link`` header.  With
        ``include_deleted``, every article is listed, a deleted one as ``"deleted": true``."""

        def build() -> Resource:
            listed = list(range(self.model.pages)) if include_deleted else self.live(snap)
            start = (page - 1) * per_page
            ids = listed[start : start + per_page]
            data: dict[str, Any] = {
                "items": [self._api_item(snap, i) for i in ids],
                "page": page,
                "per_page": per_page,
                "total": len(listed),
            }
            headers = {"Cache-Control": "no-cache"}
            if start + per_page < len(listed):
                nxt = self.origin + self.link_page_path(page + 1, per_page, include_deleted)
                headers["Link"] = f'<{nxt}>; rel="next"'
            return self._resource(snap, _json(data), JSON, headers=headers)

        return self._cached(snap, ("api-link", page, per_page, include_deleted), build)

    def _cursor_slice(
        self, snap: Snapshot, start: int, per_page: int
    ) -> tuple[list[int], str | None]:
        live = self.live(snap)
        pos = bisect_left(live, start)
        ids = live[pos : pos + per_page]
        more = pos + per_page < len(live)
        return ids, self.encode_cursor(ids[-1] + 1) if more and ids else None

    def api_cursor_page(self, snap: Snapshot, start: int, per_page: int) -> Resource:
        """A page of ``/api/articles-cursor``: live articles from index ``start`` on."""

        def build() -> Resource:
            ids, cursor = self._cursor_slice(snap, start, per_page)
            data = {
                "data": {"items": [self._api_item(snap, i) for i in ids]},
                "next_cursor": cursor,
            }
            return self._resource(snap, _json(data), JSON, headers={"Cache-Control": "no-cache"})

        return self._cached(snap, ("api-cursor", start, per_page), build)

    # -- manifest --------------------------------------------------------------------------

    def manifest(self, snap: Snapshot, per_page: int = DEFAULT_PER_PAGE) -> dict[str, Any]:
        """What each discovery endpoint yields right now (see the package docs)."""
        arts = self.model.articles
        live = self.live(snap)
        live_paths = [arts[i].path for i in live]
        children = []
        for n in range(1, self.sitemap_children + 1):
            lastmod = self.child_lastmod(snap, n)
            children.append(
                {
                    "path": self.child_path(n),
                    "url": self.origin + self.child_path(n),
                    "gzip": n % 2 == 1,
                    "lastmod": None if lastmod is None else w3c(lastmod),
                    "pages": [arts[i].path for i in self.child_ids(snap, n)],
                }
            )
        feed_paths = [arts[i].path for i in self.newest(snap)]
        deleted_paths = [arts[i].path for i in self.deleted(snap)]
        feeds = [
            {
                "path": path,
                "url": self.origin + path,
                "format": fmt,
                "pages": feed_paths,
                "deleted": deleted_paths if fmt == "atom" else [],
            }
            for path, fmt in (
                ("/feed.rss", "rss"),
                ("/feed.atom", "atom"),
                ("/feed-rss1.rdf", "rdf"),
            )
        ]
        pages = max(1, -(-len(live) // per_page))
        first_link = f"/api/articles?per_page={per_page}"
        link_walk = [first_link] + [self.link_page_path(p, per_page) for p in range(2, pages + 1)]
        first_cursor = f"/api/articles-cursor?per_page={per_page}"
        cursor_walk = [first_cursor]
        cursors: list[str] = []
        start = 0
        while True:
            _, cursor = self._cursor_slice(snap, start, per_page)
            if cursor is None:
                break
            cursors.append(cursor)
            cursor_walk.append(f"{first_cursor}&cursor={cursor}")
            start = self.decode_cursor(cursor)
        return {
            "robots_sitemaps": [self.origin + "/sitemap.xml"],
            "sitemap_chunk": self.sitemap_chunk,
            "feed_items": self.feed_items,
            "per_page": per_page,
            "sitemaps": [
                {
                    "path": "/sitemap.xml",
                    "url": self.origin + "/sitemap.xml",
                    "kind": "sitemapindex",
                    "children": children,
                    "pages": live_paths,
                },
                {
                    "path": "/sitemaps/raw-gzip.xml",
                    "url": self.origin + "/sitemaps/raw-gzip.xml",
                    "kind": "urlset",
                    "raw_gzip": True,
                    "pages": live_paths,
                },
            ],
            "feeds": feeds,
            "apis": [
                {
                    "path": first_link,
                    "url": self.origin + first_link,
                    "next_mode": "link",
                    "items_path": "items",
                    "url_field": "url",
                    "walk": link_walk,
                    "pages": live_paths,
                },
                {
                    "path": first_cursor,
                    "url": self.origin + first_cursor,
                    "next_mode": "cursor",
                    "items_path": "data.items",
                    "url_field": "url",
                    "cursor_field": "next_cursor",
                    "cursor_param": "cursor",
                    "cursors": cursors,
                    "walk": cursor_walk,
                    "pages": live_paths,
                },
            ],
        }


_EMPTY_FEED = datetime(2024, 1, 1, tzinfo=UTC)


def _json(data: object) -> bytes:
    return json.dumps(data, indent=1).encode()
