"""Telling sitemaps, feeds and robots.txt apart by content, and the docstring examples."""

from __future__ import annotations

import doctest
import gzip
import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.discovery.candidates import Candidate, NotDiscoverable
from knowledge_crawler.discovery.sniff import discover, sniff

SITEMAP = b'<?xml version="1.0"?><urlset><url><loc>https://example.com/a</loc></url></urlset>'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(SITEMAP, "sitemap", id="urlset"),
        pytest.param(gzip.compress(SITEMAP), "sitemap", id="gzip-urlset"),
        pytest.param(b"\xef\xbb\xbf\n\n" + SITEMAP, "sitemap", id="bom-blank-lines"),
        pytest.param(b"<sitemapindex><sitemap/></sitemapindex>", "sitemapindex", id="index"),
        pytest.param(b"https://example.com/a\nhttps://example.com/b\n", "sitemap", id="text"),
        pytest.param(b'<rss version="2.0"><channel/></rss>', "feed", id="rss"),
        pytest.param(b'<feed xmlns="http://www.w3.org/2005/Atom"/>', "feed", id="atom"),
        pytest.param(
            b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
            b'xmlns="http://purl.org/rss/1.0/"><channel/></rdf:RDF>',
            "feed",
            id="rss-1.0",
        ),
        pytest.param(b"User-agent: *\nDisallow: /\nSitemap: /s.xml\n", "robots", id="robots"),
        pytest.param(b"", "unknown", id="empty"),
        pytest.param(b"<!doctype html><html><body>hello</body></html>", "unknown", id="html"),
        pytest.param(b'{"items": []}', "unknown", id="json"),
        pytest.param(b"Just some prose.\n", "unknown", id="prose"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00", "unknown", id="png"),
        pytest.param(b"\x1f\x8b\x08\x00garbage", "unknown", id="broken-gzip"),
    ],
)
def test_sniff(body: bytes, expected: str) -> None:
    assert sniff(body) == expected


def test_sniff_reads_only_the_start_of_a_huge_text_sitemap() -> None:
    body = b"https://example.com/page-with-a-long-name\n" * 100_000  # 4 MB, cut mid-line
    assert sniff(body) == "sitemap"


def test_discover_dispatches_and_reports_the_format() -> None:
    found = discover(gzip.compress(SITEMAP))
    assert (found.kind, found.format) == ("sitemap", "xml")
    assert found.candidates == (Candidate("https://example.com/a", "page", None),)
    robots = discover(b"Sitemap: /s.xml\nSitemap: /t.xml\n", base_url="https://e.com/robots.txt")
    assert (robots.kind, robots.format) == ("robots", "robots.txt")
    assert [c.kind for c in robots.candidates] == ["sitemap", "sitemap"]
    assert all(c.lastmod is None for c in robots.candidates)


def test_an_empty_file_named_robots_txt_is_a_robots_txt() -> None:
    assert discover(b"", name="site/robots.txt").candidates == ()
    assert discover(b"# nothing\n", name="https://example.com/robots.txt").kind == "robots"
    with pytest.raises(NotDiscoverable):
        discover(b"", name="sitemap.xml")


def test_discover_says_why_a_cut_body_is_nothing() -> None:
    with pytest.raises(NotDiscoverable, match=r"not a sitemap, feed or robots\.txt \(.*cap"):
        discover(gzip.compress(b"\0" * 4096), max_size=1024)


def test_discover_of_a_cut_text_sitemap_drops_the_broken_last_line() -> None:
    body = b"".join(b"https://example.com/%d\n" % i for i in range(1000))
    found = discover(body, max_size=1000)
    assert found.truncated
    assert found.candidates[-1].url == f"https://example.com/{len(found.candidates) - 1}"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=1024))
def test_any_bytes_are_sniffed_and_discovered_or_refused(body: bytes) -> None:
    assert sniff(body) in {"sitemap", "sitemapindex", "feed", "robots", "unknown"}
    try:
        discover(body)
    except NotDiscoverable as exc:
        assert str(exc).startswith("not a sitemap, feed or robots.txt")


@pytest.mark.parametrize(
    "module",
    ["candidates", "_xml", "sitemaps", "feeds", "robots", "api", "sniff"],
)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(f"knowledge_crawler.discovery.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
