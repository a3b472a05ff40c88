"""Which page of a duplicate cluster represents it: by signals, not by arrival order.

Pure: no Scrapy, no store. :class:`~knowledge_crawler.sync.dedupe.DedupePolicy` ranks
pages by :func:`preference` (smaller is preferred) and asks :func:`url_signals` once per
URL. The order (SPEC F-PIPELINE 5, issue 23):

1. a page whose ``rel=canonical`` names another known page is not preferred (it says
   itself that it is a copy);
2. more distinct pages linking to it (inlinks, from stored outlinks);
3. a URL without print, AMP, mobile or page-variant markers (``/print/``, ``/amp/``,
   ``?amp``, ``m.`` host, ``?page=N``, ``/page/N`` ...);
4. a shorter path;
5. then the page seen first.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import parse_qsl, urlsplit

__all__ = ["Preference", "preference", "url_signals"]

#: (names another page canonical, -inlinks, variant marker, path length, first-seen rank)
Preference = tuple[int, int, int, int, int]

#: path segments that mark a variant of a page (a copy for printing, AMP, mobile)
_VARIANT_SEGMENTS = frozenset({"print", "printable", "printer-friendly", "amp", "mobile"})
#: query parameters whose presence marks a variant (any value, ``?amp`` included)
_VARIANT_PARAMS = frozenset({"print", "printable", "amp", "mobile"})
#: query parameters whose value may name a variant (``?view=print``, ``?output=amp``)
_VARIANT_VALUE_PARAMS = frozenset({"view", "format", "output", "outputtype", "version"})
_VARIANT_VALUES = frozenset({"print", "printable", "amp", "mobile"})
#: query parameters that select one page of a paginated text (a variant unless 1)
_PAGE_PARAMS = frozenset({"page", "pg", "pagenum", "page_num", "start", "offset"})
#: hosts of mobile and AMP editions
_VARIANT_HOST = re.compile(r"^(?:m|mobile|amp|print)\.")
#: ``/page/N`` or ``/N`` (a number) as the last segment: one page of a paginated text
_PAGE_SEGMENT = re.compile(r"/(?:page|p|pages)/\d+/?$")
#: file names of printable or AMP editions: ``article.amp.html``, ``index-print.html``
_VARIANT_FILE = re.compile(r"[./_-](?:amp|print|printable)(?:\.[a-z0-9]+)?$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def url_signals(url: str) -> tuple[int, int]:
    """``(variant, path length)`` of ``url``: 1 when it carries a print, AMP, mobile or
    page-variant marker (else 0), and the length of its path (``/`` is 1)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return (0, len(url))
    host = (parts.hostname or "").lower()
    path = parts.path or "/"
    return (int(_is_variant(host, path, parts.query)), len(path))


def _is_variant(host: str, path: str, query: str) -> bool:
    if _VARIANT_HOST.match(host):
        return True
    lowered = path.lower()
    segments = [s for s in lowered.split("/") if s]
    if any(s in _VARIANT_SEGMENTS for s in segments):
        return True
    if _PAGE_SEGMENT.search(lowered):
        return True
    if segments and _VARIANT_FILE.search(segments[-1]):
        return True
    for name, value in parse_qsl(query, keep_blank_values=True):
        name = name.lower()
        if name in _VARIANT_PARAMS:
            return True
        if name in _VARIANT_VALUE_PARAMS and value.lower() in _VARIANT_VALUES:
            return True
        if name in _PAGE_PARAMS and value not in ("", "0", "1"):
            return True
    return False


def preference(
    *, names_other: bool, inlinks: int, variant: int, path_length: int, rank: int
) -> Preference:
    """The sort key of a page among the copies of a cluster: the smallest represents it."""
    return (int(names_other), -inlinks, variant, path_length, rank)
