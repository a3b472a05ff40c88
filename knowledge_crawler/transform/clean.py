"""Text cleaning applied after extraction and before hashing (SPEC F-PIPELINE step 2).

Pure module. Removes script/style leftovers, boilerplate lines matched by the
default patterns plus the source's own ``boilerplate`` regexes, and
normalises whitespace. Patterns are written to remove boilerplate only: a
line such as "Out of stock" or "Price: $59.00" must survive, so that real
changes still move the content hash.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["DEFAULT_BOILERPLATE", "clean_text", "word_count"]

#: Boilerplate that survives main-content extraction on many sites.
DEFAULT_BOILERPLATE: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE | re.MULTILINE)
    for p in (
        r"^[ \t]*skip to (?:main )?content[ \t]*$",
        r"accept all cookies.*?(?:reject(?: all)?|settings|preferences)",
        r"^.*\bwe use cookies\b.*$",
        r"^.*subscribe to our newsletter.*$",
        r"^[ \t]*(?:©|\(c\)|copyright\b).*$",
        r"^.*\bpage generated (?:at|in|on)\b.*$",
    )
)

_SCRIPT_STYLE = re.compile(r"<(script|style|noscript)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_FENCED_SCRIPT = re.compile(r"```(?:script|style|javascript|css)\b.*?```", re.DOTALL)
_SPACES = re.compile(r"[ \t\u00a0]+")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")


def clean_text(text: str, patterns: Iterable[re.Pattern[str]] = ()) -> str:
    """Strip boilerplate and normalise whitespace; idempotent.

    >>> clean_text("Aura Desk Lamp\\n$49.00\\n© store.example.com. Page generated at 14:32:07.")
    'Aura Desk Lamp\\n$49.00'
    """
    text = _SCRIPT_STYLE.sub("", text)
    text = _FENCED_SCRIPT.sub("", text)
    for pattern in (*DEFAULT_BOILERPLATE, *patterns):
        text = pattern.sub("", text)
    text = _SPACES.sub(" ", text)
    text = _TRAILING.sub("\n", text)
    text = _BLANKS.sub("\n\n", text)
    return text.strip()


_WORD = re.compile(r"\w+")


def word_count(text: str) -> int:
    """Number of ``\\w+`` tokens: markdown punctuation does not count.

    >>> word_count("# Title\\n\\n- one, two")
    3
    """
    return len(_WORD.findall(text))
