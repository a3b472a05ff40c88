"""A per-site spider's content selector: the elements it names, rendered by our serializer."""

from __future__ import annotations

import doctest

import pytest
from lxml.html import fragment_fromstring

from knowledge_crawler.testsite._guides import GUIDES, guide_page
from knowledge_crawler.transform import extract as extract_module
from knowledge_crawler.transform import render as render_module
from knowledge_crawler.transform import selector as selector_module
from knowledge_crawler.transform.extract import extract, extract_selected
from knowledge_crawler.transform.render import html_blocks, render_markdown
from knowledge_crawler.transform.selector import select_elements, selector_xpath

PAGE = """<!DOCTYPE html><html lang="fr"><head><title>Widgets | Shop</title>
<meta property="og:title" content="Widgets"></head><body>
<header><nav><a href="/">Home</a> <a href="/cart">Cart</a></nav></header>
<main id="content">
  <h1>Widgets</h1>
  <div class="intro">Our <b>best</b> widgets, <a href="/w">all of them</a>.</div>
  <section>
    <h2>Sizes</h2>
    <ul><li>Small<ul><li>red</li><li>blue</li></ul></li><li>Large</li></ul>
    <ol><li>first</li><li>second</li></ol>
  </section>
  <table><caption>Prices</caption>
    <thead><tr><th>Size</th><th>Price</th></tr></thead>
    <tbody><tr><td>Small</td><td>$5 | cheap</td></tr><tr><td>Large</td><td>$9</td></tr></tbody>
  </table>
  <pre><code class="lang-sh">make  widget
  --size=small</code></pre>
  <blockquote><p>Best widget ever.</p><p>Really.</p></blockquote>
  <p>Line one<br>line two</p>
  <script>var tracking = 1;</script><img src="w.png" alt="a widget"><hr>
  <div class="price" data-cents="500">Price: <span>$5</span></div>
</main>
<aside class="related"><h2>Related</h2><p>Gadgets you may like.</p></aside>
<footer><p>© 2026 Shop</p></footer>
</body></html>"""

MAIN_MARKDOWN = """Our best widgets, all of them.

## Sizes

- Small
  - red
  - blue
- Large
1. first
2. second

Prices

| Size | Price |
| --- | --- |
| Small | $5 \\| cheap |
| Large | $9 |

```
make  widget
  --size=small
```

> Best widget ever.

> Really.

Line one
line two

Price: $5"""


def test_css_selector_keeps_headings_lists_tables_and_code() -> None:
    result = extract_selected(PAGE, "main#content")
    assert result is not None
    assert result.markdown == MAIN_MARKDOWN
    assert result.title == "Widgets"  # from the page; the leading <h1> repeating it is dropped
    assert result.headings == ("Sizes",)
    assert result.language == "fr"  # declared by the page
    assert result.word_count == 35  # \w+ tokens of the text: "$5" is one
    assert "Related" not in result.text and "Home" not in result.text
    assert "tracking" not in result.text  # scripts are never content


def test_xpath_selector_gives_the_same_content() -> None:
    by_css = extract_selected(PAGE, "main#content")
    by_xpath = extract_selected(PAGE, '//main[@id="content"]')
    assert by_css is not None and by_css == by_xpath
    grouped = extract_selected(PAGE, "(//main//table)[1]")
    assert grouped is not None and grouped.markdown.startswith("Prices\n\n| Size | Price |")


def test_several_matches_in_document_order_and_nested_ones_once() -> None:
    result = extract_selected(PAGE, "aside.related, div.intro, div")
    assert result is not None
    # div.intro and div.price (document order), the aside after them; nothing twice
    assert result.markdown == (
        "Our best widgets, all of them.\n\nPrice: $5\n\n## Related\n\nGadgets you may like."
    )
    assert result.headings == ("Related",)


def test_no_match_or_no_text_is_none() -> None:
    assert extract_selected(PAGE, "article.post") is None
    assert extract_selected(PAGE, "//main/@id") is None  # an attribute is not an element
    assert extract_selected(PAGE, "(count(//p))") is None  # nor is a number
    empty = PAGE.replace("<main", '<div id="app"></div><main')
    assert extract_selected(empty, "#app") is None  # an element without text
    assert extract_selected("", "main") is None
    assert extract_selected(PAGE.encode("utf-8"), "main") is not None  # bytes are decoded


