"""Lines that close a story about its author or the site (knowledge_crawler.transform.trailers)."""

from __future__ import annotations

import pytest

from knowledge_crawler.transform.extract import extract
from knowledge_crawler.transform.trailers import closing_line, closing_lines, story_end
from tests.unit.story import STORY, page_with, whole_story


def test_follow_reach_and_subscribe_lines_close_a_story() -> None:
    assert closing_line(
        "Email Tariq Malik at tmalik@space.com or follow him @tariqjmalik. "
        "Follow us on Twitter @Spacedotcom and on Facebook."
    )
    assert closing_line("Have a tip? Amy Kuperinsky may be reached at ak@example.com.")
    assert closing_line(
        "Get the latest updates right in your inbox. Subscribe to NJ.com's newsletters."
    )
    assert closing_line("Follow her on Instagram for more recipes.")
    assert closing_line("Follow Newsbeat on Instagram, Facebook, Twitter and YouTube.")
    assert closing_line("Follow Jefferson Graham on Twitter.")
    assert closing_line("Follow @NYPostsports")
    assert closing_line("Maggie Haberman")
    assert closing_line("kokobj@yna.co.kr")
    assert closing_line("paul.takahashi@chron.com twitter.com/paultakahashi")
    assert closing_line("(END)")
    assert closing_line("Just a heads up, some of the links on ONE Esports are affiliate links.")
    assert closing_line("If you buy through a link, we may earn a small commission.")
    assert closing_line(
        "If you buy something through this post, IGN may get a share of the sale. For more, "
        "learn more."
    )
    assert closing_line("\u2013 Anzeige: Dieser Beitrag ist mit Barbour entstanden")
    assert closing_line("Contributing: Liz Szabo, Michael Winter, Associated Press.")
    assert closing_line("CNN's Jane Doe contributed to this report.")
    assert closing_line("Mit Material von dpa")
    assert closing_line("See more by Sharon Gaudin on Computerworld.com.")
    assert closing_line(
        "Read more about IT Leadership in Computerworld's IT Leadership Topic Center."
    )
    assert closing_line("© 2019 Science X Network")
    assert closing_line("Copyright 2014 The Associated Press. All rights reserved.")
    assert closing_line(
        "Citation: Flint flake tool adds to evidence (2019, October 22) retrieved 20 "
        "January 2020 from https://phys.org/news/2019-10-flint.html"
    )
    assert closing_line("More information: Marcel J. L. Th. Niekus et al. Middle Paleolithic")
    assert closing_line("Proceedings of the National Academy of Sciences (2019). DOI: 10.1073/pnas")


@pytest.mark.parametrize(
    "line",
    [
        "Additional reporting by Steve Gorman; Editing by Marguerita Choy and Simon Cameron",
        "Reporting by Jane Doe in London; Writing by John Roe",
        "Editing by Nick Zieminski",
        "Our Standards: The Thomson Reuters Trust Principles.",
        "Autor: Steffen Pache, Sächsische Landesanstalt für Landwirtschaft",
        "Das Bildmaterial wurde von der Machine Company zur Verfügung gestellt.",
        "Con información de Paloma Marín, Maryem Castillo y Elena G. Sevillano.",
        "Com informações da Reuters e da Agência Brasil.",
        "Avec l'AFP",  # "Avec AFP" alone is a line of capitalised names already
        "Avec agences",
        "Den kompletten Beitrag lesen Sie in der neuen Juli-Ausgabe der Technology Review.",
        "If you enjoyed this article, we have a proposition for you: Join us.",
        '"Questions? Comments? Email us at',
        "Originally published at medium.com on March 3, 2017.",
        "This story was first published in Grist.",
        "Liliana Segura is a journalist and an editor at The Nation Magazine. She is a "
        "board member of the Ad Hoc Committee.",
        "Max Blumenthal is an award-winning journalist and the author of books.",
        "Eric Song is IGN's deal curator and spends his pay on what he posts.",
        "Inga Buller ist Head of Social & Community bei CHIP.",
        "Anna Maria Schmidt ist Wirtschaftsredakteurin in Berlin.",
        "Jean Dupont est rédacteur en chef adjoint du journal.",
        # an author's note says more than a closing line may
        "Klaas Bollhoefer ist Chief Evangelist von The Machine Company. " + "Wort " * 90,
    ],
)
def test_credits_appeals_and_authors_notes_close_a_story(line: str) -> None:
    assert closing_line(line)


def test_the_same_words_in_a_story_sentence_are_no_credit() -> None:
    assert not closing_line("Reporting by the newspaper found that the mayor had lied.")
    assert not closing_line("Editing by hand took the team three weeks, she said.")
    assert not closing_line("Die Stadt hat das Gelände zur Verfügung gestellt.")
    assert not closing_line("If you enjoyed the concert, you were not alone.")
    assert not closing_line("Our standards of living have fallen, the report says.")
    assert not closing_line("The virus first appeared in Wuhan, officials said.")
    assert not closing_line("Con información de la policía, el juez cerró el caso.")
    assert not closing_line("Avec AFP et Reuters, la presse se partage le marché.")


