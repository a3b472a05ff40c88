"""4. fingerprint: SHA-256 of the cleaned, normalised text, its MinHash signature, and its
passages (the content split by headings, each with a stable id)."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.minhash import signature, to_bytes
from knowledge_crawler.transform.passages import split_passages


class FingerprintPipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        item.content_hash = content_hash(item.content)
        if item.word_count:
            source = self.runtime.source(item.source_id)
            params = self.runtime.minhash_params(source.near_duplicate_threshold)
            item.minhash = to_bytes(signature(item.content, params))
            item.minhash_params = params.fingerprint()
        item.passages = split_passages(
            item.content,
            source_id=item.source_id,
            canonical_url=item.canonical_url,
            max_words=self.runtime.config.passage_words,
        )
        return item
