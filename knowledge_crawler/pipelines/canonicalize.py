"""3. canonicalize: the page's identity URL, from the URL that answered."""

from __future__ import annotations

from scrapy.exceptions import DropItem

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline


class CanonicalizePipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        prepared = item.prepared
        try:
            if prepared is not None and prepared.final_url == item.final_url:
                # the worker's stage 3 of this very URL
                if prepared.canonical_error is not None:
                    raise ValueError(prepared.canonical_error)
                if prepared.canonical_url is not None:
                    item.canonical_url = prepared.canonical_url
                    return item
            item.canonical_url = self.runtime.source(item.source_id).key(item.final_url)
        except ValueError as exc:
            self.inc("canonicalize/failed")
            raise DropItem(str(exc)) from exc
        return item
