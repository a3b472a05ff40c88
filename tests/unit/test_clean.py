"""Cleaning never changes meaning: code, list nesting, tables and ordinary paragraphs are
stored word for word; only standalone boilerplate banners, script/style leftovers and
whitespace noise go (``knowledge_crawler.transform.clean``)."""

from __future__ import annotations

import doctest
import re

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from knowledge_crawler.transform import clean as clean_module
from knowledge_crawler.transform.clean import clean_text, word_count

_WORDS = re.compile(r"\w+")

CODE_PY = """def parse(lines):
    result = {}
    for line in lines:
        if not line.strip():
            continue
        result[line] = True
    return result"""

# --------------------------------------------------------------------------- verbatim


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"Intro.\n\n```\n{CODE_PY}\n```\n\nOutro.", id="python-indentation"),
        pytest.param("```\ndef f():\n    if x:\n        return 1\n```", id="brief-example"),
        pytest.param(
            'Compose:\n\n```\nservices:\n  web:\n    image: "nginx:1.27"\n    ports:\n'
            '      - "8080:80"\n```',
            id="yaml",
        ),
        pytest.param(
            "```\ncol_a    col_b\n1        2\n\n\n\nafter three blank lines\t\x0b\n```",
            id="code-inner-runs-blank-lines-tabs",
        ),
        pytest.param("```\nx\u00a0=\u00a01  \n```", id="code-nbsp-and-trailing-spaces"),
        pytest.param(
            "- Input handling\n  - blank lines\n  - lines without an equals sign\n"
            "    - reject them, or\n    - treat them as flags\n- Output\n"
            "  1. keys are stripped\n  2. values are stripped",
            id="nested-lists",
        ),
        pytest.param(
            "Plain-text form of a nested list:\n\nparent\n  child\n    grandchild",
            id="text-form-nesting",
        ),
        pytest.param(
            "| Input | Result |\n| --- | --- |\n|  |  |\n| a = 1 = 2 | {} |", id="table-empty-cells"
        ),
        pytest.param("Source\tAmount\nCity  council\t2.1  million", id="text-form-table"),
        pytest.param(
            "Text.\n\n````\n```\nSkip to content\n```\n"
            "\u00a9 2024 Example Inc. All rights reserved.\n````\n\nMore text.",
            id="longer-fence-with-banners-inside",
        ),
        pytest.param(
            "```\n<script>alert(1)</script>\n<style>p { color: red }</style>\n```",
            id="html-tutorial-code",
        ),
        pytest.param("~~~\n  indented\n\n\n\n~~~", id="tilde-fence"),
    ],
)
def test_structure_is_kept_verbatim(text: str) -> None:
    assert clean_text(text) == text


def test_code_of_a_page_keeps_its_indentation() -> None:
    text = "def f():\n    if x:\n        return 1"
    assert clean_text(f"```\n{text}\n```") == f"```\n{text}\n```"


# --------------------------------------------------------------------------- ordinary text

ORDINARY = [
    "Many sites say we use cookies to remember you; this article explains why that matters "
    "for privacy, and what the law actually requires of them.",
    "When a banner says we use cookies, it usually means two different things: a session "
    "identifier that keeps you signed in, and an analytics tag that follows you around.",
    "We use cookies ourselves, and this paragraph is about that fact rather than a banner: "
    "one cookie remembers your theme, and nothing is sent to anybody else.",
    "Copyright law differs between countries, so check yours.",
    "Copyright belongs to the author from the moment a work is fixed in a tangible form.",
    "Readers often ask why we do not simply let them subscribe to our newsletter from every page.",
    "Skip to content links exist for keyboard users, and a good one is the first thing a "
    "screen reader announces on the page.",
    "Accept cookies only from sites you trust.",
    "(c) the tenant pays the deposit before moving in.",
    "All rights are reserved to the people, says the constitution.",
    "The page generated a lot of traffic.",
    "Out of stock",
    "Price: $59.00",
    "In stock",
]


@pytest.mark.parametrize("paragraph", ORDINARY)
def test_ordinary_paragraphs_survive(paragraph: str) -> None:
    text = f"Intro paragraph.\n\n{paragraph}\n\nLast paragraph."
    assert clean_text(text) == text
    assert clean_text(paragraph) == paragraph
    assert clean_text(f"- {paragraph}") == f"- {paragraph}"


# --------------------------------------------------------------------------- banners

BANNERS = [
    "Skip to content",
    "Skip to main content",
    "We use cookies to improve your experience. Accept all cookies / Reject",
    "We use cookies to improve your experience.",
    "This website uses cookies. By continuing to browse you agree to our cookie policy.",
    "Accept all cookies / Reject",
    "Accept all cookies Reject all Settings",
    "Subscribe to our newsletter",
    "## Subscribe to our newsletter",
    "Sign up for our newsletter and get the best stories every Friday.",
    "\u00a9 2024 Example Inc. All rights reserved.",
    "\u00a9 localhost 2024\u20132025 Localhost Journal. All rights reserved.",
    "Copyright 2024 The Daily Example. All rights reserved. Privacy policy.",
    "Copyright (c) 2020 Scrapinghub",
    "All rights reserved.",
    "Page generated at 14:32:07",
    "Page generated in 0.042 seconds.",
    "\u00a9 store.example.com. Page generated at 14:32:07.",
]


