"""The article inside a frame (knowledge_crawler.transform.focus)."""

from __future__ import annotations

from lxml import html

from knowledge_crawler.transform.extract import extract
from knowledge_crawler.transform.focus import narrow


def paragraphs(n: int, start: int = 0) -> str:
    return "".join(
        f"<p>The council voted on Tuesday, after debate number {i}, to rebuild the old "
        "bridge, which has carried traffic across the river since 1911, and to keep its "
        "stone arches as they are, at a cost the mayor called modest.</p>"
        for i in range(start, start + n)
    )


def _teasers(n: int) -> str:
    return "".join(
        f'<div class="item"><h3><a href="/s/{i}">Another headline number {i} of the day</a>'
        f"</h3><p>Short summary {i}.</p></div>"
        for i in range(n)
    )


def _page(article: str, column: str = "") -> str:
    return (
        '<html><body><div class="main-content">'
        f'<div class="story-text">{article}</div>{column}</div></body></html>'
    )


def _frame(page: str):  # type: ignore[no-untyped-def]
    return html.fromstring(page).find(".//div[@class='main-content']")


def test_a_frame_of_article_and_teaser_links_narrows_to_the_article() -> None:
    frame = _frame(_page(paragraphs(5), _teasers(12)))
    assert narrow(frame).get("class") == "story-text"


def test_a_frame_whose_rest_is_prose_is_kept() -> None:
    # A documentation page: every section is content, nothing left out is links.
    prose = '<div class="note">' + paragraphs(2, 10) + "</div>"
    frame = _frame(_page(paragraphs(5), prose))
    assert narrow(frame) is frame


def test_an_unnamed_element_is_taken_only_with_the_frames_paragraphs() -> None:
    page = _page("", _teasers(12)).replace('<div class="story-text"></div>', "")
    whole = page.replace("</div></body>", f"<div>{paragraphs(5)}</div></div></body>")
    frame = _frame(whole)
    assert narrow(frame).getparent() is frame  # the unnamed <div> of every paragraph
    parted = page.replace(
        "</div></body>", f"<div>{paragraphs(5)}</div>{paragraphs(2, 5)}</div></body>"
    )
    frame = _frame(parted)
    assert narrow(frame) is frame  # two of seven paragraphs would be left out


def test_a_frame_is_kept_when_what_would_be_left_out_is_a_quarter_links() -> None:
    # boxes of a linked name and a sentence of prose each: 25 % of their text is links,
    # too little to tell them from a part of the story that names a few links
    cards = "".join(
        f'<div class="card"><a href="/s/{i}">Headline {i} of the day</a>'
        f"<div>The summary of story {i}, which this box offers the reader too.</div></div>"
        for i in range(10)
    )
    frame = _frame(_page(paragraphs(5), cards))
    assert narrow(frame) is frame


def test_a_frame_is_narrowed_when_what_is_left_out_is_a_box_named_as_boilerplate() -> None:
    # prose without a link, in a box whose class says what it is
    promo = '<div class="promo-box">' + paragraphs(3, 30) + "</div>"
    frame = _frame(_page(paragraphs(6), promo))
    assert narrow(frame).get("class") == "story-text"
    unnamed = '<div class="box">' + paragraphs(3, 30) + "</div>"
    frame = _frame(_page(paragraphs(6), unnamed))
    assert narrow(frame) is frame  # prose of an unnamed box may be the story's


def test_a_frame_is_narrowed_when_the_prose_left_out_is_a_standfirst() -> None:
    # a headline, a standfirst and an author's line around the story: prose without a
    # link in unnamed boxes, but too little beside the story to be a part of it
    header = "<header><h1>The old bridge will be rebuilt</h1></header>"
    standfirst = '<div class="intro"><p>The council chose repair over a new span.</p></div>'
    author = "<div><p>Ann Writer covers the city council for this paper.</p></div>"
    page = (
        '<html><body><div class="main-content">'
        f'{header}{standfirst}<div class="story-text">{paragraphs(6)}</div>{author}'
        "</div></body></html>"
    )
    assert narrow(_frame(page)).get("class") == "story-text"
    # the same prose as a tenth of the story or more may be the story's
    long = f'<div class="intro">{paragraphs(1, 40)}</div>'
    frame = _frame(page.replace(standfirst, long))
    assert narrow(frame) is frame


