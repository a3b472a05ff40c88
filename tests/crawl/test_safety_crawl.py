"""Private, loopback and link-local destinations are refused before any connection (F-SAFETY).

Crawls of two tiny HTTP servers on 127.0.0.1 started here: a hostile one whose page
links to ``10.0.0.1``, the metadata service ``169.254.169.254`` (also spelled as one
number, in hex and IPv4-mapped IPv6) and ``localhost``, and redirects a page, a
sitemap and its robots.txt there; and a benign one. Nothing is ever sent beyond
127.0.0.1: :class:`NetworkGuard`, the last downloader middleware, blocks (and
records) any other destination, so a broken refusal fails the test without
traffic. Names resolved here (``friendly.test``, ``sneaky.test``, ``localhost``)
go through a stub of ``socket.gethostbyname`` that answers from a table and never
asks DNS.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest
from scrapy import Spider, signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.resolver import dnscache
from scrapy.settings import Settings
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.test import get_crawler

from knowledge_crawler import meta
from knowledge_crawler import settings as project_settings
from knowledge_crawler.crawl.runtime import runtime_for
from knowledge_crawler.middlewares.resolver import PrivateAddressRefused, PrivateAddressResolver
from knowledge_crawler.middlewares.safety import (
    PrivateAddressMiddleware,
    RefusedResolutionMiddleware,
)
from knowledge_crawler.sources import Source, sources_from_urls
from knowledge_crawler.spiders.knowledge import KnowledgeSpider
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, crawl_settings, query

pytestmark = pytest.mark.crawl

SAFETY = "knowledge_crawler.middlewares.safety.PrivateAddressMiddleware"
RESOLUTION = "knowledge_crawler.middlewares.safety.RefusedResolutionMiddleware"
GUARD = f"{__name__}.NetworkGuard"
METADATA = "http://169.254.169.254/latest/meta-data"


# -- what may leave this machine: nothing ------------------------------------------------------


class NetworkGuard:
    """The last downloader middleware: any host but loopback ones is blocked and recorded."""

    loopback: ClassVar[set[str]] = {"127.0.0.1", "localhost"}
    blocked: ClassVar[list[str]] = []

    def process_request(self, request: Request) -> None:
        if urlsplit(request.url).hostname not in self.loopback:
            self.blocked.append(request.url)
            raise IgnoreRequest(f"test guard: {request.url} is not loopback")


@pytest.fixture(autouse=True)
def _guard() -> Iterator[None]:
    NetworkGuard.blocked.clear()
    yield
    assert NetworkGuard.blocked == [], "requests got past the refusal to the test guard"


@contextmanager
def stub_dns(monkeypatch: pytest.MonkeyPatch, names: dict[str, str]) -> Iterator[None]:
    """``socket.gethostbyname`` answering ``names`` (and numeric hosts) only: no DNS query."""

    def gethostbyname(name: str) -> str:
        if name in names:
            return names[name]
        try:
            return socket.inet_ntoa(socket.inet_aton(name))  # numeric: no lookup
        except OSError:
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: not in this test's table") from None

    monkeypatch.setattr(socket, "gethostbyname", gethostbyname)
    NetworkGuard.loopback |= set(names)
    try:
        yield
    finally:
        NetworkGuard.loopback -= set(names) - {"localhost"}
        for name in names:
            dnscache.pop(name, None)


@contextmanager
def resolver_installed(owner: Any) -> Iterator[PrivateAddressResolver]:
    """The project's resolver on the running reactor, as ``scrapy crawl`` installs it."""
    from twisted.internet import reactor

    before_simple, before_name = reactor.resolver, reactor.nameResolver
    resolver = PrivateAddressResolver.from_crawler(owner, reactor)
    resolver.install_on_reactor()
    try:
        yield resolver
    finally:
        reactor.installNameResolver(before_name)
        reactor.resolver = before_simple


# -- the servers ---------------------------------------------------------------------------------


def _page(title: str, body: str) -> bytes:
    words = " ".join(["Plain words make this page long enough to be a real page."] * 8)
    return (
        f"<!doctype html><html><head><title>{title}</title></head>"
        f"<body><main><h1>{title}</h1><p>{words}</p>{body}</main></body></html>"
    ).encode()


