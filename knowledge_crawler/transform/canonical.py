"""Canonical URLs: the identity of a page (SPEC F-PIPELINE step 3).

Pure module. Rules, applied on top of :func:`w3lib.url.canonicalize_url`
(percent-encoding normalised, query sorted, fragment dropped):

1. ``http`` becomes ``https``;
2. the host is lower-cased and loses a leading ``www.`` and a trailing dot;
3. default ports (80, 443) are dropped;
4. a trailing slash is stripped except on the root path;
5. tracking parameters are dropped; when the source names ``keep_params``,
   only those are kept (a whitelist), otherwise every non-tracking
   parameter is kept, so that ``?id=123`` pages are never merged;
6. the remaining parameters are sorted by name, then value.

Parameter names are *matched* case-insensitively, against the tracking list
and the ``keep_params`` whitelist alike, and *kept* as written. A tracking name
identifies no page in any case (``SessionID`` is ``sessionid``). For the
whitelist, a miss would silently merge distinct pages (``?ID=3`` dropped under
``keep_params = ["id"]`` makes every item one page, on servers such as IIS that
read ``ID`` and ``id`` alike), while a hit at worst keeps ``?ID=3`` and
``?id=3`` as two keys whose pages the dedupe stage records as duplicates. Names
are not lower-cased in the key, since RFC 3986 leaves the query case-sensitive.

>>> canonical_url("http://WWW.Example.com./article/lamps/?utm_source=x#top")
'https://example.com/article/lamps'
>>> canonical_url("https://example.com/search?q=lamps&page=2&ref=nav", keep_params={"q"})
'https://example.com/search?q=lamps'
>>> canonical_url("https://example.com/a?SessionID=9&Page=2", tracking_params={"sessionid"})
'https://example.com/a?Page=2'
"""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url, safe_url_string

__all__ = ["DEFAULT_TRACKING_PARAMS", "canonical_url", "fetch_url", "is_tracking_param"]

#: Query parameters that identify a campaign or a click, never a page.
DEFAULT_TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id",
        "utm_name", "utm_reader", "utm_social", "utm_brand",
        "ref", "ref_src", "referrer",
        "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid",
        "twclid", "ttclid", "li_fat_id", "igshid", "si",
        "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "hsctatracking",
        "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "wickedid", "rb_clickid",
        "s_cid", "s_kwcid", "cmpid", "spm",
    }
)  # fmt: skip

_TRACKING_PREFIXES = ("utm_",)


@lru_cache(maxsize=256)
def _folded_set(names: frozenset[str]) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


def _folded(names: Collection[str]) -> frozenset[str]:
    """``names`` lower-cased; memoised for the frozensets that sources hold."""
    if isinstance(names, frozenset):
        return _folded_set(names)
    return frozenset(n.lower() for n in names)


def _is_tracking(name: str, folded: frozenset[str]) -> bool:
    lowered = name.lower()
    return lowered in folded or lowered.startswith(_TRACKING_PREFIXES)


def is_tracking_param(
    name: str, tracking_params: Collection[str] = DEFAULT_TRACKING_PARAMS
) -> bool:
    """True when a query parameter name is a tracking parameter; case-insensitive on both sides.

    >>> is_tracking_param("SESSIONID", {"SessionID"}), is_tracking_param("UTM_X")
    (True, True)
    >>> is_tracking_param("id")
    False
    """
    return _is_tracking(name, _folded(tracking_params))


def _filtered_query(
    query: str, keep_params: Collection[str], tracking_params: Collection[str]
) -> list[tuple[str, str]]:
    pairs = parse_qsl(query, keep_blank_values=True)
    if keep_params:
        keep = _folded(keep_params)
        return [(k, v) for k, v in pairs if k.lower() in keep]
    tracking = _folded(tracking_params)
    return [(k, v) for k, v in pairs if not _is_tracking(k, tracking)]


def canonical_url(
    url: str,
    *,
    keep_params: Collection[str] = (),
    tracking_params: Collection[str] = DEFAULT_TRACKING_PARAMS,
) -> str:
    """The identity key of ``url``; idempotent: ``canonical_url(canonical_url(u))`` is itself.

    Raises ``ValueError`` for a URL without an http(s) scheme or without a host.
    """
    parts = urlsplit(canonicalize_url(url.strip(), keep_blank_values=True))
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise ValueError(f"URL has no host: {url!r}")
    if host.startswith("www."):
        host = host[4:]
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    netloc = host if port in (None, 80, 443) else f"{host}:{port}"
    path = parts.path.rstrip("/") or "/"
    query = urlencode(sorted(_filtered_query(parts.query, keep_params, tracking_params)))
    return urlunsplit(("https", netloc, path, query, ""))


def fetch_url(url: str, *, tracking_params: Collection[str] = DEFAULT_TRACKING_PARAMS) -> str:
    """The URL to request for a discovered link: tracking parameters and fragment removed.

    Scheme, host and path stay as the site wrote them (a site may not serve
    https), unlike :func:`canonical_url`.

    >>> fetch_url("http://example.com/a?utm_source=x&id=3#comments")
    'http://example.com/a?id=3'
    """
    parts = urlsplit(safe_url_string(url.strip()))
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    tracking = _folded(tracking_params)
    kept = [(k, v) for k, v in pairs if not _is_tracking(k, tracking)]
    query = parts.query if len(kept) == len(pairs) else urlencode(kept)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", query, ""))
