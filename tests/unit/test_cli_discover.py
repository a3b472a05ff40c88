"""`knowledge-crawler discover FILE|URL`: what a sitemap, feed or robots.txt yields (no page)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from knowledge_crawler.cli.discover import redirect_refusal
from knowledge_crawler.cli.main import cli

SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://example.com/a</loc><lastmod>2024-05-01T10:00:00+02:00</lastmod></url>
  <url><loc>https://example.com/b</loc></url>
</urlset>
"""
RELATIVE_SITEMAP = (
    b"<urlset><url><loc>/docs/intro</loc><lastmod>2024-05-01</lastmod></url></urlset>"
)
INDEX = (
    b"<sitemapindex><sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2024-05-02"
    b"</lastmod></sitemap><sitemap><loc>https://example.com/s2.xml.gz</loc></sitemap></sitemapindex>"
)
ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.com/blog/">
  <title>Blog</title>
  <entry><link href="one"/><updated>2024-05-03T12:00:00Z</updated></entry>
  <entry><link href="two"/><published>2024-05-01T08:00:00-04:00</published></entry>
</feed>
"""
ROBOTS = b"User-agent: *\nDisallow: /private\nSitemap: /sitemap.xml\nSitemap: /news.xml\n"
NOT_DISCOVERABLE = "not a sitemap, feed or robots.txt"


def run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["discover", *args], input=stdin)


def write(tmp_path: Path, name: str, body: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(body)
    return str(path)


# ---------------------------------------------------------------- files


def test_sitemap_file_as_lines_with_a_summary(tmp_path: Path) -> None:
    result = run(write(tmp_path, "sitemap.xml", SITEMAP))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "page     2024-05-01T08:00:00Z  https://example.com/a",
        "page     -                     https://example.com/b",
        "2 candidates from a sitemap: 2 pages, 0 sitemaps",
    ]
    assert result.stderr == ""


def test_sitemap_file_as_json(tmp_path: Path) -> None:
    result = run(write(tmp_path, "sitemap.xml", SITEMAP), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"url": "https://example.com/a", "kind": "page", "lastmod": "2024-05-01T08:00:00Z"},
        {"url": "https://example.com/b", "kind": "page", "lastmod": None},
    ]


def test_gzipped_sitemap_index(tmp_path: Path) -> None:
    result = run(write(tmp_path, "index.bin", gzip.compress(INDEX)), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {
            "url": "https://example.com/s1.xml.gz",
            "kind": "sitemap",
            "lastmod": "2024-05-02T00:00:00Z",
        },
        {"url": "https://example.com/s2.xml.gz", "kind": "sitemap", "lastmod": None},
    ]
    text = run(write(tmp_path, "index.xml.gz", gzip.compress(INDEX)))
    assert text.stdout.splitlines()[-1] == "2 candidates from a sitemap index: 0 pages, 2 sitemaps"


def test_feed_lastmod_is_the_items_updated_or_published_time(tmp_path: Path) -> None:
    result = run(write(tmp_path, "atom.xml", ATOM), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"url": "https://example.com/blog/one", "kind": "page", "lastmod": "2024-05-03T12:00:00Z"},
        {"url": "https://example.com/blog/two", "kind": "page", "lastmod": "2024-05-01T12:00:00Z"},
    ]
    assert "2 candidates from an Atom feed" in run(write(tmp_path, "a.xml", ATOM)).stdout


def test_windows_1252_feed_file(tmp_path: Path) -> None:
    body = (
        '<?xml version="1.0" encoding="windows-1252"?><rss><channel><title>Caf\xe9</title>'
        "<item><link>https://example.com/caf\xe9</link></item></channel></rss>"
    ).encode("cp1252")
    result = run(write(tmp_path, "feed.rss", body), "--json")
    assert json.loads(result.stdout)[0]["url"] == "https://example.com/café"


def test_robots_file_with_base_url(tmp_path: Path) -> None:
    result = run(
        write(tmp_path, "robots.txt", ROBOTS), "--base-url", "https://example.com/robots.txt"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "sitemap  -                     https://example.com/sitemap.xml",
        "sitemap  -                     https://example.com/news.xml",
        "2 candidates from a robots.txt: 0 pages, 2 sitemaps",
    ]
    as_json = run(write(tmp_path, "robots.txt", ROBOTS), "--json", "--base-url", "https://e.com/")
    assert [row["lastmod"] for row in json.loads(as_json.stdout)] == [None, None]


def test_relative_urls_without_a_base_are_reported(tmp_path: Path) -> None:
    result = run(write(tmp_path, "robots.txt", ROBOTS))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1].startswith("0 candidates from a robots.txt")
    assert "--base-url" in result.stderr


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("empty-urlset.xml", b"<urlset/>"),
        ("robots.txt", b""),
        ("feed.xml", b'<rss version="2.0"><channel><title>quiet</title></channel></rss>'),
    ],
)
def test_inputs_that_parse_without_urls_exit_0(tmp_path: Path, name: str, body: bytes) -> None:
    result = run(write(tmp_path, name, body))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("0 candidates from a")
    assert json.loads(run(write(tmp_path, name, body), "--json").stdout) == []


def test_truncated_sitemap_warns_and_keeps_what_parsed(tmp_path: Path) -> None:
    result = run(write(tmp_path, "cut.xml", SITEMAP[:-40]))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].endswith("https://example.com/a")
    assert result.stderr.startswith("knowledge-crawler: warning: ")


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html><body>a page</body></html>", id="html"),
        pytest.param(b"plain prose\n", id="prose"),
        pytest.param(b"", id="empty"),
        pytest.param(b"\x00\x01\x02\x03", id="binary"),
        pytest.param(b'{"json": true}', id="json"),
    ],
)
def test_anything_else_is_bad_input_with_one_line(tmp_path: Path, body: bytes) -> None:
    path = write(tmp_path, "thing.dat", body)
    result = run(path)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"knowledge-crawler: error: {path}: {NOT_DISCOVERABLE}\n"


def test_gzip_bomb_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(packer.compress(b"\0" * (1 << 20)) for _ in range(60)) + packer.flush()
    result = run(write(tmp_path, "bomb.xml.gz", bomb))
    assert result.exit_code == 2
    assert "exceeds the cap" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "message"), [("missing.xml", "no such file"), ("", "is a directory")]
)
def test_unreadable_file_is_bad_input(tmp_path: Path, name: str, message: str) -> None:
    target = str(tmp_path / name) if name else str(tmp_path)
    result = run(target)
    assert result.exit_code == 2
    assert result.stderr == f"knowledge-crawler: error: {target}: {message}\n"


def test_standard_input() -> None:
    result = run("-", "--json", stdin=SITEMAP)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 2


def test_help_explains() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for words in ("FILE|URL", "--json", "lastmod", "robots.txt", "Exit status"):
        assert words in result.output


def test_installed_script_on_a_file(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("knowledge-crawler")
    path = write(tmp_path, "sitemap.xml.gz", gzip.compress(SITEMAP))
    done = subprocess.run(
        [str(script), "discover", path, "--json"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert [row["url"] for row in json.loads(done.stdout)] == [
        "https://example.com/a",
        "https://example.com/b",
    ]
    bad = subprocess.run(
        [str(script), "discover", write(tmp_path, "x.html", b"<html/>")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith(NOT_DISCOVERABLE)


def test_discover_command_does_not_import_scrapy() -> None:
    code = (
        "import sys; from knowledge_crawler.cli import discover;"
        "import knowledge_crawler.discovery.sniff;"
        "print(','.join(m for m in ('scrapy', 'twisted') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------- URLs (the one fetch)


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client of /slow hangs up on purpose


class Site:
    """A tiny loopback HTTP server: path -> (status, headers, body); records what was asked."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requests.append((self.path, dict(self.headers)))
                if self.path == "/slow":
                    time.sleep(1.5)
                status, headers, body = site.routes.get(self.path, (404, {}, b"not found"))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as server:
        server.routes.update(
            {
                "/sitemap.xml": (200, {"Content-Type": "application/xml"}, RELATIVE_SITEMAP),
                "/docs/sitemap.xml.gz": (
                    200,
                    {"Content-Type": "application/x-gzip"},
                    gzip.compress(RELATIVE_SITEMAP.replace(b"/docs/intro", b"page")),
                ),
                "/feed": (
                    200,
                    {"Content-Type": "application/atom+xml", "Content-Encoding": "gzip"},
                    gzip.compress(ATOM),
                ),
                "/robots.txt": (200, {"Content-Type": "text/plain"}, ROBOTS),
                "/page.html": (200, {"Content-Type": "text/html"}, b"<html><body>x</body></html>"),
                "/moved": (302, {"Location": "/docs/sitemap.xml.gz"}, b""),
                "/to-ftp": (302, {"Location": "ftp://example.com/sitemap.xml"}, b""),
                "/error": (500, {}, b"oops"),
            }
        )
        yield server


