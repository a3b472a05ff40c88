"""A search box's text as a full-text query that cannot fail (SPEC F-RETRIEVAL).

Pure module (standard library only). People and agents type questions, not
query syntax: :func:`fts_query` keeps only the words of the text (and the
phrases in double quotes), quotes each one, and joins them with ``OR`` (rank
by how well a passage matches: BM25 rewards passages with more and rarer
terms) or ``AND`` (``require_all``). Punctuation, operators (``AND``, ``NEAR``,
``-``, ``*``, ``:``, parentheses) and unbalanced quotes are just text; common
English words are left out when the text has others, so "how do I reset a
password" searches for ``reset`` and ``password``. The result is valid FTS5
syntax (SQLite); the PostgreSQL backend reads the same terms.

>>> fts_query('How do I reset a password?')
'"reset" OR "password"'
>>> fts_query('"connection pool" timeout -v (NEAR)', require_all=True)
'"connection pool" AND "timeout" AND "v" AND "near"'
>>> fts_query("?!") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["STOPWORDS", "Terms", "fts_query", "query_terms"]

#: words too common to say what a passage is about (left out unless nothing else is asked)
_STOPWORDS_TEXT = """
a an and are as at be but by can could did do does for from had has have how i if in into
is it its me my no not of on or our should so than that the their them then there these
they this to was we were what when where which who whom why will with would you your
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_WORD = re.compile(r"\w+")
_PHRASE = re.compile(r'"([^"]*)"')


@dataclass(frozen=True, slots=True)
class Terms:
    """The words and phrases of a query, each a tuple of lower-case words."""

    items: tuple[tuple[str, ...], ...]


def query_terms(text: str) -> Terms:
    """The phrases (in double quotes) and the single words of ``text``, in order, once each;
    stop words are dropped from the single words when anything else remains."""
    phrases: list[tuple[str, ...]] = []
    words: list[str] = []

    def add_words(part: str) -> None:
        words.extend(w.lower() for w in _WORD.findall(part))

    last = 0
    for m in _PHRASE.finditer(text):
        add_words(text[last : m.start()])
        phrase = tuple(w.lower() for w in _WORD.findall(m.group(1)))
        if len(phrase) > 1:
            phrases.append(phrase)
        elif phrase:
            words.append(phrase[0])
        last = m.end()
    add_words(text[last:])
    content = [w for w in words if w not in STOPWORDS]
    if content or phrases:
        words = content
    items: list[tuple[str, ...]] = []
    for item in [*phrases, *((w,) for w in words)]:
        if item not in items:
            items.append(item)
    return Terms(tuple(items))


def fts_query(text: str, *, require_all: bool = False) -> str | None:
    """An FTS5 ``MATCH`` expression for ``text`` (None when it has no words at all)."""
    terms = query_terms(text).items
    if not terms:
        return None
    joiner = " AND " if require_all else " OR "
    # \\w+ words never hold a double quote, so quoting cannot be broken out of
    return joiner.join('"' + " ".join(term) + '"' for term in terms)
