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
* ``/print/<slug>`` exact (whose ``rel=canonical`` names the article) and
  ``/syndicated/<slug>`` near duplicates (one paragraph rewritten),
  ``/private/<slug>`` (200, robots-disallowed), ``/redirect/<slug>`` (301 to the article).
* ``/about`` (thin), ``/files/report.pdf``, ``/api/data.json``, ``/static/site.css``.
* ``/__control/manifest``, ``/__control/hits`` and ``/__control/js-expected?i=N`` (GET) and
  ``/__control/{mutate,delete,restore,reset,slow,fault}`` (POST).

JavaScript-rendered pages (``/js/...``, see ``_js.py``).  Not linked from any other page, not in
any sitemap or feed, allowed by robots.txt; a crawl reaches them from ``/js/``.  ``<i>`` is an
article index (``0`` to ``pages - 1``, no leading zeros):

* ``/js/``: a server-rendered page (title, a paragraph) linking ``/js/inline/<i>`` and
  ``/js/fetch/<i>`` for every article, with plain ``<a href>`` links.
* ``/js/inline/<i>`` and ``/js/fetch/<i>``: script shells.  The HTML holds none of the
  article's text: ``<title>Loading…</title>``, an empty ``<div id="app"></div>``,
  ``<noscript>This page needs JavaScript.</noscript>``, ``<script src="/js/app.js">`` and an
  inline script that builds ``#app > article`` (``<h1>`` title, ``<p>`` paragraphs, one
  ``<pre><code>`` block of indented code, one ``<ul>`` with a nested ``<ul>``) with
  ``textContent`` and sets ``document.title`` to the article title.  The inline shell holds the
  content as a JSON literal and builds it on ``DOMContentLoaded``; the fetch shell waits for
  ``load``, then 150 ms, then fetches ``/js/data/<i>.json?v=<version>``, so a browser that
  stops at ``load`` sees an empty ``#app`` (wait for ``networkidle`` or ``#app article``).
  The content is article ``i``'s current title, lead, paragraphs and reader updates (the
  ``text``, ``rewrite`` and ``append`` mutations change it; ``price``, ``stock``,
  ``whitespace`` and ``case`` do not), plus a generated code block and list.  A deleted
  article's shells and data answer its 404 or 410.  Strong ``ETag`` hashed from the body (it
  changes with the content; the fetch shell's ``version`` is a hash of the content),
  ``Last-Modified`` is the article's; 304 on ``If-None-Match``/``If-Modified-Since``.
* ``/js/data/<i>.json`` (``application/json``, ``v`` ignored): ``{"i", "title", "blocks":
  [{"type": "p", "text"} | {"type": "code", "text"} | {"type": "list", "items": [{"text",
  "items": [...]}]}]}``.