def test_a_story_whose_lead_has_a_box_of_its_own_keeps_its_frame() -> None:
    # the lead in an <article> of its own, the rest in a second one
    lead = "<article><p>PARIS - The council voted on Tuesday to rebuild the bridge.</p></article>"
    page = (
        '<html><body><div class="main-content">'
        f"{lead}<article>{paragraphs(10)}</article></div></body></html>"
    )
    frame = _frame(page)
    assert narrow(frame) is frame


def test_a_box_named_as_boilerplate_that_holds_the_article_is_not_counted_as_left_out() -> None:
    # the story's box inside a wrapper whose class says "media"; what would be left out
    # is prose of an unnamed box, which may be the story's
    story = '<div class="media-wrap"><div class="story-text">' + paragraphs(6) + "</div></div>"
    unnamed = '<div class="box">' + paragraphs(3, 30) + "</div>"
    page = f'<html><body><div class="main-content">{story}{unnamed}</div></body></html>'
    frame = _frame(page)
    assert narrow(frame) is frame


def test_comments_are_never_the_article() -> None:
    comments = '<div class="comment-body">' + paragraphs(8, 20) + "</div>"
    frame = _frame(_page(paragraphs(1), comments + _teasers(12)))
    assert narrow(frame).get("class") != "comment-body"


def test_a_short_article_keeps_its_frame() -> None:
    frame = _frame(_page(paragraphs(1)[:200] + "</p>", _teasers(12)))
    assert narrow(frame) is frame


def test_an_article_over_sibling_blocks_takes_their_parent() -> None:
    article = (
        '<div class="article-text">'
        f'<div class="part-body">{paragraphs(3)}</div>'
        '<div class="ad"><a href="/ad">Advertisement</a></div>'
        f'<div class="part-body">{paragraphs(3, 3)}</div></div>'
    )
    frame = _frame(_page(article, _teasers(12)))
    assert narrow(frame).get("class") == "article-text"


def test_extraction_drops_the_teaser_column_of_a_broad_frame() -> None:
    page = _page(paragraphs(5), _teasers(12))
    text = extract(page).text
    assert text.count("The council voted") == 5
    assert "Another headline" not in text and "Short summary" not in text


def test_an_article_elements_box_of_other_stories_is_left_out() -> None:
    # an <article> (trafilatura's second frame expression) that also holds a box of
    # other stories, each a headline link and a sentence of summary
    cards = "".join(
        f'<div class="card"><h3><a href="/s/{i}">Another headline number {i} of the day</a>'
        f"</h3><p>The summary of story number {i}, which this box offers to the reader as "
        "well.</p></div>"
        for i in range(8)
    )
    page = (
        "<html><body><article><h1>Bridge</h1>"
        f'<div class="text-wrap">{paragraphs(6)}</div>'
        f'<div class="more-box">{cards}</div></article></body></html>'
    )
    text = extract(page).text
    assert text.count("The council voted") == 6
    assert "summary of story" not in text and "Another headline" not in text


def test_a_page_without_frames_keeps_its_article_not_the_teasers_around_it() -> None:
    # No frame expression matches: the article element is tried before every paragraph
    # of the page (teaser summaries included) is recovered.
    menu = "".join(f"<li><a href=/m{i}>Menu {i}</a></li>" for i in range(30))
    page = (
        '<html><body><div id="wrap"><div class="article_description">'
        f'{paragraphs(5)}</div>{_teasers(12)}<ul class="menu">{menu}</ul></div></body></html>'
    )
    text = extract(page).text
    assert text.count("The council voted") == 5
    assert "Short summary" not in text


