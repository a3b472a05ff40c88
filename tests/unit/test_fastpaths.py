"""The faster selections answer exactly what trafilatura's XPath expressions answer."""

from __future__ import annotations

import os
from copy import deepcopy
from inspect import unwrap
from pathlib import Path

import pytest

from knowledge_crawler.transform import fastpaths
from knowledge_crawler.transform.extract import extract, parse_page

DEV = Path(
    os.environ.get("KC_EXTRACTION_DEV")
    or Path(__file__).resolve().parents[3] / "shared" / "extraction-dev"
)

# Attribute order matters (``re:test(@id|@class, ...)`` reads the first in the source),
# as do the list/ol/ul rules, hidden elements, tokens on id or class only, and unions.
EDGE_CASES = [
    '<div class="cookie-x" id="main">a</div><div id="main" class="cookie-x">b</div>',
    '<div id="x" class="reply-to">a</div><div class="reply-to" id="x">b</div>',
    '<span id="hidden-1" style="color:red">a</span><span style="hidden" id="x">b</span>',
    '<p style="display: none">a</p><p aria-hidden="true">b</p><p class="x hidden">c</p>',
    '<ul class="comment-list"><li>a</li></ul><ol id="comments"><li>b</li></ol>'
    '<ul id="disqus_thread"><li>c</li></ul><details id="comment-3">d</details>',
    '<div class="infinite-scroll"><h1>Next</h1></div><aside id="mvp-post-add-box"><h1>x</h1>'
    '</aside><section class="infinite_scroll">y</section>',
    '<div role="Navigation">a</div><div data-component="MostPopularStoriesX">b</div>'
    '<div data-lp-replacement-content="">c</div><div id="related-1">d</div>',
    '<div class="post">a</div><article class="entry">b</article>'
    '<div itemprop="articleBody">c</div>',
    '<section class="FullText">a</section><div class="article x">b</div><div id="primary">c</div>',
    '<div class="Page-Content">a</div><main>b</main><div class="mainbox">c</div>',
    '<div><main id="m">a</main></div><div role="main-x">b</div>',
    '<div class="content_main">a</div><div id="Main-Content">b</div><div class="content">c</div>',
    '<div id="commentary">a</div><div id="Comments">b</div><div class="commentary x">c</div>'
    '<ul class="Comment">d</ul><ol id="comol-1">e</ol><ul class="my post-comments">f</ul>'
    '<section id="dsq-comments-x">g</section><div id="x comment">h</div><ol id="disqus_thread">'
    'i</ol><div class="comm">j</div><ul id="comments" class="x">k</ul>',
    '<div class="xinfinitescroll"><h1>a</h1></div><div id="mvp-post-add-wrap-2"><h1>b</h1></div>'
    '<div class="infinite-scroller">c</div><section id="Infinite-scroll">d</section>',
    '<aside class="x elementor-share-buttons--view">a</aside><span class="elementor-share-buttons">'
    'b</span><section id="elementor-share-buttons">c</section>',
    '<p id="figcaption-1">a</p><span class="wp-caption-text">b</span><figcaption class="caption">'
    "c</figcaption><li class='caption'>d</li><ul><li id='Caption'>e</li></ul>",
]


def _pages() -> list[tuple[str, str | bytes]]:
    pages: list[tuple[str, str | bytes]] = [
        (f"edge{i}", f"<html><body><div>{body}</div><!-- c --></body></html>")
        for i, body in enumerate(EDGE_CASES)
    ]
    if (DEV / "html").is_dir():
        pages += [(f.stem[:10], f.read_bytes()) for f in sorted((DEV / "html").glob("*.html"))]
    return pages


def _answers(selection: fastpaths.Selection, expression: object, tree: object) -> tuple[list, list]:
    want = expression(tree)  # type: ignore[operator]
    got = selection(tree)
    if selection.first:  # trafilatura takes the first non-None element of these
        want = [next((e for e in want if e is not None), None)]
        got = [got[0] if got else None]
    return want, got


def test_every_expression_is_replaced() -> None:
    extract("<html><body><p>warm up</p></body></html>")  # installs them
    import trafilatura.xpaths as xp

    installed = fastpaths.install()
    assert {s.name for s in installed} == set(fastpaths.EXPECTED_SOURCES), (
        "trafilatura's XPath expressions changed: see fastpaths.py"
    )
    assert all(isinstance(s, fastpaths.Selection) for s in xp.OVERALL_DISCARD_XPATH)


