"""RSS 0.9x/1.0/2.0 and Atom feeds -> page candidates dated by their items, from messy bytes."""

from __future__ import annotations

import contextlib
import gzip
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.discovery.candidates import Candidate, Deletion, NotAFeed
from knowledge_crawler.discovery.feeds import parse_feed

ATOM_NS = b'xmlns="http://www.w3.org/2005/Atom"'


def rss(*items: bytes, head: bytes = b'<?xml version="1.0" encoding="UTF-8"?>\n') -> bytes:
    return (
        head
        + b'<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>'
        + b"<title>Blog</title><link>https://example.com/</link>"
        + b"".join(b"<item>" + item + b"</item>" for item in items)
        + b"</channel></rss>"
    )


def atom(*entries: bytes, attrs: bytes = ATOM_NS) -> bytes:
    return (
        b'<?xml version="1.0" encoding="utf-8"?>\n<feed '
        + attrs
        + b"><title>Atom blog</title><id>urn:x</id>"
        + b"".join(b"<entry>" + entry + b"</entry>" for entry in entries)
        + b"</feed>"
    )


# ---------------------------------------------------------------- RSS 2.0 / 0.9x


@pytest.mark.parametrize(
    ("item", "base_url", "expected"),
    [
        pytest.param(
            b"<link>https://example.com/a</link>", None, "https://example.com/a", id="link"
        ),
        pytest.param(
            b"<link>\n   https://example.com/a  \n</link>",
            None,
            "https://example.com/a",
            id="blanks",
        ),
        pytest.param(
            b"<link><![CDATA[https://example.com/a?x=1&y=2]]></link>",
            None,
            "https://example.com/a?x=1&y=2",
            id="cdata",
        ),
        pytest.param(
            b"<link>/posts/a</link>",
            "https://example.com/feed.xml",
            "https://example.com/posts/a",
            id="relative-link-base-url",
        ),
        pytest.param(
            b'<guid isPermaLink="true">https://example.com/g</guid>',
            None,
            "https://example.com/g",
            id="guid-permalink",
        ),
        pytest.param(
            b"<guid>https://example.com/g</guid>",
            None,
            "https://example.com/g",
            id="guid-permalink-by-default",
        ),
        pytest.param(
            b'<link></link><guid isPermaLink="true">https://example.com/g</guid>',
            None,
            "https://example.com/g",
            id="empty-link-then-guid",
        ),
        pytest.param(
            b'<atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="self" href="/self"/>'
            b'<atom:link xmlns:atom="http://www.w3.org/2005/Atom" href="https://example.com/a"/>',
            None,
            "https://example.com/a",
            id="atom-link-in-rss",
        ),
        pytest.param(
            b"<link>https://feedproxy.example.net/~r/x/1</link>"
            b'<feedburner:origLink xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0">'
            b"https://example.com/original</feedburner:origLink>",
            None,
            "https://example.com/original",
            id="feedburner-origlink",
        ),
        pytest.param(
            b"<dc:link>https://example.com/a</dc:link>",
            None,
            "https://example.com/a",
            id="prefixed-link",
        ),
    ],
)
def test_rss_item_links(item: bytes, base_url: str | None, expected: str) -> None:
    result = parse_feed(rss(item), base_url)
    assert result.format == "rss"
    assert result.pages == [expected]


@pytest.mark.parametrize(
    "item",
    [
        pytest.param(
            b'<guid isPermaLink="false">https://example.com/g</guid>', id="guid-not-perma"
        ),
        pytest.param(b'<guid isPermaLink="true">12345</guid>', id="guid-not-a-url"),
        pytest.param(b"<guid>/relative</guid>", id="guid-relative"),
        pytest.param(b"<link>mailto:x@example.com</link>", id="mailto"),
        pytest.param(b"<title>no link at all</title>", id="nothing"),
    ],
)
def test_rss_items_without_a_usable_url_are_skipped(item: bytes) -> None:
    result = parse_feed(rss(item, b"<link>https://example.com/ok</link>"))
    assert result.pages == ["https://example.com/ok"]
    assert result.skipped == 1


