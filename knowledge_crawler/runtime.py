"""Crawler-scoped handles shared by the spider and the pipelines.

:func:`runtime_for` opens the store once per crawler, synchronously, the first
time any component asks for it, records the crawl run when the spider opens,
and on ``spider_closed`` (sent after every pipeline's ``close_spider``) writes
the run's counters and closes the store. Pipelines use the handle; none of them
owns its lifecycle.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any
from weakref import WeakKeyDictionary

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from knowledge_crawler.errors import ConfigError, StoreError
from knowledge_crawler.sources import Source
from knowledge_crawler.store import HEAD_COUNTERS, Store, open_store
from knowledge_crawler.transform.minhash import MinHashParams

__all__ = [
    "Runtime",
    "check_database",
    "check_signatures",
    "minhash_params_from",
    "run_counters",
    "runtime_for",
]

logger = logging.getLogger(__name__)

#: dataset_meta key recording the MinHash parameters of the stored signatures
META_SIGNATURES = "minhash_signature"

#: crawl_runs column <- Scrapy stats keys that add up to it.
_COUNTER_SOURCES: dict[str, tuple[str, ...]] = {
    "candidates_discovered": ("kc/discovery/candidates",),
    "conditional_requests_sent": ("kc/fetch/conditional",),
    "responses_304": ("downloader/response_status_count/304",),
    "responses_200_changed": ("kc/store/changed",),
    "responses_200_unchanged": ("kc/store/unchanged",),
    "responses_404": ("downloader/response_status_count/404",),
    "responses_429": ("downloader/response_status_count/429",),
    "retries_scheduled": ("retry/count",),
    "parse_failures": ("kc/extract/failed",),
    "upserts_completed": ("kc/store/upserted",),
    "duplicates_found": ("kc/dedupe/exact", "kc/dedupe/near"),
    "tombstones_created": ("kc/tombstones/created",),
    "pages_new": ("kc/store/inserted",),
    "quarantined": ("kc/store/quarantined",),
}
assert set(_COUNTER_SOURCES) == set(HEAD_COUNTERS)


def run_counters(stats: Mapping[str, Any]) -> dict[str, int]:
    """The F-METRICS counters, plus every other integer stat, from a Scrapy stats dict."""
    counters = {k: int(v) for k, v in stats.items() if isinstance(v, int)}
    for name, keys in _COUNTER_SOURCES.items():
        counters[name] = sum(int(stats.get(k, 0)) for k in keys)
    return counters


def minhash_params_from(settings: BaseSettings) -> MinHashParams:
    """The crawl's MinHash parameters from ``KC_MINHASH_*`` / ``KC_SHINGLE_SIZE``."""
    try:
        return MinHashParams(
            num_perm=settings.getint("KC_MINHASH_PERMUTATIONS", 128),
            seed=settings.getint("KC_MINHASH_SEED", 1),
            shingle_size=settings.getint("KC_SHINGLE_SIZE", 3),
        )
    except ValueError as exc:
        raise ConfigError(f"MinHash settings: {exc}") from None


def check_signatures(store: Store, params: MinHashParams) -> None:
    """Refuse a database whose stored MinHash signatures were made with other parameters."""
    wanted = params.signature_fingerprint()
    stored = store.get_meta(META_SIGNATURES)
    if stored is None:
        store.set_meta(META_SIGNATURES, wanted)
    elif stored != wanted:
        raise ConfigError(
            f"{store.url}: its MinHash signatures were made with {stored}, this crawl uses "
            f"{wanted} (KC_MINHASH_PERMUTATIONS, KC_MINHASH_SEED, KC_SHINGLE_SIZE); "
            "use the database's parameters or another database"
        )


def check_database(settings: BaseSettings) -> None:
    """Open the configured database once (migrating it) and check it suits these settings."""
    url = settings.get("KC_DATABASE_URL")
    if not url:
        raise ConfigError("KC_DATABASE_URL is empty")
    try:
        store = open_store(str(url))
    except StoreError as exc:
        raise ConfigError(str(exc)) from exc
    with store:
        check_signatures(store, minhash_params_from(settings))


class Runtime:
    """The store handle, the crawl run and the sources of one crawler."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        url = crawler.settings.get("KC_DATABASE_URL")
        if not url:
            raise ConfigError("KC_DATABASE_URL is empty")
        self.store: Store = open_store(str(url))
        self.sources: dict[str, Source] = {}
        self.mode = "crawl"
        self.run_id: int | None = None
        self._minhash = minhash_params_from(crawler.settings)
        self._params_by_threshold: dict[float, MinHashParams] = {}
        try:
            check_signatures(self.store, self._minhash)
        except ConfigError:
            self.store.close()
            raise
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    def source(self, source_id: str) -> Source:
        try:
            return self.sources[source_id]
        except KeyError:
            raise ConfigError(f"item of unknown source {source_id!r}") from None

    def minhash_params(self, threshold: float | None = None) -> MinHashParams:
        """The MinHash parameters of this crawl, with a source's near-duplicate threshold."""
        if threshold is None:
            return self._minhash
        params = self._params_by_threshold.get(threshold)
        if params is None:
            params = self._params_by_threshold[threshold] = dataclasses.replace(
                self._minhash, threshold=threshold
            )
        return params

    def _spider_opened(self, spider: Spider) -> None:
        self.run_id = self.store.start_run(
            spider=spider.name, sources=sorted(self.sources), mode=self.mode
        )
        assert self.crawler.stats is not None
        self.crawler.stats.set_value("kc/run_id", self.run_id)

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        try:
            if self.run_id is not None:
                assert self.crawler.stats is not None
                counters = run_counters(self.crawler.stats.get_stats())
                self.store.finish_run(self.run_id, reason=reason, counters=counters)
        finally:
            self.store.close()
            _RUNTIMES.pop(self.crawler, None)


_RUNTIMES: WeakKeyDictionary[Crawler, Runtime] = WeakKeyDictionary()


def runtime_for(crawler: Crawler) -> Runtime:
    """The crawler's :class:`Runtime`, created (and the store opened) on first use."""
    runtime = _RUNTIMES.get(crawler)
    if runtime is None:
        runtime = _RUNTIMES[crawler] = Runtime(crawler)
    return runtime
