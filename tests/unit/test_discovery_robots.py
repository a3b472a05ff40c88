"""robots.txt -> the sitemaps it names, and telling a robots.txt from other text."""

from __future__ import annotations

import gzip

import pytest

from knowledge_crawler.discovery.robots import (
    ROBOTS_MAX_SIZE,
    looks_like_robots,
    sitemap_lines,
    sitemaps_from_robots,
)

BASE = "https://example.com/robots.txt"


@pytest.mark.parametrize(
    ("body", "base_url", "expected"),
    [
        pytest.param(
            b"User-agent: *\nDisallow: /private\nSitemap: https://example.com/sitemap.xml\n",
            BASE,
            ["https://example.com/sitemap.xml"],
            id="plain",
        ),
        pytest.param(
            b"SITEMAP: https://example.com/a.xml\nsitemap:https://example.com/b.xml\n"
            b"  SiteMap :   https://example.com/c.xml.gz   \n",
            BASE,
            [
                "https://example.com/a.xml",
                "https://example.com/b.xml",
                "https://example.com/c.xml.gz",
            ],
            id="any-case-and-spacing",
        ),
        pytest.param(
            b"Site-map: https://example.com/a.xml\n", BASE, ["https://example.com/a.xml"], id="dash"
        ),
        pytest.param(
            b"Sitemap: https://example.com/a.xml # the main one\n# Sitemap: https://example.com/x\n",
            BASE,
            ["https://example.com/a.xml"],
            id="comments",
        ),
        pytest.param(
            b"Sitemap: /sitemap.xml\nSitemap: maps/news.xml\n",
            "https://example.com/robots.txt",
            ["https://example.com/sitemap.xml", "https://example.com/maps/news.xml"],
            id="relative-resolved",
        ),
        pytest.param(
            b"Sitemap: /sitemap.xml\nSitemap: https://example.com/abs.xml\n",
            None,
            ["https://example.com/abs.xml"],
            id="relative-without-base-dropped",
        ),
        pytest.param(
            b"Sitemap: ftp://example.com/s.xml\nSitemap: javascript:x\nSitemap:\n"
            b"Sitemap: https://example.com/s.xml\n",
            BASE,
            ["https://example.com/s.xml"],
            id="only-http",
        ),
        pytest.param(
            b"Sitemap: https://example.com/s.xml\nsitemap: https://example.com/s.xml\n",
            BASE,
            ["https://example.com/s.xml"],
            id="each-once",
        ),
        pytest.param(
            b"\xef\xbb\xbfSitemap: https://example.com/s.xml\r\nUser-agent: *\r\nDisallow:\r\n",
            BASE,
            ["https://example.com/s.xml"],
            id="bom-and-crlf",
        ),
        pytest.param(
            b"User-agent: a\nDisallow: /\n\nUser-agent: b\nSitemap: https://example.com/in-group\n",
            BASE,
            ["https://example.com/in-group"],
            id="inside-a-group",
        ),
        pytest.param(b"User-agent: *\nDisallow:\n", BASE, [], id="none"),
        pytest.param(b"", BASE, [], id="empty"),
        pytest.param(
            gzip.compress(b"Sitemap: https://example.com/s.xml\n"),
            BASE,
            ["https://example.com/s.xml"],
            id="gzip",
        ),
        pytest.param(
            b"Sitemap: https://example.com/caf\xe9.xml\n",
            BASE,
            ["https://example.com/café.xml"],
            id="latin-1-bytes",
        ),
    ],
)
def test_sitemaps_from_robots(body: bytes, base_url: str | None, expected: list[str]) -> None:
    assert sitemaps_from_robots(body, base_url) == expected


def test_text_input_is_accepted() -> None:
    assert sitemaps_from_robots("Sitemap: /s.xml", BASE) == ["https://example.com/s.xml"]


def test_raw_sitemap_lines() -> None:
    assert sitemap_lines(b"Sitemap: /a.xml\nsitemap: https://x/b.xml # c\n") == [
        "/a.xml",
        "https://x/b.xml",
    ]


def test_only_the_first_500_kib_are_read() -> None:
    filler = b"Disallow: /x\n" * (ROBOTS_MAX_SIZE // 13 + 10)
    body = b"Sitemap: https://example.com/first.xml\n" + filler + b"Sitemap: https://e.com/late\n"
    assert sitemaps_from_robots(body, BASE) == ["https://example.com/first.xml"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"User-agent: *\nDisallow: /private\n", True),
        (b"# only a sitemap\nSitemap: https://example.com/s.xml\n", True),
        (b"user-agent: *\nallow: /\ncrawl-delay: 5\n", True),
        (b"User-agent: *\nDisallow: /\nsome junk line\n", True),
        ("User-agent: *\nDisallow:", True),
        (b"", False),
        (b"# nothing but comments\n", False),
        (b"Hello, this is a text file.\nIt has prose.\nUser-agent: *\n", False),
        (b"<html><body>User-agent: *</body></html>", False),
        (b"<?xml version='1.0'?><urlset/>", False),
        (b"User-agent: *\x00\x00\x00", False),
        (b"https://example.com/a\nhttps://example.com/b\n", False),
    ],
)
def test_looks_like_robots(body: bytes | str, expected: bool) -> None:
    assert looks_like_robots(body) is expected