@pytest.mark.parametrize("banner", BANNERS)
def test_banner_blocks_are_removed(banner: str) -> None:
    assert clean_text(banner) == ""
    assert clean_text(f"Intro paragraph.\n\n{banner}\n\nLast paragraph.") == (
        "Intro paragraph.\n\nLast paragraph."
    )


@pytest.mark.parametrize("banner", BANNERS)
def test_banner_lines_inside_a_block_are_removed(banner: str) -> None:
    assert clean_text(f"Aura Desk Lamp\n{banner}\n$49.00") == "Aura Desk Lamp\n$49.00"


@pytest.mark.parametrize("banner", BANNERS)
def test_banner_text_inside_code_is_kept(banner: str) -> None:
    text = f"Example footer:\n\n```\n{banner}\n```"
    assert clean_text(text) == text


@pytest.mark.parametrize(
    "block",
    [
        "We use cookies to improve your experience. Accept all cookies / Reject",
        "\u00a9 2024 Example Inc. All rights reserved.",
        "Subscribe to our newsletter for the latest headlines.",
    ],
)
def test_long_banner_like_blocks_are_kept(block: str) -> None:
    """Only short blocks are banners: past the limit a block is somebody's text."""
    from knowledge_crawler.transform.clean import BANNER_MAX_WORDS

    long_block = block + " " + " ".join(["word"] * BANNER_MAX_WORDS)
    assert clean_text(long_block) == long_block


def test_banner_line_glued_to_a_sentence_is_kept() -> None:
    """A line is removed whole or not at all: never the tail of somebody's sentence."""
    text = "The vote passed. Skip to content"
    assert clean_text(text) == text


def test_seed_000_page() -> None:
    page = (
        "# Aura Desk Lamp\n\nSkip to main content\n\nA warm, dimmable desk lamp.\n\n"
        "Price: $59.00\n\nOut of stock\n\n\u00a9 store.example.com. Page generated at 14:32:07."
    )
    assert clean_text(page) == (
        "# Aura Desk Lamp\n\nA warm, dimmable desk lamp.\n\nPrice: $59.00\n\nOut of stock"
    )


# --------------------------------------------------------------------------- source patterns


@pytest.mark.parametrize(
    "pattern",
    [
        re.compile(r"^Share this$"),
        re.compile(r"^Share this$", re.MULTILINE),
        re.compile(r"^share THIS$", re.IGNORECASE),
    ],
    ids=["plain", "multiline", "ignorecase"],
)
def test_source_patterns_match_per_line_however_compiled(pattern: re.Pattern[str]) -> None:
    text = "Lamps\nShare this\nThe Aura lamp is bright.\nEnd."
    assert clean_text(text, [pattern]) == "Lamps\n\nThe Aura lamp is bright.\nEnd."
    assert clean_text("Please Share this page", [pattern]) == "Please Share this page"


def test_source_pattern_keeps_its_flags_and_removes_only_the_match() -> None:
    pattern = re.compile(r"Advertisement:\s*", re.IGNORECASE)
    assert clean_text("ADVERTISEMENT: Body text.", [pattern]) == "Body text."


def test_source_patterns_do_not_touch_code() -> None:
    text = "Share this\n\n```\nShare this\n```"
    assert clean_text(text, [re.compile("^Share this$")]) == "```\nShare this\n```"


def test_source_pattern_recompilation_is_cached() -> None:
    from knowledge_crawler.transform.clean import _per_line

    pattern = re.compile(r"^Ads$")
    assert _per_line(pattern) is _per_line(pattern)
    assert _per_line(pattern).flags & re.MULTILINE
    already = re.compile(r"^Ads$", re.MULTILINE)
    assert _per_line(already) is already


# --------------------------------------------------------------------------- whitespace


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  \nb\t\n", "a\nb"),
        ("a\u00a0b", "a b"),
        ("a\n\n\n\nb", "a\n\nb"),
        ("a\n \n\t\n\u00a0\nb", "a\n\nb"),
        ("\n\n  \nText\n\n", "Text"),
        ("Too   many    spaces here.", "Too many spaces here."),
        ("- item  with   spaces", "- item with spaces"),
        ("  - nested  item", "  - nested item"),
        ("a\r\nb", "a\nb"),
    ],
)
def test_whitespace_normalisation(text: str, expected: str) -> None:
    assert clean_text(text) == expected


