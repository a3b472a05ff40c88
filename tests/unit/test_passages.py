"""Splitting content into passages (SPEC F-RETRIEVAL): by headings, bounded, word for word."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.transform.passages import passage_id, split_passages

WORD = re.compile(r"\w+")

DOC = """Lead paragraph before any heading.

# Guide

Intro to the guide.

## Install

Run the installer.

```
def f():

    if x:
        return 1
```

### Linux

- apt
  - bookworm

## Use

| a | b |
| --- | --- |
| 1 | 2 |

# Appendix

## Empty

## Notes

Last words."""


def test_sections_follow_the_heading_tree() -> None:
    got = [(p.heading_path, p.text) for p in split_passages(DOC)]
    assert got == [
        ((), "Lead paragraph before any heading."),
        (("Guide",), "Intro to the guide."),
        (
            ("Guide", "Install"),
            "Run the installer.\n\n```\ndef f():\n\n    if x:\n        return 1\n```",
        ),
        (("Guide", "Install", "Linux"), "- apt\n  - bookworm"),  # nesting kept
        (("Guide", "Use"), "| a | b |\n| --- | --- |\n| 1 | 2 |"),
        (("Appendix", "Notes"), "Last words."),  # an empty section makes no passage
    ]
    assert [p.ord for p in split_passages(DOC)] == list(range(6))


def test_every_word_of_the_content_but_its_headings_is_in_a_passage() -> None:
    passages = split_passages(DOC, max_words=3)
    words = [w for p in passages for w in WORD.findall(p.text)]
    body = WORD.findall("\n".join(line for line in DOC.split("\n") if not line.startswith("#")))
    assert sorted(words) == sorted(body)


def test_long_sections_are_cut_between_blocks_then_lines_then_sentences() -> None:
    paragraphs = [" ".join(f"w{i}x{j}" for j in range(40)) + "." for i in range(5)]
    passages = split_passages("\n\n".join(paragraphs), max_words=100)
    assert [p.word_count for p in passages] == [80, 80, 40]
    assert passages[0].text == "\n\n".join(paragraphs[:2])  # whole blocks, as stored
    long_line = " ".join(f"Sentence number {i} ends here." for i in range(60))
    cut = split_passages(long_line, max_words=50)
    assert all(p.word_count <= 50 for p in cut)
    assert all(p.text.endswith("here.") for p in cut)  # cut between sentences
    assert " ".join(p.text for p in cut) == long_line


def test_a_long_code_block_is_cut_between_lines_and_each_piece_fenced() -> None:
    code = "\n".join(f"    line_{i} = compute({i})" for i in range(120))
    passages = split_passages(f"```\n{code}\n```", max_words=50)
    assert len(passages) > 1
    for p in passages:
        assert p.text.startswith("```\n") and p.text.endswith("\n```")
        assert p.word_count <= 50 + 2
    lines = [line for p in passages for line in p.text.split("\n")[1:-1]]
    assert "\n".join(lines) == code  # indentation and order kept


def test_ids_are_stable_and_follow_the_text_not_the_neighbours() -> None:
    before = split_passages(DOC, source_id="s", canonical_url="https://x/a")
    edited = DOC.replace("Intro to the guide.", "A rewritten intro.")
    after = split_passages(edited, source_id="s", canonical_url="https://x/a")
    assert before[0].id == after[0].id and before[2].id == after[2].id
    assert before[1].id != after[1].id
    assert split_passages(DOC, source_id="s", canonical_url="https://x/b")[0].id != before[0].id
    assert before[0].id == passage_id("s", "https://x/a", (), "Lead paragraph before any heading.")


def test_repeated_identical_passages_get_distinct_ids() -> None:
    doc = "## Example\n\nSame.\n\n## Example\n\nSame."
    passages = split_passages(doc, source_id="s", canonical_url="https://x/a")
    assert [p.text for p in passages] == ["Same.", "Same."]
    assert len({p.id for p in passages}) == 2


def test_headings_inside_code_blocks_are_code() -> None:
    passages = split_passages("## Real\n\n```\n# not a heading\n\nx = 1\n```")
    assert [p.heading_path for p in passages] == [("Real",)]


def test_empty_content_has_no_passages() -> None:
    assert split_passages("") == [] and split_passages("\n\n  \n") == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="abc def.\n", min_size=1, max_size=80),
            st.sampled_from(["# H1", "## H2", "### H3", "```\ncode x\n\n  y\n```", "- a\n  - b"]),
        ),
        max_size=12,
    ),
    st.integers(min_value=1, max_value=30),
)
def test_any_content_splits_into_bounded_passages_that_keep_its_words(
    blocks: list[str], max_words: int
) -> None:
    content = "\n\n".join(blocks)
    passages = split_passages(content, max_words=max_words)
    headings = " ".join(h for b in blocks for h in re.findall(r"^#{1,6} (.*)$", b, re.M))
    kept = sorted(w for p in passages for w in WORD.findall(p.text))
    fences = sum(p.text.count("```") for p in passages) - content.count("```")
    assert len(kept) + len(WORD.findall(headings)) >= len(WORD.findall(content)) - fences
    for p in passages:
        assert p.word_count == len(WORD.findall(p.text))  # the passage's own words
        single = len(p.text.split()) == 1
        assert p.word_count <= max_words + 2 or single  # + a piece's re-added fence words