class Server:
    """An HTTP server on 127.0.0.1 with fixed routes; it records the Host and path it is asked."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.seen.append((self.headers.get("Host", ""), self.path))
                status, headers, body = server.routes.get(self.path, (404, {}, b"not here"))
                self.send_response(status)
                for name, value in {"Content-Type": "text/html; charset=utf-8", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def page(self, path: str, title: str, body: str = "") -> None:
        self.routes[path] = (200, {}, _page(title, body))

    def redirect(self, path: str, location: str) -> None:
        self.routes[path] = (302, {"Location": location}, b"")

    def hosts(self) -> set[str]:
        return {host.rsplit(":", 1)[0] for host, _ in self.seen}


def _serve(server: Server) -> Iterator[Server]:
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


#: the hostile page's links into private space, and the hosts scope must let through
PRIVATE_LINKS = (
    "http://10.0.0.1/",
    METADATA,
    "http://0xa000001/admin",  # 10.0.0.1 as one hex number
    "http://2852039166/latest/meta-data",  # 169.254.169.254 as one number
    "http://[::ffff:a9fe:a9fe]/latest/meta-data",  # ... IPv4-mapped
)
PRIVATE_HOSTS = ("10.0.0.1", "169.254.169.254", "0xa000001", "2852039166", "::ffff:a9fe:a9fe")


@pytest.fixture(scope="module")
def hostile() -> Iterator[Server]:
    server = Server()
    links = [*PRIVATE_LINKS, f"http://localhost:{server.port}/secret", "/moved", "/about"]
    server.page("/", "Links", "".join(f'<p><a href="{u}">link</a></p>' for u in links))
    server.page("/about", "About")
    server.page("/secret", "Secret")
    server.redirect("/moved", f"{METADATA}/iam/security-credentials/")
    server.redirect("/sitemap-moved", "http://169.254.169.254/sitemap.xml")
    server.redirect("/robots.txt", f"{METADATA}/robots.txt")
    yield from _serve(server)


@pytest.fixture(scope="module")
def benign() -> Iterator[Server]:
    server = Server()
    server.page(
        "/loopback-links", "Links", f'<a href="http://localhost:{server.port}/secret">s</a>'
    )
    server.page("/dns", "Names", f'<a href="http://sneaky.test:{server.port}/secret">s</a>')
    server.page("/secret", "Secret")
    yield from _serve(server)


# -- crawling --------------------------------------------------------------------------------------


def safety_settings(db_url: str, **overrides: Any) -> Settings:
    """The project's settings with the safety middlewares (as settings.py enables them)."""
    middlewares = {
        **project_settings.DOWNLOADER_MIDDLEWARES,
        SAFETY: 70,
        RESOLUTION: 560,
        GUARD: 1000,
    }
    return crawl_settings(db_url, DOWNLOADER_MIDDLEWARES=middlewares, **overrides)


