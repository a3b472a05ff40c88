"""3. canonicalize: the page's identity URL, from the URL that answered."""

from __future__ import annotations

from scrapy.exceptions import DropItem

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline


class CanonicalizePipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        source = self.runtime.source(item.source_id)
        try:
            item.canonical_url = source.key(item.final_url)
        except ValueError as exc:
            self.inc("canonicalize/failed")
            raise DropItem(str(exc)) from exc
        return item
