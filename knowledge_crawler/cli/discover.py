"""``knowledge-crawler discover FILE|URL``: what a sitemap, feed or robots.txt yields.

No page is ever fetched. A FILE is read from disk; an ``http(s)`` URL argument is
the one request (urllib: a total time limit, a size cap, redirects only to
``http(s)`` and, unless the URL itself is on one, never to a private, loopback
or link-local address). Parsing is the pure :mod:`knowledge_crawler.discovery`;
this module imports click, the stdlib and that package only (no Scrapy).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import click

from knowledge_crawler import __version__
from knowledge_crawler.cli._common import PROG, BadInput
from knowledge_crawler.config import DEFAULTS
from knowledge_crawler.discovery.candidates import DEFAULT_MAX_SIZE, NotDiscoverable
from knowledge_crawler.discovery.sniff import Discovery
from knowledge_crawler.discovery.sniff import discover as discover_bytes

__all__ = ["discover", "discover_command", "fetch", "redirect_refusal", "user_agent"]

#: Bytes read from a FILE or a URL; the parsers cap the inflated size the same way.
MAX_BYTES = DEFAULT_MAX_SIZE
MAX_REDIRECTS = 5
_ACCEPT = (
    "application/xml, text/xml, application/rss+xml, application/atom+xml, "
    "text/plain;q=0.9, */*;q=0.5"
)
_LABELS = {
    ("sitemap", "xml"): "a sitemap",
    ("sitemap", "text"): "a text sitemap",
    ("sitemapindex", "xml"): "a sitemap index",
    ("feed", "rss"): "an RSS feed",
    ("feed", "rdf"): "an RSS 1.0 feed",
    ("feed", "atom"): "an Atom feed",
    ("robots", "robots.txt"): "a robots.txt",
}


def user_agent() -> str:
    """The crawler's User-Agent form: ``knowledge_crawler/VERSION (+KC_CONTACT)``."""
    return f"knowledge_crawler/{__version__} (+{os.environ.get('KC_CONTACT', DEFAULTS.contact)})"


def _is_private_host(host: str) -> bool:
    """Whether ``host`` is, or resolves to, a private, loopback, link-local or reserved address."""
    try:
        addresses = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return False  # unresolvable: the fetch itself will fail and say so
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    return any(
        a.is_private or a.is_loopback or a.is_link_local or a.is_reserved or a.is_unspecified
        for a in addresses
    )


def redirect_refusal(new_url: str, *, allow_private: bool) -> str | None:
    """Why a redirect to ``new_url`` is refused, ``None`` when it may be followed.

    >>> redirect_refusal("ftp://example.com/x", allow_private=False)
    'redirect to a non-http(s) URL refused: ftp://example.com/x'
    >>> redirect_refusal("http://10.0.0.1/sitemap.xml", allow_private=False)
    'redirect to a private address refused: http://10.0.0.1/sitemap.xml'
    """
    try:
        parts = urlsplit(new_url)
    except ValueError:
        return f"redirect to a malformed URL refused: {new_url}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"redirect to a non-http(s) URL refused: {new_url}"
    if not allow_private and _is_private_host(parts.hostname):
        return f"redirect to a private address refused: {new_url}"
    return None


