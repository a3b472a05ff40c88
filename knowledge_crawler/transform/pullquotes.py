"""Pull quotes: a sentence of the story shown again, larger, beside it (pure).

Magazines and news sites repeat a sentence of the article in large type between its
paragraphs ("Our goal was never to upset anyone."); in the page it is a ``<blockquote>``
or a ``<p>`` in an aside, and the extractor keeps it as one more paragraph. Labels leave
it out: its words are already in the paragraph it was taken from.

:func:`pull_quotes` finds, among the quotation blocks of an extraction, the short
sentences (six to forty words, set in quotation marks) whose words all occur, in order
and together, inside another block that is longer. Paragraphs are not looked at:
reference documentation repeats its sentences ("This is not used in Node.js and is
provided purely for completeness.") as paragraphs. A command line quoted in a manual is
not in quotation marks, nor is a health site's summary box ("Summary Studies show ..."),
which would cost a look at every block. A block repeated whole is not a pull quote: the
other block must hold more words than it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowledge_crawler.transform._text import WORD_RE

__all__ = ["pull_quotes"]

#: a pull quote is set in quotation marks
_QUOTED = re.compile(r"\s*[\"\u201c\u201e\u00ab\u2018']")
MIN_WORDS = 6
MAX_WORDS = 40


def pull_quotes(texts: Sequence[str], eligible: Sequence[bool]) -> set[int]:
    """The indexes of the ``eligible`` blocks among ``texts`` that are pull quotes.

    Only the blocks that hold a quote's longest word (a substring test on the case-folded
    text, at C speed) are split into words."""
    found: set[int] = set()
    folded: list[str] = []
    words: dict[int, tuple[str, int]] = {}  # a block's words, joined, and how many

    def words_of(j: int) -> tuple[str, int]:
        if j not in words:
            split = WORD_RE.findall(folded[j])
            words[j] = (f" {' '.join(split)} ", len(split))
        return words[j]

    for i, text in enumerate(texts):
        if not eligible[i] or _QUOTED.match(text) is None:
            continue
        if not folded:
            folded = [other.casefold() for other in texts]
        quote, count = words_of(i)
        if not MIN_WORDS <= count <= MAX_WORDS:
            continue
        probe = max(quote.split(), key=len)
        for j, other in enumerate(folded):
            if j == i or probe not in other:
                continue
            joined, other_count = words_of(j)
            if other_count > count and quote in joined:
                found.add(i)
                break
    return found
