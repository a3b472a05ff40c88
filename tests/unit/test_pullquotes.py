"""Pull quotes (knowledge_crawler.transform.pullquotes)."""

from __future__ import annotations

from knowledge_crawler.transform.extract import extract
from knowledge_crawler.transform.pullquotes import pull_quotes

BODY = (
    "The journal said the study was approved. In hindsight, the research benefits of the "
    "paper may not have justified all of this anxiety, its author wrote on Sunday."
)
QUOTE = (
    '"In hindsight, the research benefits of the paper may not have justified all of this anxiety."'
)


def test_a_quoted_sentence_of_a_longer_block_is_a_pull_quote() -> None:
    assert pull_quotes([BODY, QUOTE, "Another paragraph."], [False, True, False]) == {1}


def test_only_eligible_short_sentences_found_in_a_longer_block_count() -> None:
    assert pull_quotes([BODY, QUOTE], [False, False]) == set()  # paragraphs are not looked at
    assert pull_quotes([QUOTE, QUOTE], [True, True]) == set()  # repeated whole: no longer block
    command = "lvcreate -n lv_base -L 1G vg_critical"
    assert pull_quotes([f"Run {command} then mount it", command], [False, True]) == set()
    assert pull_quotes(["Short quote.", "A Short quote. And more"], [True, False]) == set()


def test_extraction_drops_the_pull_quote_and_keeps_the_paragraph() -> None:
    paragraphs = "".join(
        f"<p>Paragraph {i} of the story says what happened to the paper and to the journal "
        "that printed it, and what its editors said.</p>"
        for i in range(5)
    )
    page = (
        f"<html><body><article>{paragraphs}<p>{BODY}</p><blockquote><p>{QUOTE}</p>"
        f"</blockquote>{paragraphs}</article></body></html>"
    )
    text = extract(page).text
    assert text.count("In hindsight") == 1
    assert BODY in text