def test_script_and_style_leftovers_are_removed() -> None:
    text = "Text.\n\n<script>var a = 1;\nrun(a);</script>\n<style>p{}</style>\n\nHere."
    assert clean_text(text) == "Text.\n\nHere."


def test_a_tag_quoted_in_a_sentence_is_what_the_page_says() -> None:
    """An HTML tutorial's "add <script src=...></script> to the head" lost its tag: the
    extractor removes script and style elements, so a tag left in the text was written
    by the page (as &lt;script&gt;)."""
    text = (
        'To load it, add <script src="lib.js"></script> to the head.\n\n'
        "A <style>body { margin: 0 }</style> block applies to the whole page.\n\n"
        "<script> tags may come anywhere.\n\nAnd end with </script>."
    )
    assert clean_text(text) == text


@pytest.mark.parametrize("info", ["css", "javascript", "script", "style", "js"])
def test_fenced_code_is_kept_whatever_its_language(info: str) -> None:
    text = f"Text.\n\n```{info}\np {{ x: 1 }}\n  <script>a()</script>\n```"
    assert clean_text(text) == text


# --------------------------------------------------------------------------- properties

_PIECES = st.sampled_from(
    [
        "\n",
        "\n\n",
        "\n\n\n",
        " ",
        "  ",
        "\t",
        "\u00a0",
        "```",
        "````",
        "~~~",
        "- ",
        "  - ",
        "1. ",
        "| ",
        " |",
        "# ",
        "> ",
        "word",
        "Text.",
        "Skip to content",
        "We use cookies to improve your experience.",
        "Accept all cookies",
        " / Reject",
        "Subscribe to our newsletter",
        "\u00a9 2024 Example Inc.",
        " All rights reserved.",
        "Copyright 2024",
        "Page generated at 14:32:07",
        " <script>x</script> ",
        " <style>",
        "</style> ",
        "```javascript\nx\n```",
    ]
)
_DOCS = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=400)
@given(st.one_of(st.text(), _DOCS))
@example("\xa0<SCRIPT</SCRIPT>")  # a no-break space before a leftover: removed in one pass
def test_clean_is_idempotent(text: str) -> None:
    once = clean_text(text)
    assert clean_text(once) == once


@settings(max_examples=300)
@given(st.one_of(st.text(), _DOCS))
def test_clean_only_removes_words(text: str) -> None:
    """Words are never added or reordered: the output's tokens are a subsequence.

    (Removing ``a<style></style>b`` joins ``a`` and ``b``, as a browser renders it.)"""
    assume(not re.search(r"\w<|>\w", text))
    it = iter(_WORDS.findall(text))
    assert all(token in it for token in _WORDS.findall(clean_text(text)))


_CODE_LINE = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\n`~\r"),
    max_size=30,
)


@given(st.lists(_CODE_LINE, min_size=1, max_size=8).map("\n".join), _DOCS)
def test_code_blocks_are_never_changed(code: str, around: str) -> None:
    text = f"Before.\n\n```\n{code}\n```\n\nAfter.\n\n{around}"
    assert f"```\n{code}\n```" in clean_text(text)


# --------------------------------------------------------------------------- misc


def test_doctests_in_the_module_pass() -> None:
    result = doctest.testmod(clean_module)
    assert result.attempted > 0
    assert result.failed == 0


def test_word_count_ignores_markdown() -> None:
    assert word_count("# Title\n\n- one, two") == 3


def test_extract_then_clean_keeps_code_and_nested_lists() -> None:
    """The crawl's own sequence on one page: extract().markdown, then clean_text."""
    from html import escape

    from knowledge_crawler.transform.extract import extract

    html = (
        "<html><head><title>Parsing | Site</title></head><body>"
        '<a href="#main">Skip to content</a>'
        "<article><h1>Parsing</h1><p>Most configuration formats are simpler than they look, "
        "and this guide writes a parser for them in a dozen lines of code.</p>"
        f"<pre><code>{escape(CODE_PY)}</code></pre>"
        "<ul><li>Input handling<ul><li>blank lines</li><li>lines without an equals sign"
        "<ul><li>reject them, or</li><li>treat them as flags</li></ul></li></ul></li>"
        "<li>Output<ol><li>keys are stripped</li><li>values are stripped</li></ol></li></ul>"
        "<p>Copyright law differs between countries, so check yours.</p></article>"
        "<footer><p>\u00a9 2026 Test Magazine. All rights reserved.</p></footer></body></html>"
    )
    markdown = extract(html).markdown
    cleaned = clean_text(markdown)
    for fragment in (
        f"```\n{CODE_PY}\n```",
        "- Input handling\n  - blank lines\n  - lines without an equals sign\n"
        "    - reject them, or\n    - treat them as flags\n- Output\n"
        "  1. keys are stripped\n  2. values are stripped",
        "Copyright law differs between countries, so check yours.",
    ):
        assert fragment in markdown
        assert fragment in cleaned