def test_what_is_no_authors_note_is_no_closing_line() -> None:
    assert not closing_line("John Smith is expected to appear in court on Monday.")
    assert not closing_line("New York is a great place for writers, she said.")
    assert not closing_line("The author is a journalist who lives in Ohio.")  # no name
    assert not closing_line("Smith is a journalist.")  # one word is no name
    assert not closing_line("Paris est une ville où les auteurs viennent écrire.")
    assert not closing_line("Jane Doe is a " + "very " * 8 + "good editor.")  # too far


def test_the_same_words_inside_a_story_are_not_a_closing_line() -> None:
    assert not closing_line("He told his followers on Twitter that the vote was rigged.")
    assert not closing_line("Investors follow the earnings closely, analysts said.")
    assert not closing_line("She asked her fans to follow her on Instagram, and they did.")
    assert not closing_line("Fans who follow the band on Instagram saw the post first.")
    assert not closing_line("The hut can be reached at the end of the trail, in two hours.")
    assert not closing_line("She could not sign up for the course, and never wrote a newsletter.")
    assert not closing_line("Regulators say affiliate marketing links must be disclosed.")
    assert not closing_line("If you buy a house through an agent, read the contract first.")
    assert not closing_line("Follow @NYPostsports for the draft, the coach told fans.")
    assert not closing_line("Thanks, Junior!")
    assert not closing_line("Write to kokobj@yna.co.kr if you saw the storm.")
    assert not closing_line("Copyright law, the court said, does not cover recipes.")
    assert not closing_line("Die Anzeige: ein Fehler des Amtes, sagte der Anwalt.")
    assert not closing_line("Volunteers contributed to this story of the flood's aftermath.")
    assert not closing_line("The citation for bravery was read out at the ceremony.")
    long_bio = "Follow him on Twitter. " + " ".join(["word"] * 60)
    assert not closing_line(long_bio)


def test_only_lines_at_the_end_are_counted_and_the_count_stops_at_the_story() -> None:
    follow = "Follow us on Twitter @harbournews."
    assert closing_lines([*STORY, follow]) == 1
    assert closing_lines([*STORY, "Email the author at a@example.org.", follow]) == 2
    assert closing_lines([follow, *STORY]) == 0
    cited = ["More information: J. Doe et al.", "Nature (2019). DOI: 10.1038/x", "© 2019 X"]
    assert closing_lines([*STORY, *cited, "Citation: X (2019) retrieved 2020 from y"]) == 4


def test_extraction_drops_the_closing_lines_and_keeps_the_story() -> None:
    closing = (
        "<p>Mike Wall's book is out now. Follow him on Twitter @michaeldwall.</p>"
        "<p>Get the latest updates right in your inbox. Subscribe to our newsletters.</p>"
    )
    text = extract(page_with(closing, at=6)).text
    assert "Follow him" not in text and "newsletters" not in text
    assert whole_story(text)


def test_an_authors_note_set_as_a_quote_closes_the_story_too() -> None:
    note = "<blockquote><p>Inga Buller ist Head of Social bei CHIP.</p></blockquote>"
    text = extract(page_with(note, at=6)).text
    assert "Inga Buller" not in text
    assert whole_story(text)
    quote = "<blockquote><p>We will rebuild the harbour wall, the mayor said.</p></blockquote>"
    assert "rebuild the harbour wall" in extract(page_with(quote, at=6)).text


@pytest.mark.parametrize(
    "line",
    [
        "Follow him on Twitter @jdoe.",
        "Follow Newsbeat on Instagram.",
        "Jane Doe may be reached at jane@example.com.",
        "You can contact the author at ann@example.org.",
        "Write to Jane Doe at jane@example.com.",
        "Subscribe to our newsletters.",
        "Sign up for our daily newsletter here.",
        "Some of the links on this site are affiliate links.",
        "If you buy through a link, we may earn a small commission.",
        "Citation: A tool (2019, October 22) retrieved 20 January 2020 from https://x.org",
        "Contributing: Liz Szabo.",
        "CNN's Jane Doe contributed to this report.",
        "Mit Material von dpa",
        "Anzeige: Dieser Beitrag ist mit Barbour entstanden",
        "Werbung: Dieser Artikel wurde bezahlt.",
        "Sponsored: this post is brought to you by Acme.",
        "Paid post: brought to you by Acme.",
        "More information: J. Doe et al. A paper.",
        "Nature (2019). DOI: 10.1038/s41586",
        "Additional reporting by Jane Doe; Editing by John Roe",
        "Editing by John Roe",
        "Writing by John Roe",
        "Our Standards: The Trust Principles.",
        "Autor: Jane Doe",
        "Author: Jane Doe",
        "If you liked this story, share it.",
        "Questions? Comments? Email us.",
        "Das Fotomaterial wurde uns zur Verfügung gestellt.",
        "Den ganzen Artikel lesen Sie im Heft.",
    ],
)
def test_every_form_passes_the_keyword_test_in_front_of_the_expression(line: str) -> None:
    """The substring test that spares most paragraphs the expression must let every one
    of its forms through: a form added without its keyword would never be found."""
    assert closing_line(line)


