"""A page's links made absolute: the memoised resolution gives what urljoin gives."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.transform.links import page_link_urls

SKIPPED = frozenset({".jpg", ".pdf"})

segment = st.sampled_from(["a", "b", "..", ".", "", "x.jpg", "y;p", "c%20d", "é", "q.PDF"])
path = st.lists(segment, max_size=4).map(lambda parts: "/".join(parts))
query = st.sampled_from(["", "?", "?q=1", "?a=../b"])
fragment = st.sampled_from(["", "#", "#top"])
base = st.builds(
    lambda scheme, host, p, q, f: f"{scheme}://{host}/{p}{q}{f}",
    st.sampled_from(["http", "https"]),
    st.sampled_from(["example.com", "user@example.com:8080", "EXAMPLE.com", "[::1]"]),
    path,
    query,
    fragment,
)
href = st.one_of(
    st.builds(lambda p, q, f: p + q + f, path, query, fragment),
    st.builds(lambda p, q, f: "/" + p + q + f, path, query, fragment),
    st.builds(lambda p, q, f: "//other.org/" + p + q + f, path, query, fragment),
    st.builds(lambda s, p: f"{s}://other.org/{p}", st.sampled_from(["http", "https", "ftp"]), path),
    st.sampled_from(["", " ", "#x", "?only", "mailto:a@b.c", "javascript:void(0)", " ../a "]),
    st.sampled_from(["//", "///x", "http://", "http:", "http:x", "http:///x", "https:../a"]),
    st.sampled_from(["/\t/", "/\n/x", "a:b/c", "./a:b", "..", ".", "/", "/?q", "x#f"]),
)


def reference(hrefs: list[str], base: str, skipped: frozenset[str]) -> list[str]:
    """page_link_urls as first written: urljoin against the page's own URL, every link."""
    found: dict[str, None] = {}
    for h in hrefs:
        url = urljoin(base, h.strip())
        if not url.startswith(("http://", "https://")):
            continue
        p = urlsplit(url).path
        dot = p.rfind(".")
        if dot > p.rfind("/") and p[dot:].lower() in skipped:
            continue
        found.setdefault(url, None)
    return list(found)


@settings(max_examples=2000)
@given(st.lists(href, max_size=8), st.lists(base, min_size=1, max_size=3))
def test_links_resolve_as_urljoin_resolves_them(hrefs: list[str], bases: list[str]) -> None:
    # several pages in a row: what one page's links put in the memo serves the next
    for b in bases:
        assert page_link_urls(hrefs, b, SKIPPED) == reference(hrefs, b, SKIPPED)
        assert page_link_urls(hrefs, b, set(SKIPPED)) == reference(hrefs, b, SKIPPED)
