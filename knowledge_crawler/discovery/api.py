"""The pure half of a paginated JSON API: one page's body -> its URLs and the next page.

The fetching half (a Request per page, the cursor stored as the source's
checkpoint) lives with the spider. Here, for one response:

* the items are the list at a dotted path of the JSON body (``data.items``; a
  number steps into a list, ``""`` is the body itself); a missing or ``null``
  path is an empty page, a path through something else is an :class:`ApiError`;
* each item's URL is at the dotted ``url_field`` (or the item is the URL
  itself), resolved against the page URL; only ``http(s)`` URLs, each once;
* with a ``deleted_field`` (a dotted path in the item), an item whose flag is true
  (JSON ``true``, a non-zero number, or ``"true"``/``"yes"``/``"1"``) names a page its
  publisher deleted: it is listed in ``deleted``, not among the page URLs;
* the next page comes from the ``Link`` header's ``rel="next"`` target
  (``next_mode="link"``, RFC 8288) or from the ``cursor_field`` value sent back
  as the ``cursor_param`` query parameter (``next_mode="cursor"``). An empty or
  absent cursor or link, or one that points back at the same page, ends the walk.

See :class:`knowledge_crawler.sources.ApiConfig` for the configured names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from w3lib.url import add_or_replace_parameter

from knowledge_crawler.discovery.candidates import ApiError, absolute_http_url

__all__ = ["ApiError", "ApiPage", "next_link", "parse_api_page", "parse_link_header"]

_MISSING = object()
_LINK_TARGET = re.compile(r"\s*<([^>]*)>")
_LINK_PARAM = re.compile(r"""\s*;\s*([^\s=;,]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^;,]*))?""", re.DOTALL)
_LINK_SEPARATOR = re.compile(r"\s*,")


@dataclass(frozen=True, slots=True)
class ApiPage:
    """One API page: the page URLs it lists, the next page's URL and the cursor (if any),
    and the URLs of the items it flags deleted."""

    urls: list[str]
    next_url: str | None
    cursor: str | None
    deleted: list[str] = field(default_factory=list)


def parse_link_header(value: str | None) -> list[tuple[str, dict[str, str]]]:
    """The links of an HTTP ``Link`` header (RFC 8288): ``(target, {param: value})`` pairs.

    Parameter names are lower-cased; quoted values are unquoted. Whatever does
    not parse ends the list (what parsed before it is kept).

    >>> parse_link_header('<https://api.example.com/p?page=3>; rel="next", </p?page=9>; rel=last')
    [('https://api.example.com/p?page=3', {'rel': 'next'}), ('/p?page=9', {'rel': 'last'})]
    """
    links: list[tuple[str, dict[str, str]]] = []
    if not value:
        return links
    pos = 0
    while pos < len(value):
        target = _LINK_TARGET.match(value, pos)
        if target is None:
            break
        pos = target.end()
        params: dict[str, str] = {}
        while (param := _LINK_PARAM.match(value, pos)) is not None:
            pos = param.end()
            raw = (param.group(2) or "").strip()
            if len(raw) >= 2 and raw[0] == raw[-1] == '"':
                raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
            params.setdefault(param.group(1).lower(), raw)
        links.append((target.group(1).strip(), params))
        rest = _LINK_SEPARATOR.match(value, pos)
        if rest is None:
            break
        pos = rest.end()
    return links


def next_link(link_header: str | None, page_url: str) -> str | None:
    """The absolute ``rel="next"`` target of a ``Link`` header, ``None`` when there is none.

    >>> next_link('<?page=2>; rel="next last"', "https://api.example.com/items?page=1")
    'https://api.example.com/items?page=2'
    """
    for target, params in parse_link_header(link_header):
        if "next" in params.get("rel", "").lower().split():
            url = absolute_http_url(target, page_url)
            if url is not None and url != page_url:
                return url
    return None


def _walk(value: Any, path: str, what: str) -> Any:
    """The value at a dotted path; ``_MISSING`` when an object lacks a key on the way."""
    if not path or path == ".":
        return value
    walked: list[str] = []
    for step in path.split("."):
        walked.append(step)
        if value is None:
            return _MISSING
        if isinstance(value, dict):
            value = value.get(step, _MISSING)
            if value is _MISSING:
                return _MISSING
        elif isinstance(value, list) and step.lstrip("-").isdigit():
            index = int(step)
            if not -len(value) <= index < len(value):
                return _MISSING
            value = value[index]
        else:
            kind = "a list" if isinstance(value, list) else type(value).__name__
            raise ApiError(f"{what} {path!r}: {'.'.join(walked[:-1]) or 'body'} is {kind}")
    return value


def _item_url(item: Any, url_field: str, page_url: str) -> str | None:
    if isinstance(item, str):
        raw: Any = item
    elif isinstance(item, dict):
        try:
            raw = _walk(item, url_field, "url_field")
        except ApiError:
            return None
    else:
        return None
    return absolute_http_url(raw, page_url) if isinstance(raw, str) else None


_TRUE_TEXT = frozenset({"true", "yes", "1"})


def _flagged(item: Any, deleted_field: str | None) -> bool:
    """Whether ``item``'s deleted flag (at ``deleted_field``) is true."""
    if not deleted_field or not isinstance(item, dict):
        return False
    try:
        flag = _walk(item, deleted_field, "deleted_field")
    except ApiError:
        return False
    if isinstance(flag, bool):
        return flag
    if isinstance(flag, int | float):
        return flag != 0
    return isinstance(flag, str) and flag.strip().lower() in _TRUE_TEXT