def test_a_bad_selector_raises() -> None:
    with pytest.raises(ValueError, match="bad CSS selector 'main\\['"):
        extract_selected(PAGE, "main[")
    with pytest.raises(ValueError, match="bad XPath"):
        extract_selected(PAGE, "//main[")


def test_selected_elements_are_kept_as_they_are_but_for_the_headline() -> None:
    """The automatic extraction's guesses about a page (a kicker above the headline, pull
    quotes, timestamp and closing lines) are not made on what a selector names."""
    story = "".join(
        f"<p>Paragraph {i} of the changelog, as the site wrote it.</p>" for i in range(3)
    )
    rest = (
        f'{story}<blockquote><p>"Paragraph 1 of the changelog, as the site wrote it."</p>'
        "</blockquote><p>Updated at 1:23 p.m.</p><p>Follow us on Twitter @releases.</p>"
    )

    def selected_text(head: str) -> str:
        html = (
            "<html><head><title>Release notes</title></head><body>"
            f"<main>{head}{rest}</main></body></html>"
        )
        selected = extract_selected(html, "main")
        assert selected is not None
        return selected.text

    text = selected_text("<h1>Release notes</h1>")
    assert text.startswith("Paragraph 0 of the changelog")  # the headline goes
    assert text.count("Paragraph 1 of the changelog") == 2
    assert "Updated at 1:23 p.m." in text
    assert text.endswith("Follow us on Twitter @releases.")
    assert selected_text("<h2>Tools</h2><h1>Release notes</h1>").startswith(
        "Tools\n\nRelease notes\n\nParagraph 0"
    )


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_guides_word_for_word_as_the_automatic_extraction_stores_them(name: str) -> None:
    html = guide_page(name)
    assert html is not None
    selected = extract_selected(html, "main article")
    assert selected is not None
    for fragment in GUIDES[name][2]:
        assert fragment in selected.markdown, fragment
    automatic = extract(html)
    assert selected.title == automatic.title
    assert selected.headings == automatic.headings


@pytest.mark.parametrize(
    ("selector", "xpath"),
    [
        ("main", "descendant-or-self::main"),
        ("nav.pagination, main", None),
        ("/html/body//main", "/html/body//main"),
        ("(//a)[1]", "(//a)[1]"),
        ('//a[re:test(@href, "^/p/")]', '//a[re:test(@href, "^/p/")]'),
    ],
)
def test_selector_xpath(selector: str, xpath: str | None) -> None:
    got = selector_xpath(selector)
    if xpath is not None:
        assert got == xpath
    else:
        assert " | " in got and got.endswith("descendant-or-self::main")


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("", "expected a CSS or XPath selector"),
        ("   ", "expected a CSS or XPath selector"),
        ("main[", "bad CSS selector"),
        ("p::text", "bad CSS selector 'p::text': Pseudo-elements are not supported"),
        ("//a[", "bad XPath '//a\\['"),
        ("//foo:bar", "bad XPath '//foo:bar': Undefined namespace prefix"),
        ("/nosuch(//a)", "bad XPath"),
    ],
)
def test_bad_selectors_are_named(selector: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        selector_xpath(selector)


def test_select_elements_keeps_the_outermost_in_document_order() -> None:
    tree = fragment_fromstring("<div><section id='a'><p>1</p></section><p>2</p></div>")
    found = select_elements(tree, "p, section")
    assert [e.get("id") or e.text for e in found] == ["a", "2"]


def test_html_blocks_leaves_the_element_as_it_was() -> None:
    el = fragment_fromstring("<div><h3>T</h3><ul><li>x</li></ul>tail text</div>")
    before = el.text_content()
    assert render_markdown(html_blocks(el)) == "### T\n\n- x\n\ntail text"
    assert el.text_content() == before and el[0].tag == "h3" and el[1].tag == "ul"


def test_html_blocks_inline_code_is_text_and_a_definition_list_is_a_list() -> None:
    el = fragment_fromstring(
        "<div><p>Call <code>run()</code> twice.</p><dl><dt>Term</dt><dd>Meaning</dd></dl></div>"
    )
    assert render_markdown(html_blocks(el)) == "Call run() twice.\n\n- Term\n- Meaning"


def test_doctests() -> None:
    for module in (extract_module, render_module, selector_module):
        assert doctest.testmod(module).failed == 0, module.__name__
