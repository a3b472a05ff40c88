"""Sources (SPEC F-SOURCES): what a crawl is asked to crawl, and how.

- :mod:`.scope`: the :class:`Source` record, its scope (which URLs belong to it) and
  URL identity (a URL's canonical key in it);
- :mod:`.seeds`: reading and validating a seeds file (``seeds/*.toml``) or a ``seeds=``
  argument into :class:`Source` records, with one-line errors.

Pure: standard library and the pure canonicalisation; the shared vocabulary every
floor above reads.
"""

from __future__ import annotations

from knowledge_crawler.sources.scope import RENDER_MODES, ApiConfig, Source
from knowledge_crawler.sources.seeds import (
    KNOWN_KEYS,
    load_sources,
    parse_duration,
    resolve_seeds,
    sources_from_urls,
)
from knowledge_crawler.transform.canonical import DEFAULT_TRACKING_PARAMS

__all__ = [
    "DEFAULT_TRACKING_PARAMS",
    "KNOWN_KEYS",
    "RENDER_MODES",
    "ApiConfig",
    "Source",
    "load_sources",
    "parse_duration",
    "resolve_seeds",
    "sources_from_urls",
]