def _cursor_value(value: Any) -> str | None:
    if isinstance(value, bool) or value is None or value is _MISSING:
        return None
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        return None
    return value.strip() or None


def parse_api_page(
    body: bytes,
    *,
    items_path: str,
    url_field: str,
    next_mode: Literal["link", "cursor"],
    cursor_field: str | None,
    link_header: str | None,
    page_url: str,
    cursor_param: str,
    deleted_field: str | None = None,
) -> ApiPage:
    """Read one page of a paginated JSON API (see the module docstring).

    Raises :class:`ApiError` (one line) for a body that is not JSON, items that
    are not a list, or ``next_mode="cursor"`` without a ``cursor_field``.

    >>> page = parse_api_page(b'{"data": {"items": [{"url": "/a"}]}, "next": "c2"}',
    ...     items_path="data.items", url_field="url", next_mode="cursor", cursor_field="next",
    ...     link_header=None, page_url="https://api.example.com/list", cursor_param="after")
    >>> page.urls, page.cursor
    (['https://api.example.com/a'], 'c2')
    >>> page.next_url
    'https://api.example.com/list?after=c2'
    """
    if next_mode not in ("link", "cursor"):
        raise ApiError(f"next_mode must be 'link' or 'cursor', got {next_mode!r}")
    if next_mode == "cursor" and not cursor_field:
        raise ApiError("next_mode 'cursor' needs a cursor_field")
    try:
        document = json.loads(body)
    except RecursionError as exc:
        raise ApiError(f"{page_url}: JSON nested too deeply") from exc
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise ApiError(f"{page_url}: not JSON ({exc})") from exc
    items = _walk(document, items_path, "items_path")
    if items is _MISSING or items is None:
        items = []
    if not isinstance(items, list):
        raise ApiError(f"items_path {items_path!r}: expected a list, got {type(items).__name__}")
    urls: dict[str, None] = {}
    deleted: dict[str, None] = {}
    for item in items:
        url = _item_url(item, url_field, page_url)
        if url is not None:
            (deleted if _flagged(item, deleted_field) else urls).setdefault(url)
    gone = [url for url in deleted if url not in urls]  # listed live too: it is there
    if next_mode == "link":
        return ApiPage(list(urls), next_link(link_header, page_url), None, gone)
    assert cursor_field is not None
    try:
        cursor = _cursor_value(_walk(document, cursor_field, "cursor_field"))
    except ApiError:
        cursor = None
    next_url = None
    if cursor is not None:
        next_url = add_or_replace_parameter(page_url, cursor_param, cursor)
        if next_url == page_url:  # the same cursor again: the walk would loop
            next_url = None
    return ApiPage(list(urls), next_url, cursor, gone)
