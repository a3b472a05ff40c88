"""The unified diff of two stored texts (transform.diff), as `changes` shows it."""

from __future__ import annotations

import doctest

import pytest

from knowledge_crawler.transform import diff as diff_module
from knowledge_crawler.transform.diff import text_diff

OLD = "# Title\n\nFirst paragraph.\n\nPrice: $49.\n\nLast paragraph.\n\nFooter."
NEW = "# Title\n\nFirst paragraph.\n\nPrice: $59.\n\nLast paragraph.\n\nFooter."


def test_one_changed_line_with_context_and_labels() -> None:
    out = text_diff(OLD, NEW, old_label="p\t2026-01-01", new_label="p\t2026-01-02").splitlines()
    assert out[:2] == ["--- p\t2026-01-01", "+++ p\t2026-01-02"]
    assert out[2].startswith("@@ ")
    assert "-Price: $49." in out and "+Price: $59." in out
    # two lines of context either side, no further
    assert out[3:] == [
        " First paragraph.",
        " ",
        "-Price: $49.",
        "+Price: $59.",
        " ",
        " Last paragraph.",
    ]


def test_context_is_adjustable() -> None:
    out = text_diff(OLD, NEW, context=0).splitlines()
    assert out[2:] == ["@@ -5 +5 @@", "-Price: $49.", "+Price: $59."]
    with pytest.raises(ValueError, match="context"):
        text_diff(OLD, NEW, context=-1)


def test_equal_texts_and_line_endings_give_no_diff() -> None:
    assert text_diff(OLD, OLD) == ""
    assert text_diff("a\nb\n", "a\r\nb") == ""


def test_added_and_removed_text() -> None:
    assert text_diff("", "new page").splitlines()[2:] == ["@@ -0,0 +1 @@", "+new page"]
    assert text_diff("old page", "").splitlines()[2:] == ["@@ -1 +0,0 @@", "-old page"]


def test_separate_changes_are_separate_hunks() -> None:
    old = "\n".join(f"line {i}" for i in range(20))
    new = old.replace("line 2", "LINE 2").replace("line 17", "LINE 17")
    hunks = [line for line in text_diff(old, new).splitlines() if line.startswith("@@")]
    assert len(hunks) == 2


def test_doctests() -> None:
    assert doctest.testmod(diff_module).failed == 0
