"""3. canonicalize: the page's identity URL, from the URL that answered."""

from __future__ import annotations

from scrapy.exceptions import DropItem

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.canonical import canonical_url


class CanonicalizePipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        source = self.runtime.source(item.source_id)
        try:
            item.canonical_url = canonical_url(
                item.final_url,
                keep_params=source.keep_params,
                tracking_params=source.tracking_params,
            )
        except ValueError as exc:
            self.inc("canonicalize/failed")
            raise DropItem(str(exc)) from exc
        return item
