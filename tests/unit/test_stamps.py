"""Lines that only date the page (knowledge_crawler.transform.stamps)."""

from __future__ import annotations

import pytest

from knowledge_crawler.transform.extract import extract
from knowledge_crawler.transform.stamps import credit_line, label_line, name_line, timestamp_line
from tests.unit.story import page_with, whole_story


@pytest.mark.parametrize(
    "line",
    [
        "Updated at 1:23 p.m.",
        "Mis à jour le 29/10/2012 à 14h03",
        "2015.08.15 10:28",
        "Updated",
        "Updated 3:27 PM EST, Mon November 6, 2023",
        "Posted on Dec 3, 2019",
        "Last updated: 2024-01-05",
        "12.10.2015, 19:16 Uhr",
        "-Aktualisiert am",
        "Patricio Candia | Palma de Mallorca | 08/01/2014",
        "By Jane Doe | March 3, 2014",
        "Par Jacques Munier",
        "Von Anna Maier und Jo Ott",
        "BY JANE DOE",
        "| von Inga Buller",
        "Reading time: 4 min",
        "5 min read",
        "Lesezeit: 3 Minuten",
        "Tempo de leitura: 1 minuto",
        "Temps de lecture : 2 min",
        "First Published: 08:19 IST(19/7/2013) | Last Updated: 13:52 IST(19/7/2013)",
        "Originally published on Wed June 5, 2013 4:00 pm",
    ],
)
def test_a_line_that_only_dates_the_page(line: str) -> None:
    assert timestamp_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "Updated figures show a rise in prices.",
        "Updated on Monday the council met again.",
        "Published by Penguin in 2004",
        "Published guessing_game v0.1.0 at registry `crates-io`",
        "12 March 2020",  # a diary's or a changelog's heading
        "Version 2.3 (2020-01-01)",
        "Version 1.2 | 12 Jan 2020",  # a name with a number is not a byline
        "The cat sat | on 3 March 2014",
        "Home | News | 2014",
        "By Monday",
        "Von Anfang an",
        "By John Smith, a reporter who covered the port",
        "5 minutes of reading took him far",
        "Reading time: the hour before bed",
        "First published in 1851 (2 vols)",
    ],
)
def test_a_line_that_says_more_than_a_date(line: str) -> None:
    assert not timestamp_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "Fotos: Sophia Mahnert",
        "Foto: picture alliance/dpa",
        "Auch Herbert Grönemeyer gehört zu den Unterstützern. Bild: dpa",
        "Photo: Reuters/Jane Doe",
        "- Tapie en 2008. REUTERS/Benoit Tessier -",
        "(Credit: Clayton Aldern / Grist)",
        "Handout",
        "The New York Times News Service",
        "Los Angeles Times-Washington Post News Service",
        "Associated Press",
    ],
)
def test_a_line_that_credits_a_picture(line: str) -> None:
    assert credit_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "Das Bild: ein Haus am Meer, das im Sommer leer steht und im Winter verfällt.",
        "He said: photos are fine.",
        "Autofotos: mein Hobby seit Jahren",
        "The deal was reported by Reuters/Ipsos polls today.",
        "The exhibition shows " + "many " * 40 + "pictures. Foto: dpa",
        "The news service said it would close.",
        "Handout rules changed in May.",
    ],
)
def test_a_line_that_is_more_than_a_credit(line: str) -> None:
    assert not credit_line(line)


def test_extraction_drops_a_credit_line_and_keeps_the_story() -> None:
    text = extract(page_with("<p>Fotos: Sophia Mahnert</p>", at=6)).text
    assert "Sophia" not in text
    assert whole_story(text)


@pytest.mark.parametrize(
    "line",
    [
        *["Anzeige", "hirdetés", "Advertisement:", "Teilen auf", "SHARE", "User rating:"],
        *["more\u00bb", "Read more \u203a", "comment", "Comments"],
    ],
)
def test_the_label_of_an_ad_slot_or_a_share_bar(line: str) -> None:
    assert label_line(line)


@pytest.mark.parametrize(
    "line", ["Share prices fell.", "Anzeige erstattet", "Teilen"[:3], "More comments."]
)
def test_a_line_that_is_more_than_a_label(line: str) -> None:
    assert not label_line(line)


def test_extraction_drops_an_ad_label_and_keeps_the_story() -> None:
    text = extract(page_with("<p>Anzeige</p>", at=3)).text
    assert "Anzeige" not in text
    assert whole_story(text)


def test_extraction_drops_the_timestamp_line_and_keeps_the_story() -> None:
    text = extract(page_with("<p>Mis à jour le 29/10/2012 à 14h03</p>", at=0)).text
    assert "Mis à jour" not in text
    assert whole_story(text)


def test_extraction_drops_timestamp_lines_set_in_one_paragraph() -> None:
    stamps = "<p>First Published: 00:37 IST(16/5/2013)<br>Last Updated: 01:44 IST(16/5/2013)</p>"
    text = extract(page_with(stamps, at=0)).text
    assert "Published" not in text and "Updated" not in text
    assert whole_story(text)
    dated = "<p>Last Updated: 01:44 IST(16/5/2013)<br>The port reopened on Friday.</p>"
    assert "The port reopened on Friday." in extract(page_with(dated, at=0)).text


def test_extraction_drops_a_timestamp_set_as_a_list_item_and_keeps_the_story() -> None:
    meta = "<ul><li>Updated 3:27 PM EST, Mon November 6, 2023</li><li>Reading time: 4 min</li></ul>"
    text = extract(page_with(meta, at=0)).text
    assert "Updated" not in text and "Reading time" not in text
    assert whole_story(text)


@pytest.mark.parametrize(
    "line", ["Maggie Haberman", "Von Gregory Lipinski", "USA TODAY Sports", "Antje Rávic Strubel"]
)
def test_a_line_that_only_names_someone(line: str) -> None:
    assert name_line(line)


@pytest.mark.parametrize(
    "line",
    ["Not this time.", "bank notes", "Thanks, Junior!", "The Port Reopened On Friday Morning"],
)
def test_a_line_that_is_more_than_a_name(line: str) -> None:
    assert not name_line(line)
