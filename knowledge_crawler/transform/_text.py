"""Small text helpers shared by the extraction modules (private)."""

from __future__ import annotations

import re

__all__ = ["WORD_RE", "norm", "squash"]

#: A word, as the benchmark and ``word_count`` count them.
WORD_RE = re.compile(r"\w+")


def norm(text: str | None) -> str:
    """Whitespace runs collapsed to one space, ends stripped; ``None`` gives ``""``.

    ``str.split()`` splits at exactly the characters the regex ``\\s`` matches
    (``str.isspace``).
    """
    return " ".join(text.split()) if text else ""


def squash(text: str) -> str:
    """``text`` without any whitespace (element boundaries put spaces in different
    places in two renderings of the same words)."""
    return "".join(text.split())
