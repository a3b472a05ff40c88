"""Pull quotes: a sentence of the story shown again, larger, beside it (pure).

Magazines and news sites repeat a sentence of the article in large type between its
paragraphs ("Our goal was never to upset anyone."); in the page it is a ``<blockquote>``
or a ``<p>`` in an aside, and the extractor keeps it as one more paragraph. Labels leave
it out: its words are already in the paragraph it was taken from.

:func:`pull_quotes` finds, among the quotation blocks of an extraction, the short
sentences (six to forty words, ending as a sentence or set in quotation marks) whose
words all occur, in order and together, inside another block that is longer.
Paragraphs are not looked at: reference documentation repeats its sentences ("This is
not used in Node.js and is provided purely for completeness.") as paragraphs, and a
command line quoted in a manual is not a sentence. A block repeated whole is not a pull
quote: the other block must hold more words than it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowledge_crawler.transform._text import WORD_RE

__all__ = ["pull_quotes"]

#: a pull quote is a sentence: it ends as one, or is set in quotation marks
_SENTENCE = re.compile(r"[.!?\u2026][\"\u201d\u2019']?\s*$|^\s*[\"\u201c\u00ab]")
MIN_WORDS = 6
MAX_WORDS = 40
_KEY = 3  # words of a quote looked up to find the blocks it may come from


def pull_quotes(texts: Sequence[str], eligible: Sequence[bool]) -> set[int]:
    """The indexes of the ``eligible`` blocks among ``texts`` that are pull quotes."""
    if not any(eligible):
        return set()
    words = [WORD_RE.findall(text.casefold()) for text in texts]
    candidates = [
        i
        for i, w in enumerate(words)
        if eligible[i] and MIN_WORDS <= len(w) <= MAX_WORDS and _SENTENCE.search(texts[i])
    ]
    if not candidates:
        return set()
    keys = {tuple(words[i][:_KEY]) for i in candidates}
    holders: dict[tuple[str, ...], set[int]] = {}
    for j, w in enumerate(words):
        for at in range(len(w) - _KEY + 1):
            key = tuple(w[at : at + _KEY])
            if key in keys:
                holders.setdefault(key, set()).add(j)
    found = set()
    for i in candidates:
        quote = " " + " ".join(words[i]) + " "
        for j in holders.get(tuple(words[i][:_KEY]), ()):
            if j != i and len(words[j]) > len(words[i]) and quote in f" {' '.join(words[j])} ":
                found.add(i)
                break
    return found
