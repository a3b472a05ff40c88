"""An example per-site spider: the knowledge spider with one site's own discovery rule.

Run it like the knowledge spider::

    scrapy crawl example_site -a seeds=seeds/NAME.toml

It keeps every behaviour of :class:`KnowledgeSpider` (scope, canonical
de-duplication, depth and ``max_pages``, the six pipelines) and adds one rule:
on listing pages it follows the ``rel="next"`` pagination link even when the
source sets ``follow_links = false``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy.http import HtmlResponse, Response

from knowledge_crawler import meta
from knowledge_crawler.spiders.knowledge import KnowledgeSpider, ParseOutput


class ExampleSiteSpider(KnowledgeSpider):
    name = "example_site"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[ParseOutput]:
        yield from super().parse(response, **kwargs)
        if not isinstance(response, HtmlResponse):  # JSON, PDF, ...: no links to read
            return
        source = self.sources[response.meta[meta.SOURCE]]
        for href in response.xpath('//a[@rel="next"]/@href').getall():
            request = self.request_for(source, response.urljoin(href), response.meta[meta.DEPTH])
            if request is not None:
                yield request
