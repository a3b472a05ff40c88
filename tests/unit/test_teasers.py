"""Links to other stories inside an article (knowledge_crawler.transform.teasers)."""

from __future__ import annotations

from lxml import html

from knowledge_crawler.transform.extract import extract
from knowledge_crawler.transform.teasers import drop_teasers
from tests.unit.story import page_with, whole_story


def _texts(body: str) -> list[str]:
    tree = html.fromstring(f"<html><body><div>{body}</div></body></html>")
    drop_teasers(tree, lambda el: el.drop_tree())
    return [" ".join(p.text_content().split()) for p in tree.iter("p", "li", "h3")]


def test_a_lead_in_and_a_headline_link_go() -> None:
    texts = _texts('<p>Before.</p><p><strong>Related: </strong><a href="/x">A Headline</a></p>')
    assert texts == ["Before."]


def test_a_lead_in_followed_by_prose_stays() -> None:
    prose = '<p>Related research <a href="/r">by the institute</a> shows the same trend.</p>'
    assert _texts(prose) == ["Related research by the institute shows the same trend."]


def test_a_lead_in_line_takes_the_headline_links_after_it_and_stops_at_prose() -> None:
    texts = _texts(
        "<p>You may also like...</p>"
        '<p><a href="/a">Who will make the Hall in 2020?</a></p>'
        '<p><a href="/b">A band takes over the fan vote</a></p>'
        "<p>The last word of the story.</p>"
    )
    assert texts == ["The last word of the story."]


def test_a_lead_in_line_with_a_list_of_links() -> None:
    texts = _texts(
        '<h3>Lesen Sie auch</h3><ul><li><a href="/a">Eins</a></li><li><a href="/b">Zwei</a>'
        "</li></ul><p>Weiter im Text.</p>"
    )
    assert texts == ["Weiter im Text."]


def test_also_on_a_site_before_headline_links_goes_but_also_on_a_day_stays() -> None:
    texts = _texts(
        '<h2>Auch auf gofeminin.de</h2><p><a href="/a">Warum nehme ich nicht ab?</a><br>'
        '<a href="/b">20 Kilo abnehmen</a></p><p>Weiter im Text.</p>'
    )
    assert texts == ["Weiter im Text."]
    prose = _texts('<p>Also on Monday:</p><p><a href="/a">The mayor spoke</a></p>')
    assert prose == ["Also on Monday:", "The mayor spoke"]


def test_editors_recommendations_and_their_links_go() -> None:
    texts = _texts(
        "<p><strong>Editors\u2019 Recommendations:</strong></p><ul><li><a href='/a'>Crates "
        "are leaving Rocket League</a></li><li><a href='/b'>A Plague Tale reviewed</a></li>"
        "</ul><p>Weiter im Text.</p>"
    )
    assert texts == ["Weiter im Text."]


def test_a_lead_in_alone_before_prose_stays() -> None:
    texts = _texts("<p>Read more:</p><p>The rest of the story, in words.</p>")
    assert texts == ["Read more:", "The rest of the story, in words."]


def test_see_also_references_of_documentation_stay() -> None:
    texts = _texts('<p>See also: <a href="/os">os.path.join()</a></p>')
    assert texts == ["See also: os.path.join()"]


def test_extraction_keeps_the_story_around_a_teaser() -> None:
    related = '<p><strong>Related: </strong><a href="/x">Possible Water Plumes in Images</a></p>'
    end = "<p>À lire aussi : <a href='/y'>Notre récit du congrès</a></p>"
    text = extract(page_with(related).replace("</article>", f"{end}</article>")).text
    assert "Possible Water Plumes" not in text and "Notre récit" not in text
    assert whole_story(text)


def test_a_headline_link_in_capitals_goes() -> None:
    texts = _texts(
        "<p>Before.</p>"
        '<p><strong><a href="/v/1">CO-FOUNDER PROUD OF HOME DEPOT EMPLOYEES</a></strong></p>'
        '<p><a href="/app">GET FOX BUSINESS ON THE GO BY CLICKING HERE</a></p>'
        "<p>After.</p>"
    )
    assert texts == ["Before.", "After."]


def test_capitals_that_are_not_one_link_stay() -> None:
    texts = _texts(
        "<p><strong>UPDATE: THE PORT REOPENED AT NOON</strong></p>"
        '<p><a href="/nasa">NASA</a> SAID NOTHING</p>'
        '<p><a href="/a">Read the full report here</a></p>'
    )
    assert texts == [
        "UPDATE: THE PORT REOPENED AT NOON",
        "NASA SAID NOTHING",
        "Read the full report here",
    ]


def test_a_list_of_headline_links_between_paragraphs_goes() -> None:
    texts = _texts(
        "<p>Before.</p><ul>"
        '<li><a href="/a">Moon Rush: Private Lunar Lander Plans</a></li>'
        '<li><a href="/b">Here Is Where the Landers Will Land</a> </li></ul>'
        "<p>After.</p>"
    )
    assert texts == ["Before.", "After."]


def test_lists_of_short_links_or_of_prose_stay() -> None:
    texts = _texts(
        "<p>Before.</p><ul>"
        '<li><a href="/os">os.path</a></li><li><a href="/sys">sys</a></li></ul>'
        '<p>Between.</p><ul><li><a href="/a">The first report</a> found the cause.</li>'
        '<li><a href="/b">The second report</a> did not.</li></ul><p>After.</p>'
    )
    assert texts == [
        "Before.",
        "os.path",
        "sys",
        "Between.",
        "The first report found the cause.",
        "The second report did not.",
        "After.",
    ]


