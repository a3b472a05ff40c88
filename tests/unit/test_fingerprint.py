"""Content hashes: the mutation table of seed 000, through clean_text then content_hash."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge_crawler.transform.clean import clean_text, word_count
from knowledge_crawler.transform.fingerprint import content_hash, normalize_for_hash

V1 = """# Aura Desk Lamp

Skip to main content

A warm, dimmable desk lamp with a brushed brass arm.

Price: $49.00

In stock

Free shipping on orders over $50.

## Reviews

Great light for reading. - Sam

© store.example.com. Page generated at 14:32:07."""


def fp(text: str) -> str:
    return content_hash(clean_text(text))


@pytest.mark.parametrize(
    ("mutation", "mutated", "moves"),
    [
        ("timestamp in footer", V1.replace("14:32:07", "09:15:44"), False),
        (
            "whitespace / line breaks",
            V1.replace("\n\n", "\n\n\n  ").replace(" warm,", "  warm,"),
            False,
        ),
        ("case of a heading", V1.replace("# Aura Desk Lamp", "# AURA DESK LAMP"), False),
        ("price $49 -> $59", V1.replace("$49.00", "$59.00"), True),
        ("description rewritten", V1.replace("brushed brass arm", "matte black arm"), True),
        ("new review appended", V1.replace("- Sam", "- Sam\n\nToo dim for me. - Ana"), True),
        ("in stock -> out of stock", V1.replace("In stock", "Out of stock"), True),
    ],
)
def test_seed_000_mutation_table(mutation: str, mutated: str, moves: bool) -> None:
    assert (fp(mutated) != fp(V1)) is moves, mutation


def test_boilerplate_lines_are_removed_and_content_kept() -> None:
    cleaned = clean_text(V1)
    assert "Page generated" not in cleaned and "Skip to main content" not in cleaned
    assert "Price: $49.00" in cleaned and "In stock" in cleaned


def test_source_patterns_apply_after_defaults() -> None:
    import re

    text = "Body text here.\nAdvertisement: buy now\nMore body."
    assert (
        clean_text(text, [re.compile(r"^Advertisement:.*$", re.M)])
        == "Body text here.\n\nMore body."
    )


def test_word_count_ignores_markdown() -> None:
    assert word_count("# Title\n\n* one, two\n\n| a | b |") == 5


@given(st.text())
def test_clean_is_idempotent(text: str) -> None:
    once = clean_text(text)
    assert clean_text(once) == once


@given(st.text(), st.sampled_from([" ", "\n", "\t", "  \n "]))
def test_hash_ignores_whitespace(text: str, ws: str) -> None:
    noisy = ws + ws.join(text.split()) + ws
    assert content_hash(noisy) == content_hash(text)
    assert normalize_for_hash(noisy) == normalize_for_hash(text)
    assert len(content_hash(text)) == 64


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_hash_ignores_ascii_case(text: str) -> None:
    assert content_hash(text.upper()) == content_hash(text.lower())


def _regex_form(text: str) -> str:
    """What the hash was first taken over: a regex collapsing whitespace runs."""
    return re.sub(r"\s+", " ", text).strip().lower()


@given(st.text())
def test_the_hashed_form_is_the_regex_form(text: str) -> None:
    # Stored hashes must compare equal across versions: the faster split/join form
    # collapses exactly the characters the regex did.
    assert normalize_for_hash(text) == _regex_form(text)


def test_every_whitespace_character_collapses_as_the_regex_did() -> None:
    for code in range(0x110000):
        text = f"a{chr(code)}{chr(code)}b "
        assert normalize_for_hash(text) == _regex_form(text), hex(code)
