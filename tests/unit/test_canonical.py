"""Canonical URLs: the table of seed 000 and the properties that make them an identity."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge_crawler.transform.canonical import (
    DEFAULT_TRACKING_PARAMS,
    canonical_url,
    fetch_url,
    is_tracking_param,
)

LAMPS = "https://example.com/article/lamps"


@pytest.mark.parametrize(
    "variant",
    [
        "http://example.com/article/lamps/",
        "https://www.example.com/article/lamps",
        "https://example.com/article/lamps?utm_source=newsletter&utm_campaign=spring",
        "https://example.com/article/lamps?utm_source=twitter",
    ],
)
def test_seed_000_lamp_variants_share_one_key(variant: str) -> None:
    assert canonical_url(variant) == LAMPS


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://EXAMPLE.COM./a", "https://example.com/a"),
        ("http://example.com:80/a", "https://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080/a/", "https://example.com:8080/a"),
        ("http://example.com", "https://example.com/"),
        ("http://example.com/", "https://example.com/"),
        ("https://example.com/a#section", "https://example.com/a"),
        ("https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"),
        ("https://example.com/a?id=3&fbclid=x&gclid=y&ref=nav", "https://example.com/a?id=3"),
        ("https://example.com/a?UTM_Source=x&utm_whatever=y", "https://example.com/a"),
        ("https://example.com/a%7Eb", "https://example.com/a~b"),
        ("https://example.com/caf%C3%A9", "https://example.com/caf%C3%A9"),
        ("https://example.com/café", "https://example.com/caf%C3%A9"),
        ("https://bücher.example/x", "https://xn--bcher-kva.example/x"),
        ("https://example.com/a?q=", "https://example.com/a?q="),
    ],
)
def test_rules(url: str, expected: str) -> None:
    assert canonical_url(url) == expected


def test_keep_params_is_a_whitelist() -> None:
    url = "https://store.example.com/search?q=lamps&sort=price&session=abc&utm_source=x"
    assert canonical_url(url, keep_params={"q", "sort"}) == (
        "https://store.example.com/search?q=lamps&sort=price"
    )
    # Genuinely different pages stay different.
    assert canonical_url("https://e.com/search?q=lamps", keep_params={"q"}) != canonical_url(
        "https://e.com/search?q=desks", keep_params={"q"}
    )


def test_extra_tracking_params() -> None:
    extra = DEFAULT_TRACKING_PARAMS | {"campaign"}
    assert canonical_url("https://e.com/a?campaign=1&id=2", tracking_params=extra) == (
        "https://e.com/a?id=2"
    )
    assert is_tracking_param("utm_foo") and not is_tracking_param("page")


@pytest.mark.parametrize("bad", ["ftp://example.com/a", "mailto:me@example.com", "http:///nohost"])
def test_refuses_non_http_urls(bad: str) -> None:
    with pytest.raises(ValueError):
        canonical_url(bad)


def test_fetch_url_keeps_scheme_and_host_but_drops_tracking_and_fragment() -> None:
    assert fetch_url("http://LOCALHOST:8080/a/?utm_source=x&page=2#c") == (
        "http://localhost:8080/a/?page=2"
    )
    assert fetch_url("http://e.com/a?b=2&a=1") == "http://e.com/a?b=2&a=1"


_segment = st.text(alphabet="abcXYZ019-_.~%é ", min_size=1, max_size=8)
_params = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "id", "page", "q", "utm_source", "ref", "gclid", "Z"]),
        st.text(alphabet="xyz12 &=é", max_size=5),
    ),
    max_size=6,
)


@st.composite
def urls(draw: st.DrawFn) -> str:
    from urllib.parse import quote, urlencode

    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    host = draw(st.sampled_from(["example.com", "WWW.Example.com", "example.com.", "sub.ex.org"]))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080"]))
    path = "/".join(quote(s) for s in draw(st.lists(_segment, max_size=4)))
    slash = draw(st.sampled_from(["", "/"]))
    query = urlencode(draw(_params))
    frag = draw(st.sampled_from(["", "#top", "#a/b"]))
    return f"{scheme}://{host}{port}/{path}{slash}" + (f"?{query}" if query else "") + frag


@given(urls())
def test_idempotent(url: str) -> None:
    once = canonical_url(url)
    assert canonical_url(once) == once


@given(urls(), st.randoms())
def test_query_order_does_not_matter(url: str, rnd: object) -> None:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    pairs = parts.query.split("&") if parts.query else []
    rnd.shuffle(pairs)  # type: ignore[attr-defined]
    shuffled = urlunsplit(parts._replace(query="&".join(pairs)))
    assert canonical_url(shuffled) == canonical_url(url)


@given(urls())
def test_no_tracking_param_or_fragment_survives(url: str) -> None:
    key = canonical_url(url)
    assert "#" not in key
    assert "utm_source=" not in key and "gclid=" not in key and "ref=" not in key
    assert key.startswith("https://") and "www." not in key


# -- parameter names are matched case-insensitively --------------------------------------


@pytest.mark.parametrize("name", ["sessionid", "SessionID", "SESSIONID", "sessionId"])
def test_own_tracking_names_match_any_case(name: str) -> None:
    # A source names "SessionID"; links write it in whatever case the site uses.
    extra = DEFAULT_TRACKING_PARAMS | {"SessionID"}
    url = f"https://e.com/a?{name}=abc&id=3"
    assert canonical_url(url, tracking_params=extra) == "https://e.com/a?id=3"
    assert fetch_url(url, tracking_params=extra) == "https://e.com/a?id=3"
    assert is_tracking_param(name, extra)
    assert is_tracking_param(name, ["sessionid"]) and is_tracking_param(name, {"SESSIONID"})


@pytest.mark.parametrize("name", ["GCLID", "FbClid", "Ref", "MC_CID"])
def test_built_in_tracking_names_match_any_case(name: str) -> None:
    assert canonical_url(f"https://e.com/a?{name}=x&page=2") == "https://e.com/a?page=2"
    assert fetch_url(f"https://e.com/a?{name}=x&page=2") == "https://e.com/a?page=2"


def test_keep_params_match_any_case_and_keep_the_name_as_written() -> None:
    # Many servers (IIS/ASP.NET) read ?ID= and ?id= alike; a case-sensitive whitelist
    # would drop ?ID=3 and merge every item into one page. The name is kept as written,
    # since RFC 3986 leaves query names case-sensitive: ?ID=3 and ?id=3 stay two keys.
    assert canonical_url("https://e.com/item?ID=3&x=1", keep_params={"id"}) == (
        "https://e.com/item?ID=3"
    )
    assert canonical_url("https://e.com/item?id=3&x=1", keep_params={"ID"}) == (
        "https://e.com/item?id=3"
    )
    assert canonical_url("https://e.com/item?ID=3", keep_params={"id"}) != canonical_url(
        "https://e.com/item?ID=4", keep_params={"id"}
    )


@given(st.sampled_from(["SessionID", *sorted(DEFAULT_TRACKING_PARAMS)]), st.randoms())
def test_no_case_variant_of_a_tracking_name_survives(name: str, rnd: object) -> None:
    variant = "".join(
        c.upper() if rnd.random() < 0.5 else c  # type: ignore[attr-defined]
        for c in name
    )
    extra = DEFAULT_TRACKING_PARAMS | {"SessionID"}
    assert canonical_url(f"https://e.com/a?{variant}=1", tracking_params=extra) == "https://e.com/a"