def fetch(url: str, *, timeout: float, max_bytes: int = MAX_BYTES) -> tuple[bytes, str, bool]:
    """GET ``url``: ``(body, final URL, cut)``; ``cut`` when the body exceeded ``max_bytes``.

    Raises :class:`BadInput` (``URL: cannot fetch: reason``) on any failure.
    """
    import http.client
    import urllib.error
    import urllib.request

    try:
        host = urlsplit(url).hostname or ""
    except ValueError as exc:
        raise BadInput(f"{url}: cannot fetch: invalid URL ({exc})") from exc
    allow_private = _is_private_host(host)

    class Redirects(urllib.request.HTTPRedirectHandler):
        max_redirections = MAX_REDIRECTS

        def redirect_request(
            self,
            req: urllib.request.Request,
            fp: IO[bytes],
            code: int,
            msg: str,
            headers: Any,
            newurl: str,
        ) -> urllib.request.Request | None:
            refusal = redirect_refusal(newurl, allow_private=allow_private)
            if refusal is not None:
                fp.close()
                raise urllib.error.URLError(refusal)
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    request = urllib.request.Request(
        url,
        headers={"User-Agent": user_agent(), "Accept": _ACCEPT, "Accept-Encoding": "gzip"},
    )
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    try:
        opener = urllib.request.build_opener(Redirects())
        with opener.open(request, timeout=timeout) as response:
            final_url = response.geturl()
            while size <= max_bytes:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no complete answer within {timeout:g} s")
                chunk = response.read(min(64 * 1024, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise BadInput(f"{url}: cannot fetch: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise BadInput(f"{url}: cannot fetch: {exc.reason}") from exc
    except (OSError, http.client.HTTPException, ValueError) as exc:
        reason = str(exc) or type(exc).__name__
        raise BadInput(f"{url}: cannot fetch: {reason}") from exc
    body = b"".join(chunks)
    return body[:max_bytes], final_url, size > max_bytes


def _read_file(name: str) -> tuple[bytes, bool]:
    if name == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        return data[:MAX_BYTES], len(data) > MAX_BYTES
    path = Path(name)
    try:
        if not path.exists():
            raise BadInput(f"{name}: no such file")
        if path.is_dir():
            raise BadInput(f"{name}: is a directory")
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"{name}: cannot read: {exc.strerror or exc}") from exc
    return data[:MAX_BYTES], len(data) > MAX_BYTES


def _is_url(source: str) -> bool:
    return source[:8].lower().startswith(("http://", "https://"))


def _summary(found: Discovery) -> str:
    pages = sum(1 for c in found.candidates if c.kind == "page")
    sitemaps = len(found.candidates) - pages
    n = len(found.candidates)
    label = _LABELS.get((found.kind, found.format), f"a {found.kind}")
    line = (
        f"{n} candidate{'s' if n != 1 else ''} from {label}: "
        f"{pages} page{'s' if pages != 1 else ''}, {sitemaps} sitemap{'s' if sitemaps != 1 else ''}"
    )
    if found.skipped:
        line += (
            f"; {found.skipped} entr{'ies' if found.skipped != 1 else 'y'} without an http(s) URL"
        )
    return line


@click.command("discover")
@click.argument("source", metavar="FILE|URL")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of candidates.")
@click.option(
    "--base-url",
    metavar="URL",
    default=None,
    help="Resolve relative URLs of a FILE against URL (default for a URL: the URL fetched).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds allowed for fetching a URL.",
)
def discover(source: str, as_json: bool, base_url: str | None, timeout: float) -> None:
    """Show what a sitemap, sitemap index, feed or robots.txt yields, without fetching pages.

    FILE is read from disk ('-' reads standard input); an http(s) URL is fetched
    once (at most 50 MiB, within --timeout seconds). Gzip is inflated whatever
    the name or header says; entities are never expanded.

    Each candidate is a page to crawl or a sitemap to read, with its lastmod as
    ISO-8601 UTC when the input gives one: a sitemap's <lastmod>, a feed item's
    updated or published time (one more than a day ahead is dropped). A
    robots.txt yields its Sitemap: lines, as sitemaps without lastmod.

    \b
        knowledge-crawler discover https://example.com/robots.txt
        knowledge-crawler discover sitemap.xml.gz --json

    Prints one line per candidate (kind, lastmod or -, URL) and a summary line;
    with --json, a JSON array of {"url", "kind", "lastmod"} objects. Warnings
    (a cut or broken file: what parsed is shown) go to stderr.

    Exit status: 0 when the input parses, even with no URLs; 2 when it is not a
    sitemap, feed or robots.txt, or cannot be read or fetched.
    """
    base: str | None
    if _is_url(source):
        body, final_url, cut = fetch(source, timeout=timeout)
        base = base_url or final_url
    else:
        body, cut = _read_file(source)
        base = base_url
    name = "<stdin>" if source == "-" else source
    if cut:
        _warn(name, f"larger than {MAX_BYTES} bytes; only the first {MAX_BYTES} were read")
    try:
        found = discover_bytes(body, base_url=base, name=source, now=datetime.now(UTC))
    except NotDiscoverable as exc:
        raise BadInput(f"{name}: {exc}") from exc
    for warning in found.warnings:
        _warn(name, warning)
    if found.skipped and base is None:
        _warn(name, f"{found.skipped} without an http(s) URL; relative URLs need --base-url URL")
    if as_json:
        rows = [{"url": c.url, "kind": c.kind, "lastmod": c.lastmod} for c in found.candidates]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for c in found.candidates:
        click.echo(f"{c.kind:<7}  {c.lastmod or '-':<20}  {c.url}")
    click.echo(_summary(found))


def _warn(name: str, message: str) -> None:
    click.echo(f"{PROG}: warning: {name}: {message}", err=True)


discover_command = discover