def test_rss_dates_become_lastmod() -> None:
    result = parse_feed(
        rss(
            b"<link>https://example.com/a</link><pubDate>Wed, 01 May 2024 10:00:00 +0200</pubDate>",
            b"<link>https://example.com/b</link><dc:date>2024-05-02T10:00:00Z</dc:date>",
            b"<link>https://example.com/c</link><pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate>"
            b"<dc:date>2024-05-03T00:00:00Z</dc:date>",  # the later of the two
            b"<link>https://example.com/d</link><pubDate>sometime in May</pubDate>",
            b"<link>https://example.com/e</link>",
        )
    )
    assert [c.lastmod for c in result.candidates] == [
        "2024-05-01T08:00:00Z",
        "2024-05-02T10:00:00Z",
        "2024-05-03T00:00:00Z",
        None,
        None,
    ]


def test_future_item_date_is_dropped_given_now() -> None:
    body = rss(
        b"<link>https://example.com/a</link><pubDate>Fri, 01 Jan 2100 00:00:00 GMT</pubDate>"
    )
    now = datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_feed(body, now=now).candidates[0].lastmod is None


def test_windows_1252_feed() -> None:
    body = (
        '<?xml version="1.0" encoding="windows-1252"?>\n'
        '<rss version="2.0"><channel><title>Caf\xe9 \u201cnews\u201d</title>'
        "<item><title>\xc9t\xe9</title><link>https://example.com/caf\xe9</link>"
        "<pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate></item></channel></rss>"
    ).encode("cp1252")
    assert b"\xe9" in body and b"\x93" in body  # real single-byte é and a smart quote
    result = parse_feed(body)
    assert result.title == "Café “news”"
    assert result.pages == ["https://example.com/café"]


def test_iso_8859_1_feed() -> None:
    body = (
        "<?xml version='1.0' encoding='ISO-8859-1'?><rss><channel><title>Caf\xe9</title>"
        "<item><link>https://example.com/\xe9t\xe9</link></item></channel></rss>"
    ).encode("latin-1")
    result = parse_feed(body)
    assert result.title == "Café"
    assert result.pages == ["https://example.com/été"]


def test_feed_declared_utf8_but_latin1_bytes() -> None:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss><channel><title>Caf\xe9</title>'
        "<item><link>https://example.com/a</link></item></channel></rss>"
    ).encode("latin-1")
    result = parse_feed(body)
    assert result.title == "Café"
    assert result.pages == ["https://example.com/a"]


def test_rss_091_with_netscape_doctype() -> None:
    body = (
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        b'<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"\n'
        b' "http://my.netscape.com/publish/formats/rss-0.91.dtd">\n'
        b'<rss version="0.91"><channel><title>Old &eacute;</title>'
        b"<item><title>One</title><link>https://example.com/1</link></item>"
        b"<item><title>Two</title><link>https://example.com/2</link></item>"
        b"</channel></rss>"
    )
    result = parse_feed(body)
    assert result.pages == ["https://example.com/1", "https://example.com/2"]


def test_bom_and_blank_lines_before_declaration() -> None:
    body = b"\xef\xbb\xbf\r\n\r\n\n" + rss(b"<link>https://example.com/a</link>")
    assert parse_feed(body).pages == ["https://example.com/a"]


def test_gzipped_feed() -> None:
    assert parse_feed(gzip.compress(rss(b"<link>https://example.com/a</link>"))).pages == [
        "https://example.com/a"
    ]


# ---------------------------------------------------------------- RSS 1.0 (RDF)

RSS_1_0 = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="https://example.com/"><title>RDF site</title>
    <link>https://example.com/</link>
    <items><rdf:Seq><rdf:li rdf:resource="https://example.com/1"/></rdf:Seq></items>
  </channel>
  <item rdf:about="https://example.com/1">
    <title>One</title><link>https://example.com/1</link><dc:date>2024-05-01T10:00:00+02:00</dc:date>
  </item>
  <item rdf:about="https://example.com/2"><title>Two (about only)</title></item>
