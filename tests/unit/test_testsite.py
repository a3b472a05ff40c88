"""The loopback test site: a real subprocess, driven over HTTP with urllib."""

from __future__ import annotations

import base64
import gzip
import http.client
import itertools
import json
import re
import signal
import subprocess
import sys
import time
import urllib.robotparser
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import lxml.etree
import lxml.html
import pytest

import knowledge_crawler.testsite
from knowledge_crawler.testsite import MUTATION_KINDS, TRACKING_PARAMS, TestSite

TIMESTAMP = re.compile(rb"Page generated at (\d\d:\d\d:\d\d\.\d{6})")


# `site` (the session's test site, reset around each test) comes from tests/conftest.py.


@pytest.fixture
def clean_site(site: TestSite) -> TestSite:
    return site


@pytest.fixture(scope="module")
def manifest(site_server: TestSite) -> dict[str, Any]:
    site_server.reset()
    return site_server.manifest()


def elements(body: bytes, xpath: str) -> list[lxml.html.HtmlElement]:
    return cast(list[lxml.html.HtmlElement], lxml.html.fromstring(body).xpath(xpath))


def texts(body: bytes, xpath: str) -> list[str]:
    return [" ".join(e.text_content().split()) for e in elements(body, xpath)]


def article_text(body: bytes) -> str:
    return texts(body, "//article")[0]


def raw_article(body: bytes) -> bytes:
    match = re.search(rb"<article.*</article>", body, re.S)
    assert match is not None
    return match.group(0)


def article_paragraphs(body: bytes) -> list[str]:
    return texts(body, "//article//p")


def shingles(text: str, k: int = 5) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    return len(a & b) / len(a | b)


def canonical(url: str) -> str:
    """What a crawler should reduce a link to: lower host, no fragment/tracking/trailing slash."""
    parts = urlsplit(url)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k not in TRACKING_PARAMS])
    path = parts.path
    if path.startswith("/articles/") and path.endswith("/"):
        path = path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, query, ""))


# -- process and command line -------------------------------------------------------------


