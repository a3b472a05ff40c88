"""2. clean: per-source boilerplate regexes, script/style leftovers, whitespace; thin flag."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.clean import clean_text, word_count


class CleanPipeline(KcPipeline):
    def process_item(self, item: PageItem) -> PageItem:
        source = self.runtime.source(item.source_id)
        item.content = clean_text(item.content, source.boilerplate)
        item.word_count = word_count(item.content)
        item.thin = item.word_count < source.thin_words
        if item.thin:
            self.inc("clean/thin")
        return item