</rdf:RDF>
"""


def test_rss_1_0() -> None:
    result = parse_feed(RSS_1_0)
    assert result.format == "rdf"
    assert result.title == "RDF site"
    assert result.candidates == (
        Candidate("https://example.com/1", "page", "2024-05-01T08:00:00Z"),
        Candidate("https://example.com/2", "page", None),
    )


def test_rss_0_90_rdf_with_undeclared_rdf_prefix() -> None:
    body = (
        b'<rdf:RDF xmlns="http://my.netscape.com/rdf/simple/0.9/"><channel><title>T</title>'
        b"</channel><item><title>x</title><link>https://example.com/x</link></item>"
        b'<item rdf:about="https://example.com/y"><title>y</title></item></rdf:RDF>'
    )
    assert parse_feed(body).pages == ["https://example.com/x", "https://example.com/y"]


# ---------------------------------------------------------------- Atom


def test_atom_xml_base_on_feed_and_entry() -> None:
    body = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.com/blog/">
  <title>Atom blog</title>
  <entry>
    <link rel="alternate" type="text/html" href="first"/>
    <updated>2024-05-02T00:00:00Z</updated><published>2024-05-01T00:00:00Z</published>
  </entry>
  <entry xml:base="https://cdn.example.org/x/"><link href="second"/></entry>
  <entry><published>2024-04-01T12:00:00-07:00</published><link href="/third"/></entry>
</feed>"""
    result = parse_feed(body, "https://ignored.example.net/feed")
    assert result.format == "atom"
    assert result.title == "Atom blog"
    assert result.candidates == (
        Candidate("https://example.com/blog/first", "page", "2024-05-02T00:00:00Z"),
        Candidate("https://cdn.example.org/x/second", "page", None),
        Candidate("https://example.com/third", "page", "2024-04-01T19:00:00Z"),
    )


def test_atom_relative_entry_base_and_link_base() -> None:
    body = atom(
        b'<link xml:base="2024/" href="post"/>',
        attrs=ATOM_NS + b' xml:base="https://example.com/blog/"',
    ).replace(b"<entry>", b'<entry xml:base="archive/">', 1)
    assert parse_feed(body).pages == ["https://example.com/blog/archive/2024/post"]


def test_atom_relative_href_against_base_url() -> None:
    body = atom(b'<link href="posts/1"/>')
    assert parse_feed(body, "https://example.com/feeds/atom.xml").pages == [
        "https://example.com/feeds/posts/1"
    ]


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        pytest.param(
            b'<link rel="edit" href="https://example.com/edit"/>'
            b'<link rel="alternate" href="https://example.com/post"/>',
            "https://example.com/post",
            id="alternate-not-edit",
        ),
        pytest.param(
            b'<link rel="alternate" type="application/pdf" href="https://example.com/p.pdf"/>'
            b'<link rel="alternate" type="text/html" href="https://example.com/post"/>',
            "https://example.com/post",
            id="html-preferred",
        ),
        pytest.param(
            b'<link rel="alternate" type="application/pdf" href="https://example.com/p.pdf"/>',
            "https://example.com/p.pdf",
            id="other-type-when-alone",
        ),
        pytest.param(
            b'<link rel="http://www.iana.org/assignments/relation/alternate" '
            b'href="https://example.com/post"/>',
            "https://example.com/post",
            id="iana-rel-uri",
        ),
        pytest.param(
            b'<link rel="replies" href="https://example.com/c"/><link href="https://example.com/post"/>',
            "https://example.com/post",
            id="no-rel-means-alternate",
        ),
    ],
)
def test_atom_link_choice(links: bytes, expected: str) -> None:
    assert parse_feed(atom(links)).pages == [expected]


