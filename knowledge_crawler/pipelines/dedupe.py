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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.store import DuplicateUpdate
from knowledge_crawler.sync.dedupe import DedupePolicy, Reassignment, StoredPage
from knowledge_crawler.transform.minhash import ParamsMismatchError


def duplicate_update(change: Reassignment) -> DuplicateUpdate:
    decision = change.decision
    return DuplicateUpdate(change.key, decision.duplicate_of, decision.kind, decision.score)


class DedupePipeline(KcPipeline):
    async def open_spider(self) -> None:
        await asyncio.to_thread(self._restore)

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
            restored = self.policy.restore(rows)
        except ParamsMismatchError as exc:
            raise ConfigError(f"stored MinHash signatures do not match: {exc}") from exc
        self.stats.set_value("kc/dedupe/restored_pages", restored)
        self.stats.set_value("kc/dedupe/restore_seconds", round(time.monotonic() - started, 3))

    def process_page(self, item: PageItem) -> PageItem:
        examined = self.policy.examined
        decision, changes = self.policy.decide(
            (item.source_id, item.canonical_url), item.content_hash, item.minhash, item.word_count
        )
        item.duplicate_of, item.duplicate_kind, item.duplicate_score = (
            decision.duplicate_of,
            decision.kind,
            decision.score,
        )
        if decision.kind:
            self.inc(f"dedupe/{decision.kind}")
        self.inc("dedupe/reevaluated", self.policy.examined - examined)
        self.inc("dedupe/reassigned", len(changes))
        item.dedupe_updates = [duplicate_update(change) for change in changes]
        return item
