"""5. dedupe: exact and near duplicates are stored and marked ``duplicate_of``, never dropped.

* exact: the same ``content_hash`` under another identity;
* near: an LSH candidate (MinHash of word shingles) confirmed by its estimated
  Jaccard >= the source's ``near_duplicate_threshold``.

The representative of a group is the page seen first (earliest
``first_seen_at``, then lowest id; within a run, processing order). The state
(hash map and LSH index) is restored from the store when the spider opens, so
it holds across runs; signatures made with other MinHash parameters are
refused. When a page that represents others changes, its duplicates are
re-evaluated against the current state and the new decisions are written in
the same transaction as the page, so no pointer to an unrelated page remains.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.store import DuplicateUpdate
from knowledge_crawler.transform.minhash import (
    MemoryNearDuplicateIndex,
    NearDuplicateIndex,
    ParamsMismatchError,
    from_bytes,
)

logger = logging.getLogger(__name__)

Key = tuple[str, str]
_SEP = "|"  # source ids never contain it (see knowledge_crawler.sources)


def _index_key(key: Key) -> str:
    return f"{key[0]}{_SEP}{key[1]}"


def _key(index_key: str) -> Key:
    source_id, _, url = index_key.partition(_SEP)
    return (source_id, url)


@dataclass(frozen=True, slots=True)
class Decision:
    duplicate_of: Key | None
    kind: str | None = None
    score: float | None = None


_REPRESENTATIVE = Decision(None)


@dataclass(slots=True)
class _Page:
    content_hash: str
    minhash: bytes | None
    decision: Decision


class DedupePipeline(KcPipeline):
    def open_spider(self) -> None:
        started = time.monotonic()
        store = self.runtime.store
        self._base = self.runtime.minhash_params()
        self._rank: dict[Key, int] = {}
        self._hash_of: dict[Key, str] = {}
        self._by_hash: dict[str, Key] = {}
        #: decisions taken in this run: dependents not yet visible in the store
        self._run: dict[Key, _Page] = {}
        #: (newer holder, older page) pairs: the older page took the holder's content hash
        self._displaced: list[tuple[Key, Key]] = []
        rows: list[tuple[str, bytes, str]] = []
        for row in store.dedupe_state():
            self._rank[row.key] = len(self._rank)
            self._hash_of[row.key] = row.content_hash
            if row.duplicate_of is None and row.word_count:
                self._by_hash.setdefault(row.content_hash, row.key)
                if row.minhash is not None and row.minhash_params is not None:
                    rows.append((_index_key(row.key), row.minhash, row.minhash_params))
        # One index per threshold in use: the sources' own, and the default that pages
        # of sources outside this crawl are judged by. All are built here, from the
        # same stored rows; none is created later.
        thresholds = {s.near_duplicate_threshold for s in self.runtime.sources.values()}
        thresholds.add(self._base.threshold)
        self._indexes: dict[float, NearDuplicateIndex] = {}
        for threshold in sorted(thresholds):
            params = self.runtime.minhash_params(threshold)
            try:
                self._indexes[threshold] = MemoryNearDuplicateIndex.restore(params, rows)
            except ParamsMismatchError as exc:
                raise ConfigError(f"stored MinHash signatures do not match: {exc}") from exc
        self.stats.set_value("kc/dedupe/restored_pages", len(self._rank))
        self.stats.set_value("kc/dedupe/restore_seconds", round(time.monotonic() - started, 3))

    # -- per item ---------------------------------------------------------------

    def process_item(self, item: PageItem) -> PageItem:
        key = (item.source_id, item.canonical_url)
        self._rank.setdefault(key, len(self._rank))
        previous = self._hash_of.get(key)
        moved = previous is not None and previous != item.content_hash
        if previous is not None and moved:
            self._forget(key, previous)
        self._hash_of[key] = item.content_hash
        threshold = self._threshold(item.source_id)
        decision = self._decide(key, item.content_hash, item.minhash, item.word_count, threshold)
        self._run[key] = _Page(item.content_hash, item.minhash, decision)
        item.duplicate_of, item.duplicate_kind, item.duplicate_score = (
            decision.duplicate_of,
            decision.kind,
            decision.score,
        )
        if decision.kind:
            self.inc(f"dedupe/{decision.kind}")
        updates = self._reevaluate_dependents(key) if moved else []
        item.dedupe_updates = updates + self._settle_displaced()
        return item

    def _decide(
        self, key: Key, digest: str, minhash: bytes | None, words: int, threshold: float
    ) -> Decision:
        """Decide for ``key`` and update the state (hash map, LSH index) to match."""
        ikey = _index_key(key)
        if not words:  # empty is no content: never a duplicate, never a representative
            self._drop_from_indexes(ikey)
            return _REPRESENTATIVE
        rank = self._rank[key]
        holder = self._by_hash.get(digest)
        if holder is not None and holder != key:
            if self._rank[holder] < rank:
                self._drop_from_indexes(ikey)
                return Decision(holder, "exact", 1.0)
            self._displaced.append((holder, key))  # an older page took this content
        self._by_hash[digest] = key
        if minhash is None:
            return _REPRESENTATIVE
        sig = from_bytes(minhash)
        hits = [
            (_key(k), j)
            for k, j in self._indexes[threshold].query(sig)
            if k != ikey and self._rank.get(_key(k), rank) < rank
        ]
        if hits:
            best, score = min(hits, key=lambda hit: (-hit[1], self._rank[hit[0]]))
            self._drop_from_indexes(ikey)
            if self._by_hash.get(digest) == key:
                del self._by_hash[digest]
            return Decision(best, "near", round(score, 4))
        for index in self._indexes.values():
            index.add(ikey, sig)
        return _REPRESENTATIVE

    def _drop_from_indexes(self, ikey: str) -> None:
        for index in self._indexes.values():
            index.remove(ikey)

    def _forget(self, key: Key, old_hash: str) -> None:
        """``key`` left its old content: it no longer represents it."""
        if self._by_hash.get(old_hash) == key:
            del self._by_hash[old_hash]
        self._drop_from_indexes(_index_key(key))

    def _threshold(self, source_id: str) -> float:
        source = self.runtime.sources.get(source_id)
        return source.near_duplicate_threshold if source else self._base.threshold

    def _reevaluate_dependents(self, key: Key) -> list[DuplicateUpdate]:
        """Decide again for every page that was a duplicate of ``key`` before it changed."""
        dependents: dict[Key, _Page] = {}
        for row in self.runtime.store.dependents(key):
            seen = self._run.get(row.key)
            if seen is None:
                stored = Decision(key, row.duplicate_kind, row.duplicate_score)
                dependents[row.key] = _Page(row.content_hash, row.minhash, stored)
            elif seen.decision.duplicate_of == key:
                dependents[row.key] = seen
        for other, page in self._run.items():
            if page.decision.duplicate_of == key:
                dependents[other] = page
        updates: list[DuplicateUpdate] = []
        for dep in sorted(dependents, key=lambda k: self._rank.get(k, len(self._rank))):
            page = dependents[dep]
            if self._hash_of.get(dep) != page.content_hash:
                continue  # its own content moved since: it was decided with that content
            self._rank.setdefault(dep, len(self._rank))
            words = 0 if page.minhash is None else 1
            decision = self._decide(
                dep, page.content_hash, page.minhash, words, self._threshold(dep[0])
            )
            self._run[dep] = _Page(page.content_hash, page.minhash, decision)
            if decision != page.decision:
                updates.append(
                    DuplicateUpdate(dep, decision.duplicate_of, decision.kind, decision.score)
                )
            updates += self._settle_displaced()
        self.inc("dedupe/reevaluated", len(dependents))
        self.inc("dedupe/reassigned", len(updates))
        return updates

    def _settle_displaced(self) -> list[DuplicateUpdate]:
        """Pages that lost a content hash to an older page become its exact duplicates."""
        updates: list[DuplicateUpdate] = []
        while self._displaced:
            holder, new_holder = self._displaced.pop()
            page = self._run.get(holder)
            self._drop_from_indexes(_index_key(holder))
            decision = Decision(new_holder, "exact", 1.0)
            self._run[holder] = _Page(
                self._hash_of.get(holder, ""), page.minhash if page else None, decision
            )
            updates.append(DuplicateUpdate(holder, new_holder, "exact", 1.0))
            updates += self._reevaluate_dependents(holder)
        return updates
