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


# -- the stage workers read the same links from their own parse of the page -------------


def worker_links(response: HtmlResponse, region: str | None = None) -> list[str]:
    """The links ``prepare`` finds, given the page as the spider hands it over."""
    from knowledge_crawler.crawl.runtime import SKIPPED_EXTENSIONS
    from knowledge_crawler.transform.decode import decode_html
    from knowledge_crawler.transform.stages import PageInput, StageRules, prepare

    html = decode_html(response.body, response.headers.get("Content-Type", b"").decode())
    page = PageInput("s", response.url, html, links=True, link_region=region,
                     encoding=response.encoding)  # fmt: skip
    return list(prepare(page, StageRules(skipped_extensions=SKIPPED_EXTENSIONS)).links)


def test_the_workers_find_the_links_the_spider_finds() -> None:
    response = HtmlResponse("http://example.com/docs/index.html", body=HTML)
    assert worker_links(response) == page_links(response)
    assert (
        worker_links(response, "//map")
        == page_links(response, "//map")
        == ["http://example.com/map-area"]
    )


def test_the_workers_find_the_links_the_spider_finds_on_real_pages() -> None:
    import os
    from pathlib import Path

    import pytest

    dev = Path(
        os.environ.get("KC_EXTRACTION_DEV")
        or Path(__file__).resolve().parents[3] / "shared" / "extraction-dev"
    )
    files = sorted((dev / "html").glob("*.html"))
    if not files:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"no labelled pages in {dev}")
        pytest.skip(f"no labelled pages in {dev}")
    total = 0
    for path in files:
        response = HtmlResponse(
            f"https://site.example/{path.stem[:8]}/page", body=path.read_bytes()
        )
        expected = page_links(response)
        assert worker_links(response) == expected, path.name
        total += len(expected)
    assert total > 1000  # real pages, with their navigation