def test_cli_prints_url_first_and_exits_cleanly_on_sigterm() -> None:
    cmd = [sys.executable, "-m", "knowledge_crawler.testsite", "--pages", "3", "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert re.fullmatch(r"http://localhost:\d+/\n", line), line
        port = int(line.split(":")[2].rstrip("/\n"))
        site = TestSite.connect(f"http://localhost:{port}/")
        assert site.fetch("/robots.txt").status == 200
        assert len(site.manifest()["articles"]) == 3
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err.decode()


def test_cli_help() -> None:
    cmd = [sys.executable, "-m", "knowledge_crawler.testsite", "--help"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    for option in ("--pages", "--port", "--seed", "--sitemap-chunk", "--feed-items", "--faults"):
        assert option in out
    assert "/__control/fault?path=" in out


def test_cli_faults_prints_the_catalogue(site: TestSite) -> None:
    cmd = [sys.executable, "-m", "knowledge_crawler.testsite", "--faults"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    for entry in site.manifest()["faults"]:
        assert f"{entry['path'] or entry['url']} " in out


def test_url_and_article_url(site: TestSite, manifest: dict[str, Any]) -> None:
    assert re.fullmatch(r"http://localhost:\d+/", site.url)
    assert manifest["url"] == site.url
    first = manifest["articles"][0]
    assert site.article_url(0) == site.url + first["path"].lstrip("/") == first["url"]


def test_large_site_starts_quickly() -> None:
    started = time.monotonic()
    with TestSite(pages=5000, seed=7) as big:
        elapsed = time.monotonic() - started
        body = big.fetch(big.article_path(4999)).body
        manifest = big.manifest()
        slugs = {a["slug"] for a in manifest["articles"]}
        index = big.fetch("/sitemap.xml")
        last_child = gzip.decompress(big.fetch("/sitemaps/articles-5.xml.gz").body)
    assert elapsed < 3.0
    assert len(slugs) == 5000
    assert b"<h1>" in body
    children = manifest["discovery"]["sitemaps"][0]["children"]
    assert [c["path"] for c in children] == [
        "/sitemaps/articles-1.xml.gz",
        "/sitemaps/articles-2.xml",
        "/sitemaps/articles-3.xml.gz",
        "/sitemaps/articles-4.xml",
        "/sitemaps/articles-5.xml.gz",
    ]
    assert xml_texts(index.body, "sm:sitemap/sm:loc") == [big.url + c["path"][1:] for c in children]
    assert len(xml_texts(last_child, "sm:url/sm:loc")) == 1000


# -- robots, boilerplate, noise, validators -------------------------------------------------


def test_robots_txt(site: TestSite) -> None:
    result = site.fetch("/robots.txt")
    assert result.status == 200
    assert result.headers["Content-Type"].startswith("text/plain")
    lines = result.text.splitlines()
    assert "User-agent: *" in lines
    assert "Disallow: /private/" in lines
    assert "Disallow: /__control/" in lines
    assert f"Sitemap: {site.url}sitemap.xml" in lines
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(lines)
    assert robots.site_maps() == [f"{site.url}sitemap.xml"]


def test_article_page_has_realistic_boilerplate(site: TestSite, manifest: dict[str, Any]) -> None:
    entry = manifest["articles"][1]
    page = site.fetch(entry["path"])
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    text = page.text
    for needle in (
        "Skip to main content",
        "We use cookies",
        "Accept all cookies",
        "Reject",
        "Settings",
        "Subscribe to our newsletter",
        "Share this article",
        "Related articles",
        "© localhost",
        "<header",
        "<footer",
        '<link rel="canonical" href="' + entry["url"] + '">',
        '<meta property="og:title" content="',
    ):
        assert needle in text, needle
    assert texts(page.body, "//title")[0].startswith(entry["title"])
    assert texts(page.body, "//article/h1") == [entry["title"]]
    assert len(elements(page.body, "//article//h2")) >= 3
    words = len(article_text(page.body).split())
    assert 300 <= words <= 950


def test_timestamp_changes_on_every_request_but_validators_do_not(
    site: TestSite, manifest: dict[str, Any]
) -> None:
    path = manifest["articles"][2]["path"]
    first, second = site.fetch(path), site.fetch(path)
    stamp1, stamp2 = TIMESTAMP.search(first.body), TIMESTAMP.search(second.body)
    assert stamp1 and stamp2 and stamp1.group(1) != stamp2.group(1)
    assert first.body != second.body
    assert first.headers["ETag"] == second.headers["ETag"]
    assert first.headers["ETag"].startswith('"')  # strong validator
    assert first.headers["Last-Modified"] == second.headers["Last-Modified"]
    assert article_text(first.body) == article_text(second.body)


def test_conditional_requests(site: TestSite, manifest: dict[str, Any]) -> None:
    path = manifest["articles"][3]["path"]
    fresh = site.fetch(path)
    etag, modified = fresh.headers["ETag"], fresh.headers["Last-Modified"]
    hit = site.fetch(path, {"If-None-Match": etag})
    assert (hit.status, hit.body, hit.headers["ETag"]) == (304, b"", etag)
    assert site.fetch(path, {"If-None-Match": f'"nope", W/{etag}'}).status == 304
    assert site.fetch(path, {"If-None-Match": '"stale"'}).status == 200
    assert site.fetch(path, {"If-Modified-Since": modified}).status == 304
    earlier = format_datetime(parsedate_to_datetime(modified).replace(year=2020), usegmt=True)
    assert site.fetch(path, {"If-Modified-Since": earlier}).status == 200
    # If-None-Match takes precedence over If-Modified-Since.
    both = {"If-None-Match": '"stale"', "If-Modified-Since": modified}
    assert site.fetch(path, both).status == 200


# -- control API ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", MUTATION_KINDS)
def test_mutation_changes_etag_and_content(
    clean_site: TestSite, manifest: dict[str, Any], kind: str
) -> None:
    site = clean_site
    # Article 4 always has a product box after a price/stock mutation, whatever the seed says.
    entry = manifest["articles"][4]
    before = site.fetch(entry["path"])
    after_entry = site.mutate(4, kind)
    after = site.fetch(entry["path"])
    assert after_entry["mutations"] == [kind]
    assert after.headers["ETag"] != before.headers["ETag"]
    modified_before = parsedate_to_datetime(before.headers["Last-Modified"])
    assert parsedate_to_datetime(after.headers["Last-Modified"]) > modified_before
    assert site.fetch(entry["path"], {"If-None-Match": before.headers["ETag"]}).status == 200
    old, new = article_text(before.body), article_text(after.body)
    if kind == "whitespace":
        assert new == old
        raw_old, raw_new = raw_article(before.body), raw_article(after.body)
        assert raw_old != raw_new
        assert re.sub(rb"\s+", b"", raw_old) == re.sub(rb"\s+", b"", raw_new)
    elif kind == "case":
        assert new != old and new.lower() == old.lower()
    else:
        assert new != old
    if kind == "price":
        assert after_entry["price"] is not None and after_entry["price"] != entry["price"]
        assert f"Price: {after_entry['price']}" in new
    if kind == "stock":
        assert after_entry["in_stock"] is False and "Out of stock" in new
    if kind == "append":
        assert new.startswith(old[: len(old) // 2]) and len(new) > len(old)
    if kind == "text":
        old_lead, new_lead = article_paragraphs(before.body)[1], article_paragraphs(after.body)[1]
        assert old_lead != new_lead
        assert article_paragraphs(before.body)[2:] == article_paragraphs(after.body)[2:]
    restored = site.restore(4)
    assert restored["mutations"] == [] and restored["status"] == 200
    again = site.fetch(entry["path"])
    assert again.headers["ETag"] == before.headers["ETag"]
    assert article_text(again.body) == old


def test_repeated_mutations_keep_changing_the_etag(clean_site: TestSite) -> None:
    site = clean_site
    path = site.article_path(6)
    etags = [site.fetch(path).headers["ETag"]]
    for kind in ("price", "price", "stock", "case", "case", "whitespace", "whitespace", "append"):
        site.mutate(6, kind)
        etags.append(site.fetch(path).headers["ETag"])
    assert len(set(etags)) == len(etags)
    site.reset()
    assert site.fetch(path).headers["ETag"] == etags[0]
    assert site.manifest()["articles"][6]["mutations"] == []


def test_delete_gives_404_or_410_and_restore_undoes_it(
    clean_site: TestSite, manifest: dict[str, Any]
) -> None:
    site = clean_site
    entry = manifest["articles"][7]
    assert site.delete(7)["status"] == 404
    missing = site.fetch(entry["path"])
    assert missing.status == 404 and b"Not Found" in missing.body.title()
    assert site.fetch(entry["path"] + "/").status == 404
    assert site.delete(7, gone=True)["status"] == 410
    assert site.fetch(entry["path"]).status == 410
    # Links to the deleted article stay on the listing pages.
    listing = site.fetch("/articles").text
    assert entry["slug"] in listing
    assert site.restore(7)["status"] == 200
    assert site.fetch(entry["path"]).status == 200


def test_control_api_rejects_bad_calls(site: TestSite) -> None:
    assert site.fetch("/__control/mutate?i=1&kind=price").status == 405
    assert site.fetch("/__control/mutate?i=1&kind=bogus", method="POST").status == 400
    assert site.fetch("/__control/delete?i=999", method="POST").status == 400
    with pytest.raises(ValueError):
        site.mutate(1, "bogus")
    assert site.fetch("/no/such/page").status == 404
    assert site.fetch("/articles/no-such-article").status == 404


# -- URL variants and special pages ---------------------------------------------------------


def test_url_variants_serve_the_same_article(site: TestSite, manifest: dict[str, Any]) -> None:
    entry = manifest["articles"][8]
    path = entry["path"]
    base = site.fetch(path)
    variants = [
        path + "/",
        f"http://LOCALHOST:{site.port}{path}",
        f"http://localhost:{site.port}{path}/?utm_source=newsletter&utm_campaign=spring",
        path + "?ref=sidebar",
        path + "?gclid=abc",
        path + "?fbclid=x",
    ]
    for variant in variants:
        result = site.fetch(variant)
        assert result.status == 200, variant
        assert result.headers["ETag"] == base.headers["ETag"], variant
        assert article_text(result.body) == article_text(base.body)
    head = site.fetch(path, method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers["Content-Length"] == base.headers["Content-Length"]
    moved = site.fetch(f"/redirect/{entry['slug']}")
    assert moved.status == 301 and moved.headers["Location"] == entry["url"]


def test_print_copies_are_exact_and_syndicated_copies_near_duplicates(
    site: TestSite, manifest: dict[str, Any]
) -> None:
    assert manifest["exact_duplicates"] and manifest["near_duplicates"]
    for dup in manifest["exact_duplicates"]:
        copy, original = site.fetch(dup["path"]), site.fetch(dup["of"])
        assert copy.status == 200
        assert article_text(copy.body) == article_text(original.body)
        # a print copy names its article as canonical, as real print pages do
        canonical = f'<link rel="canonical" href="{site.url.rstrip("/")}{dup["of"]}">'
        assert canonical.encode() in copy.body
    for dup in manifest["near_duplicates"]:
        assert b'rel="canonical"' not in site.fetch(dup["path"]).body
    for dup in manifest["near_duplicates"]:
        copy, original = site.fetch(dup["path"]), site.fetch(dup["of"])
        ours, theirs = article_paragraphs(copy.body), article_paragraphs(original.body)
        assert len(ours) == len(theirs)
        assert sum(a != b for a, b in zip(ours, theirs, strict=True)) == 1
        similarity = jaccard(
            shingles(article_text(copy.body)), shingles(article_text(original.body))
        )
        assert 0.8 < similarity < 1.0


def test_unrelated_articles_are_not_near_duplicates(
    site: TestSite, manifest: dict[str, Any]
) -> None:
    sets = [shingles(article_text(site.fetch(a["path"]).body)) for a in manifest["articles"][:25]]
    worst = max(jaccard(a, b) for a, b in itertools.combinations(sets, 2))
    assert worst < 0.1


def test_non_html_thin_and_private_pages(site: TestSite, manifest: dict[str, Any]) -> None:
    for item in manifest["non_html"]:
        result = site.fetch(item["path"])
        assert result.status == 200
        assert result.headers["Content-Type"] == item["content_type"]
    assert site.fetch("/files/report.pdf").body.startswith(b"%PDF-")
    assert len(texts(site.fetch("/about").body, "//main")[0].split()) < 50
    assert manifest["private"]
    for path in manifest["private"]:
        assert site.fetch(path).status == 200


# -- the whole site, crawled like a polite crawler would -------------------------------------


def test_crawl_matches_manifest(site: TestSite, manifest: dict[str, Any]) -> None:
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(site.fetch("/robots.txt").text.splitlines())
    origin = site.url.rstrip("/")
    seen: set[str] = {canonical(site.url)}
    queue = [site.url]
    raw_links: set[str] = set()
    fetched: dict[str, int] = {}
    blocked: set[str] = set()
    while queue:
        url = queue.pop()
        result = site.fetch(url)
        path = urlsplit(url).path + (f"?{urlsplit(url).query}" if urlsplit(url).query else "")
        fetched[path] = result.status
        if result.status == 301:
            targets = [result.headers["Location"]]
        elif result.headers.get("Content-Type", "").startswith("text/html"):
            targets = [
                str(h)
                for h in cast(list[str], lxml.html.fromstring(result.body).xpath("//a/@href"))
            ]
        else:
            continue
        for href in targets:
            absolute = urljoin(url, href)
            raw_links.add(absolute)
            if urlsplit(absolute).hostname != "localhost" and "/__control/" not in absolute:
                continue
            assert "/__control/" not in absolute
            canon = canonical(absolute)
            if canon in seen:
                continue
            seen.add(canon)
            if not robots.can_fetch("*", canon):
                blocked.add(urlsplit(canon).path)
                continue
            queue.append(canon)

    assert set(fetched.values()) <= {200, 301}, {p: s for p, s in fetched.items() if s != 200}
    articles = {a["path"] for a in manifest["articles"]}
    assert articles <= fetched.keys()
    assert {d["path"] for d in manifest["exact_duplicates"]} <= fetched.keys()
    assert {d["path"] for d in manifest["near_duplicates"]} <= fetched.keys()
    assert {r["path"] for r in manifest["redirects"]} <= fetched.keys()
    assert {n["path"] for n in manifest["non_html"]} <= fetched.keys()
    assert set(manifest["thin"]) | set(manifest["listing"]) <= fetched.keys()
    assert blocked == set(manifest["private"])
    # Every page the crawl reached is described by the manifest.
    described = (
        articles
        | {d["path"] for d in manifest["exact_duplicates"] + manifest["near_duplicates"]}
        | {r["path"] for r in manifest["redirects"]}
        | {n["path"] for n in manifest["non_html"]}
        | set(manifest["thin"])
        | set(manifest["listing"])
        | {c["path"] for c in manifest["charsets"]}
    )
    assert fetched.keys() == described
    # The messy real-world link variants all occur.
    assert any(urlsplit(u).netloc == f"LOCALHOST:{site.port}" for u in raw_links)
    assert any(u.startswith(origin + "/articles/") and u.endswith("/") for u in raw_links)
    assert any("#comments" in u for u in raw_links)
    for param in TRACKING_PARAMS:
        assert any(f"{param}=" in u for u in raw_links), param
    assert any(urlsplit(u).hostname == "twitter.com" for u in raw_links)


def test_charset_pages_are_served_in_their_encoding(site: TestSite) -> None:
    for page in site.manifest()["charsets"]:
        reply = site.fetch(page["path"])
        assert reply.status == 200
        header = reply.headers.get("Content-Type", "")
        assert ("charset=" in header) == (page["declared"] == "header")
        body = reply.body
        assert page["text"].encode(page["encoding"]) in body
        if page["encoding"] != "windows-1252":
            with pytest.raises(UnicodeDecodeError):
                body.decode("utf-8")


# -- discovery: sitemaps, feeds, paginated API ----------------------------------------------

NS = {
    "sm": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "atom": "http://www.w3.org/2005/Atom",
    "rss1": "http://purl.org/rss/1.0/",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "dc": "http://purl.org/dc/elements/1.1/",
}
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
GZIP_MAGIC = b"\x1f\x8b"


@pytest.fixture(scope="module")
def chunked_site() -> Iterator[TestSite]:
    """A site whose sitemap index has three children (20 + 20 + 5 articles) and short feeds."""
    with TestSite(pages=45, seed=3, sitemap_chunk=20, feed_items=5) as chunked:
        yield chunked


@pytest.fixture
def chunked(chunked_site: TestSite) -> Iterator[TestSite]:
    chunked_site.reset()
    yield chunked_site
    chunked_site.reset()


def qname(prefix: str, name: str) -> str:
    """Clark notation, ``{namespace}name``."""
    return f"{{{NS[prefix]}}}{name}"


def xml_root(body: bytes) -> Any:
    return lxml.etree.fromstring(body)


def xml_texts(body: bytes, xpath: str) -> list[str]:
    return [str(e.text) for e in xml_root(body).xpath(xpath, namespaces=NS)]


def sitemap_body(site: TestSite, path: str) -> bytes:
    """The XML of a sitemap, whatever the gzip wrapping (checked against the path)."""
    result = site.fetch(path)
    assert result.status == 200, path
    assert "Content-Encoding" not in result.headers
    if path.endswith(".gz"):
        assert result.headers["Content-Type"] in ("application/x-gzip", "application/gzip")
    else:
        assert result.headers["Content-Type"] == "application/xml"
    gzipped = path.endswith(".gz") or path.endswith("raw-gzip.xml")
    assert result.body.startswith(GZIP_MAGIC) == gzipped, path
    return gzip.decompress(result.body) if gzipped else result.body


def urlset(site: TestSite, path: str) -> dict[str, str]:
    """``{loc: lastmod}`` of a child sitemap, in document order."""
    root = xml_root(sitemap_body(site, path))
    assert root.tag == qname("sm", "urlset")
    locs = [str(u.findtext("sm:loc", namespaces=NS)) for u in root.findall("sm:url", NS)]
    mods = [str(u.findtext("sm:lastmod", namespaces=NS)) for u in root.findall("sm:url", NS)]
    assert len(set(locs)) == len(locs)
    return dict(zip(locs, mods, strict=True))


def sitemap_index(site: TestSite) -> dict[str, str]:
    """``{child url: lastmod}`` of ``/sitemap.xml``."""
    root = xml_root(sitemap_body(site, "/sitemap.xml"))
    assert root.tag == qname("sm", "sitemapindex")
    return {
        str(s.findtext("sm:loc", namespaces=NS)): str(s.findtext("sm:lastmod", namespaces=NS))
        for s in root.findall("sm:sitemap", NS)
    }


def all_sitemap_entries(site: TestSite) -> dict[str, str]:
    """Every ``{loc: lastmod}`` reached from the index; no URL is listed twice."""
    entries: dict[str, str] = {}
    for child in sitemap_index(site):
        assert child.startswith(site.url)
        part = urlset(site, "/" + child.removeprefix(site.url))
        assert not entries.keys() & part.keys()
        entries.update(part)
    return entries


def w3c_date(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    assert moment.tzinfo is not None, value
    return moment


def http_date(result_headers: dict[str, str]) -> datetime:
    return parsedate_to_datetime(result_headers["Last-Modified"])


def atom_entries(site: TestSite) -> list[dict[str, str]]:
    """Atom entries with their links resolved against ``xml:base``, as a reader must."""
    result = site.fetch("/feed.atom")
    assert result.headers["Content-Type"].startswith("application/atom+xml")
    root = xml_root(result.body)
    base = root.get(XML_BASE)
    assert base == site.url + "articles/"
    out = []
    for entry in root.findall("atom:entry", NS):
        href = entry.find("atom:link", NS).get("href")
        assert not urlsplit(href).scheme and not href.startswith("/"), href  # relative
        out.append(
            {
                "url": urljoin(base, href),
                "naive": urljoin(site.url + "feed.atom", href),
                "title": str(entry.findtext("atom:title", namespaces=NS)),
                "published": str(entry.findtext("atom:published", namespaces=NS)),
                "updated": str(entry.findtext("atom:updated", namespaces=NS)),
            }
        )
    return out


def rss_items(site: TestSite) -> list[dict[str, str]]:
    result = site.fetch("/feed.rss")
    assert result.headers["Content-Type"].startswith("application/rss+xml")
    root = xml_root(result.body)
    assert root.tag == "rss" and root.get("version") == "2.0"
    return [
        {k: str(item.findtext(k)) for k in ("title", "link", "guid", "pubDate")}
        for item in root.findall("channel/item")
    ]


def rdf_items(site: TestSite) -> list[dict[str, str]]:
    result = site.fetch("/feed-rss1.rdf")
    assert result.headers["Content-Type"].startswith("application/rdf+xml")
    root = xml_root(result.body)
    assert root.tag == qname("rdf", "RDF")
    seq = [li.get(qname("rdf", "resource")) for li in root.iterfind(".//rdf:li", NS)]
    items = [
        {
            "about": str(item.get(qname("rdf", "about"))),
            "link": str(item.findtext("rss1:link", namespaces=NS)),
            "title": str(item.findtext("rss1:title", namespaces=NS)),
            "date": str(item.findtext("dc:date", namespaces=NS)),
        }
        for item in root.findall("rss1:item", NS)
    ]
    assert seq == [i["about"] for i in items] == [i["link"] for i in items]
    return items


def published_dates(site: TestSite, manifest: dict[str, Any]) -> dict[str, datetime]:
    """Each article's publication date, from its page's JSON-LD (independent of the feeds)."""
    dates = {}
    for a in manifest["articles"]:
        script = texts(site.fetch(a["path"]).body, '//script[@type="application/ld+json"]')[0]
        dates[a["url"]] = datetime.fromisoformat(json.loads(script)["datePublished"])
    return dates


def walk_link_api(site: TestSite, per_page: int) -> tuple[list[str], list[dict[str, Any]]]:
    """Follow ``Link: rel=next`` from the first page: the paths requested and all items."""
    path: str | None = f"/api/articles?per_page={per_page}"
    walked: list[str] = []
    items: list[dict[str, Any]] = []
    while path is not None:
        walked.append(path)
        result = site.fetch(path)
        assert result.status == 200 and result.headers["Content-Type"] == "application/json"
        body = json.loads(result.body)
        assert len(body["items"]) <= per_page and body["per_page"] == per_page
        items += body["items"]
        link = result.headers.get("Link")
        if link is None:
            break
        match = re.fullmatch(r'<([^>]+)>; rel="next"', link)
        assert match is not None, link
        assert match.group(1).startswith(site.url)
        path = "/" + match.group(1).removeprefix(site.url)
    return walked, items


def walk_cursor_api(site: TestSite, per_page: int) -> tuple[list[str], list[dict[str, Any]]]:
    first = f"/api/articles-cursor?per_page={per_page}"
    path = first
    walked: list[str] = []
    items: list[dict[str, Any]] = []
    while True:
        walked.append(path)
        result = site.fetch(path)
        assert result.status == 200 and result.headers["Content-Type"] == "application/json"
        body = json.loads(result.body)
        assert set(body) == {"data", "next_cursor"}
        items += body["data"]["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return walked, items
        assert isinstance(cursor, str) and cursor and re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
        path = f"{first}&cursor={cursor}"


def test_sitemap_index_splits_into_gzipped_and_plain_children(chunked: TestSite) -> None:
    site = chunked
    manifest = site.manifest()
    index = sitemap_index(site)
    assert list(index) == [
        site.url + "sitemaps/articles-1.xml.gz",
        site.url + "sitemaps/articles-2.xml",
        site.url + "sitemaps/articles-3.xml.gz",
    ]
    parts = [urlset(site, "/" + child.removeprefix(site.url)) for child in index]
    assert [len(p) for p in parts] == [20, 20, 5]
    # Every article exactly once, canonical URLs, in article order.
    assert [u for p in parts for u in p] == [a["url"] for a in manifest["articles"]]
    for (child, lastmod), part in zip(index.items(), parts, strict=True):
        assert w3c_date(lastmod) == max(w3c_date(m) for m in part.values()), child
    # Each entry's lastmod is the article's Last-Modified.
    for a in manifest["articles"][:45:11]:
        modified = http_date(site.fetch(a["path"]).headers)
        assert w3c_date(parts[0].get(a["url"]) or parts[1].get(a["url"]) or parts[2][a["url"]]) == (
            modified
        )
    # Every child is served both ways with the same entries.
    assert urlset(site, "/sitemaps/articles-1.xml") == parts[0]
    assert urlset(site, "/sitemaps/articles-2.xml.gz") == parts[1]
    assert site.fetch("/sitemaps/articles-4.xml").status == 404
    assert site.fetch("/sitemaps/articles-0.xml.gz").status == 404


def test_raw_gzip_sitemap_has_no_gzip_header(site: TestSite, manifest: dict[str, Any]) -> None:
    result = site.fetch("/sitemaps/raw-gzip.xml")
    assert result.headers["Content-Type"] == "application/xml"
    assert "Content-Encoding" not in result.headers
    assert result.body.startswith(GZIP_MAGIC)
    entries = urlset(site, "/sitemaps/raw-gzip.xml")
    assert list(entries) == [a["url"] for a in manifest["articles"]]
    assert entries == all_sitemap_entries(site)
    head = site.fetch("/sitemaps/raw-gzip.xml", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers["Content-Length"] == str(len(result.body))


def test_feeds_list_the_newest_articles(chunked: TestSite) -> None:
    site = chunked
    manifest = site.manifest()
    published = published_dates(site, manifest)
    newest = sorted(published, key=lambda u: published[u], reverse=True)[:5]
    titles = {a["url"]: a["title"] for a in manifest["articles"]}
    rss = rss_items(site)
    assert [i["link"] for i in rss] == [i["guid"] for i in rss] == newest
    assert [i["title"] for i in rss] == [titles[u] for u in newest]
    assert [parsedate_to_datetime(i["pubDate"]) for i in rss] == [published[u] for u in newest]
    assert all(i["pubDate"].endswith(" GMT") for i in rss)  # RFC 822
    atom = atom_entries(site)
    assert [e["url"] for e in atom] == newest
    assert all(e["naive"] != e["url"] for e in atom)  # ignoring xml:base finds nothing
    assert [w3c_date(e["published"]) for e in atom] == [published[u] for u in newest]
    for e in atom:
        assert w3c_date(e["updated"]) == http_date(site.fetch(e["url"]).headers)
    rdf = rdf_items(site)
    assert [i["link"] for i in rdf] == newest
    assert [w3c_date(i["date"]) for i in rdf] == [published[u] for u in newest]


def test_the_atom_feed_and_the_api_say_which_articles_were_deleted(chunked: TestSite) -> None:
    from knowledge_crawler.discovery.feeds import parse_feed

    site = chunked
    assert parse_feed(site.fetch("/feed.atom").body).deleted == ()
    site.delete(2)
    site.delete(7, gone=True)
    feed = parse_feed(site.fetch("/feed.atom").body, base_url=site.url + "feed.atom")
    refs = {d.url: d.ref for d in feed.deleted}
    assert refs == {site.article_url(i): f"tag:localhost,2024:article:{i}" for i in (2, 7)}
    whens = [d.at or "" for d in feed.deleted]
    assert whens == sorted(whens, reverse=True)  # newest first
    for d in feed.deleted:  # when: the Last-Modified it had once deleted
        assert d.url not in feed.pages and d.at is not None
    [atom] = [f for f in site.manifest()["discovery"]["feeds"] if f["format"] == "atom"]
    assert [site.url.rstrip("/") + p for p in atom["deleted"]] == [d.url for d in feed.deleted]
    live = json.loads(site.fetch("/api/articles?per_page=1000").body)["items"]
    assert len(live) == 43 and not any("deleted" in i for i in live)
    first = json.loads(site.fetch("/api/articles?per_page=5&include_deleted=1").body)
    items = first["items"]
    assert [i["url"] for i in items] == [site.article_url(i) for i in range(5)]
    assert [i.get("deleted", False) for i in items] == [False, False, True, False, False]
    assert first["total"] == 45
    headers = site.fetch("/api/articles?per_page=5&include_deleted=1").headers
    assert headers["Link"].endswith('page=2&per_page=5&include_deleted=1>; rel="next"')


@pytest.mark.parametrize("per_page", [7, 10, 50, 1000])
def test_api_pagination_reaches_every_article_once(
    site: TestSite, manifest: dict[str, Any], per_page: int
) -> None:
    urls = [a["url"] for a in manifest["articles"]]
    for walk in (walk_link_api, walk_cursor_api):
        walked, items = walk(site, per_page)
        assert [i["url"] for i in items] == urls, walk.__name__
        assert len(walked) == -(-len(urls) // per_page)
        assert [i["title"] for i in items] == [a["title"] for a in manifest["articles"]]
    by_url = {a["url"]: a for a in site.manifest()["articles"]}  # versions of right now
    for item in items[:5]:
        assert w3c_date(item["updated"]) == parsedate_to_datetime(
            by_url[item["url"]]["last_modified"]
        )


def test_api_cursor_is_opaque_and_bad_parameters_answer_400(site: TestSite) -> None:
    body = json.loads(site.fetch("/api/articles-cursor?per_page=3").body)
    cursor = body["next_cursor"]
    assert "3" not in cursor and b"3" in base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    again = json.loads(site.fetch(f"/api/articles-cursor?per_page=3&cursor={cursor}").body)
    assert again["data"]["items"][0]["url"] == site.article_url(3)
    for bad in (
        "/api/articles?per_page=0",
        "/api/articles?per_page=abc",
        "/api/articles?per_page=1001",
        "/api/articles?page=0",
        "/api/articles-cursor?cursor=not-a-cursor",
        "/api/articles-cursor?per_page=-1",
    ):
        result = site.fetch(bad)
        assert result.status == 400, bad
        assert "error" in json.loads(result.body)
    past_the_end = site.fetch("/api/articles?page=99&per_page=10")
    assert json.loads(past_the_end.body)["items"] == [] and "Link" not in past_the_end.headers


def test_mutation_moves_only_that_articles_lastmod_and_atom_updated(chunked: TestSite) -> None:
    site = chunked
    newest = site.manifest()["discovery"]["feeds"][1]["pages"]
    target = next(a for a in site.manifest()["articles"] if a["path"] == newest[2])
    sitemap_before, atom_before, rss_before = (
        all_sitemap_entries(site),
        atom_entries(site),
        rss_items(site),
    )
    index_before = sitemap_index(site)
    api_before = walk_cursor_api(site, 10)[1]
    site.mutate(target["i"], "text")
    sitemap_after, atom_after, rss_after = (
        all_sitemap_entries(site),
        atom_entries(site),
        rss_items(site),
    )
    modified = http_date(site.fetch(target["path"]).headers)
    assert w3c_date(sitemap_after[target["url"]]) == modified
    assert modified > w3c_date(sitemap_before[target["url"]])
    assert {u for u in sitemap_after if sitemap_after[u] != sitemap_before[u]} == {target["url"]}
    changed = [
        (old["url"], key)
        for old, new in zip(atom_before, atom_after, strict=True)
        for key in old
        if old[key] != new[key]
    ]
    assert changed == [(target["url"], "updated")]
    assert w3c_date(atom_after[2]["updated"]) == modified
    assert rss_after == rss_before  # pubDate does not move
    api_after = walk_cursor_api(site, 10)[1]
    assert [i for i in api_after if i not in api_before] == [
        {"url": target["url"], "title": target["title"], "updated": sitemap_after[target["url"]]}
    ]
    # The index's lastmod moves only for the child holding the article, if it is now newest.
    child = next(
        c for c in index_before if target["url"] in urlset(site, "/" + c.removeprefix(site.url))
    )
    index_after = sitemap_index(site)
    assert {c for c in index_after if index_after[c] != index_before[c]} <= {child}
    assert w3c_date(index_after[child]) == max(
        w3c_date(urlset(site, "/" + child.removeprefix(site.url))[u])
        for u in urlset(site, "/" + child.removeprefix(site.url))
    )


@pytest.mark.parametrize("gone", [False, True])
def test_deleted_article_leaves_the_discovery_endpoints(chunked: TestSite, gone: bool) -> None:
    site = chunked
    newest = site.manifest()["discovery"]["feeds"][0]["pages"]
    articles = site.manifest()["articles"]
    target = next(a for a in articles if a["path"] == newest[0])
    site.delete(target["i"], gone=gone)
    remaining = [a["url"] for a in articles if a["i"] != target["i"]]
    assert list(all_sitemap_entries(site)) == remaining
    assert list(urlset(site, "/sitemaps/raw-gzip.xml")) == remaining
    assert [i["url"] for i in walk_link_api(site, 10)[1]] == remaining
    assert [i["url"] for i in walk_cursor_api(site, 10)[1]] == remaining
    feed = [i["link"] for i in rss_items(site)]
    assert target["url"] not in feed and len(feed) == 5
    assert feed[:4] == [site.url + p[1:] for p in newest[1:]]
    assert target["path"] not in site.manifest()["discovery"]["sitemaps"][0]["pages"]
    site.restore(target["i"])
    assert list(all_sitemap_entries(site)) == [a["url"] for a in articles]
    assert rss_items(site)[0]["link"] == target["url"]


@pytest.mark.parametrize(
    "path",
    [
        "/sitemap.xml",
        "/sitemaps/articles-1.xml.gz",
        "/sitemaps/articles-1.xml",
        "/sitemaps/raw-gzip.xml",
        "/feed.rss",
        "/feed.atom",
        "/feed-rss1.rdf",
        "/api/articles?per_page=10",
        "/api/articles?page=2&per_page=10",
        "/api/articles-cursor?per_page=10",
    ],
)
def test_discovery_endpoints_answer_conditional_requests(site: TestSite, path: str) -> None:
    first, second = site.fetch(path), site.fetch(path)
    assert first.status == 200 and first.body == second.body
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert etag.startswith('"') and second.headers["ETag"] == etag
    hit = site.fetch(path, {"If-None-Match": etag})
    assert (hit.status, hit.body, hit.headers["ETag"]) == (304, b"", etag)
    assert site.fetch(path, {"If-Modified-Since": modified}).status == 304
    # Any change that alters the body changes the validators too.
    site.mutate(0, "price")
    after = site.fetch(path)
    if after.body != first.body:
        assert site.fetch(path, {"If-None-Match": etag}).status == 200
        assert site.fetch(path, {"If-Modified-Since": modified}).status == 200
        assert http_date(after.headers) > http_date(first.headers)
    else:
        assert site.fetch(path, {"If-None-Match": etag}).status == 304


def test_sitemap_lastmod_is_never_after_last_modified(chunked: TestSite) -> None:
    site = chunked
    site.mutate(44, "append")
    site.delete(20)
    for child, lastmod in sitemap_index(site).items():
        headers = site.fetch("/" + child.removeprefix(site.url)).headers
        assert w3c_date(lastmod) <= http_date(headers)
    assert max(w3c_date(m) for m in sitemap_index(site).values()) <= http_date(
        site.fetch("/sitemap.xml").headers
    )


def test_manifest_discovery_agrees_with_the_endpoints(chunked: TestSite) -> None:
    site = chunked
    site.delete(3)
    site.mutate(5, "price")
    manifest = site.manifest()
    discovery = manifest["discovery"]
    live = [a["path"] for a in manifest["articles"] if a["status"] == 200]

    def paths(urls: list[str]) -> list[str]:
        assert all(u.startswith(site.url) for u in urls)
        return ["/" + u.removeprefix(site.url) for u in urls]

    assert discovery["robots_sitemaps"] == [site.url + "sitemap.xml"]
    index, raw = discovery["sitemaps"]
    assert (index["path"], index["kind"], index["url"]) == (
        "/sitemap.xml",
        "sitemapindex",
        site.url + "sitemap.xml",
    )
    served_index = sitemap_index(site)
    assert paths(list(served_index)) == [c["path"] for c in index["children"]]
    for child in index["children"]:
        entries = urlset(site, child["path"])
        assert paths(list(entries)) == child["pages"]
        assert served_index[child["url"]] == child["lastmod"]
        assert child["gzip"] == child["path"].endswith(".gz")
    assert index["pages"] == [p for c in index["children"] for p in c["pages"]] == live
    assert raw["path"] == "/sitemaps/raw-gzip.xml" and raw["raw_gzip"] is True
    assert paths(list(urlset(site, raw["path"]))) == raw["pages"] == live
    feeds = {f["format"]: f for f in discovery["feeds"]}
    assert [f["path"] for f in discovery["feeds"]] == ["/feed.rss", "/feed.atom", "/feed-rss1.rdf"]
    assert paths([i["link"] for i in rss_items(site)]) == feeds["rss"]["pages"]
    assert paths([e["url"] for e in atom_entries(site)]) == feeds["atom"]["pages"]
    assert paths([i["link"] for i in rdf_items(site)]) == feeds["rdf"]["pages"]
    assert len(feeds["rss"]["pages"]) == discovery["feed_items"] == 5
    link_api, cursor_api = discovery["apis"]
    per_page = discovery["per_page"]
    assert link_api["path"] == f"/api/articles?per_page={per_page}"
    assert cursor_api["path"] == f"/api/articles-cursor?per_page={per_page}"
    walked, items = walk_link_api(site, per_page)
    assert walked == link_api["walk"] and paths([i["url"] for i in items]) == link_api["pages"]
    walked, items = walk_cursor_api(site, per_page)
    assert walked == cursor_api["walk"] and paths([i["url"] for i in items]) == cursor_api["pages"]
    assert len(cursor_api["cursors"]) == len(walked) - 1
    assert link_api["pages"] == cursor_api["pages"] == live
    for api in (link_api, cursor_api):
        assert api["url"] == site.url + api["path"][1:] and api["url_field"] == "url"
    assert (link_api["next_mode"], link_api["items_path"]) == ("link", "items")
    assert (cursor_api["next_mode"], cursor_api["items_path"]) == ("cursor", "data.items")
    assert (cursor_api["cursor_field"], cursor_api["cursor_param"]) == ("next_cursor", "cursor")


def test_slow_knob_delays_matching_requests_until_reset(site: TestSite) -> None:
    def timed(path: str) -> float:
        started = time.monotonic()
        assert site.fetch(path).status == 200
        return time.monotonic() - started

    assert site.slow("/api/articles-cursor", 0.4) == {"/api/articles-cursor": 0.4}
    assert timed("/api/articles-cursor?per_page=5") >= 0.4
    assert timed("/api/articles?per_page=5") < 0.3
    assert timed("/sitemap.xml") < 0.3
    assert timed("/__control/manifest") < 0.3  # the control API is never slowed
    assert site.slow("/sitemap", 0.3) == {"/api/articles-cursor": 0.4, "/sitemap": 0.3}
    assert timed("/sitemaps/raw-gzip.xml") >= 0.3
    assert site.slow("/sitemap", 0) == {"/api/articles-cursor": 0.4}
    assert timed("/sitemap.xml") < 0.3
    site.reset()
    assert timed("/api/articles-cursor?per_page=5") < 0.3
    for bad in (
        "path_prefix=api&seconds=1",
        "path_prefix=/api/&seconds=x",
        "path_prefix=/a&seconds=61",
    ):
        assert site.fetch(f"/__control/slow?{bad}", method="POST").status == 400, bad


# -- fault paths (/faults/...) ---------------------------------------------------------------
#
# Only 127.0.0.1 is ever requested here: the private targets (10.0.0.1, 169.254.169.254,
# [::1]) are checked as links and Location headers, never fetched.

EXPECTATIONS = {"active", "not_stored", "dead_lettered", "suspected_missing", "tombstoned"}
PRIVATE_HOSTS = {"10.0.0.1", "169.254.169.254", "::1"}


def faults(site: TestSite) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in site.manifest()["faults"]}


def fault_path(site: TestSite, url: str) -> str:
    """A Location on the site (``http://localhost:PORT/...``) as a path to fetch."""
    parts = urlsplit(url)
    assert (parts.hostname, parts.port) == ("localhost", site.port), url
    return parts.path + (f"?{parts.query}" if parts.query else "")


def hrefs(body: bytes) -> list[str]:
    return [str(h) for h in cast(list[str], lxml.html.fromstring(body).xpath("//a/@href"))]


@contextmanager
def raw_get(site: TestSite, path: str, timeout: float = 30.0) -> Iterator[http.client.HTTPResponse]:
    """A GET on a connection of its own (closed on exit), for timing and partial reads."""
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=timeout)
    try:
        conn.request("GET", path)
        yield conn.getresponse()
    finally:
        conn.close()


def test_fault_manifest_lists_every_case_with_an_outcome(site: TestSite) -> None:
    entries = site.manifest()["faults"]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names))
    assert len(entries) >= 25
    doc = knowledge_crawler.testsite.__doc__ or ""
    for e in entries:
        assert e["expect"] in EXPECTATIONS and e["then"] in EXPECTATIONS, e
        assert e["acceptable"][0] == e["expect"] and set(e["acceptable"]) <= EXPECTATIONS, e
        assert e["reason"] and e["serves"], e
        if e["never_connect"]:
            assert e["path"] is None and e["hits"] is None and e["requests"] == 0
            assert urlsplit(e["url"]).hostname in PRIVATE_HOSTS
            assert e["expect"] == "not_stored" and not e["linked"]
        else:
            assert e["path"].startswith("/faults/") and e["url"] == site.url + e["path"][1:]
            assert e["hits"] == 0 and e["override"] is None
            # every case is documented in the package docstring
            bare = urlsplit(e["path"]).path
            if e["name"] == "calendar":
                bare = "/faults/calendar/YYYY/MM"
            assert f"``{bare}" in doc, bare
        assert e["url"] in doc or not e["never_connect"]
    groups = {e["group"] for e in entries}
    assert groups >= {"retry", "politeness", "auth", "deletion", "redirect", "slow", "size"}
    assert {e["expect"] for e in entries} >= {"active", "not_stored", "dead_lettered"}
    after_flip = {e["name"]: e.get("after_flip") for e in entries if e.get("after_flip")}
    for flips in after_flip.values():
        assert flips == {"200": "active", "404": "suspected_missing", "410": "tombstoned"}
    assert len(after_flip) >= 2


def test_fault_index_links_every_case_and_fault_pages_link_nowhere_else(site: TestSite) -> None:
    entries = site.manifest()["faults"]
    index = site.fetch("/faults/")
    assert index.status == 200 and site.fetch("/faults").body.count(b"<li>") > 20
    links = [h for h in hrefs(index.body) if h != "/faults/"]  # not the nav link
    assert set(links) == {e["path"] for e in entries if e["linked"]}
    assert len(links) == len(set(links))
    # pages that answer 200 at once: their links stay under /faults/ (or are the private bait)
    private = {e["url"] for e in entries if e["never_connect"]}
    for name in ("doc-alpha", "calendar", "search", "private-links", "wrong-charset"):
        path = next(e["path"] for e in entries if e["name"] == name)
        result = site.fetch(path)
        assert result.status == 200, path
        for href in hrefs(result.body):
            assert href.startswith("/faults/") or href in private, (path, href)
    assert set(hrefs(site.fetch("/faults/private-links").body)) == private | {"/faults/"}


def test_fault_paths_are_not_linked_from_the_site(site: TestSite) -> None:
    for path in ("/", "/articles", "/about", site.article_path(0)):
        assert b"/faults" not in site.fetch(path).body


@pytest.mark.parametrize(
    "name",
    [
        "index",
        "flaky-503",
        "flaky-500",
        "server-error-forever",
        "unauthorized",
        "forbidden",
        "missing-then-back",
        "missing",
        "gone",
        "doc-alpha",
        "doc-beta",
        "redirect-loop",
        "redirect-chain",
        "gzip-bomb",
        "gzip-bomb-html",
        "deep-nesting",
        "binary",
        "wrong-charset",
        "calendar",
        "search",
        "private-links",
        "redirect-private",
    ],
)
def test_fault_path_answers_its_documented_statuses(site: TestSite, name: str) -> None:
    entry = faults(site)[name]
    expected = [*entry["statuses"], entry["statuses"][-1]]
    got = [site.fetch(entry["path"]).status for _ in expected]
    assert got == expected
    assert faults(site)[name]["hits"] == len(expected)
    site.reset()
    assert faults(site)[name]["hits"] == 0
    assert site.fetch(entry["path"]).status == expected[0]


@pytest.mark.parametrize("code", [503, 500])
def test_flaky_fails_n_times_then_serves_an_article(site: TestSite, code: int) -> None:
    path = f"/faults/flaky-{code}?fails=3"
    replies = [site.fetch(path) for _ in range(5)]
    assert [r.status for r in replies] == [code, code, code, 200, 200]
    assert replies[3].body == replies[4].body
    assert len(texts(replies[3].body, "//article//p")) >= 5
    assert len(article_text(replies[3].body).split()) > 150
    assert site.fetch(f"/faults/flaky-{code}?fails=0").status == 200
    # the counter is per target: path plus sorted query
    assert site.fetch(f"/faults/flaky-{code}?x=1&fails=1").status == code
    assert site.fetch(f"/faults/flaky-{code}?fails=1&x=1").status == 200
    assert site.fetch(f"/faults/flaky-{code}?fails=x").status == 400


def test_reset_clears_fault_counters(site: TestSite) -> None:
    path = faults(site)["flaky-503"]["path"]
    assert [site.fetch(path).status for _ in range(3)] == [503, 503, 200]
    assert site.fetch("/faults/calendar/1999/12").status == 200
    assert faults(site)["flaky-503"]["hits"] == 3
    hits = site.manifest()["fault_hits"]
    assert hits == {"/faults/calendar/1999/12": 1, "/faults/flaky-503?fails=2": 3}
    site.reset()
    assert faults(site)["flaky-503"]["hits"] == 0
    assert site.manifest()["fault_hits"] == {}
    assert [site.fetch(path).status for _ in range(3)] == [503, 503, 200]


def test_timeout_then_ok_sleeps_once_then_answers_at_once(site: TestSite) -> None:
    path = "/faults/timeout-then-ok?sleep=1.5"
    started = time.monotonic()
    with pytest.raises(TimeoutError), raw_get(site, path, timeout=0.3):
        pass
    assert time.monotonic() - started < 1.0
    started = time.monotonic()
    with raw_get(site, path, timeout=5) as reply:
        assert reply.status == 200 and b"<article>" in reply.read()
    assert time.monotonic() - started < 0.5
    entry = faults(site)["timeout-then-ok"]
    assert entry["path"] == "/faults/timeout-then-ok?sleep=2" and entry["sleep"] == 2.0
    started = time.monotonic()
    assert site.fetch("/faults/timeout-then-ok?sleep=0.4").status == 200
    assert time.monotonic() - started >= 0.4


def test_rate_limited_with_retry_after_seconds(site: TestSite) -> None:
    entry = faults(site)["rate-limited"]
    first = site.fetch(entry["path"])
    assert first.status == 429 and first.headers["Retry-After"] == "2"
    assert site.fetch(entry["path"]).status == 429  # too early
    assert faults(site)["rate-limited"]["early"] == 1
    path = "/faults/rate-limited?retry_after=1"
    assert site.fetch(path).headers["Retry-After"] == "1"
    time.sleep(1.05)
    assert site.fetch(path).status == 200
    assert site.fetch(path).status == 200


def test_rate_limited_with_retry_after_http_date(site: TestSite) -> None:
    path = "/faults/rate-limited-date?retry_after=1"
    reply = site.fetch(path)
    assert reply.status == 429
    value = reply.headers["Retry-After"]
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", value)
    ahead = (parsedate_to_datetime(value) - parsedate_to_datetime(reply.headers["Date"])).seconds
    assert 1 <= ahead <= 2
    assert site.fetch(path).status == 429  # too early: the same date again
    wait = parsedate_to_datetime(value).timestamp() - time.time()
    assert 0 < wait <= 2.1
    time.sleep(wait + 0.05)
    assert site.fetch(path).status == 200
    entry = faults(site)["rate-limited-date"]
    assert (entry["retry_after"], entry["retry_after_format"]) == (3, "http-date")


def test_auth_failures_are_permanent(site: TestSite) -> None:
    for _ in range(3):
        reply = site.fetch("/faults/unauthorized")
        assert reply.status == 401 and reply.headers["WWW-Authenticate"].startswith("Basic")
        assert site.fetch("/faults/forbidden").status == 403


def test_fault_control_flips_a_page_between_200_and_404_or_410(site: TestSite) -> None:
    path = "/faults/doc/alpha"
    page = site.fetch(path)
    assert page.status == 200 and "<article>" in page.text
    assert site.fault(path, 404) == {path: 404}
    assert site.fetch(path).status == 404
    assert site.fetch(path + "?utm_source=x").status == 404  # whatever the query
    assert faults(site)["doc-alpha"]["override"] == 404
    assert site.fault(path, 410) == {path: 410}
    assert site.fetch(path).status == 410
    assert site.fault(path, 200) == {path: 200}
    assert site.fetch(path).body == page.body
    # any fault path can be flipped, e.g. one that always answers 404
    assert site.fault("/faults/missing", 200) == {path: 200, "/faults/missing": 200}
    assert site.fetch("/faults/missing").status == 200
    assert site.fault("/faults/missing", 0) == {path: 200}
    assert site.fetch("/faults/missing").status == 404
    site.reset()
    assert faults(site)["doc-alpha"]["override"] is None
    for bad in (
        "path=/articles/x&status=404",
        "path=/faults/doc/alpha?x=1&status=404",
        "path=/faults/doc/alpha&status=302",
        "path=/faults/doc/alpha",
    ):
        assert site.fetch(f"/__control/fault?{bad}", method="POST").status == 400, bad
    assert site.fetch("/__control/fault?path=/faults/gone&status=404").status == 405


def test_fault_control_switches_a_page_to_a_junk_200_and_back(site: TestSite) -> None:
    path = "/faults/doc/alpha"
    page = site.fetch(path)
    assert site.fault(path, 200, "empty") == {path: 200}
    empty = site.fetch(path)
    assert (empty.status, empty.body) == (200, b"")
    assert empty.headers["Content-Type"].startswith("text/html")
    site.fault(path, 200, "binary")
    binary = site.fetch(path)
    assert binary.status == 200 and len(binary.body) == 256 * 1024
    assert binary.headers["Content-Type"].startswith("text/html") and b"\x00" in binary.body
    assert site.fetch(path).body == binary.body  # the same answer each time
    site.fault(path, 200, "error")
    error = site.fetch(path)
    assert error.status == 200 and "Something went wrong" in error.text
    assert site.fault(path, 200) == {path: 200}  # no answer: the page again
    assert site.fetch(path).body == page.body
    site.fault(path, 200, "empty")
    site.reset()
    assert site.fetch(path).body == page.body
    for bad in ("status=404&answer=empty", "status=200&answer=nonsense"):
        reply = site.fetch(f"/__control/fault?path={path}&{bad}", method="POST")
        assert reply.status == 400, bad


def test_redirect_loop_and_long_chain(site: TestSite) -> None:
    a = site.fetch("/faults/loop-a")
    assert a.status == 302 and fault_path(site, a.headers["Location"]) == "/faults/loop-b"
    b = site.fetch("/faults/loop-b")
    assert b.status == 302 and fault_path(site, b.headers["Location"]) == "/faults/loop-a"
    path, hops = faults(site)["redirect-chain"]["path"], 0
    reply = site.fetch(path)
    while reply.status == 301:
        hops += 1
        path = fault_path(site, reply.headers["Location"])
        reply = site.fetch(path)
    assert (hops, path, reply.status) == (20, "/faults/chain/0", 200)
    assert faults(site)["redirect-chain"]["hops"] == 20


def test_slow_response_and_trickled_body(site: TestSite) -> None:
    started = time.monotonic()
    assert site.fetch("/faults/slow?seconds=0.5").status == 200
    assert time.monotonic() - started >= 0.5
    started = time.monotonic()
    with raw_get(site, "/faults/slow?seconds=0.5&trickle=1") as reply:
        assert reply.status == 200 and time.monotonic() - started < 0.3  # headers at once
        body = reply.read()
        assert time.monotonic() - started >= 0.45
        assert int(reply.headers["Content-Length"]) == len(body)
    assert body == site.fetch("/faults/slow?seconds=0").body
    assert site.fetch("/faults/slow?seconds=61").status == 400


def test_huge_body_is_streamed_with_its_exact_length(site: TestSite) -> None:
    with raw_get(site, "/faults/huge?mb=3") as reply:
        assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
        assert int(reply.headers["Content-Length"]) == 3 << 20
        body = reply.read()
    assert len(body) == 3 << 20
    assert body.startswith(b"<!DOCTYPE html>") and body.endswith(b"</html>\n")
    # a client that gives up part-way leaves the server fine
    with raw_get(site, "/faults/huge?mb=512") as reply:
        assert int(reply.headers["Content-Length"]) == 512 << 20
        assert len(reply.read(1 << 16)) == 1 << 16
    assert site.fetch("/faults/").status == 200
    assert faults(site)["huge"]["bytes"] == 32 << 20


def test_gzip_bombs_are_small_on_the_wire(site: TestSite) -> None:
    entry = faults(site)["gzip-bomb"]
    bomb = site.fetch(entry["path"])
    assert bomb.status == 200
    assert bomb.headers["Content-Encoding"] == "gzip"
    assert bomb.headers["Content-Type"].startswith("text/html")
    assert int(bomb.headers["Content-Length"]) == len(bomb.body)
    assert 50_000 < len(bomb.body) < 200_000  # ~1/1000 of the decoded size
    assert bomb.body.startswith(GZIP_MAGIC)
    # inflate in bounded steps: never more than 1 MiB in memory at once
    inflater = zlib.decompressobj(wbits=31)
    decoded, data = 0, bomb.body
    while data:
        out = inflater.decompress(data, 1 << 20)
        assert len(out) <= 1 << 20 and not out.strip(b"\x00")
        decoded += len(out)
        data = inflater.unconsumed_tail
    decoded += len(inflater.flush())
    assert decoded == entry["decoded_bytes"] == 100 << 20
    html = site.fetch(faults(site)["gzip-bomb-html"]["path"])
    assert html.status == 200 and "Content-Encoding" not in html.headers
    assert html.headers["Content-Type"].startswith("text/html")
    assert html.body == bomb.body
    small = site.fetch("/faults/gzip-bomb?mb=2").body
    assert len(zlib.decompressobj(wbits=31).decompress(small, 3 << 20)) == 2 << 20


def test_deep_nesting(site: TestSite) -> None:
    entry = faults(site)["deep-nesting"]
    body = site.fetch(entry["path"]).body
    assert body.count(b"<div>") == body.count(b"</div>") == entry["depth"] == 100_000
    assert entry["text"].encode() in body
    small = site.fetch("/faults/deep-nesting?depth=3").body
    assert b"<div><div><div><p>The bottom of the page.</p></div></div></div>" in small


def test_binary_body_served_as_html(site: TestSite) -> None:
    reply = site.fetch("/faults/binary")
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert len(reply.body) == 64 * 1024 and b"\x00" in reply.body
    assert site.fetch("/faults/binary").body == reply.body  # seeded: the same bytes
    with pytest.raises(UnicodeDecodeError):
        reply.body.decode("utf-8")


def test_wrong_charset_page(site: TestSite) -> None:
    entry = faults(site)["wrong-charset"]
    reply = site.fetch(entry["path"])
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"<meta" not in reply.body
    with pytest.raises(UnicodeDecodeError):
        reply.body.decode("utf-8")
    text = reply.body.decode("windows-1252")
    assert entry["text"] in text and "é" in entry["text"] and "ü" in entry["text"]


def test_url_traps_never_end(site: TestSite) -> None:
    entries = faults(site)
    path, seen = entries["calendar"]["path"], set()
    for _ in range(30):
        reply = site.fetch(path)
        assert reply.status == 200 and path not in seen
        seen.add(path)
        links = [h for h in hrefs(reply.body) if h.startswith("/faults/calendar/")]
        assert len(links) == 2
        path = links[1]
    assert path == "/faults/calendar/2026/07"
    assert len(hrefs(site.fetch("/faults/calendar/9999/12").body)) == 2  # index + previous
    assert len(hrefs(site.fetch("/faults/calendar/0001/01").body)) == 2  # index + next
    assert site.fetch("/faults/calendar/2024/13").status == 404
    path = entries["search"]["path"]
    for n in range(1, 40):
        reply = site.fetch(path)
        assert reply.status == 200 and f"page {n}" in reply.text
        path = next(h for h in hrefs(reply.body) if h.endswith(f"page={n + 1}"))
    assert site.fetch("/faults/search?page=0").status == 400
    assert entries["calendar"]["trap"] and entries["search"]["trap"]


def test_private_targets_are_links_and_redirects_only(site: TestSite) -> None:
    entries = faults(site)
    targets = {e["url"] for e in entries.values() if e["never_connect"]}
    assert {urlsplit(u).hostname for u in targets} == PRIVATE_HOSTS
    assert set(hrefs(site.fetch("/faults/private-links").body)) - {"/faults/"} == targets
    reply = site.fetch("/faults/redirect-private")  # not followed
    assert reply.status == 302 and reply.headers["Location"] == "http://169.254.169.254/"
    assert entries["redirect-private"]["expect"] == "not_stored"


def test_fault_startup_stays_fast_and_lazy() -> None:
    started = time.monotonic()
    with TestSite(pages=5, seed=3) as small:
        assert time.monotonic() - started < 3.0
        assert small.fetch("/faults/flaky-503").status == 503
        assert len(small.manifest()["faults"]) == len(faults(small))


# -- JavaScript-rendered pages (/js/...) ------------------------------------------------------

JS_KINDS = ("inline", "fetch")
JS_ASSETS = {
    "/js/asset/pixel.png": "image/png",
    "/js/asset/font.woff2": "font/woff2",
    "/js/asset/clip.mp4": "video/mp4",
}
JS_DATA = re.compile(r"^var KC_DATA = (\{.*\});$", re.M)


def markup_text(body: bytes) -> str:
    """The ``<body>``'s text outside ``<script>`` and ``<style>`` (what a non-JS parser sees)."""
    root = lxml.html.fromstring(body)
    lxml.etree.strip_elements(root, "script", "style", with_tail=False)
    return " ".join(root.body.text_content().split())


def inline_data(body: bytes) -> dict[str, Any]:
    scripts = texts(body, "//script[not(@src)]")
    assert len(scripts) == 1
    match = JS_DATA.search(elements(body, "//script[not(@src)]")[0].text_content())
    assert match is not None
    return cast(dict[str, Any], json.loads(match.group(1)))


def data_items(items: list[dict[str, Any]]) -> list[str]:
    """A data list's item texts in document order, nested ones after their parent."""
    out: list[str] = []
    for item in items:
        out.append(item["text"])
        out.extend(data_items(item["items"]))
    return out


def test_js_index_links_both_shells_of_every_article(site: TestSite) -> None:
    pages = len(site.manifest()["articles"])
    index = site.fetch("/js/")
    assert index.status == 200 and index.headers["Content-Type"] == "text/html; charset=utf-8"
    assert texts(index.body, "//h1") and len(texts(index.body, "//p")[0].split()) > 10
    links = hrefs(index.body)
    assert len(links) == 2 * pages
    assert set(links) == {f"/js/{kind}/{i}" for kind in JS_KINDS for i in range(pages)}
    etag = index.headers["ETag"]
    assert etag.startswith('"')
    assert site.fetch("/js/", {"If-None-Match": etag}).status == 304
    # Nothing else links here or lists these pages; robots.txt allows them.
    discovery = [
        "/",
        "/articles",
        "/about",
        site.article_path(0),
        "/sitemap.xml",
        "/feed.rss",
        "/feed.atom",
        "/api/articles?per_page=1000",
    ]
    for path in discovery:
        assert b"/js/" not in site.fetch(path).body, path
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(site.fetch("/robots.txt").text.splitlines())
    assert robots.can_fetch("*", site.url + "js/inline/0")


@pytest.mark.parametrize("kind", JS_KINDS)
def test_js_shells_hold_no_article_text_in_markup(site: TestSite, kind: str) -> None:
    expected = site.js_expected(2)
    shell = site.fetch(f"/js/{kind}/2")
    assert shell.status == 200 and shell.headers["Content-Type"] == "text/html; charset=utf-8"
    assert texts(shell.body, "//title") == ["Loading…"]
    assert markup_text(shell.body) == "This page needs JavaScript."
    (app,) = elements(shell.body, "//div[@id='app']")
    assert len(app) == 0 and not app.text_content().strip()
    assert texts(shell.body, "//noscript") == ["This page needs JavaScript."]
    assert elements(shell.body, "//script/@src") == ["/js/app.js"]
    # The resources a crawler's browser should block.
    assert elements(shell.body, "//img/@src") == ["/js/asset/pixel.png"]
    assert elements(shell.body, "//video/@src") == ["/js/asset/clip.mp4"]
    assert "url(/js/asset/font.woff2)" in texts(shell.body, "//style")[0]
    (script,) = (e.text_content() for e in elements(shell.body, "//script[not(@src)]"))
    assert "textContent" in script and "innerHTML" not in script
    assert "document.title = data.title" in script
    sentence = expected["paragraphs"][1].split(". ")[0]
    if kind == "inline":
        assert "DOMContentLoaded" in script
        data = inline_data(shell.body)
        assert data == json.loads(site.fetch(expected["data"]).body)
        assert sentence in script
    else:
        assert '"load"' in script and f"}}, {150});" in script
        assert f'fetch("{expected["data"]}")' in script
        assert sentence.encode() not in shell.body
        assert expected["title"].encode() not in shell.body
    assert expected["data"] == f"/js/data/2.json?v={expected['version']}"


def test_js_data_answers_the_articles_content(site: TestSite, manifest: dict[str, Any]) -> None:
    entry = manifest["articles"][3]
    expected = site.js_expected(3)
    assert (expected["title"], expected["status"]) == (entry["title"], 200)
    assert (expected["inline"], expected["fetch"]) == ("/js/inline/3", "/js/fetch/3")
    reply = site.fetch(expected["data"])
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    # The version parameter only busts caches.
    assert site.fetch("/js/data/3.json").body == site.fetch("/js/data/3.json?v=x").body
    assert site.fetch("/js/data/3.json").body == reply.body
    data = json.loads(reply.body)
    assert (data["i"], data["title"]) == (3, entry["title"])
    blocks = data["blocks"]
    assert [b["type"] for b in blocks].count("code") == 1
    assert [b["type"] for b in blocks].count("list") == 1
    assert [b["text"] for b in blocks if b["type"] == "p"] == expected["paragraphs"]
    (code,) = (b["text"] for b in blocks if b["type"] == "code")
    assert code == expected["code"]
    assert "\n    " in code and "\n        " in code  # indented lines
    (listing,) = (b["items"] for b in blocks if b["type"] == "list")
    assert any(item["items"] for item in listing)  # a nested list
    assert data_items(listing) == expected["items"]
    assert [{"text": t["text"], "items": data_items(t["items"])} for t in listing] == expected[
        "list"
    ]
    # The paragraphs are the article's: lead first, each one in the article page's text.
    page = site.fetch(entry["path"]).body
    assert expected["paragraphs"][0] == article_paragraphs(page)[1]
    text = article_text(page)
    assert len(expected["paragraphs"]) >= 4
    assert all(p in text for p in expected["paragraphs"])


@pytest.mark.parametrize("kind", JS_KINDS)
def test_js_shells_answer_conditional_requests(site: TestSite, kind: str) -> None:
    path = f"/js/{kind}/4"
    first, second = site.fetch(path), site.fetch(path)
    assert first.body == second.body
    etag = first.headers["ETag"]
    assert etag.startswith('"') and second.headers["ETag"] == etag
    # the article's Last-Modified (reset bumps it, so ask now, not the module's manifest)
    assert first.headers["Last-Modified"] == site.manifest()["articles"][4]["last_modified"]
    assert first.headers["Cache-Control"] == "no-cache"
    hit = site.fetch(path, {"If-None-Match": etag})
    assert (hit.status, hit.body, hit.headers["ETag"]) == (304, b"", etag)
    assert site.fetch(path, {"If-None-Match": '"stale"'}).status == 200
    assert site.fetch(path, {"If-Modified-Since": first.headers["Last-Modified"]}).status == 304
    other = site.fetch(f"/js/{kind}/5")
    assert other.headers["ETag"] != etag


@pytest.mark.parametrize("kind", ["text", "rewrite", "append"])
def test_mutation_changes_the_js_pages(clean_site: TestSite, kind: str) -> None:
    site = clean_site
    paths = ["/js/inline/6", "/js/fetch/6", "/js/data/6.json"]
    before = {p: site.fetch(p) for p in paths}
    old = site.js_expected(6)
    site.mutate(6, kind)
    new = site.js_expected(6)
    assert new["paragraphs"] != old["paragraphs"] and new["version"] != old["version"]
    if kind == "append":
        assert new["paragraphs"][: len(old["paragraphs"])] == old["paragraphs"]
    for path in paths:
        after = site.fetch(path)
        assert after.headers["ETag"] != before[path].headers["ETag"], path
        modified_before = parsedate_to_datetime(before[path].headers["Last-Modified"])
        assert parsedate_to_datetime(after.headers["Last-Modified"]) > modified_before
        assert site.fetch(path, {"If-None-Match": before[path].headers["ETag"]}).status == 200
    inline = site.fetch("/js/inline/6").body
    assert [b["text"] for b in inline_data(inline)["blocks"] if b["type"] == "p"] == new[
        "paragraphs"
    ]
    assert f'fetch("{new["data"]}")'.encode() in site.fetch("/js/fetch/6").body
    article = article_text(site.fetch(site.article_path(6)).body)
    assert all(p in article for p in new["paragraphs"])
    site.restore(6)
    assert site.js_expected(6) == old
    for path in paths:
        assert site.fetch(path).headers["ETag"] == before[path].headers["ETag"], path


def test_price_stock_whitespace_and_case_leave_the_js_text_alone(clean_site: TestSite) -> None:
    site = clean_site
    before = site.fetch("/js/inline/7")
    for kind in ("price", "stock", "whitespace", "case"):
        site.mutate(7, kind)
    after = site.fetch("/js/inline/7")
    assert after.body == before.body and after.headers["ETag"] == before.headers["ETag"]
    # ... but Last-Modified still follows the article.
    assert after.headers["Last-Modified"] == site.manifest()["articles"][7]["last_modified"]


@pytest.mark.parametrize("gone", [False, True])
def test_deleted_articles_js_pages_answer_its_status(clean_site: TestSite, gone: bool) -> None:
    site = clean_site
    status = site.delete(8, gone=gone)["status"]
    assert status == (410 if gone else 404)
    assert site.fetch(site.article_path(8)).status == status
    for path in ("/js/inline/8", "/js/fetch/8", "/js/data/8.json"):
        assert site.fetch(path).status == status, path
    assert site.js_expected(8)["status"] == status
    assert site.fetch("/js/inline/9").status == 200
    site.restore(8)
    for path in ("/js/inline/8", "/js/fetch/8", "/js/data/8.json"):
        assert site.fetch(path).status == 200, path


def test_js_bad_paths_and_control_calls(site: TestSite) -> None:
    pages = len(site.manifest()["articles"])
    for path in (f"/js/inline/{pages}", "/js/fetch/01", "/js/data/x.json", "/js/asset/x.png"):
        assert site.fetch(path).status == 404, path
    assert site.fetch("/__control/js-expected?i=999").status == 400
    assert site.fetch("/__control/js-expected").status == 400
    assert site.fetch("/__control/hits", method="POST").status == 405
    app_js = site.fetch("/js/app.js")
    assert app_js.status == 200 and app_js.headers["Content-Type"] == "application/javascript"


def test_asset_hits_count_requests_until_reset(site: TestSite) -> None:
    assert site.hits() == dict.fromkeys(JS_ASSETS, 0)
    for path, content_type in JS_ASSETS.items():
        reply = site.fetch(path)
        assert reply.status == 200 and reply.headers["Content-Type"] == content_type
        assert reply.headers["Cache-Control"] == "no-store"
    pixel = site.fetch("/js/asset/pixel.png").body
    assert pixel.startswith(b"\x89PNG\r\n\x1a\n") and pixel[16:24] == b"\0\0\0\1\0\0\0\1"
    assert site.fetch("/js/asset/font.woff2").body.startswith(b"wOF2")
    assert site.fetch("/js/asset/clip.mp4").body[4:8] == b"ftyp"
    assert site.fetch("/js/asset/pixel.png", method="HEAD").status == 200
    # An HTTP fetch of a shell loads none of its resources.
    site.fetch("/js/inline/1")
    site.fetch("/js/fetch/1")
    site.fetch("/js/asset/nope.png")
    assert site.hits() == {
        "/js/asset/pixel.png": 3,
        "/js/asset/font.woff2": 2,
        "/js/asset/clip.mp4": 2,
    }
    site.reset()
    assert site.hits() == dict.fromkeys(JS_ASSETS, 0)


def test_inline_data_cannot_close_its_script() -> None:
    from knowledge_crawler.testsite._js import JsArticle, inline_shell

    article = JsArticle(0, "A </script> title", ("One </p> two.",), "x = '</b>'", (("a", ()),))
    body = inline_shell(article)
    assert body.count(b"</script>") == 2  # app.js and the inline script
    data = inline_data(body)
    assert data["title"] == "A </script> title"
    assert data["blocks"][0] == {"type": "p", "text": "One </p> two."}


def test_js_pages_are_documented() -> None:
    doc = knowledge_crawler.testsite.__doc__ or ""
    for needle in (
        "``/js/``",
        "``/js/inline/<i>``",
        "``/js/fetch/<i>``",
        "``/js/data/<i>.json``",
        "``/js/app.js``",
        "``/js/asset/pixel.png``",
        "``/js/asset/font.woff2``",
        "``/js/asset/clip.mp4``",
        "/__control/hits",
        "/__control/js-expected?i=N",
    ):
        assert needle in doc, needle
