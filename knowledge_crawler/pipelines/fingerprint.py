"""4. fingerprint: SHA-256 of the cleaned, normalised text, and its MinHash signature."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.minhash import signature, to_bytes


class FingerprintPipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        item.content_hash = content_hash(item.content)
        if item.word_count:
            source = self.runtime.source(item.source_id)
            params = self.runtime.minhash_params(source.near_duplicate_threshold)
            item.minhash = to_bytes(signature(item.content, params))
            item.minhash_params = params.fingerprint()
        return item