def test_atom_without_namespace_and_with_undeclared_prefix() -> None:
    plain = atom(b'<link href="https://example.com/a"/>', attrs=b'version="1.0"')
    assert parse_feed(plain).pages == ["https://example.com/a"]
    prefixed = (
        b"<atom:feed><atom:entry><atom:link href='https://example.com/a'/>"
        b"<atom:updated>2024-05-01T00:00:00Z</atom:updated></atom:entry></atom:feed>"
    )
    assert parse_feed(prefixed).candidates == (
        Candidate("https://example.com/a", "page", "2024-05-01T00:00:00Z"),
    )


def test_atom_entry_without_link_is_skipped() -> None:
    result = parse_feed(atom(b"<id>tag:example.com,2024:1</id>", b'<link href="https://e.com/"/>'))
    assert result.pages == ["https://e.com/"]
    assert result.skipped == 1


# ---------------------------------------------------------------- deleted entries (RFC 6721)

TOMBSTONES_NS = b'xmlns:at="http://purl.org/atompub/tombstones/1.0"'


def atom_with_deletions(*parts: bytes) -> bytes:
    return (
        b'<?xml version="1.0" encoding="utf-8"?>\n<feed '
        + ATOM_NS
        + b" "
        + TOMBSTONES_NS
        + b' xml:base="https://example.com/posts/"><title>Atom blog</title><id>urn:x</id>'
        + b"".join(parts)
        + b"</feed>"
    )


def test_atom_deleted_entries_name_the_pages_deleted_and_when() -> None:
    body = atom_with_deletions(
        b"<entry><link href='kept'/><updated>2024-05-01T00:00:00Z</updated></entry>",
        # the page by its alternate link (relative to xml:base), with a comment and who
        b'<at:deleted-entry ref="tag:example.com,2024:1" when="2024-05-02T10:00:00+02:00">'
        b"<at:by><name>Ed</name></at:by><at:comment>Retracted</at:comment>"
        b'<link rel="alternate" type="text/html" href="gone-1"/></at:deleted-entry>',
        # no link: a ref that is an http(s) URL names the page itself
        b'<at:deleted-entry ref="https://example.com/posts/gone-2" when="2024-05-03"/>',
        # a tag: ref and no link: nothing says which page it was
        b'<at:deleted-entry ref="tag:example.com,2024:3" when="2024-05-03T00:00:00Z"/>',
    )
    result = parse_feed(body)
    assert result.pages == ["https://example.com/posts/kept"]
    assert result.deleted == (
        Deletion(
            "https://example.com/posts/gone-1", "2024-05-02T08:00:00Z", "tag:example.com,2024:1"
        ),
        Deletion(
            "https://example.com/posts/gone-2",
            "2024-05-03T00:00:00Z",
            "https://example.com/posts/gone-2",
        ),
    )
    assert result.skipped == 1  # the deleted entry that names no page


def test_an_entry_updated_after_its_deletion_is_back() -> None:
    """RFC 6721 section 3: an entry and a deleted entry for it: the later one holds."""
    body = atom_with_deletions(
        b"<entry><link href='back'/><updated>2024-06-01T00:00:00Z</updated></entry>",
        b'<at:deleted-entry ref="x" when="2024-05-01T00:00:00Z">'
        b'<link href="back"/></at:deleted-entry>',
        b"<entry><link href='old'/><updated>2024-04-01T00:00:00Z</updated></entry>",
        b'<at:deleted-entry ref="y" when="2024-05-01T00:00:00Z">'
        b'<link href="old"/></at:deleted-entry>',
    )
    result = parse_feed(body)
    assert result.pages == ["https://example.com/posts/back"]
    assert [d.url for d in result.deleted] == ["https://example.com/posts/old"]


def test_rss_has_no_deletions_and_a_deleted_entry_outside_atom_is_ignored() -> None:
    body = rss(b"<link>https://example.com/a</link>")
    assert parse_feed(body).deleted == ()


# ---------------------------------------------------------------- broken and hostile


def test_truncated_feed_keeps_whole_items() -> None:
    body = rss(
        b"<link>https://example.com/1</link><pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate>",
        b"<link>https://example.com/2</link>",
        b"<link>https://example.com/33333</link>",
    )
    cut = body[: body.index(b"33333") + 2]  # inside the third item's link
    result = parse_feed(cut)
    assert result.pages == ["https://example.com/1", "https://example.com/2"]
    assert result.truncated and result.warnings