def test_url_sitemap_resolves_against_the_url_and_fetches_nothing_else(site: Site) -> None:
    result = run(f"{site.url}/sitemap.xml", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"url": f"{site.url}/docs/intro", "kind": "page", "lastmod": "2024-05-01T00:00:00Z"}
    ]
    assert [path for path, _ in site.requests] == ["/sitemap.xml"]
    headers = site.requests[0][1]
    assert headers["User-Agent"].startswith("knowledge_crawler/")


def test_url_gzip_by_content_encoding(site: Site) -> None:
    result = run(f"{site.url}/feed")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "2 candidates from an Atom feed: 2 pages, 0 sitemaps"


def test_url_robots_txt(site: Site) -> None:
    result = run(f"{site.url}/robots.txt", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"url": f"{site.url}/sitemap.xml", "kind": "sitemap", "lastmod": None},
        {"url": f"{site.url}/news.xml", "kind": "sitemap", "lastmod": None},
    ]


def test_url_redirect_uses_the_final_url_as_base(site: Site) -> None:
    result = run(f"{site.url}/moved", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["url"] == f"{site.url}/docs/page"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/missing", "cannot fetch: HTTP 404 Not Found"),
        ("/error", "cannot fetch: HTTP 500 Internal Server Error"),
        ("/to-ftp", "cannot fetch: redirect to a non-http(s) URL refused"),
    ],
)
def test_url_fetch_errors_are_one_line_naming_the_url(site: Site, path: str, reason: str) -> None:
    url = f"{site.url}{path}"
    result = run(url)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"knowledge-crawler: error: {url}: {reason}")
    assert len(result.stderr.splitlines()) == 1


