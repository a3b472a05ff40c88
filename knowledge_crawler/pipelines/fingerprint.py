"""4. fingerprint: SHA-256 of the cleaned, normalised text, its MinHash signature, and its
passages (the content split by headings, each with a stable id)."""

from __future__ import annotations

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.stages import Fingerprint, fingerprint_page


class FingerprintPipeline(KcPipeline):
    def process_page(self, item: PageItem) -> PageItem:
        found = _prepared(item)
        if found is None:
            rules = self.runtime.stage_rules(item.source_id)
            found = fingerprint_page(
                item.content, item.word_count, item.source_id, item.canonical_url, rules
            )
        item.prepared = None  # every stage has taken its part
        item.content_hash = found.content_hash
        item.minhash, item.minhash_params = found.minhash, found.minhash_params
        item.passages = list(found.passages)
        return item


def _prepared(item: PageItem) -> Fingerprint | None:
    """The worker's stage 4, if it was taken of the item's own content and identity."""
    prepared = item.prepared
    if prepared is None or prepared.fingerprint is None or prepared.cleaned is None:
        return None
    if (
        item.content is not prepared.cleaned.content
        or item.word_count != prepared.cleaned.word_count
        or item.canonical_url != prepared.canonical_url
    ):
        return None
    found: Fingerprint = prepared.fingerprint
    return found
