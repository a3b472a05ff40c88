"""The loopback test site's HTTP server: site state, the routing table and the request handler.

To add a new kind of page, write a ``_route_*`` method returning a :class:`Reply` and add one
line to :meth:`SiteApp.routes`.  The discovery endpoints (sitemaps, feeds, the JSON API) are
rendered and cached by :class:`~._discovery.Discovery` from a :class:`~._discovery.Snapshot`
of the article states.  The fault paths under ``/faults/`` have a routing table and state of
their own, :class:`~._faults.Faults`.  The JavaScript-rendered pages under ``/js/`` are built
by :mod:`._js` from an article's current view.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from functools import lru_cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from ._charsets import CHARSET_PAGES, charset_page
from ._content import MUTATION_KINDS, TRACKING_PARAMS, SiteModel, format_price, product_state
from ._discovery import (
    DEFAULT_FEED_ITEMS,
    DEFAULT_SITEMAP_CHUNK,
    BadParameter,
    Discovery,
    Resource,
    Snapshot,
    article_last_modified,
)
from ._faults import Faults
from ._guides import guide_page
from ._http import HTML, BadRequest, Reply, Request
from ._js import (
    APP_JS,
    ASSETS,
    JsArticle,
    data_json,
    fetch_shell,
    index_page,
    inline_shell,
    js_article,
)
from ._pages import CSRF_MARK, CSS, ROBOTS_TXT, TS_MARK, Renderer, fake_pdf

ADVERTISED_HOST = "localhost"
BIND_HOST = "127.0.0.1"
EXTERNAL_HOSTS = ("twitter.com", "www.facebook.com", "www.linkedin.com")
_STATIC_MODIFIED = datetime(2024, 1, 1, tzinfo=UTC)
_SLUG = r"(?P<slug>[a-z0-9][a-z0-9-]*)"
_INDEX = r"(?P<i>0|[1-9][0-9]{0,8})"
JS_ASSET_PATHS = tuple(f"/js/asset/{name}" for name in ASSETS)
_MAX_SLOW_SECONDS = 60.0


@dataclass(frozen=True)
class ArticleState:
    """Server-side state of one article; ``version`` bumps on every change (Last-Modified)."""

    status: int = 200
    mutations: tuple[str, ...] = ()
    #: what the print and syndicated copies show; differs from ``mutations`` after a
    #: mutation with ``copies=0`` (the original moved away from its copies)
    copy_mutations: tuple[str, ...] = ()
    version: int = 0
    #: the article's own path answers 301 to ``/moved/<slug>``, which serves it
    moved: bool = False

    @property
    def pristine(self) -> bool:
        return self.status == 200 and not self.mutations and not self.moved


Handler = Callable[[Request, "re.Match[str]"], Reply]


def _etag(template: str) -> str:
    return '"' + hashlib.sha256(template.encode()).hexdigest()[:32] + '"'


class SiteApp:
    """Site model + mutable state + routing; shared by all handler threads."""

    def __init__(
        self,
        pages: int,
        seed: int,
        port: int,
        *,
        sitemap_chunk: int = DEFAULT_SITEMAP_CHUNK,
        feed_items: int = DEFAULT_FEED_ITEMS,
    ) -> None:
        self.model = SiteModel(pages, seed)
        self.port = port
        self.url = f"http://{ADVERTISED_HOST}:{port}/"
        self.renderer = Renderer(self.model, ADVERTISED_HOST, port)
        self.discovery = Discovery(
            self.model, self.url, sitemap_chunk=sitemap_chunk, feed_items=feed_items
        )
        self._robots = ROBOTS_TXT + f"\nSitemap: {self.url}sitemap.xml\n"
        self._lock = threading.Lock()
        self._states: dict[int, ArticleState] = {}
        #: bumps with every article version bump (the discovery caches' key)
        self._generation = 0
        self._snapshot = Snapshot()
        #: ``/__control/slow`` rules: request-target prefix -> seconds to wait before answering
        self._slow: dict[str, float] = {}
        self._last_ts = datetime.min
        self._requests = 0
        self._pdf = fake_pdf()
        self._json = self.renderer.data_json()
        self._template = lru_cache(maxsize=8192)(self._template_uncached)
        self._static = lru_cache(maxsize=1024)(self._static_uncached)
        self.faults = Faults(self.url, seed)
        self._js = lru_cache(maxsize=1024)(self._js_uncached)
        self._js_index = index_page([a.title for a in self.model.articles])
        #: requests per ``/js/asset/`` path since the last reset
        self._asset_hits: dict[str, int] = dict.fromkeys(JS_ASSET_PATHS, 0)
        self._routes = self.routes()

    # -- routing table ---------------------------------------------------------------------

    def routes(self) -> list[tuple[re.Pattern[str], frozenset[str], Handler]]:
        """``(path regex, methods, handler)``; the first full match wins."""
        get = frozenset({"GET", "HEAD"})
        post = frozenset({"POST"})
        table: list[tuple[str, frozenset[str], Handler]] = [
            (r"/robots\.txt", get, self._route_robots),
            (r"/", get, self._route_home),
            (r"/articles", get, self._route_listing),
            (rf"/articles/{_SLUG}/?", get, self._route_article),
            (rf"/print/{_SLUG}", get, self._route_print),
            (rf"/syndicated/{_SLUG}", get, self._route_syndicated),
            (rf"/private/{_SLUG}", get, self._route_private),
            (rf"/redirect/{_SLUG}", get, self._route_redirect),
            (rf"/moved/{_SLUG}", get, self._route_moved),
            (rf"/elsewhere/{_SLUG}", get, self._route_elsewhere),
            (r"/tag/(?P<tag>[a-z0-9-]+)", get, self._route_tag),
            (r"/about", get, self._route_about),
            (r"/files/report\.pdf", get, self._route_pdf),
            (r"/api/data\.json", get, self._route_json),
            (r"/static/site\.css", get, self._route_css),
            (r"/intl/(?P<name>[a-z0-9-]+)", get, self._route_charset),
            (r"/guides/(?P<name>[a-z0-9-]+)", get, self._route_guide),
            (r"/sitemap\.xml", get, self._route_sitemap_index),
            (
                r"/sitemaps/articles-(?P<n>[1-9][0-9]{0,8})\.xml(?P<gz>\.gz)?",
                get,
                self._route_sitemap_child,
            ),
            (r"/sitemaps/raw-gzip\.xml", get, self._route_raw_gzip_sitemap),
            (r"/sitemaps/files\.xml", get, self._route_files_sitemap),
            (r"/feed\.rss", get, self._route_rss),
            (r"/feed\.atom", get, self._route_atom),
            (r"/feed-rss1\.rdf", get, self._route_rdf),
            (r"/api/articles", get, self._route_api_link),
            (r"/api/articles-cursor", get, self._route_api_cursor),
            (r"/faults(?:/.*)?", get, self._route_faults),
            (r"/js/", get, self._route_js_index),
            (r"/js/app\.js", get, self._route_js_app),
            (rf"/js/(?P<kind>inline|fetch)/{_INDEX}", get, self._route_js_shell),
            (rf"/js/data/{_INDEX}\.json", get, self._route_js_data),
            (r"/js/asset/(?P<name>[a-z0-9][a-z0-9.-]*)", get, self._route_js_asset),
            (r"/__control/manifest", get, self._route_manifest),
            (r"/__control/hits", get, self._route_hits),
            (r"/__control/js-expected", get, self._route_js_expected),
            (r"/__control/fault", post, self._route_fault_control),
            (
                r"/__control/(?P<action>mutate|delete|move|restore|reset|slow)",
                post,
                self._route_control,
            ),
        ]
        return [(re.compile(p), m, h) for p, m, h in table]

    def handle(self, method: str, target: str) -> Reply:
        delay = self.slow_delay(target)
        if delay:
            time.sleep(delay)
        parts = urlsplit(target)
        request = Request(
            method="GET" if method == "HEAD" else method,
            path=parts.path or "/",
            query=parse_qs(parts.query),
        )
        for pattern, methods, handler in self._routes:
            match = pattern.fullmatch(request.path)
            if match is None:
                continue
            if method not in methods:
                allow = ", ".join(sorted(methods))
                return self._plain(405, "method not allowed\n", {"Allow": allow})
            try:
                return handler(request, match)
            except (BadRequest, BadParameter) as exc:
                return self._json_reply({"error": str(exc)}, 400)
        return self._error(404)

    def warm(self) -> None:
        """Pre-render every article page (run in a background thread for benchmarks)."""
        for i in range(self.model.pages):
            self._template("article", i, self.state(i).mutations)

    # -- noise -----------------------------------------------------------------------------

    def fill(self, template: str) -> bytes:
        """Replace the per-request markers: a strictly increasing timestamp and a CSRF token."""
        with self._lock:
            now = datetime.now()
            if now <= self._last_ts:
                now = self._last_ts + timedelta(microseconds=1)
            self._last_ts = now
            self._requests += 1
            counter = self._requests
        token = hashlib.sha1(f"{self.model.seed}:{counter}".encode()).hexdigest()[:24]
        stamp = now.strftime("%H:%M:%S.%f")
        return template.replace(TS_MARK, stamp).replace(CSRF_MARK, token).encode()

    # -- state -----------------------------------------------------------------------------

    def state(self, i: int) -> ArticleState:
        with self._lock:
            return self._states.get(i, ArticleState())

    def _set_state(self, i: int, update: Callable[[ArticleState], ArticleState]) -> ArticleState:
        with self._lock:
            old = self._states.get(i, ArticleState())
            new = update(old)
            if new != old:
                new = replace(new, version=old.version + 1)
                self._generation += 1
            self._states[i] = new
            return new

    def snapshot(self) -> Snapshot:
        """The article states the discovery endpoints render (rebuilt once per change)."""
        with self._lock:
            if self._snapshot.generation != self._generation:
                self._snapshot = Snapshot(
                    generation=self._generation,
                    versions={i: s.version for i, s in self._states.items() if s.version},
                    deleted=frozenset(i for i, s in self._states.items() if s.status != 200),
                )
            return self._snapshot

    def last_modified(self, i: int, state: ArticleState) -> datetime:
        """Stable per content version; strictly increases with every change of article ``i``."""
        return article_last_modified(self.model.articles[i].published, state.version)

    def slow_delay(self, target: str) -> float:
        """Seconds to wait before answering ``target`` (``/__control/`` is never slowed)."""
        if not self._slow or target.startswith("/__control/"):
            return 0.0
        with self._lock:
            rules = list(self._slow.items())
        return max((s for prefix, s in rules if target.startswith(prefix)), default=0.0)

    # -- page templates ----------------------------------------------------------------------

    def _template_uncached(self, kind: str, i: int, mutations: tuple[str, ...]) -> tuple[str, str]:
        r = self.renderer
        if kind == "private":
            tpl = r.private_page(i)
        else:
            view = self.model.view(i, mutations, syndicated=kind == "syndicated")
            tpl = r.article_page(view, kind)
        return tpl, _etag(tpl)

    def _static_uncached(self, kind: str, arg: str) -> tuple[str, str] | None:
        r = self.renderer
        tpl: str | None
        if kind == "home":
            tpl = r.home()
        elif kind == "listing":
            tpl = r.listing(int(arg))
        elif kind == "tag":
            tpl = r.tag(arg)
        else:
            tpl = r.about()
        return None if tpl is None else (tpl, _etag(tpl))

    def _html(self, kind: str, arg: str = "") -> Reply:
        """A page whose content never changes (home, listings, tags, about)."""
        cached = self._static(kind, arg)
        if cached is None:
            return self._error(404)
        return Reply(body=cached[0], etag=cached[1], last_modified=_STATIC_MODIFIED)

    def _plain(self, status: int, text: str, headers: dict[str, str] | None = None) -> Reply:
        return Reply(status, text.encode(), "text/plain; charset=utf-8", headers=headers or {})

    def _error(self, status: int) -> Reply:
        return Reply(status, self.renderer.error_page(status).encode())

    def _json_reply(self, data: Any, status: int = 200) -> Reply:
        body = json.dumps(data, indent=1).encode()
        return Reply(status, body, "application/json", headers={"Cache-Control": "no-store"})

    def _article_index(self, match: re.Match[str]) -> int | None:
        return self.model.by_slug.get(match.group("slug"))

    def _article_like(self, kind: str, i: int | None) -> Reply:
        if i is None:
            return self._error(404)
        state = self.state(i)
        if state.status != 200:
            return self._error(state.status)
        mutations = state.mutations if kind == "article" else state.copy_mutations
        tpl, etag = self._template(kind, i, mutations)
        return Reply(
            body=tpl,
            etag=etag,
            last_modified=self.last_modified(i, state),
            headers={"Cache-Control": "no-cache"},
        )

    # -- routes ----------------------------------------------------------------------------

    def _route_robots(self, req: Request, match: re.Match[str]) -> Reply:
        reply = self._plain(200, self._robots)
        reply.etag, reply.last_modified = _etag(self._robots), _STATIC_MODIFIED
        return reply

    def _route_home(self, req: Request, match: re.Match[str]) -> Reply:
        return self._html("home")

    def _route_listing(self, req: Request, match: re.Match[str]) -> Reply:
        page_arg = req.arg("page", "1") or "1"
        page = int(page_arg) if page_arg.isdigit() else 0
        return self._html("listing", str(page))

    def _route_article(self, req: Request, match: re.Match[str]) -> Reply:
        i = self._article_index(match)
        if i is not None and self.state(i).moved:
            location = self.url.rstrip("/") + "/moved/" + self.model.articles[i].slug
            body = f'<!DOCTYPE html><title>Moved</title><a href="{location}">Moved here</a>\n'
            return Reply(301, body.encode(), headers={"Location": location})
        return self._article_like("article", i)

    def _route_moved(self, req: Request, match: re.Match[str]) -> Reply:
        """An article moved here (the control ``move``): the same page, the same ETag."""
        i = self._article_index(match)
        return self._article_like("article", i if i is not None and self.state(i).moved else None)

    def _route_print(self, req: Request, match: re.Match[str]) -> Reply:
        i = self._article_index(match)
        ok = i is not None and self.model.articles[i].has_print
        return self._article_like("print", i if ok else None)

    def _route_syndicated(self, req: Request, match: re.Match[str]) -> Reply:
        i = self._article_index(match)
        ok = i is not None and self.model.articles[i].has_syndicated
        return self._article_like("syndicated", i if ok else None)

    def _route_private(self, req: Request, match: re.Match[str]) -> Reply:
        i = self._article_index(match)
        if i is None or not self.model.articles[i].has_private:
            return self._error(404)
        tpl, etag = self._template("private", i, ())
        return Reply(body=tpl, etag=etag, last_modified=_STATIC_MODIFIED)

    def _route_redirect(self, req: Request, match: re.Match[str]) -> Reply:
        i = self._article_index(match)
        if i is None:
            return self._error(404)
        location = self.url.rstrip("/") + self.model.articles[i].path
        body = f'<!DOCTYPE html><title>Moved</title><a href="{location}">Moved here</a>\n'
        return Reply(301, body.encode(), headers={"Location": location})

    def _route_elsewhere(self, req: Request, match: re.Match[str]) -> Reply:
        """301 to the article on another host: this server under its IP, ``127.0.0.1``.

        For scope tests; no page links here, so crawls of the site never meet it.
        """
        i = self._article_index(match)
        if i is None:
            return self._error(404)
        location = f"http://{BIND_HOST}:{self.port}{self.model.articles[i].path}"
        body = f'<!DOCTYPE html><title>Moved</title><a href="{location}">Moved here</a>\n'
        return Reply(301, body.encode(), headers={"Location": location})

    def _route_tag(self, req: Request, match: re.Match[str]) -> Reply:
        return self._html("tag", match.group("tag"))

    def _route_about(self, req: Request, match: re.Match[str]) -> Reply:
        return self._html("about")

    def _route_pdf(self, req: Request, match: re.Match[str]) -> Reply:
        return Reply(200, self._pdf, "application/pdf", _etag(repr(self._pdf)), _STATIC_MODIFIED)

    def _route_json(self, req: Request, match: re.Match[str]) -> Reply:
        return Reply(200, self._json, "application/json", _etag(repr(self._json)), _STATIC_MODIFIED)

    def _route_charset(self, req: Request, match: re.Match[str]) -> Reply:
        page = charset_page(match.group("name"))
        if page is None:
            return self._error(404)
        body, content_type = page
        return Reply(200, body, content_type, _etag(repr(body)), _STATIC_MODIFIED)

    def _route_guide(self, req: Request, match: re.Match[str]) -> Reply:
        body = guide_page(match.group("name"))
        if body is None:
            return self._error(404)
        return Reply(200, body, HTML, _etag(repr(body)), _STATIC_MODIFIED)

    def _route_css(self, req: Request, match: re.Match[str]) -> Reply:
        return Reply(200, CSS.encode(), "text/css; charset=utf-8", _etag(CSS), _STATIC_MODIFIED)

    # -- discovery routes (sitemaps, feeds, JSON API; see _discovery.py) ---------------------

    def _resource(self, resource: Resource | None) -> Reply:
        if resource is None:
            return self._error(404)
        return Reply(
            200,
            resource.body,
            resource.content_type,
            resource.etag,
            resource.last_modified,
            dict(resource.headers),
        )

    def _route_sitemap_index(self, req: Request, match: re.Match[str]) -> Reply:
        return self._resource(self.discovery.sitemap_index(self.snapshot()))

    def _route_sitemap_child(self, req: Request, match: re.Match[str]) -> Reply:
        n, gz = int(match.group("n")), match.group("gz") is not None
        return self._resource(self.discovery.sitemap_child(self.snapshot(), n, gz))

    def _route_raw_gzip_sitemap(self, req: Request, match: re.Match[str]) -> Reply:
        return self._resource(self.discovery.raw_gzip_sitemap(self.snapshot()))

    def _route_files_sitemap(self, req: Request, match: re.Match[str]) -> Reply:
        """A sitemap (not in the index) of what is not an HTML page: the PDF and the JSON."""
        origin = self.url.rstrip("/")
        urls = "".join(
            f"<url><loc>{origin}{path}</loc></url>\n"
            for path in ("/files/report.pdf", "/api/data.json", "/about")
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{urls}</urlset>\n"
        ).encode()
        return Reply(200, body, "application/xml", _etag(body.decode()), _STATIC_MODIFIED)

    def _route_rss(self, req: Request, match: re.Match[str]) -> Reply:
        return self._resource(self.discovery.rss(self.snapshot()))

    def _route_atom(self, req: Request, match: re.Match[str]) -> Reply:
        return self._resource(self.discovery.atom(self.snapshot()))

    def _route_rdf(self, req: Request, match: re.Match[str]) -> Reply:
        return self._resource(self.discovery.rdf(self.snapshot()))

    def _route_api_link(self, req: Request, match: re.Match[str]) -> Reply:
        d = self.discovery
        per_page, page = d.per_page(req.arg("per_page")), d.page_number(req.arg("page"))
        include_deleted = (req.arg("include_deleted", "") or "").lower() in ("1", "true", "yes")
        return self._resource(d.api_link_page(self.snapshot(), page, per_page, include_deleted))

    def _route_api_cursor(self, req: Request, match: re.Match[str]) -> Reply:
        d = self.discovery
        per_page, start = d.per_page(req.arg("per_page")), d.decode_cursor(req.arg("cursor"))
        return self._resource(d.api_cursor_page(self.snapshot(), start, per_page))

    # -- fault paths (/faults/..., see _faults.py; never linked from the rest of the site) ---

    def _route_faults(self, req: Request, match: re.Match[str]) -> Reply:
        return self.faults.handle(req)

    # -- JavaScript-rendered pages (/js/..., see _js.py; never linked from the rest) --------

    def _js_uncached(self, i: int, mutations: tuple[str, ...]) -> JsArticle:
        return js_article(self.model.view(i, mutations), self.model.seed)

    def _js_article(self, match: re.Match[str]) -> tuple[JsArticle, ArticleState] | Reply:
        """Article ``i``'s JS content, or the error its article page answers right now."""
        i = int(match.group("i"))
        if i >= self.model.pages:
            return self._error(404)
        state = self.state(i)
        if state.status != 200:
            return self._error(state.status)
        return self._js(i, state.mutations), state

    def _route_js_index(self, req: Request, match: re.Match[str]) -> Reply:
        body = self._js_index
        return Reply(200, body, HTML, _etag(repr(body)), _STATIC_MODIFIED)

    def _route_js_app(self, req: Request, match: re.Match[str]) -> Reply:
        return Reply(200, APP_JS, "application/javascript", _etag(repr(APP_JS)), _STATIC_MODIFIED)

    def _route_js_shell(self, req: Request, match: re.Match[str]) -> Reply:
        found = self._js_article(match)
        if isinstance(found, Reply):
            return found
        article, state = found
        body = inline_shell(article) if match.group("kind") == "inline" else fetch_shell(article)
        return Reply(
            200,
            body,
            HTML,
            _etag(repr(body)),
            self.last_modified(article.i, state),
            {"Cache-Control": "no-cache"},
        )

    def _route_js_data(self, req: Request, match: re.Match[str]) -> Reply:
        found = self._js_article(match)
        if isinstance(found, Reply):
            return found
        article, state = found
        body = data_json(article)
        return Reply(
            200,
            body,
            "application/json",
            _etag(repr(body)),
            self.last_modified(article.i, state),
            {"Cache-Control": "no-cache"},
        )

    def _route_js_asset(self, req: Request, match: re.Match[str]) -> Reply:
        asset = ASSETS.get(match.group("name"))
        if asset is None:
            return self._error(404)
        with self._lock:
            self._asset_hits[req.path] += 1
        body, content_type = asset
        # no-store: every page load that does not block the asset requests it again
        return Reply(200, body, content_type, headers={"Cache-Control": "no-store"})

    def asset_hits(self) -> dict[str, int]:
        """Requests per ``/js/asset/`` path since the last reset (every path, 0 if none)."""
        with self._lock:
            return dict(self._asset_hits)

    def _route_hits(self, req: Request, match: re.Match[str]) -> Reply:
        return self._json_reply(self.asset_hits())

    def _route_js_expected(self, req: Request, match: re.Match[str]) -> Reply:
        i = self._index_arg(req)
        state = self.state(i)
        expected = self._js(i, state.mutations).expected()
        expected["status"] = state.status
        return self._json_reply(expected)

    # -- control routes --------------------------------------------------------------------

    def _route_manifest(self, req: Request, match: re.Match[str]) -> Reply:
        return self._json_reply(self.manifest())

    def _route_fault_control(self, req: Request, match: re.Match[str]) -> Reply:
        overrides = self.faults.override(req)
        return self._json_reply(
            {"ok": True, "overrides": overrides, "answers": self.faults.answers()}
        )

    def _route_control(self, req: Request, match: re.Match[str]) -> Reply:
        action = match.group("action")
        if action == "reset":
            self.faults.reset()
            with self._lock:
                self._slow.clear()
                self._asset_hits = dict.fromkeys(JS_ASSET_PATHS, 0)
                for i, st in list(self._states.items()):
                    if not st.pristine:
                        self._states[i] = ArticleState(version=st.version + 1)
                        self._generation += 1
            return self._json_reply({"ok": True})
        if action == "slow":
            return self._json_reply({"ok": True, "slow": self._set_slow(req)})
        i = self._index_arg(req)
        if action == "mutate":
            kind = req.arg("kind", "")
            if kind not in MUTATION_KINDS:
                raise BadRequest(f"kind must be one of {', '.join(MUTATION_KINDS)}")
            copies = (req.arg("copies", "1") or "1").lower() not in ("0", "false", "no")
            self._set_state(
                i,
                lambda s: replace(
                    s,
                    mutations=(*s.mutations, kind),
                    copy_mutations=(*s.copy_mutations, kind) if copies else s.copy_mutations,
                ),
            )
        elif action == "delete":
            gone = (req.arg("gone", "") or "").lower() in ("1", "true", "yes")
            self._set_state(i, lambda s: replace(s, status=410 if gone else 404))
        elif action == "move":
            self._set_state(i, lambda s: replace(s, moved=True))
        else:
            self._set_state(i, lambda s: ArticleState(version=s.version))
        return self._json_reply(self.article_entry(i))

    def _set_slow(self, req: Request) -> dict[str, float]:
        prefix = req.arg("path_prefix", "") or ""
        if not prefix.startswith("/") or prefix.startswith("/__control/"):
            raise BadRequest("path_prefix must start with / and not be under /__control/")
        raw = req.arg("seconds", "") or ""
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds <= _MAX_SLOW_SECONDS:
            raise BadRequest(f"seconds must be a number in [0, {_MAX_SLOW_SECONDS:g}]")
        with self._lock:
            if seconds:
                self._slow[prefix] = seconds
            else:
                self._slow.pop(prefix, None)
            return dict(self._slow)

    def _index_arg(self, req: Request) -> int:
        raw = req.arg("i", "") or ""
        if not raw.isdigit() or int(raw) >= self.model.pages:
            raise BadRequest(f"i must be an article index in [0, {self.model.pages})")
        return int(raw)

    # -- manifest --------------------------------------------------------------------------

    def article_entry(self, i: int) -> dict[str, Any]:
        a = self.model.articles[i]
        state = self.state(i)
        price, in_stock = product_state(a, state.mutations)
        redirect = None
        if a.redirect_to is not None:
            redirect = "/redirect/" + self.model.articles[a.redirect_to].slug
        return {
            "i": i,
            "slug": a.slug,
            "path": a.path,
            "url": self.url.rstrip("/") + a.path,
            "title": a.title,
            "status": state.status,
            "mutations": list(state.mutations),
            "last_modified": format_datetime(self.last_modified(i, state), usegmt=True),
            "tags": list(a.tags),
            "price": None if price is None else format_price(price),
            "in_stock": in_stock,
            "aliases": [a.path + "/"],
            "print": f"/print/{a.slug}" if a.has_print else None,
            "syndicated": f"/syndicated/{a.slug}" if a.has_syndicated else None,
            "private": f"/private/{a.slug}" if a.has_private else None,
            "links_to_redirect": redirect,
        }

    def manifest(self) -> dict[str, Any]:
        m = self.model
        r = self.renderer
        arts = m.articles
        redirects = [
            {
                "path": "/redirect/" + arts[a.redirect_to].slug,
                "to": arts[a.redirect_to].path,
                "linked_from": a.path,
            }
            for a in arts
            if a.redirect_to is not None
        ]
        listing = ["/"] + [r.listing_path(p) for p in range(1, r.listing_pages + 1)]
        listing += [f"/tag/{t}" for t in sorted(m.tags)]
        return {
            "pages": m.pages,
            "seed": m.seed,
            "url": self.url,
            "articles": [self.article_entry(i) for i in range(m.pages)],
            "exact_duplicates": [
                {"path": f"/print/{arts[i].slug}", "of": arts[i].path} for i in m.print_ids
            ],
            "near_duplicates": [
                {"path": f"/syndicated/{arts[i].slug}", "of": arts[i].path}
                for i in m.syndicated_ids
            ],
            "private": [f"/private/{arts[i].slug}" for i in m.private_ids],
            "non_html": [
                {"path": "/files/report.pdf", "content_type": "application/pdf"},
                {"path": "/api/data.json", "content_type": "application/json"},
            ],
            "thin": ["/about"],
            "charsets": [
                {
                    "path": f"/intl/{name}",
                    "encoding": enc,
                    "declared": declared,
                    "title": title,
                    "text": paragraphs[0],
                }
                for name, (enc, declared, title, paragraphs) in CHARSET_PAGES.items()
            ],
            "listing": listing,
            "redirects": redirects,
            "static": ["/static/site.css"],
            "robots_disallow": ["/private/", "/__control/"],
            "tracking_params": list(TRACKING_PARAMS),
            "external_hosts": list(EXTERNAL_HOSTS),
            "discovery": self.discovery.manifest(self.snapshot()),
            "faults": self.faults.manifest(),
            "fault_hits": self.faults.hits(),
        }