@pytest.mark.parametrize(("name", "page"), _pages(), ids=lambda v: v if isinstance(v, str) else "")
def test_same_elements_as_the_xpath(name: str, page: str | bytes) -> None:
    import trafilatura.xpaths as xp
    from trafilatura.htmlprocessing import convert_tags, tree_cleaning

    from knowledge_crawler.transform.extract import _options

    options = _options()
    tree = parse_page(page)
    assert tree is not None
    converted = convert_tags(tree_cleaning(deepcopy(tree), options), options)
    for target, index, selection in fastpaths._plan(xp):
        current = unwrap(target[index])  # extract's frame narrowing wraps two of them
        expression = current.original if isinstance(current, fastpaths.Selection) else current
        for t in (tree, converted):  # raw tree, and after trafilatura's tag conversion
            want, got = _answers(selection, expression, t)
            assert got == want, selection.name


def test_a_changed_expression_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import trafilatura.xpaths as xp
    from lxml.etree import XPath

    extract("<html><body><p>warm up</p></body></html>")
    changed = list(xp.BODY_XPATH)
    changed[0] = XPath(".//div[@class='post-body-v2']")
    monkeypatch.setattr(xp, "BODY_XPATH", changed)
    installed = {s.name for s in fastpaths.install()}
    assert "BODY_XPATH[0]" not in installed
    assert changed[0].path == ".//div[@class='post-body-v2']"


def test_prepare_tree_without_the_unused_copy_converts_the_same() -> None:
    import trafilatura.core as core
    from lxml import etree

    from knowledge_crawler.transform.extract import _options

    extract("<html><body><p>warm up</p></body></html>")
    fast = core._prepare_tree
    assert getattr(fast, "_kc_fast", False), "trafilatura's internals changed: see extract.py"
    options = _options()
    for _, page in _pages()[:20]:
        tree = parse_page(page)
        ours, backup = fast(tree, options, None)
        theirs, _ = fast.__wrapped__(tree, options, None)
        assert backup is None
        assert etree.tostring(ours) == etree.tostring(theirs)


CLEANING_CASES = [
    "<form><p>The whole page is in a form, as ASP.NET writes it: a long paragraph.</p></form>",
    "<aside><p>The only paragraph is in an aside.</p></aside><nav>menu</nav>",
    "<figure><table><tr><td>a</td></tr></table></figure><table role='none'><tr><td>b</td>"
    "</tr></table><footer>f<time>t</time></footer>tail<math alttext='x^2'><mi>x</mi></math>",
]


def test_tree_cleaning_without_passes_for_absent_tags_cleans_the_same() -> None:
    from lxml import etree
    from trafilatura.htmlprocessing import tree_cleaning

    from knowledge_crawler.transform.extract import _fast_tree_cleaning, _options
    from knowledge_crawler.transform.prepass import prune

    fast = _fast_tree_cleaning()
    assert fast is not None, "trafilatura's tree_cleaning changed: see extract.py"
    options = _options()
    pages = _pages() + [
        (f"clean{i}", f"<html><body>{c}</body></html>") for i, c in enumerate(CLEANING_CASES)
    ]
    for _, page in pages:
        for pruned in (False, True):
            ours, theirs = parse_page(page), parse_page(page)
            assert ours is not None and theirs is not None
            if pruned:
                prune(ours)
                prune(theirs)
            assert etree.tostring(fast(ours, options)) == etree.tostring(
                tree_cleaning(theirs, options)
            )


def test_extraction_is_what_bare_extraction_gives() -> None:
    """The main content is trafilatura's, although its whole-tree copy is skipped."""
    from trafilatura.core import bare_extraction

    from knowledge_crawler.transform.extract import _main_content, _options
    from knowledge_crawler.transform.prepass import prune
    from knowledge_crawler.transform.render import collect_blocks, render_markdown

    for _, page in _pages():
        ours_tree, theirs_tree = parse_page(page), parse_page(page)
        assert ours_tree is not None and theirs_tree is not None
        prune(ours_tree)
        prune(theirs_tree)
        ours = _main_content(ours_tree, None)
        doc = bare_extraction(theirs_tree, options=_options())
        theirs = None if doc is None else doc.body
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert render_markdown(collect_blocks(ours)) == render_markdown(collect_blocks(theirs))
