"""An example per-site spider for the loopback test site ("Localhost Journal").

Run it against the test site (``python -m knowledge_crawler.testsite --pages 50``
prints its URL)::

    scrapy crawl example_journal -a seeds=http://localhost:PORT/

It keeps every behaviour of :class:`KnowledgeSpider` and uses the hooks a site
author has (``docs/spiders.md``):

* links are followed only from the page's ``<main>`` (not from the header menu,
  the sidebar or the footer), and never to an article's print or syndicated copy
  or to a tag page;
* an article's main content is its ``<article class="post">``, rendered as
  markdown with its headings, lists, tables and code; on pages without one (the
  home page, listings) the selector matches nothing and the page is extracted
  automatically (``kc/extract/selector_missed``);
* each article stores its author, publication date and, when it shows a product
  box, its price and stock in ``pages.extra``.
"""

from __future__ import annotations

from typing import Any

from scrapy.http import TextResponse

from knowledge_crawler.spiders.knowledge import KnowledgeSpider


class ExampleJournalSpider(KnowledgeSpider):
    name = "example_journal"

    link_selector = "main"
    deny = (r"/print/", r"/syndicated/", r"/tag/")
    content_selector = "article.post"

    def extra_fields(self, response: TextResponse) -> dict[str, Any]:
        article = response.css("article.post")
        if not article:
            return {}
        extra: dict[str, Any] = {
            "author": article.css(".byline .author::text").get(),
            "published": article.css(".byline time::attr(datetime)").get(),
        }
        price = article.css(".product .price::text").re_first(r"\$([\d,]+\.\d\d)")
        if price is not None:
            extra["price"] = float(price.replace(",", ""))
            extra["in_stock"] = article.css(".product .stock::text").get() == "In stock"
        return extra
