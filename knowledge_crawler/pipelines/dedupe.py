"""5. dedupe: the same content under another identity is marked ``duplicate_of``.

The representative of a content hash is the page that had it first (earliest
``first_seen_at``, then lowest id), restored from the store when the spider
opens, so the state persists across runs. Duplicates are stored and marked,
never dropped. Pages without words are not deduplicated (empty is no content).
"""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline

Key = tuple[str, str]


class DedupePipeline(KcPipeline):
    def open_spider(self) -> None:
        self._by_hash: dict[str, Key] = {}
        self._hash_of: dict[Key, str] = {}
        for digest, source_id, url in self.runtime.store.representatives():
            self._by_hash.setdefault(digest, (source_id, url))
            self._hash_of[(source_id, url)] = digest

    def process_item(self, item: PageItem) -> PageItem:
        key = (item.source_id, item.canonical_url)
        previous = self._hash_of.get(key)
        if previous is not None and previous != item.content_hash:
            # The page's content moved: it no longer represents its old hash.
            if self._by_hash.get(previous) == key:
                del self._by_hash[previous]
            del self._hash_of[key]
        if item.word_count == 0:
            return item
        representative = self._by_hash.setdefault(item.content_hash, key)
        self._hash_of[key] = item.content_hash
        if representative != key:
            item.duplicate_of = representative
            item.duplicate_kind = "exact"
            self.inc("dedupe/exact")
        return item
