"""A per-site spider's link rules (follow, deny, link_selector): checked once, applied to links."""

from __future__ import annotations

import doctest

import pytest
from scrapy.http import HtmlResponse, TextResponse

from knowledge_crawler.discovery import links as links_module
from knowledge_crawler.discovery.links import LinkRules
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.pipelines.extract import checked_extra
from knowledge_crawler.spiders.example_journal import ExampleJournalSpider
from knowledge_crawler.spiders.knowledge import KnowledgeSpider, page_links

HTML = b"""<html><body>
<header><nav><a href="/">Home</a> <a href="/cart">Cart</a></nav></header>
<main>
  <a href="/p/1">one</a> <a href="/p/2?sort=price">two</a> <map><area href="/p/3"></map>
  <nav class="pagination"><a href="/list?page=2" rel="next">Next</a></nav>
</main>
<aside><a href="/p/9">related</a></aside>
<footer><a href="/about">About</a></footer>
</body></html>"""

BASE = "http://shop.example/"


def response() -> HtmlResponse:
    return HtmlResponse(f"{BASE}list", body=HTML)


def urls(*paths: str) -> list[str]:
    return [BASE + p.lstrip("/") for p in paths]


def test_no_rules_follow_everything() -> None:
    rules = LinkRules.of()
    assert not rules.filters and rules.region is None
    assert rules.allows("https://anything.example/x")


@pytest.mark.parametrize(
    ("follow", "deny", "allowed"),
    [
        ((), (), ["/", "/cart", "/p/1", "/p/2?sort=price", "/p/3", "/list?page=2", "/p/9"]),
        ((r"/p/",), (), ["/p/1", "/p/2?sort=price", "/p/3", "/p/9"]),
        ((r"/p/", r"page="), (r"sort=", r"/p/9"), ["/p/1", "/p/3", "/list?page=2"]),
        (
            (),
            (r"/cart", r"^http://shop\.example/$"),
            ["/p/1", "/p/2?sort=price", "/p/3", "/list?page=2", "/p/9"],
        ),
        ([r"/p/\d$"], None, ["/p/1", "/p/3", "/p/9"]),  # lists and None are fine too
    ],
)
def test_follow_and_deny(
    follow: tuple[str, ...], deny: tuple[str, ...], allowed: list[str]
) -> None:
    rules = LinkRules.of(follow, deny)
    candidates = urls("/", "/cart", "/p/1", "/p/2?sort=price", "/p/3", "/list?page=2", "/p/9")
    assert [u for u in candidates if rules.allows(u)] == urls(*allowed)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"follow": "/p/"}, "follow: expected a tuple of regexes, got a string: '/p/'"),
        ({"deny": ("ok", "[")}, "deny\\[1\\]: bad regex '\\[': unterminated character set"),
        ({"deny": (3,)}, "deny\\[0\\]: expected a regex string, got 3"),
        ({"follow": 5}, "follow: expected a tuple of regexes, got int"),
        ({"link_selector": "nav["}, "link_selector: bad CSS selector 'nav\\['"),
        ({"link_selector": "//nav["}, "link_selector: bad XPath '//nav\\['"),
        ({"link_selector": ""}, "link_selector: expected a CSS or XPath selector"),
    ],
)
def test_bad_rules_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LinkRules.of(**kwargs)  # type: ignore[arg-type]


def test_page_links_from_a_region_only() -> None:
    assert page_links(response()) == urls(
        "/", "/cart", "/p/1", "/p/2?sort=price", "/p/3", "/list?page=2", "/p/9", "/about"
    )
    main = LinkRules.of(link_selector="main").region
    assert page_links(response(), main) == urls("/p/1", "/p/2?sort=price", "/p/3", "/list?page=2")
    both = LinkRules.of(link_selector="nav.pagination, aside").region
    assert page_links(response(), both) == urls("/list?page=2", "/p/9")
    by_xpath = LinkRules.of(link_selector="//a[@rel='next'] | //footer").region
    assert page_links(response(), by_xpath) == urls("/list?page=2", "/about")  # <a> itself
    assert page_links(response(), LinkRules.of(link_selector="//main/@class").region) == []
    assert page_links(response(), LinkRules.of(link_selector="article").region) == []


def test_spider_class_check_names_the_spider_and_the_attribute() -> None:
    class Shop(KnowledgeSpider):
        name = "shop"
        follow = (r"/p/",)
        content_selector = "main["

    with pytest.raises(ConfigError) as err:
        Shop.check_spider_class()
    assert str(err.value).startswith("spider 'shop': content_selector: bad CSS selector 'main['")
    assert "\n" not in str(err.value)

    class Shop2(KnowledgeSpider):
        name = "shop2"
        deny = ("(",)

    with pytest.raises(ConfigError, match=r"^spider 'shop2': deny\[0\]: bad regex '\('"):
        Shop2(seeds="http://shop.example/")

    rules = ExampleJournalSpider.check_spider_class()
    assert rules.region == "descendant-or-self::main" and rules.filters
    assert not rules.allows("http://localhost:1/print/x") and rules.allows("http://l/articles/x")
    assert KnowledgeSpider.check_spider_class() == LinkRules()


def test_the_default_extra_fields_are_none() -> None:
    spider = KnowledgeSpider(seeds="http://shop.example/")
    assert spider.extra_fields(TextResponse(BASE, body=b"<p>x</p>", encoding="utf-8")) == {}


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ({}, {}),
        (
            {"price": 9.5, "in_stock": True, "tags": ("a", "b")},
            {"price": 9.5, "in_stock": True, "tags": ["a", "b"]},
        ),
        ({"nested": {"a": [1, None, "é"]}}, {"nested": {"a": [1, None, "é"]}}),
    ],
)
def test_checked_extra_keeps_json(value: object, stored: dict[str, object]) -> None:
    assert checked_extra(value) == stored


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "expected a dict, got NoneType"),
        (["a"], "expected a dict, got list"),
        ({1: "a"}, "keys must be strings, got 1"),
        ({"x": {1, 2}}, "not JSON: Object of type set is not JSON serializable"),
        ({"x": float("nan")}, "not JSON: Out of range float values are not JSON compliant"),
    ],
)
def test_checked_extra_refuses_what_json_does_not_hold(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}"):
        checked_extra(value)


def test_doctests() -> None:
    assert doctest.testmod(links_module).failed == 0