class Downloads:
    """Every request that reached the downloader (robots.txt included): a bound method,
    as signal handlers are weak references."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def on_request(self, request: Request, spider: Any) -> None:
        self.urls.append(request.url)

    def hosts(self) -> set[str]:
        return {urlsplit(u).hostname or "" for u in self.urls}


async def crawl(
    settings: Settings, *, resolve: dict[str, str] | None = None, **args: str
) -> tuple[Any, Downloads]:
    downloads = Downloads()
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(KnowledgeSpider)
    crawler.signals.connect(downloads.on_request, signal=signals.request_reached_downloader)
    if resolve is None:
        await crawler.crawl_async(**args)
    else:  # the resolver sees the crawls the runner runs, as it sees the process's
        with resolver_installed(runner):
            await runner.crawl(crawler, **args)
    return crawler, downloads


def seeds_file(tmp_path: Path, start: str, domains: list[str], **extra: str) -> str:
    lines = [
        "[[source]]",
        'id = "s"',
        f'start_urls = ["{start}"]',
        f"allowed_domains = {domains!r}".replace("'", '"'),
        *(f"{k} = {v}" for k, v in extra.items()),
    ]
    path = tmp_path / "seeds.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def safety_stats(crawler: Any) -> dict[str, Any]:
    return {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("kc/safety/")}


@coroutine_test
async def test_a_source_on_the_loopback_test_site_crawls_normally(
    site: TestSite, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scope: the site's own host, as `-a seeds=URL` gives it; the resolver is on, as in
    # `scrapy crawl`, and `localhost` (a start host) may resolve to 127.0.0.1
    with stub_dns(monkeypatch, {"localhost": "127.0.0.1"}):
        crawler, downloads = await crawl(safety_settings(db_url), resolve={}, seeds=site.url)
    stats = crawler.stats.get_stats()
    assert safety_stats(crawler) == {}
    assert stats["kc/outcome"] == "finished"
    assert downloads.hosts() == {"localhost"}
    assert len(query(db_url, "SELECT url FROM pages")) > 10


@coroutine_test
async def test_a_source_on_127_0_0_1_crawls_normally(site: TestSite, db_url: str) -> None:
    crawler, downloads = await crawl(safety_settings(db_url), seeds=site.loopback_url)
    assert safety_stats(crawler) == {}
    assert downloads.hosts() == {"127.0.0.1"}
    assert len(query(db_url, "SELECT url FROM pages")) > 10


@coroutine_test
async def test_links_and_redirects_into_private_space_are_never_requested(
    hostile: Server, db_url: str, tmp_path: Path
) -> None:
    hostile.seen.clear()
    seeds = seeds_file(
        tmp_path,
        f"{hostile.url}/",
        ["127.0.0.1", "localhost", *PRIVATE_HOSTS],  # scope lets them all through
        sitemaps=f'["{hostile.url}/sitemap-moved"]',
    )
    crawler, downloads = await crawl(safety_settings(db_url), seeds=seeds)
    # only the start host was ever asked for anything
    assert downloads.hosts() == {"127.0.0.1"}, downloads.urls
    assert hostile.hosts() == {"127.0.0.1"}
    assert {path for _, path in hostile.seen} >= {"/", "/about", "/moved", "/robots.txt"}
    assert safety_stats(crawler) == {
        # five private links, localhost, and three redirects: a page, a sitemap, robots.txt
        "kc/safety/refused_private": len(PRIVATE_LINKS) + 1 + 3,
        "kc/safety/refused_private_redirect": 3,
    }
    stored = {r["url"] for r in query(db_url, "SELECT url FROM pages")}
    assert stored == {f"{hostile.url}/", f"{hostile.url}/about"}


@pytest.mark.parametrize("allow", [False, True])
@coroutine_test
async def test_the_setting_allows_private_destinations(
    benign: Server, db_url: str, tmp_path: Path, allow: bool
) -> None:
    # loopback only: with the setting on, `localhost` (not a start host) is reached
    benign.seen.clear()
    seeds = seeds_file(tmp_path, f"{benign.url}/loopback-links", ["127.0.0.1", "localhost"])
    settings = safety_settings(db_url, KC_ALLOW_PRIVATE_ADDRESSES=allow)
    crawler, downloads = await crawl(settings, seeds=seeds)
    reached = ("localhost", "/secret") in {(h.split(":")[0], p) for h, p in benign.seen}
    assert reached is allow
    assert ("localhost" in downloads.hosts()) is allow
    expected = {} if allow else {"kc/safety/refused_private": 1}
    assert safety_stats(crawler) == expected


@pytest.mark.parametrize("allow", [False, True])
@coroutine_test
async def test_a_name_that_resolves_to_a_private_address_is_refused_when_resolved(
    benign: Server, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allow: bool
) -> None:
    # Both names resolve (by the stub) to 127.0.0.1: `friendly.test` is the source's start
    # host, `sneaky.test` is only linked; neither is private by its spelling.
    benign.seen.clear()
    seeds = seeds_file(
        tmp_path, f"http://friendly.test:{benign.port}/dns", ["friendly.test", "sneaky.test"]
    )
    settings = safety_settings(db_url, KC_ALLOW_PRIVATE_ADDRESSES=allow)
    names = {"friendly.test": "127.0.0.1", "sneaky.test": "127.0.0.1"}
    with stub_dns(monkeypatch, names):
        crawler, downloads = await crawl(settings, resolve=names, seeds=seeds)
    stats = crawler.stats.get_stats()
    assert "friendly.test" in benign.hosts()
    # reached the downloader, but never connected: the server never heard of it
    assert "sneaky.test" in downloads.hosts()
    assert ("sneaky.test" in benign.hosts()) is allow
    if allow:
        assert safety_stats(crawler) == {}
        return
    assert safety_stats(crawler) == {
        # its robots.txt (refused quietly as IgnoreRequest) and the page
        "kc/safety/refused_private": 2,
        "kc/safety/refused_private_dns": 2,
    }
    assert stats["kc/fetch/error/PrivateAddressRefused"] == 1  # the errback, by kind
    assert not any(k.startswith("retry/") or k.startswith("kc/retry/") for k in stats)
    assert {r["url"] for r in query(db_url, "SELECT url FROM pages")} == {
        f"http://friendly.test:{benign.port}/dns"
    }


# -- the resolver alone ------------------------------------------------------------------------


def _owner(*start_urls: str, allow: bool = False) -> Any:
    """A stand-in for the crawler process: its settings and one knowledge crawler."""
    sources = {"s": Source("s", tuple(start_urls), ("example.com",))}
    crawler = SimpleNamespace(spider=SimpleNamespace(sources=sources))
    settings = Settings({"KC_ALLOW_PRIVATE_ADDRESSES": allow})
    return SimpleNamespace(settings=settings, crawlers=[crawler])


async def _resolve(owner: Any, name: str) -> str:
    from twisted.internet import reactor

    resolver = PrivateAddressResolver.from_crawler(owner, reactor)
    return await maybe_deferred_to_future(resolver.getHostByName(name))


@coroutine_test
async def test_localhost_resolves_only_for_a_crawl_that_starts_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with stub_dns(monkeypatch, {"localhost": "127.0.0.1", "docs.example": "93.184.215.14"}):
        # a crawl of 127.0.0.1 does not own the name localhost, though it is the same machine
        with pytest.raises(PrivateAddressRefused, match=r"localhost resolves to 127\.0\.0\.1"):
            await _resolve(_owner("http://127.0.0.1:8000/"), "localhost")
        assert await _resolve(_owner("http://127.0.0.1:8000/"), "127.0.0.1") == "127.0.0.1"
        assert await _resolve(_owner("http://localhost:8000/"), "localhost") == "127.0.0.1"
        assert await _resolve(_owner("http://x.test/", allow=True), "localhost") == "127.0.0.1"
        # public answers are nobody's business, cached or not
        for _ in range(2):
            assert await _resolve(_owner("http://x.test/"), "docs.example") == "93.184.215.14"


def test_the_proxies_of_the_environment_may_be_private(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://proxy.corp.example:3128")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    resolver = PrivateAddressResolver.from_crawler(_owner("http://x.test/"), SimpleNamespace())
    assert resolver.allowed("proxy.corp.example")
    assert not resolver.allowed("localhost")
    assert resolver.allowed("x.test")  # the crawl's own start host


# -- the middlewares alone ----------------------------------------------------------------------


@pytest.fixture
def middleware(db_url: str) -> Iterator[Any]:
    crawler = get_crawler(Spider, {"KC_DATABASE_URL": db_url})
    crawler.stats.open_spider()
    runtime = runtime_for(crawler)
    [source] = sources_from_urls("http://localhost:8000/")
    runtime.sources = {source.id: source}
    yield PrivateAddressMiddleware.from_crawler(crawler), crawler, source.id
    runtime.store.close()


def test_requests_without_a_source_pass_unless_redirected(middleware: Any) -> None:
    mw, crawler, _ = middleware
    assert mw.process_request(Request("http://10.0.0.1/robots.txt")) is None
    robots_redirect = Request(
        f"{METADATA}/robots.txt", meta={"redirect_urls": ["http://example.com/robots.txt"]}
    )
    with pytest.raises(IgnoreRequest, match=r"link-local address 169\.254\.169\.254"):
        mw.process_request(robots_redirect)
    same_host = Request(
        "http://10.0.0.1/b/robots.txt", meta={"redirect_urls": ["http://10.0.0.1/robots.txt"]}
    )
    assert mw.process_request(same_host) is None
    assert crawler.stats.get_value("kc/safety/refused_private_redirect") == 1


def test_page_and_discovery_requests_are_held_to_their_source(middleware: Any) -> None:
    mw, crawler, sid = middleware
    for url in ("http://localhost:8000/a", "http://LOCALHOST.:9/b", "https://example.com/"):
        assert mw.process_request(Request(url, meta={meta.SOURCE: sid})) is None
    for url in ("http://127.0.0.1:8000/", "http://[::1]/", "http://0x7f.1/", METADATA):
        with pytest.raises(IgnoreRequest):
            mw.process_request(Request(url, meta={meta.SOURCE: sid}))
    with pytest.raises(IgnoreRequest, match=r"private address 10\.0\.0\.1"):
        mw.process_request(Request("http://10.0.0.1/sitemap.xml", meta={meta.DISCOVERY: sid}))
    with pytest.raises(IgnoreRequest):
        mw.process_request(Request("http://localhost:8000/", meta={meta.SOURCE: "unknown"}))
    assert crawler.stats.get_value("kc/safety/refused_private") == 6
    assert crawler.stats.get_value("kc/safety/refused_private_redirect") is None


def test_the_setting_turns_the_request_check_off(db_url: str) -> None:
    crawler = get_crawler(Spider, {"KC_DATABASE_URL": db_url, "KC_ALLOW_PRIVATE_ADDRESSES": "1"})
    with pytest.raises(NotConfigured):
        PrivateAddressMiddleware.from_crawler(crawler)


def test_a_refused_resolution_fails_as_private_address_refused() -> None:
    crawler = get_crawler(Spider)
    crawler.stats.open_spider()
    mw = RefusedResolutionMiddleware.from_crawler(crawler)
    resolver = PrivateAddressResolver.from_crawler(_owner("http://x.test/"), SimpleNamespace())
    with pytest.raises(PrivateAddressRefused):
        resolver._check("10.1.2.3", "refused.example")
    lookup_failed = CannotResolveHostError("no results for hostname lookup: refused.example")
    page = Request("http://refused.example/a", meta={meta.SOURCE: "s"})
    with pytest.raises(PrivateAddressRefused, match=r"refused\.example resolves to 10\.1\.2\.3"):
        mw.process_exception(page, lookup_failed)
    robots = Request("http://refused.example/robots.txt", meta={"dont_obey_robotstxt": True})
    with pytest.raises(IgnoreRequest, match=r"robots\.txt"):
        mw.process_exception(robots, lookup_failed)
    other = Request("http://other.example/", meta={meta.SOURCE: "s"})
    assert mw.process_exception(other, lookup_failed) is None
    assert mw.process_exception(page, TimeoutError()) is None
    assert crawler.stats.get_value("kc/safety/refused_private_dns") == 2
    # a later lookup that is allowed forgets the refusal
    assert resolver._check("93.184.215.14", "refused.example") == "93.184.215.14"
    assert mw.process_exception(page, lookup_failed) is None


def test_the_project_enables_the_safety_components() -> None:
    settings = crawl_settings("sqlite:///unused.db")
    priorities = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert priorities["knowledge_crawler.middlewares.scope.ScopeMiddleware"] < priorities[SAFETY]
    robots = priorities["knowledge_crawler.middlewares.robots.RobotsMiddleware"]
    assert priorities[SAFETY] < robots
    retry = max(
        priority
        for name, priority in priorities.items()
        if name.endswith(".RetryMiddleware") and priority is not None
    )
    assert priorities[RESOLUTION] > retry  # its process_exception runs first
    assert settings["TWISTED_DNS_RESOLVER"] == (
        "knowledge_crawler.middlewares.resolver.PrivateAddressResolver"
    )
    assert settings.getbool("KC_ALLOW_PRIVATE_ADDRESSES") is False