def test_a_label_in_capitals_before_a_headline_link_goes() -> None:
    texts = _texts(
        "<p>Before.</p>"
        '<p><b>IN TEXAS: </b><a href="/s/1">Family of Ebola patient quarantined</a></p>'
        "<p>After.</p>"
    )
    assert texts == ["Before.", "After."]


def test_a_label_in_capitals_before_prose_or_alone_stays() -> None:
    texts = _texts(
        '<p><b>WASHINGTON: </b>The <a href="/c">Senate</a> voted on Tuesday.</p>'
        '<p><b>UPDATE:</b></p><p><a href="/s/2">The port reopened</a></p>'
    )
    assert texts == ["WASHINGTON: The Senate voted on Tuesday.", "UPDATE:", "The port reopened"]


def test_a_caps_label_and_a_link_alone_in_a_table_go_but_a_table_of_data_stays() -> None:
    box = (
        "<figure class='wp-block-table'><table><tr><td></td></tr><tr><td><strong>"
        "<code>ADD TO CART:</code> <a href='https://amzn.to/x'>US$25 Gift Card for NA</a>"
        "</strong></td></tr></table></figure>"
    )
    data = (
        "<table><tr><th>Package</th><th>Popcon</th></tr><tr><td>apt</td>"
        "<td><a href='/popcon/apt'>V:37, I:118</a></td></tr><tr><td>dpkg</td>"
        "<td><a href='/popcon/dpkg'>V:9, I:14</a></td></tr></table>"
    )
    text = extract(page_with(box + data)).text
    assert "ADD TO CART" not in text and "Gift Card" not in text
    assert "I:118" in text and "I:14" in text
    assert whole_story(text)


def test_a_label_before_each_of_several_headline_links_goes() -> None:
    texts = _texts(
        "<p>Before.</p>"
        '<p><b>STORY: </b><a href="/s/1">Spacewalk can be a danger</a><br />'
        '<b>STORY: </b><a href="/s/2">Helmet leak ends spacewalk</a></p>'
        '<p>Now read: <a href="/s/3">The average Lego brick can be used 37,112 times</a></p>'
        "<p>After.</p>"
    )
    assert texts == ["Before.", "After."]


def test_a_label_before_links_and_words_of_its_own_stays() -> None:
    texts = _texts(
        '<p><b>STORY: </b><a href="/s/1">Spacewalk</a> was the word the crew used all week '
        'for the <b>STORY: </b><a href="/s/2">leak</a>.</p>'
    )
    assert texts == ["STORY: Spacewalk was the word the crew used all week for the STORY: leak."]


def _cards(
    n: int, heading: str = "<h3><a href='/recipes/{i}'>Easy Dinner Number {i}</a></h3>"
) -> str:
    return "".join(
        f"<div class='card'>{heading.format(i=i)}<p>A quick weeknight meal with simple "
        f"ingredients, number {i}.</p></div>"
        for i in range(n)
    )


def test_a_box_of_cards_with_headline_links_after_the_story_goes() -> None:
    for heading in (
        "<h3><a href='/recipes/{i}'>Easy Dinner Number {i}</a></h3>",
        "<a href='/recipes/{i}'><h3>Easy Dinner Number {i}</h3></a>",  # a link around the card
    ):
        page = page_with(
            f"<h2>Our favourites</h2><div class='grid'>{_cards(4, heading)}</div>", at=6
        )
        text = extract(page).text
        assert "Easy Dinner" not in text and "weeknight meal" not in text, heading
        assert whole_story(text)


def test_two_cards_or_sections_whose_headings_link_to_themselves_stay() -> None:
    page = page_with(f"<div class='grid'>{_cards(2)}</div>", at=6)
    assert "Easy Dinner Number 1" in extract(page).text
    # a documentation page's headings that link to their own section are no headlines
    sections = _cards(4, "<h2><a class='header' href='#part-{i}'>Part {i} of the guide</a></h2>")
    text = extract(page_with(f"<div class='grid'>{sections}</div>", at=6)).text
    assert all(f"Part {i} of the guide" in text for i in range(4))


def test_cards_among_the_paragraphs_of_a_box_take_nothing_of_its_story() -> None:
    from tests.unit.story import paragraphs

    page = f"<html><body><article>{paragraphs()}{_cards(3)}</article></body></html>"
    text = extract(page).text
    assert whole_story(text)


def test_cards_that_are_the_page_itself_stay() -> None:
    # a home page: an introduction, the latest articles as cards, and the page's chrome
    page = (
        "<html><body><div class='cookie-banner'><p>We use cookies to personalise content "
        "and ads, to provide social media features and to analyse our traffic.</p></div>"
        "<main><h1>Journal</h1><p>Essays, guides and reviews on everything from espresso "
        f"to Roman roads.</p><h2>Latest articles</h2><div class='grid'>{_cards(6)}</div></main>"
        "<aside><p>Subscribe to our newsletter and get the week's best stories, every "
        "Friday morning, in your inbox.</p></aside><footer><p>© 2025 Journal. All rights "
        "reserved, all of them, everywhere.</p>"
        # the page's chrome holds more prose than a short story: it is no story beside
        # the cards
        + "<p>Journal is an independent magazine of essays, guides and reviews, written by "
        "its readers and edited by a small team in Leeds since the spring of 2009.</p>"
        * 5
        + "</footer></body></html>"
    )
    text = extract(page).text
    assert "Latest articles" in text
    assert all(f"Easy Dinner Number {i}" in text for i in range(6))
