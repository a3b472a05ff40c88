"""knowledge_crawler.sync.representative: the URL signals of a cluster's representative."""

from __future__ import annotations

import pytest

from knowledge_crawler.sync.representative import preference, url_signals


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/print/some-article",
        "https://example.com/amp/some-article",
        "https://example.com/some-article/amp",
        "https://example.com/some-article?amp",
        "https://example.com/some-article?amp=1",
        "https://example.com/some-article?output=amp",
        "https://example.com/some-article?view=print",
        "https://example.com/some-article?print=1",
        "https://m.example.com/some-article",
        "https://amp.example.com/some-article",
        "https://example.com/some-article?page=2",
        "https://example.com/some-article/page/3",
        "https://example.com/some-article.amp.html",
    ],
)
def test_variant_markers(url: str) -> None:
    assert url_signals(url)[0] == 1


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "https://example.com/articles/some-article",
        "https://example.com/articles?page=1",
        "https://example.com/blog?p=123",
        "https://example.com/printers/laser",
        "https://example.com/example-amplifier",
        "https://mail.example.com/some-article",
        "https://example.com/some-article?view=full",
    ],
)
def test_clean_urls(url: str) -> None:
    assert url_signals(url)[0] == 0


def test_path_length() -> None:
    assert url_signals("https://example.com")[1] == 1
    assert url_signals("https://example.com/abc?x=1")[1] == 4


def test_order_of_the_signals() -> None:
    def pref(**kw: int) -> tuple[int, ...]:
        base = {"names_other": 0, "inlinks": 0, "variant": 0, "path_length": 5, "rank": 0}
        return preference(**{**base, **kw})  # type: ignore[arg-type]

    # rel=canonical to another page outweighs inlinks, inlinks a variant marker, a
    # variant marker the path length, the path length first-seen order
    assert pref(names_other=0, inlinks=0) < pref(names_other=1, inlinks=9)
    assert pref(inlinks=3, variant=1) < pref(inlinks=2, variant=0)
    assert pref(variant=0, path_length=50) < pref(variant=1, path_length=2)
    assert pref(path_length=4, rank=9) < pref(path_length=5, rank=0)
    assert pref(rank=1) < pref(rank=2)
