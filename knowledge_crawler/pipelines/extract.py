"""1. extract: HTML -> main content (markdown), title, headings, word count, language."""

from __future__ import annotations

import logging

from scrapy.exceptions import DropItem

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.extract import extract

logger = logging.getLogger(__name__)


class ExtractPipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        if item.html is None:
            self.inc("extract/non_html")
            raise DropItem(f"non-HTML response ({item.content_type})", log_level="DEBUG")
        try:
            result = extract(item.html, url=item.final_url)
        except Exception as exc:  # a parse failure never replaces the prior good record
            self.inc("extract/failed")
            logger.warning("extraction failed for %s: %r", item.final_url, exc)
            raise DropItem(f"extraction failed: {exc!r}") from exc
        item.title = result.title
        item.content = result.markdown
        item.headings = list(result.headings)
        item.word_count = result.word_count
        item.language = result.language
        item.html = None  # free the body early: nothing after this step needs it
        self.inc("extract/ok")
        return item