# -- HTTP plumbing -------------------------------------------------------------------------


def _if_none_match(header: str, etag: str) -> bool:
    if header.strip() == "*":
        return True
    tags = [t.strip() for t in header.split(",")]
    return any(t.removeprefix("W/") == etag for t in tags)


def _not_modified_since(header: str, last_modified: datetime) -> bool:
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return last_modified <= since


class TestSiteServer(ThreadingHTTPServer):
    """Threaded loopback server carrying the shared :class:`SiteApp`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(
        self,
        port: int,
        pages: int,
        seed: int,
        *,
        sitemap_chunk: int = DEFAULT_SITEMAP_CHUNK,
        feed_items: int = DEFAULT_FEED_ITEMS,
    ) -> None:
        super().__init__((BIND_HOST, port), _Handler)
        self.app = SiteApp(
            pages,
            seed,
            self.server_address[1],
            sitemap_chunk=sitemap_chunk,
            feed_items=feed_items,
        )

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-response are normal for crawlers; report anything else."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LocalhostJournal/1.0"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle + delayed ACK
    # stall every keep-alive response by ~40 ms.
    disable_nagle_algorithm = True

    def version_string(self) -> str:
        return self.server_version

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:
        """Per-request logging is silenced."""

    def _dispatch(self, method: str) -> None:
        app = cast(TestSiteServer, self.server).app
        try:
            reply = app.handle(method, self.path)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            reply = Reply(500, b"internal error\n", "text/plain; charset=utf-8")
        self._send(method, reply, app)

    def _send(self, method: str, reply: Reply, app: SiteApp) -> None:
        status = reply.status
        if status == 200 and method in ("GET", "HEAD") and self._not_modified(reply):
            status = 304
        self.send_response(status)
        if reply.etag:
            self.send_header("ETag", reply.etag)
        if reply.last_modified:
            self.send_header("Last-Modified", format_datetime(reply.last_modified, usegmt=True))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if status == HTTPStatus.NOT_MODIFIED:
            self.end_headers()
            return
        if reply.stream is not None:
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(reply.length))
            self.end_headers()
            if method != "HEAD":
                for chunk in reply.stream():
                    self.wfile.write(chunk)
            return
        body = app.fill(reply.body) if isinstance(reply.body, str) else reply.body
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)

    def _not_modified(self, reply: Reply) -> bool:
        inm = self.headers.get("If-None-Match")
        if inm is not None:
            return reply.etag is not None and _if_none_match(inm, reply.etag)
        ims = self.headers.get("If-Modified-Since")
        if ims is not None and reply.last_modified is not None:
            return _not_modified_since(ims, reply.last_modified)
        return False
