"""4. fingerprint: SHA-256 of the cleaned, normalised text."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.fingerprint import content_hash


class FingerprintPipeline(KcPipeline):
    def process_item(self, item: PageItem) -> PageItem:
        item.content_hash = content_hash(item.content)
        return item