def test_a_sign_off_late_in_the_text_ends_the_story() -> None:
    story = [*STORY, "Written by Marie Ellis", "Copyright: Medical News Today"]
    after = ["Please use one of the following formats to cite this article:", "MLA"]
    texts = [*story, *after]
    assert story_end(texts, [True] * len(texts)) == len(STORY)
    assert story_end(["Posted by Jane Doe at 3:04 PM", *texts][1:], [True] * 10) == 6
    # early in the text it is a byline, which other rules handle; a sentence is no sign-off
    assert story_end(["Written by Marie Ellis", *STORY], [True] * 7) == 7
    prose = [*STORY, "It was written by Marie Ellis in the spring.", "MLA"]
    assert story_end(prose, [True] * 8) == 8
    assert story_end([*STORY, "Written by Marie Ellis"], [True] * 6 + [False]) == 7


def test_what_follows_a_sign_off_is_not_stored() -> None:
    tail = (
        "<p>Written by Marie Ellis</p><p>Copyright: Medical News Today</p>"
        "<p>Please use one of the following formats to cite this article in your essay, "
        "paper or report:</p><p>Visitor Opinions (latest shown first)</p>"
        "<p>It seems like everyone day I'm hearing of some hospital with an infection.</p>"
    )
    text = extract(page_with(tail, at=6)).text
    assert whole_story(text)
    assert "Marie Ellis" not in text and "cite this article" not in text
    assert "hearing of some hospital" not in text


@pytest.mark.parametrize(
    "opener",
    [
        "comment Note: By posting your comments here you agree to the terms and conditions",
        "blog comments powered by Disqus",
        "80 comment(s) - last by SirKronan.. on May 22 at 12:09 PM",
        "Leave a reply",
        "Leave a Reply Cancel reply",
        "Visitor Opinions (latest shown first)",
        "Opinions that are derogatory, attack other users or are offensive may be removed.",
        "MORE TENNIS HEADLINES",
        "SPONSORED HEADLINES",
        "Most Popular",
        "EDITORS' PICKS",
        "Weiterführende Links:",
        "Verwandte Themen auf unserem Blog:",
        "Auch interessant:",
        "A lire aussi :",
        "Leggi anche",
        "You may also like",
        "MORE TO READ",
        "About the author",
        "Meet Jessica Haggard",
        "Über den Autor",
        "125 COMMENTI",
        "12 Kommentare",
        "Kommentare werden geladen...",
    ],
)
def test_the_opening_of_reader_comments_late_in_the_text_ends_the_story(opener: str) -> None:
    texts = [*STORY, opener, "more from Jammu and Kashmir", "Most Popular"]
    assert story_end(texts, [True] * len(texts)) == len(STORY)


def test_a_sentence_about_comments_is_no_opener() -> None:
    texts = [
        *STORY,
        "Comments powered the debate, the mayor said.",
        "Two comments were read.",
        "See also",  # a part of a documentation page
        "Also read by the council: the port's accounts for ten years.",
        "More headlines were written about the storm than about the port in ten years.",
        "Meet the new harbour master",
        # a call to action above a recipe card, not the comments' opening
        "LEAVE A COMMENT BELOW AND TAG ME ON INSTAGRAM AND LET ME KNOW IF YOU MAKE THIS RECIPE",
        "More keto dinner recipes",  # a heading in the middle of a food blog's post
    ]
    assert story_end(texts, [True] * len(texts)) == len(texts)


def test_comments_longer_than_the_story_still_end_it_but_a_sign_off_there_does_not() -> None:
    # a short recipe whose comments run on for longer: the opener stands at 40 % of the text
    comments = [f"Comment {i}: made it twice, the family loved it, thanks." for i in range(9)]
    texts = [*STORY[:4], "Kommentare werden geladen...", *comments]
    assert story_end(texts, [True] * len(texts)) == 4
    texts = [*STORY[:4], "Written by Marie Ellis", *comments]
    assert story_end(texts, [True] * len(texts)) == len(texts)
    # in the first third it is no opener yet (a link to the comments under the byline)
    texts = ["12 Kommentare", *STORY, *STORY]
    assert story_end(texts, [True] * len(texts)) == len(texts)
