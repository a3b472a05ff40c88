"""2. clean: per-source boilerplate regexes, script/style leftovers, whitespace; thin flag."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.stages import Cleaned, clean_page


class CleanPipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        source = self.runtime.source(item.source_id)
        # headings and word count follow the cleaned text: a removed banner is gone from all
        cleaned = _prepared(item) or clean_page(item.content, item.headings, source.boilerplate)
        item.content, item.headings, item.word_count = (
            cleaned.content,
            list(cleaned.headings),
            cleaned.word_count,
        )
        item.thin = item.word_count < source.thin_words
        if item.thin:
            self.inc("clean/thin")
        return item


def _prepared(item: PageItem) -> Cleaned | None:
    """The worker's stage 2, if the content it cleaned is the item's (no stage between
    extract and clean replaced it)."""
    prepared = item.prepared
    if prepared is None or prepared.cleaned is None:
        return None
    extraction = prepared.extracted.extraction
    if item.content is not extraction.markdown or tuple(item.headings) != extraction.headings:
        return None
    cleaned: Cleaned = prepared.cleaned
    return cleaned
