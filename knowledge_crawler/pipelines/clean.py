"""2. clean: per-source boilerplate regexes, script/style leftovers, whitespace; thin flag."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.extract import stored_form


class CleanPipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        source = self.runtime.source(item.source_id)
        # headings and word count follow the cleaned text: a removed banner is gone from all
        content, headings, words = stored_form(item.content, item.headings, source.boilerplate)
        item.content, item.headings, item.word_count = content, list(headings), words
        item.thin = item.word_count < source.thin_words
        if item.thin:
            self.inc("clean/thin")
        return item