def test_url_timeout(site: Site) -> None:
    started = time.monotonic()
    result = run(f"{site.url}/slow", "--timeout", "0.3")
    assert time.monotonic() - started < 1.4
    assert result.exit_code == 2
    assert result.stderr.startswith(f"knowledge-crawler: error: {site.url}/slow: cannot fetch: ")
    assert "timed out" in result.stderr


def test_url_connection_refused() -> None:
    with Site() as server:
        url = f"{server.url}/sitemap.xml"
    result = run(url)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"knowledge-crawler: error: {url}: cannot fetch: ")


def test_url_that_is_not_discoverable(site: Site) -> None:
    url = f"{site.url}/page.html"
    result = run(url)
    assert result.exit_code == 2
    assert result.stderr == f"knowledge-crawler: error: {url}: {NOT_DISCOVERABLE}\n"


@pytest.mark.parametrize(
    ("url", "allow_private", "refused"),
    [
        ("https://example.com/sitemap.xml", False, None),
        ("ftp://example.com/sitemap.xml", True, "non-http(s)"),
        ("file:///etc/passwd", True, "non-http(s)"),
        ("http://127.0.0.1/sitemap.xml", False, "private address"),
        ("http://10.1.2.3/sitemap.xml", False, "private address"),
        ("http://169.254.169.254/latest/meta-data", False, "private address"),
        ("http://[::1]/sitemap.xml", False, "private address"),
        ("http://localhost/sitemap.xml", False, "private address"),
        ("http://127.0.0.1/sitemap.xml", True, None),
    ],
)
def test_redirect_refusal(url: str, allow_private: bool, refused: str | None) -> None:
    reason = redirect_refusal(url, allow_private=allow_private)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason
