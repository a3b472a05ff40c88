"""Sitemaps, sitemap indexes and text sitemaps -> candidates, from messy real-world bytes."""

from __future__ import annotations

import contextlib
import gzip
import time
import tracemalloc
import zlib
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.discovery.candidates import (
    Candidate,
    NotASitemap,
    normalise_lastmod,
)
from knowledge_crawler.discovery.sitemaps import parse_sitemap

NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
DECL = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def urlset(*entries: bytes, attrs: bytes = NS) -> bytes:
    return DECL + b"<urlset " + attrs + b">" + b"".join(entries) + b"</urlset>"


def url(loc: bytes, lastmod: bytes | None = None) -> bytes:
    mod = b"<lastmod>" + lastmod + b"</lastmod>" if lastmod is not None else b""
    return b"<url><loc>" + loc + b"</loc>" + mod + b"</url>"


def gzip_bomb(prefix: bytes, megabytes: int, fill: bytes = b"\0") -> bytes:
    """``prefix`` then ``megabytes`` MiB of ``fill``, gzipped a MiB at a time (small in memory)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = fill * (1 << 20)
    parts = [packer.compress(prefix)]
    parts.extend(packer.compress(chunk) for _ in range(megabytes))
    parts.append(packer.flush())
    return b"".join(parts)


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + b"".join(
        b' <!ENTITY lol%d "' % i + (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10 + b'">\n'
        for i in range(1, 10)
    )
    + b"]>\n"
    + urlset(url(b"https://example.com/&lol9;"), url(b"https://example.com/kept"), attrs=NS)[
        len(DECL) :
    ]
)


# ---------------------------------------------------------------- messy but readable


@pytest.mark.parametrize(
    ("body", "base_url", "expected"),
    [
        pytest.param(
            urlset(url(b"https://example.com/a"), url(b"https://example.com/b")),
            None,
            ["https://example.com/a", "https://example.com/b"],
            id="namespaced",
        ),
        pytest.param(
            b"<urlset><url><loc>https://example.com/a</loc></url></urlset>",
            None,
            ["https://example.com/a"],
            id="no-namespace-no-declaration",
        ),
        pytest.param(
            urlset(url(b"https://example.com/a"), attrs=b'xmlns="http://www.google.com/sm/0.84"'),
            None,
            ["https://example.com/a"],
            id="wrong-namespace",
        ),
        pytest.param(
            b"<sm:urlset><sm:url><sm:loc>https://example.com/a</sm:loc></sm:url></sm:urlset>",
            None,
            ["https://example.com/a"],
            id="undeclared-prefix",
        ),
        pytest.param(
            b'<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<s:url><s:loc>https://example.com/a</s:loc></s:url></s:urlset>",
            None,
            ["https://example.com/a"],
            id="declared-prefix",
        ),
        pytest.param(
            b"\xef\xbb\xbf\n\n   \r\n" + urlset(url(b"https://example.com/a")),
            None,
            ["https://example.com/a"],
            id="bom-and-blank-lines-before-declaration",
        ),
        pytest.param(
            b"\n\n" + urlset(url(b"https://example.com/a")),
            None,
            ["https://example.com/a"],
            id="blank-lines-before-declaration",
        ),
        pytest.param(
            urlset(url(b"<![CDATA[https://example.com/a?x=1&y=2]]>")),
            None,
            ["https://example.com/a?x=1&y=2"],
            id="cdata-loc",
        ),
        pytest.param(
            urlset(url(b"https://example.com/a?x=1&amp;y=2")),
            None,
            ["https://example.com/a?x=1&y=2"],
            id="escaped-ampersand",
        ),
        pytest.param(
            urlset(url(b"\n     https://example.com/a   \n  ")),
            None,
            ["https://example.com/a"],
            id="whitespace-around-loc",
        ),
        pytest.param(
            urlset(url(b"/a"), url(b"b/c")),
            "https://example.com/dir/sitemap.xml",
            ["https://example.com/a", "https://example.com/dir/b/c"],
            id="relative-against-base-url",
        ),
        pytest.param(
            b'<urlset xml:base="https://example.com/docs/"><url><loc>intro</loc></url>'
            b'<url xml:base="/api/"><loc>ref</loc></url></urlset>',
            "https://elsewhere.example.org/sitemap.xml",
            ["https://example.com/docs/intro", "https://example.com/api/ref"],
            id="relative-against-xml-base",
        ),
        pytest.param(
            urlset(
                url(b"mailto:someone@example.com"),
                url(b"javascript:alert(1)"),
                url(b"ftp://example.com/file"),
                url(b""),
                b"<url><lastmod>2024-01-01</lastmod></url>",
                url(b"https://example.com/ok"),
            ),
            None,
            ["https://example.com/ok"],
            id="only-http-urls",
        ),
        pytest.param(
            urlset(url(b"/relative-without-base"), url(b"https://example.com/ok")),
            None,
            ["https://example.com/ok"],
            id="relative-without-base-dropped",
        ),
        pytest.param(
            urlset(
                b'<url><loc>https://example.com/page</loc><image:image xmlns:image="'
                b'http://www.google.com/schemas/sitemap-image/1.1"><image:loc>'
                b"https://example.com/photo.jpg</image:loc></image:image></url>"
            ),
            None,
            ["https://example.com/page"],
            id="image-extension-not-a-page",
        ),
        pytest.param(
            DECL
            + b'<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>\n<!-- generated -->\n'
            + urlset(url(b"https://example.com/a"))[len(DECL) :],
            None,
            ["https://example.com/a"],
            id="stylesheet-and-comment",
        ),
        pytest.param(
            '<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>https://example.com/é'
            "</loc></url></urlset>".encode("utf-16"),
            None,
            ["https://example.com/é"],
            id="utf-16-with-bom",
        ),
        pytest.param(
            '<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>https://example.com/'
            "caf\xe9</loc></url></urlset>".encode("latin-1"),
            None,
            ["https://example.com/café"],
            id="latin-1",
        ),
        pytest.param(
            '<?xml version="1.0" encoding="iso-8859-1"?><urlset><url><loc>https://example.com/'
            "café</loc></url></urlset>".encode(),
            None,
            ["https://example.com/café"],
            id="declared-latin-1-but-utf-8",
        ),
        pytest.param(
            b'<?xml version="1.0" encoding="x-no-such-charset"?><urlset><url><loc>'
            b"https://example.com/a</loc></url></urlset>",
            None,
            ["https://example.com/a"],
            id="unknown-charset",
        ),
        pytest.param(
            b"\nWarning: Cannot modify header information in /var/www/sitemap.php on line 3\n"
            + urlset(url(b"https://example.com/a")),
            None,
            ["https://example.com/a"],
            id="server-junk-before-declaration",
        ),
        pytest.param(
            b'<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>https://example.com/a'
            b"</loc></url></urlset>",
            None,
            ["https://example.com/a"],
            id="declared-utf-16-but-single-byte",
        ),
        pytest.param(
            '<?xml version="1.0"?><urlset><url><loc>https://example.com/a</loc></url></urlset>'.encode(
                "utf-16-le"
            ),
            None,
            ["https://example.com/a"],
            id="utf-16-without-bom",
        ),
        pytest.param(
            b"<urlset><url><loc>https://example.com/a\x01\x02</loc></url></urlset>",
            None,
            ["https://example.com/a"],
            id="control-characters",
        ),
    ],
)
def test_messy_sitemaps_yield_their_pages(
    body: bytes, base_url: str | None, expected: list[str]
) -> None:
    result = parse_sitemap(body, base_url)
    assert result.kind == "urlset"
    assert result.pages == expected
    assert all(c.kind == "page" for c in result.candidates)


def test_skipped_entries_are_counted() -> None:
    result = parse_sitemap(urlset(url(b"mailto:x@example.com"), url(b"https://example.com/")))
    assert result.skipped == 1
    assert not result.truncated


def test_lastmod_is_normalised_and_kept_per_url() -> None:
    result = parse_sitemap(
        urlset(
            url(b"https://example.com/a", b"2024-05-01T10:00:00+02:00"),
            url(b"https://example.com/b", b"not a date"),
            url(b"https://example.com/c"),
            url(b"https://example.com/a", b"2024-06-01"),  # listed twice: the later date wins
            url(b"https://example.com/d", b" 2024-05-01 "),
        )
    )
    assert result.candidates == (
        Candidate("https://example.com/a", "page", "2024-06-01T00:00:00Z"),
        Candidate("https://example.com/b", "page", None),
        Candidate("https://example.com/c", "page", None),
        Candidate("https://example.com/d", "page", "2024-05-01T00:00:00Z"),
    )


def test_lastmod_far_in_the_future_is_dropped_given_now() -> None:
    body = urlset(
        url(b"https://example.com/bogus", b"2099-01-01"),
        url(b"https://example.com/skewed", b"2024-05-01T20:00:00Z"),
    )
    now = datetime(2024, 5, 1, 12, tzinfo=UTC)
    lastmods = [c.lastmod for c in parse_sitemap(body, now=now).candidates]
    assert lastmods == [None, "2024-05-01T20:00:00Z"]
    assert parse_sitemap(body).candidates[0].lastmod == "2099-01-01T00:00:00Z"


def test_news_publication_date_stands_in_for_lastmod() -> None:
    body = urlset(
        b'<url><loc>https://example.com/story</loc><news:news xmlns:news="http://www.google.com/'
        b'schemas/sitemap-news/0.9"><news:publication_date>2024-05-01T09:30:00Z'
        b"</news:publication_date></news:news></url>"
    )
    assert parse_sitemap(body).candidates[0].lastmod == "2024-05-01T09:30:00Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", "2024-01-01T00:00:00Z"),
        ("2024-05", "2024-05-01T00:00:00Z"),
        ("2024-05-01", "2024-05-01T00:00:00Z"),
        ("2024-05-01T10:00Z", "2024-05-01T10:00:00Z"),
        ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z"),
        ("2024-05-01t10:00:00z", "2024-05-01T10:00:00Z"),
        ("2024-05-01T10:00:00+02:00", "2024-05-01T08:00:00Z"),
        ("2024-05-01T10:00:00-05:30", "2024-05-01T15:30:00Z"),
        ("2024-05-01T10:00:00+0200", "2024-05-01T08:00:00Z"),
        ("2024-05-01T00:30:00+01", "2024-04-30T23:30:00Z"),
        ("2024-05-01T10:00:00.123456789Z", "2024-05-01T10:00:00Z"),
        ("2024-05-01T10:00:00,5+00:00", "2024-05-01T10:00:00Z"),
        ("2024-05-01 10:00:00", "2024-05-01T10:00:00Z"),
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59Z"),
        ("Wed, 01 May 2024 10:00:00 GMT", "2024-05-01T10:00:00Z"),
        ("Wed, 01 May 2024 10:00:00 +0200", "2024-05-01T08:00:00Z"),
        ("1 May 2024 10:00 EST", "2024-05-01T15:00:00Z"),
        ("Wed, 01 May 2024 10:00:00", "2024-05-01T10:00:00Z"),
        ("", None),
        ("   ", None),
        ("yesterday", None),
        ("2024-13-01", None),
        ("2024-02-30", None),
        ("0000-00-00", None),
        ("2024-05-01T25:00:00Z", None),
        ("2024-05-01T10:00:00+25:00", None),
        ("0001-01-01T00:00:00+05:00", None),
        ("9" * 300, None),
        (None, None),
    ],
)
def test_lastmod_forms(text: str | None, expected: str | None) -> None:
    assert normalise_lastmod(text) == expected


# ---------------------------------------------------------------- sitemap indexes and gzip


def sitemapindex(*locs: bytes) -> bytes:
    entries = b"".join(
        b"<sitemap><loc>" + loc + b"</loc><lastmod>2024-05-01</lastmod></sitemap>" for loc in locs
    )
    return DECL + b"<sitemapindex " + NS + b">" + entries + b"</sitemapindex>"


def test_sitemap_index_of_gzipped_sitemaps() -> None:
    index = gzip.compress(sitemapindex(b"/sitemap-1.xml.gz", b"/sitemap-2.xml.gz"))
    result = parse_sitemap(index, "https://example.com/sitemap_index.xml.gz")
    assert result.kind == "sitemapindex"
    assert result.candidates == (
        Candidate("https://example.com/sitemap-1.xml.gz", "sitemap", "2024-05-01T00:00:00Z"),
        Candidate("https://example.com/sitemap-2.xml.gz", "sitemap", "2024-05-01T00:00:00Z"),
    )
    assert result.sitemaps == [c.url for c in result.candidates] and result.pages == []
    child = gzip.compress(urlset(url(b"https://example.com/p1"), url(b"https://example.com/p2")))
    assert parse_sitemap(child, result.sitemaps[0]).pages == [
        "https://example.com/p1",
        "https://example.com/p2",
    ]


def test_gzip_is_detected_by_magic_bytes_not_name() -> None:
    body = gzip.compress(b"\xef\xbb\xbf\n" + urlset(url(b"https://example.com/a")))
    assert parse_sitemap(body, "https://example.com/sitemap.xml").pages == ["https://example.com/a"]


def test_concatenated_gzip_members_are_read() -> None:
    whole = urlset(url(b"https://example.com/a"), url(b"https://example.com/b"))
    body = gzip.compress(whole[:60]) + gzip.compress(whole[60:])
    assert parse_sitemap(body).pages == ["https://example.com/a", "https://example.com/b"]


def test_truncated_gzip_keeps_what_inflated() -> None:
    entries = [url(b"https://example.com/page-%d" % i) for i in range(200)]
    body = gzip.compress(urlset(*entries))
    result = parse_sitemap(body[: len(body) // 2])
    assert result.truncated
    assert any("gzip data truncated" in w for w in result.warnings)
    assert 0 < len(result.pages) < 200
    assert result.pages == [f"https://example.com/page-{i}" for i in range(len(result.pages))]


def test_corrupt_gzip_is_not_a_crash() -> None:
    body = gzip.compress(urlset(url(b"https://example.com/a")))
    with pytest.raises(NotASitemap):
        parse_sitemap(body[:10] + b"\xff" * 40 + body[50:])


def test_gzip_bomb_is_bounded_and_refused_with_a_reason() -> None:
    bomb = gzip_bomb(b"", 200)  # 200 MiB of zeros in ~200 KB
    assert len(bomb) < 1_000_000
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(NotASitemap, match="exceeds the cap of 1048576 bytes"):
            parse_sitemap(bomb, max_size=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 32 * (1 << 20)


def test_gzip_bomb_after_real_entries_keeps_them() -> None:
    prefix = urlset(url(b"https://example.com/a"), url(b"https://example.com/b"))[
        : -len(b"</urlset>")
    ]
    result = parse_sitemap(gzip_bomb(prefix, 200, fill=b" "), max_size=1 << 20)
    assert result.pages == ["https://example.com/a", "https://example.com/b"]
    assert result.truncated
    assert any("cap of 1048576 bytes" in w for w in result.warnings)


def test_plain_body_beyond_max_size_is_cut() -> None:
    body = urlset(*[url(b"https://example.com/%d" % i) for i in range(100)])
    result = parse_sitemap(body, max_size=len(body) // 2)
    assert result.truncated and 0 < len(result.pages) < 100


# ---------------------------------------------------------------- hostile XML


def test_billion_laughs_is_not_expanded() -> None:
    started = time.monotonic()
    result = parse_sitemap(BILLION_LAUGHS)
    assert time.monotonic() - started < 1
    assert result.pages == ["https://example.com/kept"]
    assert not any("lollol" in c.url for c in result.candidates)


def test_quadratic_blowup_entity_is_not_expanded() -> None:
    big = b"A" * 100_000
    body = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "' + big + b'">]>'
        b"<urlset>" + url(b"https://example.com/" + b"&a;" * 1000) + b"</urlset>"
    )
    started = time.monotonic()
    result = parse_sitemap(body)
    assert time.monotonic() - started < 1
    assert result.pages == []
    assert result.skipped == 1


@pytest.mark.parametrize(
    "doctype",
    [
        pytest.param(b"<!DOCTYPE x [" + b"<!--" * 250_000, id="unterminated-comments"),
        pytest.param(b'<!DOCTYPE x [ "' + b"[" * 1_000_000, id="unterminated-quote"),
        pytest.param(b"<!DOCTYPE x [" + b"[" * 3_000_000, id="brackets"),
    ],
)
def test_hostile_doctype_is_scanned_in_linear_time(doctype: bytes) -> None:
    started = time.monotonic()
    with pytest.raises(NotASitemap):
        parse_sitemap(doctype + b"<urlset/>")
    assert time.monotonic() - started < 3


def test_doctype_with_tricky_internal_subset_is_cut_out() -> None:
    body = (
        b'<!DOCTYPE x [ <!-- a "quote ]> --> <!ENTITY a "]>"> <!ENTITY b \'>\'> ]>'
        + urlset(url(b"https://example.com/a&a;"), url(b"https://example.com/b"))[len(DECL) :]
    )
    assert parse_sitemap(body).pages == ["https://example.com/b"]


def test_external_entity_is_never_read() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        b"<urlset>"
        + url(b"https://example.com/&xxe;")
        + url(b"https://example.com/b")
        + b"</urlset>"
    )
    result = parse_sitemap(body)
    assert result.pages == ["https://example.com/b"]
    assert "root:" not in repr(result)


def test_external_dtd_is_not_loaded() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/evil.dtd">'
        + urlset(url(b"https://example.com/a"))[len(DECL) :]
    )
    assert parse_sitemap(body).pages == ["https://example.com/a"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            urlset(url(b"https://example.com/a"), url(b"https://example.com/b"))[:-40],
            id="cut-inside-an-entry",
        ),
        pytest.param(
            urlset(url(b"https://example.com/a"), url(b"https://example.com/b"))[:-30] + b"\0\0",
            id="cut-then-garbage",
        ),
        pytest.param(
            urlset(url(b"https://example.com/a"))[:-9]
            + b"<url><loc>https://example.com/b</loc><url>",
            id="unclosed-tags",
        ),
    ],
)
def test_truncated_xml_keeps_what_parsed(body: bytes) -> None:
    result = parse_sitemap(body)
    assert result.pages[0] == "https://example.com/a"
    assert result.truncated
    assert result.warnings and "broken XML" in result.warnings[-1]


# ---------------------------------------------------------------- text sitemaps


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"https://example.com/a\nhttps://example.com/b\n", ["a", "b"]),
        (b"\xef\xbb\xbfhttps://example.com/a\r\n\r\nhttps://example.com/b", ["a", "b"]),
        (b"  https://example.com/a  \n\n\nHTTP://example.com/b\n", ["a", "b"]),
        (b"https://example.com/a\nhttps://example.com/a\n", ["a"]),
    ],
)
def test_text_sitemaps(body: bytes, expected: list[str]) -> None:
    result = parse_sitemap(body)
    assert result.format == "text" and result.kind == "urlset"
    assert [u.rsplit("/", 1)[1] for u in result.pages] == expected


def test_gzipped_text_sitemap() -> None:
    assert parse_sitemap(gzip.compress(b"https://example.com/a\n")).pages == [
        "https://example.com/a"
    ]


# ---------------------------------------------------------------- not sitemaps


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"   \n\n", id="blank"),
        pytest.param(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", id="png"),
        pytest.param(b"<!DOCTYPE html><html><body><a href='/x'>x</a></body></html>", id="html"),
        pytest.param(b'<rss version="2.0"><channel><item/></channel></rss>', id="rss"),
        pytest.param(b"User-agent: *\nDisallow: /\n", id="robots"),
        pytest.param(b"https://example.com/a\nnot a url\n", id="text-with-prose"),
        pytest.param(b"{}", id="json"),
        pytest.param(b"<", id="lone-bracket"),
        pytest.param(b"\x1f\x8b", id="gzip-magic-only"),
        pytest.param(b'<!DOCTYPE x [ <!ENTITY a "' + b"[" * 10_000, id="unterminated-doctype"),
    ],
)
def test_not_a_sitemap_is_a_clear_error(body: bytes) -> None:
    with pytest.raises(NotASitemap, match=r"^not a sitemap"):
        parse_sitemap(body)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_any_bytes_give_a_result_or_not_a_sitemap(body: bytes) -> None:
    try:
        result = parse_sitemap(body)
    except NotASitemap:
        return
    assert all(c.url.lower().startswith(("http://", "https://")) for c in result.candidates)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"<urlset>",
                b"<url>",
                b"<loc>",
                b"https://e.com/",
                b"</loc>",
                b"</url>",
                b"<![CDATA[",
                b"]]>",
                b"&amp;",
                b"&x;",
                b"\n",
                b"<lastmod>",
                b"2024-05-01",
                b"</lastmod>",
                b"<?xml ?>",
            ]
        )
    )
)
def test_any_markup_soup_gives_a_result_or_not_a_sitemap(parts: list[bytes]) -> None:
    with contextlib.suppress(NotASitemap):
        parse_sitemap(b"".join(parts))