def test_truncated_atom_inside_an_attribute() -> None:
    body = atom(
        b'<link href="https://example.com/1"/>', b'<link href="https://example.com/22222"/>'
    )
    result = parse_feed(body[: body.index(b"22222") + 2])
    assert result.pages == ["https://example.com/1"]
    assert result.truncated


def test_billion_laughs_feed_is_not_expanded() -> None:
    decls = b'<!ENTITY lol "lol">' + b"".join(
        b'<!ENTITY lol%d "' % i + (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10 + b'">'
        for i in range(1, 10)
    )
    body = (
        b'<?xml version="1.0"?><!DOCTYPE rss [' + decls + b"]>"
        b"<rss><channel><title>&lol9;</title><item><link>https://example.com/&lol9;</link></item>"
        b"<item><link>https://example.com/kept</link></item></channel></rss>"
    )
    started = time.monotonic()
    result = parse_feed(body)
    assert time.monotonic() - started < 1
    assert result.pages == ["https://example.com/kept"]
    assert "lollol" not in repr(result)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"<urlset><url><loc>https://e.com/</loc></url></urlset>", id="sitemap"),
        pytest.param(b"<html><head><title>x</title></head></html>", id="html"),
        pytest.param(
            b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>', id="bare-rdf"
        ),
        pytest.param(b"User-agent: *\n", id="robots"),
        pytest.param(b"\x00\x01\x02garbage", id="binary"),
    ],
)
def test_not_a_feed_is_a_clear_error(body: bytes) -> None:
    with pytest.raises(NotAFeed, match=r"^not an RSS or Atom feed"):
        parse_feed(body)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_any_bytes_give_a_result_or_not_a_feed(body: bytes) -> None:
    with contextlib.suppress(NotAFeed):
        parse_feed(body)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"<rss>",
                b"<feed>",
                b"<item>",
                b"<entry>",
                b"<link>",
                b"</link>",
                b'<link href="',
                b'"/>',
                b"https://e.com/",
                b"<guid>",
                b"</guid>",
                b"<![CDATA[",
                b"]]>",
                b"&x;",
                b"<pubDate>",
                b"Wed, 01 May 2024",
                b"</item>",
                b' xml:base="/a/"',
            ]
        )
    )
)
def test_any_feed_soup_gives_a_result_or_not_a_feed(parts: list[bytes]) -> None:
    try:
        result = parse_feed(b"".join(parts))
    except NotAFeed:
        return
    assert all(c.url.startswith("https://") for c in result.candidates)


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        pytest.param(
            b"http://example.com/bad?foo=1&bar=2", "http://example.com/bad?foo=1&bar=2", id="bare"
        ),
        pytest.param(
            b"https://example.com/a?x=1&amp;y=2", "https://example.com/a?x=1&y=2", id="ok"
        ),
        pytest.param(
            b"https://example.com/a?x=1&#38;y=2", "https://example.com/a?x=1&y=2", id="num"
        ),
        pytest.param(b"https://example.com/a?q=&", "https://example.com/a?q=&", id="trailing"),
    ],
)
def test_a_bare_ampersand_in_a_broken_feed_keeps_the_url_it_wrote(
    link: bytes, expected: str
) -> None:
    # The recovering parser dropped "&bar" as an unknown entity and yielded
    # http://example.com/bad?foo=1=2, a URL the feed does not hold.
    broken = rss(
        b"<link>" + link + b"</link>",
        b"<title>Tom & Jerry</title><link>https://example.com/ok</link>",
    )
    assert parse_feed(broken).pages == [expected, "https://example.com/ok"]
    cdata = rss(b"<link><![CDATA[https://example.com/c?a=1&amp;b=2]]></link>")
    assert parse_feed(cdata).pages == ["https://example.com/c?a=1&amp;b=2"]  # CDATA as it is