* ``/js/app.js``: a small helper script the shells load (they work without it).
* ``/js/asset/pixel.png`` (a 1x1 PNG), ``/js/asset/font.woff2`` (the shells' ``@font-face``)
  and ``/js/asset/clip.mp4`` (a ``<video preload="auto">``): what a crawler's browser should
  block.  Served ``Cache-Control: no-store``; the server counts requests for each:
  ``GET /__control/hits`` (:meth:`TestSite.hits`) answers ``{path: count}`` for all three,
  ``/__control/reset`` zeroes them.
* ``GET /__control/js-expected?i=N`` (:meth:`TestSite.js_expected`): what a browser ends with
  on article ``N``'s shells: ``title``, ``paragraphs``, ``code``, ``items`` (every ``<li>``'s
  own text in document order, nested items after their parent), ``list`` (``[{"text",
  "items"}]``), ``version``, ``inline``, ``fetch`` and ``data`` (paths) and ``status`` (the
  article's: 200, 404 or 410).

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
  ``<updated>`` is the article's Last-Modified.  The Atom feed also names every deleted article
  (404 or 410) in an RFC 6721 ``<at:deleted-entry ref="tag:localhost,2024:article:<i>"
  when="...">`` (namespace ``http://purl.org/atompub/tombstones/1.0``, ``when`` the article's
  Last-Modified once deleted) with its ``alternate`` link, newest ``when`` first.
* ``/api/articles?per_page=N[&page=P]`` (``per_page`` 1-1000, default 20):
  ``{"items": [{"url", "title", "updated"}], "page", "per_page", "total"}`` with
  ``Link: <http://localhost:PORT/api/articles?page=P+1&per_page=N>; rel="next"`` on every page
  but the last.  With ``&include_deleted=1`` every article is listed, live or not, a deleted
  one with ``"deleted": true`` (and the next links keep the parameter).
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

Fault paths (``/faults/...``, see ``_faults.py``).  No page of the regular site links here, so
crawls started at ``/`` never meet them; the index ``/faults/`` links every case, so a crawl
started there reaches them all.  Fault pages link only to ``/faults/...`` (and, on purpose, to
private addresses).  Every case is deterministic: what a request gets depends on its query
string and on how many requests its exact target (path plus sorted query) has received since
the last ``/__control/reset``, which clears every counter, 429 deadline and override.  An
"article-like page" is 200 ``text/html`` generated prose, stable per path.  What a correct
crawler ends with (``expect``) is one of ``active`` (stored, status active), ``not_stored``,
``dead_lettered`` (nothing stored, the failure recorded), ``suspected_missing`` and
``tombstoned``.  The expectations assume this project's limits (``REDIRECT_MAX_TIMES = 10``,
``DOWNLOAD_MAXSIZE = 16 MiB``), at least two retries of transient failures and a download
timeout above 1 s (``/faults/slow``'s default); ``timeout-then-ok`` ends ``active`` with any
timeout.

* ``/faults/flaky-503?fails=2`` and ``/faults/flaky-500`` (``fails`` defaults to 2): 503 or
  500 for the first ``fails`` requests, then the article-like page -> ``active`` after two
  retries.  ``/faults/flaky-503?fails=1000000`` (always 503) -> ``dead_lettered``.
* ``/faults/timeout-then-ok?sleep=2`` (``&fails=1``): the first ``fails`` requests wait
  ``sleep`` seconds (at most 60) before answering 200; later ones answer at once (requests
  are counted on arrival, so a client that gave up is answered fast next time) -> ``active``.
* ``/faults/rate-limited?retry_after=2`` (``Retry-After: 2``) and
  ``/faults/rate-limited-date?retry_after=3`` (``Retry-After`` as an RFC 9110 IMF-fixdate:
  the server's clock rounded up to a whole second, plus 3 s): 429 for the first ``fails``
  (default 1) requests, then 200.  A retry that comes before the advertised time (0.25 s of
  grace) is answered 429 again and counted in the entry's ``early`` -> ``active`` after one
  on-time retry.
* ``/faults/unauthorized`` (401 with ``WWW-Authenticate: Basic realm="faults"``) and
  ``/faults/forbidden`` (403), always -> ``dead_lettered`` without a retry.
* ``/faults/missing-then-back`` (``?fails=1``): 404, then the article-like page ->
  ``not_stored`` after one crawl, ``active`` after a second.  ``/faults/missing`` (404) and
  ``/faults/gone`` (410), always -> ``not_stored``.
* ``/faults/doc/<name>`` (the index links ``/faults/doc/alpha`` and ``/faults/doc/beta``):
  the article-like page -> ``active``.
  ``POST /__control/fault?path=/faults/doc/alpha&status=404`` (or ``410`` or ``200``;
  ``status=0`` removes it; :meth:`TestSite.fault`) forces that status on any path under
  ``/faults/`` (whatever its query) until removed or reset; 200 serves the article-like page.
  A stored page re-crawled after ``status=404`` ends ``suspected_missing``, after
  ``status=410`` ``tombstoned``, and ``active`` again once it answers 200.
  ``status=200&answer=empty`` (or ``binary``: 256 KiB of random bytes, or ``error``: a
  short "Something went wrong" page), all labelled ``text/html``, answers that junk 200
  instead of the page: a stored page keeps its content, the answer is a parse failure.
* ``/faults/loop-a`` -> 302 ``/faults/loop-b`` -> 302 ``/faults/loop-a`` ... ->
  ``dead_lettered``.  ``/faults/chain/N`` answers 301 to ``/faults/chain/N-1`` (N <= 9999)
  and ``/faults/chain/0`` the article-like page; the index links ``/faults/chain/20`` (20
  hops, over the redirect limit) -> ``dead_lettered``.
* ``/faults/slow?seconds=1`` (at most 60): waits ``seconds`` before answering the
  article-like page; with ``&trickle=1`` the headers go out at once and the body follows in
  10 pieces over ``seconds`` -> ``active`` (``dead_lettered`` if ``seconds`` exceeds the
  download timeout).
* ``/faults/huge?mb=32``: exactly ``mb`` MiB (at most 4096) of HTML, streamed from one small
  block with a ``Content-Length`` -> ``dead_lettered`` (over the size cap).
* ``/faults/gzip-bomb`` (``?mb=100``, at most 1024): ``Content-Encoding: gzip`` of ``mb`` MiB
  of zero bytes, about 100 KB on the wire (compressed once on first use, ~0.3 s, and cached)
  -> ``dead_lettered``.  ``/faults/gzip-bomb-html``: the same bytes as ``text/html``
  without ``Content-Encoding`` -> ``not_stored``.
* ``/faults/deep-nesting`` (``?depth=100000``, at most 1,000,000; built once and cached): a
  heading and a paragraph, then ``depth`` nested ``<div>`` -> ``active`` (the top text) or
  ``not_stored``, never a crash.
* ``/faults/binary``: 64 KiB of seeded random bytes (NULs included) as ``text/html;
  charset=utf-8`` -> ``not_stored``.
* ``/faults/wrong-charset``: ``charset=utf-8`` in the header (no ``<meta>``), windows-1252
  bytes with é and ü in the body -> ``active`` with the accented ``text`` intact.
* URL traps: ``/faults/calendar/YYYY/MM`` links the previous and the next month, years 0001
  to 9999 (the index links ``2024/01``); ``/faults/search?page=N`` links page N+1 (and N-1)
  forever.  Every page is fine (``active``) but the crawl must finish, storing a bounded
  number of them.
* ``/faults/private-links`` (``active``) links to ``http://10.0.0.1/``,
  ``http://169.254.169.254/latest/meta-data`` and ``http://[::1]/``;
  ``/faults/redirect-private`` answers 302 to ``http://169.254.169.254/``.  A correct crawler
  refuses private, loopback and link-local addresses before connecting -> ``not_stored``
  (it must still allow the configured test-site origin itself, which is loopback too).
  Nothing listens at those addresses: never request them, not even from tests.

Manifest keys: ``pages``, ``seed``, ``url``, ``articles`` (``i``, ``slug``, ``path``, ``url``,
``title``, ``status``, ``mutations``, ``last_modified``, ``tags``, ``price``, ``in_stock``,
``aliases``, ``print``, ``syndicated``, ``private``, ``links_to_redirect``),
``exact_duplicates`` and ``near_duplicates`` (``path``, ``of``), ``private``, ``non_html``
(``path``, ``content_type``), ``thin``, ``listing``, ``redirects`` (``path``, ``to``,
``linked_from``), ``static``, ``robots_disallow``, ``tracking_params``, ``external_hosts``,
``charsets``, ``faults`` (below), ``fault_hits`` (requests per fault target, path plus
sorted query, since the last reset: e.g. how many calendar pages a crawl requested) and
``discovery``, what each discovery endpoint yields right now (``pages`` are article paths, in
the order served):

* ``robots_sitemaps`` (URLs), ``sitemap_chunk``, ``feed_items``, ``per_page`` (the API walks'
  page size, the default 20);
* ``sitemaps``: ``{path, url, kind: "sitemapindex", children: [{path, url, gzip, lastmod,
  pages}], pages}`` for ``/sitemap.xml`` and ``{path, url, kind: "urlset", raw_gzip: true,
  pages}`` for ``/sitemaps/raw-gzip.xml``;
* ``feeds``: ``{path, url, format: "rss" | "atom" | "rdf", pages, deleted}`` (newest first;
  ``deleted``: the article paths the feed names in ``at:deleted-entry``, Atom only);
* ``apis``: ``{path, url, next_mode: "link", items_path: "items", url_field: "url", walk,
  pages}`` and ``{path, url, next_mode: "cursor", items_path: "data.items", url_field: "url",
  cursor_field: "next_cursor", cursor_param: "cursor", cursors, walk, pages}``; ``path``/``url``
  are the first page, ``walk`` every page path a full walk requests, in order.

``faults`` lists one entry per fault case, in index order: ``name``, ``group`` (``index``,
``retry``, ``politeness``, ``auth``, ``deletion``, ``redirect``, ``slow``, ``size``,
``hostile``, ``trap``, ``private``), ``path`` (path plus query; null for the three private
targets), ``url``, ``linked`` (linked from ``/faults/``), ``serves``, ``statuses`` (what
successive requests get; the last one repeats), ``expect`` (after one crawl of a reset site),
``then`` (after a second crawl, no reset between), ``acceptable`` (every correct outcome,
``expect`` first), ``reason``, ``requests`` (requests a correct crawler sends to ``path`` in
one crawl; null when its settings decide), ``never_connect``, ``hits`` (requests received
since the last reset), ``override`` (status forced by ``/__control/fault``, or null), plus
per-case keys: ``fails``, ``sleep``, ``seconds``, ``retry_after``, ``retry_after_format``
(``seconds`` | ``http-date``), ``early``, ``after_flip`` (``{"200": "active", "404":
"suspected_missing", "410": "tombstoned"}``), ``cycle``, ``hops``, ``final``, ``bytes``,
``decoded_bytes``, ``content_encoding``, ``depth``, ``text``, ``declared``, ``encoding``,
``trap``, ``next``, ``links``, ``linked_from`` and ``location``.
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
#: control calls answered on GET (the rest are POST)
_GET_CONTROLS = frozenset({"manifest", "hits", "js-expected"})


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
    """Start/stop the test site subprocess and drive its control API.

    ``startup_timeout``: how long :meth:`start` waits for the server to print its URL;
    by default 20 s and one more for every 1,000 articles, since the server builds every
    article before it listens (about 15 s for 50,000 on a 2-core machine).
    """

    __test__ = False

    def __init__(
        self,
        pages: int = 50,
        seed: int = 1,
        port: int = 0,
        *,
        warm: bool = False,
        startup_timeout: float | None = None,
        sitemap_chunk: int = DEFAULT_SITEMAP_CHUNK,
        feed_items: int = DEFAULT_FEED_ITEMS,
    ) -> None:
        self.pages = pages
        self.warm = warm
        self.sitemap_chunk = sitemap_chunk
        self.feed_items = feed_items
        self.seed = seed
        self.requested_port = port
        self.startup_timeout = 20.0 + pages / 1000 if startup_timeout is None else startup_timeout
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
        result = self.fetch(path, method="GET" if action in _GET_CONTROLS else "POST")
        if result.status != 200:
            raise TestSiteError(f"{path} answered {result.status}: {result.text.strip()}")
        return json.loads(result.body)

    # -- control API -----------------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        """What the site contains right now (see the package docs for the keys)."""
        return cast(dict[str, Any], self._control("manifest"))

    def hits(self) -> dict[str, int]:
        """Requests for each ``/js/asset/`` path since the last :meth:`reset` (all three keys)."""
        return cast(dict[str, int], self._control("hits"))

    def js_expected(self, i: int) -> dict[str, Any]:
        """What a browser builds on article ``i``'s ``/js/inline/<i>`` and ``/js/fetch/<i>``.

        Keys: ``title``, ``paragraphs``, ``code``, ``items``, ``list``, ``version``, ``inline``,
        ``fetch``, ``data`` and ``status`` (see the package docs).
        """
        return cast(dict[str, Any], self._control("js-expected", i=i))

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

    def move(self, i: int) -> dict[str, Any]:
        """Article ``i`` moves: its path answers 301 to ``/moved/<slug>``, which serves the
        same page with the same ETag (undone by :meth:`restore`)."""
        return cast(dict[str, Any], self._control("move", i=i))

    def restore(self, i: int) -> dict[str, Any]:
        """Undo every mutation and deletion of article ``i``."""
        return cast(dict[str, Any], self._control("restore", i=i))

    def reset(self) -> None:
        """Every article back to its generated content and status; no slow rules left.

        Also clears every fault path's request counter, 429 deadline and forced status, and
        the ``/js/asset/`` counters (:meth:`hits`).
        """
        self._control("reset")

    def fault(self, path: str, status: int, answer: str | None = None) -> dict[str, int]:
        """Force ``status`` (200, 404 or 410) on the fault path ``path`` (``/faults/...``).

        Every query of that path gets it until :meth:`reset` or ``status=0`` removes it; 200
        serves an article-like page, or with ``answer`` junk labelled text/html: ``empty``
        (no body), ``binary`` (256 KiB of random bytes) or ``error`` (a short error page).
        Returns every forced status by path.
        """
        args: dict[str, Any] = {"path": path, "status": status}
        if answer is not None:
            args["answer"] = answer
        result = self._control("fault", **args)
        return cast(dict[str, int], result["overrides"])

    def slow(self, path_prefix: str, seconds: float) -> dict[str, float]:
        """Answer requests whose target starts with ``path_prefix`` ``seconds`` late.

        ``seconds=0`` removes the rule; :meth:`reset` removes them all.  Returns every rule.
        """
        result = self._control("slow", path_prefix=path_prefix, seconds=seconds)
        return cast(dict[str, float], result["slow"])