def _unnamed_story_page(rest: str) -> str:
    # CNN's 2013 layout: the story's column is named in abbreviations (``cnn_strycntntlft``)
    # that say neither "story" nor "content", and no frame expression matches the page.
    return (
        '<html><body><div id="wrap"><div class="cnn_strycntntlft">'
        f"{paragraphs(6)}</div>{rest}</div></body></html>"
    )


def test_a_page_without_frames_keeps_its_unnamed_article_when_it_holds_every_paragraph() -> None:
    coverage = "".join(
        f'<div class="box"><a href="/s/{i}">Weather headline number {i}</a>'
        f"<div>Updated 1446 GMT, August {i}</div></div>"
        for i in range(12)
    )
    text = extract(_unnamed_story_page(coverage)).text
    assert text.count("The council voted") == 6
    assert "Weather headline" not in text and "Updated 1446" not in text


def test_an_unnamed_element_is_not_taken_when_paragraphs_lie_outside_it() -> None:
    body = html.fromstring(_unnamed_story_page(_teasers(12) + paragraphs(2, 10))).find(".//body")
    assert narrow(body) is body
    body = html.fromstring(_unnamed_story_page(_teasers(12))).find(".//body")
    assert narrow(body).get("class") == "cnn_strycntntlft"


def test_paragraphs_of_comments_beside_an_unnamed_article_do_not_keep_the_frame() -> None:
    # a recipe site's column: the recipe in unnamed boxes, then the readers' comments,
    # each a long paragraph, in a box named as comments
    comments = "".join(
        f"<li class='gz-comment'><p>Reader {i} wrote: I made this on Sunday for the whole "
        "family, with strawberries from the market, and it was gone in minutes, thanks.</p>"
        "</li>"
        for i in range(6)
    )
    column = f"<div class='gz-extra'><ul class='gz-comments-wrap'>{comments}</ul></div>"
    page = (
        "<html><body><div class='main-content'><div class='gz-inner'>"
        f"<div class='gz-part'>{paragraphs(3)}</div><div class='gz-part'>{paragraphs(3, 3)}</div>"
        f"</div>{column}</div></body></html>"
    )
    frame = _frame(page)
    assert narrow(frame).get("class") == "gz-inner"
    # the same paragraphs in a box of no name are the page's (the frame stays)
    frame = _frame(page.replace("gz-comments-wrap", "gz-list").replace("gz-comment", "gz-li"))
    assert narrow(frame) is frame


def test_a_story_in_parts_of_one_class_in_two_columns_is_taken_whole() -> None:
    # a recipe: its introduction in the right column above the photos' box, the method
    # under it, the ingredients in the left column, all in one card
    intro = f"<div class='recipe-content'>{paragraphs(2)}</div>"
    method = f"<div class='recipe-content'>{paragraphs(4, 2)}</div>"
    ingredients = (
        "<div class='col-left'><ul><li>750 gram pointed cabbage</li><li>1 leek</li></ul></div>"
    )
    teasers = f"<div class='col-side'>{_teasers(12)}</div>"
    page = (
        "<html><body><div class='main-content'><div class='card'><div class='col-right'>"
        f"{intro}</div>{ingredients}<div class='col-right'>{method}</div></div>{teasers}"
        "</div></body></html>"
    )
    found = narrow(_frame(page))
    assert found.get("class") == "card"
    # a part of a class of layout alone, or a short one, is no part of the story
    layout = narrow(_frame(page.replace("recipe-content", "left relative")))
    assert layout.get("class") != "card"
    short = page.replace(
        intro, "<div class='recipe-content'><p>A quick, creamy oven dish.</p></div>"
    )
    assert narrow(_frame(short)).get("class") == "recipe-content"
