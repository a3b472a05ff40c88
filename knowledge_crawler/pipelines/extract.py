"""1. extract: HTML -> main content (markdown), title, headings, word count, language.

A page whose spider names its main content (``PageItem.content_selector``, a per-site
spider's ``content_selector``) is extracted from the elements the selector matches
(:func:`~knowledge_crawler.transform.extract.extract_selected`); where it matches
nothing, the page falls back to automatic extraction and is counted
(``kc/extract/selector_missed``, one WARNING per crawl naming the first such page).

The spider's extra fields (``PageItem.extra``) are checked here: a JSON object of
JSON values (no NaN or infinity). What is not is dropped, the page stored without
extras and counted (``kc/extract/extra_invalid``, one WARNING per crawl, DEBUG after).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from scrapy.exceptions import DropItem

from knowledge_crawler.items import PageItem
from knowledge_crawler.pipelines._base import KcPipeline
from knowledge_crawler.transform.extract import Extraction, extract, extract_selected

__all__ = ["ExtractPipeline", "checked_extra"]

logger = logging.getLogger(__name__)


def checked_extra(value: Any) -> dict[str, Any]:
    """``value`` as the JSON object it will be stored as; :class:`ValueError` saying why not.

    Keys must be strings; values anything JSON holds (tuples become lists), no NaN
    or infinity.

    >>> checked_extra({"price": 9.5, "tags": ("a", "b"), "stock": None})
    {'price': 9.5, 'tags': ['a', 'b'], 'stock': None}
    >>> checked_extra({"when": object()})
    Traceback (most recent call last):
    ...
    ValueError: not JSON: Object of type object is not JSON serializable
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a dict, got {type(value).__name__}")
    value = dict(value)
    bad_keys = [k for k in value if not isinstance(k, str)]
    if bad_keys:
        raise ValueError(f"keys must be strings, got {bad_keys[0]!r}")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    loaded: dict[str, Any] = json.loads(text)
    return loaded


class ExtractPipeline(KcPipeline):
    _selector_warned = False
    _extra_warned = False

    def process_page(self, item: PageItem) -> PageItem:
        if item.html is None:
            self.inc("extract/non_html")
            raise DropItem(f"non-HTML response ({item.content_type})", log_level="DEBUG")
        try:
            result = self._extract(item)
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
        item.extra = self._checked_extra(item)
        self.inc("extract/ok")
        return item

    def _extract(self, item: PageItem) -> Extraction:
        assert item.html is not None
        if item.content_selector is None:
            return extract(item.html, url=item.final_url)
        try:
            selected = extract_selected(item.html, item.content_selector)
        except Exception as exc:  # a bad selector set on the item: the page is kept
            self.inc("extract/selector_failed")
            logger.warning(
                "content_selector %r failed on %s: %r; extracted automatically",
                item.content_selector,
                item.final_url,
                exc,
            )
            return extract(item.html, url=item.final_url)
        if selected is not None:
            self.inc("extract/selected")
            return selected
        self.inc("extract/selector_missed")
        if not self._selector_warned:
            self._selector_warned = True
            logger.warning(
                "content_selector %r matched no text on %s: extracted automatically "
                "(every such page is counted in kc/extract/selector_missed)",
                item.content_selector,
                item.final_url,
            )
        else:
            logger.debug("content_selector matched no text on %s", item.final_url)
        return extract(item.html, url=item.final_url)

    def _checked_extra(self, item: PageItem) -> dict[str, Any]:
        try:
            return checked_extra(item.extra)
        except ValueError as exc:
            self.inc("extract/extra_invalid")
            level = logging.DEBUG if self._extra_warned else logging.WARNING
            self._extra_warned = True
            logger.log(
                level,
                "extra fields of %s are not stored: %s (kc/extract/extra_invalid counts them)",
                item.final_url,
                exc,
            )
            return {}
