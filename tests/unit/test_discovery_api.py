"""The pure half of paginated JSON APIs: items, URLs and the next page from one response."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.discovery.api import (
    ApiError,
    ApiPage,
    next_link,
    parse_api_page,
    parse_link_header,
)

PAGE = "https://api.example.com/v1/pages?limit=2"


def page(
    body: Any,
    *,
    items_path: str = "items",
    url_field: str = "url",
    next_mode: Literal["link", "cursor"] = "link",
    cursor_field: str | None = None,
    link_header: str | None = None,
    page_url: str = PAGE,
    cursor_param: str = "cursor",
) -> ApiPage:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return parse_api_page(
        raw,
        items_path=items_path,
        url_field=url_field,
        next_mode=next_mode,
        cursor_field=cursor_field,
        link_header=link_header,
        page_url=page_url,
        cursor_param=cursor_param,
    )


# ---------------------------------------------------------------- items and URLs


@pytest.mark.parametrize(
    ("body", "items_path", "url_field", "expected"),
    [
        pytest.param(
            {"items": [{"url": "https://example.com/a"}, {"url": "https://example.com/b"}]},
            "items",
            "url",
            ["https://example.com/a", "https://example.com/b"],
            id="top-level",
        ),
        pytest.param(
            {"data": {"items": [{"link": "https://example.com/a"}]}},
            "data.items",
            "link",
            ["https://example.com/a"],
            id="dotted-path",
        ),
        pytest.param(
            {"data": {"items": [{"links": {"html": "/docs/a"}}]}},
            "data.items",
            "links.html",
            ["https://api.example.com/docs/a"],
            id="dotted-url-field-relative",
        ),
        pytest.param(
            {"results": [{"items": [{"url": "https://example.com/a"}]}]},
            "results.0.items",
            "url",
            ["https://example.com/a"],
            id="list-index",
        ),
        pytest.param(
            [{"url": "https://example.com/a"}], "", "url", ["https://example.com/a"], id="root-list"
        ),
        pytest.param(
            {"items": ["https://example.com/a", "/b"]},
            "items",
            "url",
            ["https://example.com/a", "https://api.example.com/b"],
            id="string-items",
        ),
        pytest.param(
            {
                "items": [
                    {"url": "mailto:x@example.com"},
                    {"url": 42},
                    {"other": "https://example.com/x"},
                    None,
                    17,
                    {"url": "https://example.com/ok"},
                    {"url": "https://example.com/ok"},
                ]
            },
            "items",
            "url",
            ["https://example.com/ok"],
            id="unusable-items-skipped-and-each-once",
        ),
        pytest.param({"other": []}, "items", "url", [], id="missing-path-is-empty"),
        pytest.param({"items": None}, "items", "url", [], id="null-is-empty"),
        pytest.param({"data": None}, "data.items", "url", [], id="null-on-the-way"),
        pytest.param({"items": []}, "items", "url", [], id="empty-list"),
    ],
)
def test_items_and_urls(body: Any, items_path: str, url_field: str, expected: list[str]) -> None:
    assert page(body, items_path=items_path, url_field=url_field).urls == expected


@pytest.mark.parametrize(
    ("body", "items_path", "message"),
    [
        ({"items": {"url": "x"}}, "items", "expected a list, got dict"),
        ({"items": "nope"}, "items", "expected a list, got str"),
        ([{"url": "x"}], "items", "body is a list"),
        ({"data": "text"}, "data.items", "data is str"),
    ],
)
def test_items_that_are_not_a_list_are_an_error(body: Any, items_path: str, message: str) -> None:
    with pytest.raises(ApiError, match=message):
        page(body, items_path=items_path)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"<html>rate limited</html>", id="html"),
        pytest.param(b'{"items": [', id="truncated"),
        pytest.param(b"\xff\xfe\xfa", id="not-utf8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply-nested"),
    ],
)
def test_bad_json_is_an_api_error(body: bytes) -> None:
    with pytest.raises(ApiError) as err:
        page(body)
    assert "\n" not in str(err.value)


def test_json_with_a_bom_is_read() -> None:
    body = b"\xef\xbb\xbf" + json.dumps({"items": ["https://example.com/a"]}).encode()
    assert page(body).urls == ["https://example.com/a"]


# ---------------------------------------------------------------- Link: rel="next"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param(
            '<https://api.example.com/v1/pages?page=2>; rel="next"',
            "https://api.example.com/v1/pages?page=2",
            id="quoted",
        ),
        pytest.param("<?page=2>; rel=next", "https://api.example.com/v1/pages?page=2", id="bare"),
        pytest.param(
            '<https://api.example.com/p?page=1>; rel="prev", '
            '<https://api.example.com/p?page=3>; rel="next", '
            '<https://api.example.com/p?page=9>; rel="last"',
            "https://api.example.com/p?page=3",
            id="several-links",
        ),
        pytest.param(
            '</v1/pages?page=9>; rel="last next"',
            "https://api.example.com/v1/pages?page=9",
            id="rel-list",
        ),
        pytest.param(
            '<https://api.example.com/p?a=1,2>; title="a, b; c"; rel="NEXT"',
            "https://api.example.com/p?a=1,2",
            id="commas-and-case",
        ),
        pytest.param('<https://api.example.com/p?page=1>; rel="prev"', None, id="no-next"),
        pytest.param(None, None, id="no-header"),
        pytest.param("", None, id="empty-header"),
        pytest.param("garbage without brackets; rel=next", None, id="garbage"),
        pytest.param('<mailto:x@example.com>; rel="next"', None, id="not-http"),
        pytest.param(f'<{PAGE}>; rel="next"', None, id="same-page-loop"),
    ],
)
def test_next_from_link_header(header: str | None, expected: str | None) -> None:
    result = page({"items": []}, link_header=header)
    assert result.next_url == expected
    assert result.cursor is None


def test_parse_link_header_keeps_params() -> None:
    assert parse_link_header('<a>; rel="next"; type="application/json", <b>;rel=prev') == [
        ("a", {"rel": "next", "type": "application/json"}),
        ("b", {"rel": "prev"}),
    ]


def test_next_link_helper() -> None:
    assert next_link('<p2>; rel="next"', "https://api.example.com/v1/p1") == (
        "https://api.example.com/v1/p2"
    )


# ---------------------------------------------------------------- cursor


@pytest.mark.parametrize(
    ("body", "cursor_field", "cursor", "next_url"),
    [
        pytest.param(
            {"items": [], "next_cursor": "abc=="},
            "next_cursor",
            "abc==",
            "https://api.example.com/v1/pages?limit=2&after=abc%3D%3D",
            id="string",
        ),
        pytest.param(
            {"items": [], "meta": {"next": 40}},
            "meta.next",
            "40",
            "https://api.example.com/v1/pages?limit=2&after=40",
            id="dotted-int",
        ),
        pytest.param({"items": [], "next_cursor": ""}, "next_cursor", None, None, id="empty"),
        pytest.param({"items": [], "next_cursor": "  "}, "next_cursor", None, None, id="blank"),
        pytest.param({"items": [], "next_cursor": None}, "next_cursor", None, None, id="null"),
        pytest.param({"items": []}, "next_cursor", None, None, id="absent"),
        pytest.param({"items": [], "next_cursor": False}, "next_cursor", None, None, id="false"),
        pytest.param(
            {"items": [], "next_cursor": {"a": 1}}, "next_cursor", None, None, id="object"
        ),
        pytest.param({"items": [], "meta": "x"}, "meta.next", None, None, id="path-through-text"),
    ],
)
def test_next_from_cursor(
    body: Any, cursor_field: str, cursor: str | None, next_url: str | None
) -> None:
    result = page(body, next_mode="cursor", cursor_field=cursor_field, cursor_param="after")
    assert (result.cursor, result.next_url) == (cursor, next_url)


def test_cursor_replaces_the_previous_one() -> None:
    result = page(
        {"items": [{"url": "https://example.com/3"}], "next": "c3"},
        next_mode="cursor",
        cursor_field="next",
        page_url="https://api.example.com/v1/pages?cursor=c2&limit=2",
    )
    assert result == ApiPage(
        ["https://example.com/3"], "https://api.example.com/v1/pages?cursor=c3&limit=2", "c3"
    )


def test_same_cursor_again_ends_the_walk() -> None:
    result = page(
        {"items": [], "next": "c2"},
        next_mode="cursor",
        cursor_field="next",
        page_url="https://api.example.com/v1/pages?cursor=c2",
    )
    assert result.next_url is None


def test_cursor_mode_ignores_the_link_header() -> None:
    result = page(
        {"items": []},
        next_mode="cursor",
        cursor_field="next",
        link_header='<https://api.example.com/elsewhere>; rel="next"',
    )
    assert result.next_url is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"next_mode": "cursor", "cursor_field": None}, "needs a cursor_field"),
        ({"next_mode": "offset"}, "must be 'link' or 'cursor'"),
    ],
)
def test_bad_configuration_is_an_api_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ApiError, match=message):
        page({"items": []}, **kwargs)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=512))
def test_any_bytes_give_a_page_or_an_api_error(body: bytes) -> None:
    try:
        result = page(body, next_mode="cursor", cursor_field="next")
    except ApiError:
        return
    assert all(u.startswith(("http://", "https://")) for u in result.urls)


# -- deleted items --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "deleted"),
    [
        (True, True),
        (1, True),
        ("true", True),
        ("yes", True),
        (False, False),
        (0, False),
        ("false", False),
        (None, False),
        ("", False),
        ({"at": "x"}, False),
    ],
)
def test_an_item_flagged_deleted_names_a_deleted_page_not_a_page(flag: Any, deleted: bool) -> None:
    body = {"items": [{"url": "/a", "meta": {"deleted": flag}}, {"url": "/b"}]}
    raw = json.dumps(body).encode()
    got = parse_api_page(
        raw,
        items_path="items",
        url_field="url",
        next_mode="link",
        cursor_field=None,
        link_header=None,
        page_url=PAGE,
        cursor_param="cursor",
        deleted_field="meta.deleted",
    )
    a, b = "https://api.example.com/a", "https://api.example.com/b"
    assert got.deleted == ([a] if deleted else [])
    assert got.urls == ([b] if deleted else [a, b])


def test_without_a_deleted_field_nothing_is_deleted() -> None:
    got = page({"items": [{"url": "/a", "deleted": True}]})
    assert got.urls == ["https://api.example.com/a"] and got.deleted == []
