"""5. dedupe: exact and near duplicates are stored and marked ``duplicate_of``, never dropped.

Glue only: the decisions (exact, near, which page represents a group, what
changes when a representative moves) are made by
:class:`knowledge_crawler.sync.dedupe.DedupePolicy`. This pipeline restores the
policy from the store once, when the spider opens (every active page, with the
MinHash signatures of representatives and of duplicates; read and indexed on a
worker thread, so the reactor thread never waits on the database), then asks it about
each page in memory: ``process_item`` never calls the store. Decisions about
other, already stored pages travel with the item as ``store.DuplicateUpdate``
values, written in the same transaction as the page.

When several processes crawl together (``KC_REDIS_URL``), every decision goes
through the crawl's dedupe log in Redis (:class:`knowledge_crawler.dedupe_log.SharedDedupe`)
so that all of them judge against the same pages: the Redis round trip and the
policy run on a thread of their own, one page after another, never on the
reactor thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from scrapy.exceptions import DropItem

from knowledge_crawler.dedupe_log import SharedDedupe
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.store import DuplicateUpdate
from knowledge_crawler.sync.dedupe import Decision, DedupePolicy, Reassignment, StoredPage
from knowledge_crawler.transform.minhash import ParamsMismatchError

logger = logging.getLogger(__name__)


def duplicate_update(change: Reassignment) -> DuplicateUpdate:
    decision = change.decision
    return DuplicateUpdate(change.key, decision.duplicate_of, decision.kind, decision.score)


class DedupePipeline(KcPipeline):
    #: the crawl's shared dedupe log, when several processes crawl together
    shared: SharedDedupe | None = None
    _thread: ThreadPoolExecutor | None = None

    async def open_spider(self) -> None:
        spider = self.crawler.spider
        if spider is not None and getattr(spider, "shared_frontier", False):
            import redis

            from knowledge_crawler.frontier import CrawlKeys

            config = self.runtime.config
            self._server = redis.Redis.from_url(
                config.redis_url, socket_connect_timeout=10, socket_timeout=30
            )
            stream = CrawlKeys.of(config.redis_key_prefix, spider.name).dedupe
            member = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
            self._stream = stream
            self._member = member
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kc-dedupe")
        await asyncio.to_thread(self._restore)

    async def close_spider(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._server.close()

    def _restore(self) -> None:
        started = time.monotonic()
        # One index per threshold in use: the sources' own, and the default that pages
        # of sources outside this crawl are judged by. All are built here.
        thresholds = {sid: s.near_duplicate_threshold for sid, s in self.runtime.sources.items()}
        self.policy = DedupePolicy(self.runtime.minhash_params(), thresholds)
        # A store.DedupeRow is a StoredPage (checked structurally by mypy here): the
        # rows reach the policy as they are, without a copy of every stored page.
        rows: Iterable[StoredPage] = self.runtime.store.dedupe_state()
        try:
            if self._thread is None:
                restored = self.policy.restore(rows)
            else:
                self.shared = SharedDedupe(self.policy, self._server, self._stream, self._member)
                restored = self.shared.restore(rows)
                self.stats.set_value("kc/dedupe/shared_replayed", self.shared.replayed)
        except ParamsMismatchError as exc:
            raise ConfigError(f"stored MinHash signatures do not match: {exc}") from exc
        self.stats.set_value("kc/dedupe/restored_pages", restored)
        self.stats.set_value("kc/dedupe/restore_seconds", round(time.monotonic() - started, 3))

    def process_item(self, item: Any) -> Any:
        if self.shared is not None and isinstance(item, PageItem):
            return self._process_shared(item)  # a coroutine, awaited by Scrapy
        return super().process_item(item)

    def process_page(self, item: PageItem) -> PageItem:
        examined = self.policy.examined
        decision, changes = self.policy.decide(
            (item.source_id, item.canonical_url), item.content_hash, item.minhash, item.word_count
        )
        self.inc("dedupe/reevaluated", self.policy.examined - examined)
        return self._judged(item, decision, changes)

    async def _process_shared(self, item: PageItem) -> PageItem:
        shared = self.shared
        assert shared is not None
        examined = shared.examined
        try:
            decision, changes = await asyncio.get_running_loop().run_in_executor(
                self._thread,
                shared.decide,
                (item.source_id, item.canonical_url),
                item.content_hash,
                item.minhash,
                item.word_count,
            )
        except Exception as exc:  # Redis gone past its client's retries: not judged, not stored
            self.inc("dedupe/shared_failed")
            logger.error(
                "shared dedupe log %s: %s: %s not stored", self._stream, exc, item.final_url
            )
            raise DropItem(f"shared dedupe log unavailable: {exc}") from exc
        self.stats.set_value("kc/dedupe/shared_replayed", shared.replayed)
        self.inc("dedupe/reevaluated", shared.examined - examined)
        return self._judged(item, decision, changes)

    def _judged(self, item: PageItem, decision: Decision, changes: list[Reassignment]) -> PageItem:
        item.duplicate_of, item.duplicate_kind, item.duplicate_score = (
            decision.duplicate_of,
            decision.kind,
            decision.score,
        )
        if decision.kind:
            self.inc(f"dedupe/{decision.kind}")
        self.inc("dedupe/reassigned", len(changes))
        item.dedupe_updates = [duplicate_update(change) for change in changes]
        return item
