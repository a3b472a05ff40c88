"""A deterministic loopback test website for crawling tests, demos and benchmarks.

Run it with ``python -m knowledge_crawler.testsite --pages 50`` or, from Python::

    from knowledge_crawler.testsite import TestSite

    with TestSite(pages=50, seed=1) as site:
        site.url  # 'http://localhost:PORT/'
        site.mutate(3, "price")

The site runs in a subprocess (its own interpreter, so a Twisted reactor in the test process is
never blocked); control calls go over HTTP to ``/__control/`` on 127.0.0.1.  Stdlib only.

URL layout (``<slug>`` is an article slug, see the manifest):

* ``/robots.txt`` disallows ``/private/`` and ``/__control/`` and names the sitemap index
  (``Sitemap: http://localhost:PORT/sitemap.xml``).
* ``/`` home (first 20 articles, archive of all listing pages, tags, downloads),
  ``/articles`` and ``/articles?page=N`` (20 per page), ``/tag/<tag>``.
* ``/articles/<slug>`` and ``/articles/<slug>/`` (same page, 200): the articles.  Any query
  string is ignored; links use tracking parameters, fragments, ``LOCALHOST``, trailing slashes,
  absolute, protocol-relative and relative forms.
* ``/print/<slug>`` exact and ``/syndicated/<slug>`` near duplicates (one paragraph rewritten),
  ``/private/<slug>`` (200, robots-disallowed), ``/redirect/<slug>`` (301 to the article).
* ``/about`` (thin), ``/files/report.pdf``, ``/api/data.json``, ``/static/site.css``.
* ``/__control/manifest`` (GET) and ``/__control/{mutate,delete,restore,reset,slow}`` (POST).

Discovery endpoints (never linked from any page, so link-following crawls do not meet them;
robots.txt names ``/sitemap.xml``).  They list only live articles (status 200), each under its
canonical URL ``http://localhost:PORT/articles/<slug>``, and every one answers with a strong
``ETag`` (304 on ``If-None-Match``) and a truthful ``Last-Modified``:

* ``/sitemap.xml``: a sitemap index of ``/sitemaps/articles-N.xml.gz`` (odd ``N``) and
  ``/sitemaps/articles-N.xml`` (even ``N``), ``sitemap_chunk`` articles each (by article index,
  default 1,000; ``TestSite(sitemap_chunk=...)``/``--sitemap-chunk``), each ``<lastmod>`` the
  newest of its entries.  Every child is served both ways: ``.xml`` as ``application/xml``,
  ``.xml.gz`` as a gzip file (``application/x-gzip``, no ``Content-Encoding``).  Entries'
  ``<lastmod>`` is the article's Last-Modified in W3C form, so it moves on every mutation.
* ``/sitemaps/raw-gzip.xml``: one urlset of every article whose body is gzip bytes served as
  ``application/xml`` without any gzip header (as some real servers do).  Not in the index.
* ``/feed.rss`` (RSS 2.0), ``/feed.atom`` (Atom 1.0, ``xml:base="http://localhost:PORT/articles/"``
  and bare-slug relative entry links) and ``/feed-rss1.rdf`` (RSS 1.0/RDF): the ``feed_items``
  (default 20) newest articles by publication date.  ``pubDate``/``published`` never move; Atom
  ``<updated>`` is the article's Last-Modified.
* ``/api/articles?per_page=N[&page=P]`` (``per_page`` 1-1000, default 20):
  ``{"items": [{"url", "title", "updated"}], "page", "per_page", "total"}`` with
  ``Link: <http://localhost:PORT/api/articles?page=P+1&per_page=N>; rel="next"`` on every page
  but the last.
* ``/api/articles-cursor?per_page=N[&cursor=C]``: ``{"data": {"items": [...]},
  "next_cursor": "C" | null}``; send ``next_cursor`` back as ``cursor``.  Cursors are opaque
  (unpadded URL-safe base64 of ``from:<article index>``), so a walk resumed with an old cursor
  neither skips nor repeats articles when others are deleted.  Bad parameters answer 400.

Fault knob for resume tests: ``POST /__control/slow?path_prefix=/api/&seconds=0.5``
(:meth:`TestSite.slow`) makes every request whose target (path plus query string) starts with
``path_prefix`` wait ``seconds`` (at most 60) before it is answered, so a test can kill a crawl
mid-pagination deterministically.  Rules add up per prefix (the longest delay that matches
wins); ``seconds=0`` removes one; ``/__control/reset`` clears them all.  ``/__control/`` itself
is never slowed.

Manifest keys: ``pages``, ``seed``, ``url``, ``articles`` (``i``, ``slug``, ``path``, ``url``,
``title``, ``status``, ``mutations``, ``last_modified``, ``tags``, ``price``, ``in_stock``,
``aliases``, ``print``, ``syndicated``, ``private``, ``links_to_redirect``),
``exact_duplicates`` and ``near_duplicates`` (``path``, ``of``), ``private``, ``non_html``
(``path``, ``content_type``), ``thin``, ``listing``, ``redirects`` (``path``, ``to``,
``linked_from``), ``static``, ``robots_disallow``, ``tracking_params``, ``external_hosts``,
``charsets`` and ``discovery``, what each discovery endpoint yields right now (``pages`` are
article paths, in the order served):

* ``robots_sitemaps`` (URLs), ``sitemap_chunk``, ``feed_items``, ``per_page`` (the API walks'
  page size, the default 20);
* ``sitemaps``: ``{path, url, kind: "sitemapindex", children: [{path, url, gzip, lastmod,
  pages}], pages}`` for ``/sitemap.xml`` and ``{path, url, kind: "urlset", raw_gzip: true,
  pages}`` for ``/sitemaps/raw-gzip.xml``;
* ``feeds``: ``{path, url, format: "rss" | "atom" | "rdf", pages}`` (newest first);
* ``apis``: ``{path, url, next_mode: "link", items_path: "items", url_field: "url", walk,
  pages}`` and ``{path, url, next_mode: "cursor", items_path: "data.items", url_field: "url",
  cursor_field: "next_cursor", cursor_param: "cursor", cursors, walk, pages}``; ``path``/``url``
  are the first page, ``walk`` every page path a full walk requests, in order.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, cast
from urllib.parse import urlencode, urlsplit

from ._content import MUTATION_KINDS, TRACKING_PARAMS
from ._discovery import DEFAULT_FEED_ITEMS, DEFAULT_SITEMAP_CHUNK

__all__ = ["MUTATION_KINDS", "TRACKING_PARAMS", "FetchResult", "TestSite", "TestSiteError"]

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class TestSiteError(RuntimeError):
    """The test site failed to start or a control call failed."""

    __test__ = False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_RAW_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


@dataclass(frozen=True)
class FetchResult:
    """One raw HTTP response (redirects are not followed)."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class TestSite:
    """Start/stop the test site subprocess and drive its control API."""

    __test__ = False

    def __init__(
        self,
        pages: int = 50,
        seed: int = 1,
        port: int = 0,
        *,
        warm: bool = False,
        startup_timeout: float = 20.0,
        sitemap_chunk: int = DEFAULT_SITEMAP_CHUNK,
        feed_items: int = DEFAULT_FEED_ITEMS,
    ) -> None:
        self.pages = pages
        self.warm = warm
        self.sitemap_chunk = sitemap_chunk
        self.feed_items = feed_items
        self.seed = seed
        self.requested_port = port
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._url: str | None = None
        self._slugs: list[str] | None = None
        self._external = False

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def connect(cls, url: str) -> TestSite:
        """A handle on a site someone else started (``python -m knowledge_crawler.testsite``).

        ``start``/``stop`` are no-ops on it; the control API works as usual.
        """
        site = cls()
        site._url = url if url.endswith("/") else url + "/"
        site._external = True
        return site

    def start(self) -> TestSite:
        if self._proc is not None or self._external:
            return self
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        cmd = [
            sys.executable,
            "-m",
            "knowledge_crawler.testsite",
            "--pages",
            str(self.pages),
            "--port",
            str(self.requested_port),
            "--seed",
            str(self.seed),
            "--sitemap-chunk",
            str(self.sitemap_chunk),
            "--feed-items",
            str(self.feed_items),
            "--exit-on-stdin-eof",
        ]
        if self.warm:
            cmd.append("--warm")
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._proc = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, remaining))
            chunk = os.read(proc.stdout.fileno(), 1024) if ready else b""
            if not chunk:
                self.stop()
                why = "timed out" if not ready else f"exited with {proc.returncode}"
                raise TestSiteError(f"test site {why} before printing its URL: {cmd}")
            line += chunk
        self._url = line.decode().splitlines()[0].strip()
        return self

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def __enter__(self) -> TestSite:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Advertised base URL, ``http://localhost:PORT/``."""
        if self._url is None:
            raise TestSiteError("test site is not running; call start() or use it as a context")
        return self._url

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None
        return port

    @property
    def loopback_url(self) -> str:
        """Same server addressed by IP, ``http://127.0.0.1:PORT/``."""
        return f"http://127.0.0.1:{self.port}/"

    def article_path(self, i: int) -> str:
        if self._slugs is None:
            self._slugs = [a["slug"] for a in self.manifest()["articles"]]
        return f"/articles/{self._slugs[i]}"

    def article_url(self, i: int) -> str:
        """Canonical URL of article ``i``: ``http://localhost:PORT/articles/<slug>``."""
        return self.url.rstrip("/") + self.article_path(i)

    # -- HTTP ------------------------------------------------------------------------------

    def fetch(
        self,
        path_or_url: str,
        headers: Mapping[str, str] | None = None,
        method: str = "GET",
    ) -> FetchResult:
        """One request to the site (a path is sent to 127.0.0.1); redirects are not followed."""
        url = path_or_url
        if path_or_url.startswith("/"):
            url = self.loopback_url.rstrip("/") + path_or_url
        data = b"" if method == "POST" else None
        req = urllib.request.Request(url, data=data, headers=dict(headers or {}), method=method)
        try:
            with _RAW_OPENER.open(req, timeout=30) as resp:
                return FetchResult(resp.status, dict(resp.headers.items()), resp.read())
        except urllib.error.HTTPError as err:
            with err:
                return FetchResult(err.code, dict(err.headers.items()), err.read())

    def _control(self, action: str, **params: object) -> Any:
        query = urlencode({k: str(v) for k, v in params.items()})
        path = f"/__control/{action}" + (f"?{query}" if query else "")
        result = self.fetch(path, method="GET" if action == "manifest" else "POST")
        if result.status != 200:
            raise TestSiteError(f"{path} answered {result.status}: {result.text.strip()}")
        return json.loads(result.body)

    # -- control API -----------------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        """What the site contains right now (see the package docs for the keys)."""
        return cast(dict[str, Any], self._control("manifest"))

    def mutate(self, i: int, kind: str, *, copies: bool = True) -> dict[str, Any]:
        """Change article ``i``; ``kind`` is one of :data:`MUTATION_KINDS`.

        With ``copies=False`` its print and syndicated copies keep their content,
        so the original moves away from its duplicates.
        """
        if kind not in MUTATION_KINDS:
            raise ValueError(f"kind must be one of {MUTATION_KINDS}")
        return cast(dict[str, Any], self._control("mutate", i=i, kind=kind, copies=int(copies)))

    def delete(self, i: int, gone: bool = False) -> dict[str, Any]:
        """Article ``i`` (and its print/syndicated copies) answer 404, or 410 if ``gone``."""
        return cast(dict[str, Any], self._control("delete", i=i, gone=int(gone)))

    def restore(self, i: int) -> dict[str, Any]:
        """Undo every mutation and deletion of article ``i``."""
        return cast(dict[str, Any], self._control("restore", i=i))

    def reset(self) -> None:
        """Every article back to its generated content and status; no slow rules left."""
        self._control("reset")

    def slow(self, path_prefix: str, seconds: float) -> dict[str, float]:
        """Answer requests whose target starts with ``path_prefix`` ``seconds`` late.

        ``seconds=0`` removes the rule; :meth:`reset` removes them all.  Returns every rule.
        """
        result = self._control("slow", path_prefix=path_prefix, seconds=seconds)
        return cast(dict[str, float], result["slow"])
