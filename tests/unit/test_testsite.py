"""The loopback test site: a real subprocess, driven over HTTP with urllib."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys
import time
import urllib.robotparser
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import lxml.html
import pytest

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
    for option in ("--pages", "--port", "--seed"):
        assert option in out


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
        slugs = {a["slug"] for a in big.manifest()["articles"]}
    assert elapsed < 3.0
    assert len(slugs) == 5000
    assert b"<h1>" in body


# -- robots, boilerplate, noise, validators -------------------------------------------------


def test_robots_txt(site: TestSite) -> None:
    result = site.fetch("/robots.txt")
    assert result.status == 200
    assert result.headers["Content-Type"].startswith("text/plain")
    lines = result.text.splitlines()
    assert "User-agent: *" in lines
    assert "Disallow: /private/" in lines
    assert "Disallow: /__control/" in lines


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
        assert b'rel="canonical"' not in copy.body
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
