"""The spider's link extraction: what a page links to, resolved, filtered, in order."""

from __future__ import annotations

from scrapy.http import HtmlResponse

from knowledge_crawler.spiders.knowledge import page_links

HTML = b"""<html><head><base href="http://example.com/docs/"></head><body>
<a href="guide">Guide</a> <a href="/about#team">About</a> <a href="guide">again</a>
<a href="mailto:x@example.com">mail</a> <a href="javascript:void(0)">js</a>
<a href="files/report.PDF">pdf</a> <a href="img/photo.jpg">jpg</a> <a href="v1.2/notes">dots</a>
<a href="  https://other.org/x?utm_source=a  ">other</a> <map><area href="/map-area"></map>
<a>no href</a></body></html>"""


def test_links_are_absolute_deduplicated_and_filtered() -> None:
    response = HtmlResponse("http://example.com/docs/index.html", body=HTML)
    assert page_links(response) == [
        "http://example.com/docs/guide",
        "http://example.com/about#team",
        "http://example.com/docs/v1.2/notes",
        "https://other.org/x?utm_source=a",
        "http://example.com/map-area",
    ]
