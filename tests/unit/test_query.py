"""Search-box text as a full-text query that never fails (SPEC F-RETRIEVAL)."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.transform.query import fts_query, query_terms


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    conn.executemany(
        "INSERT INTO t (body) VALUES (?)",
        [("How to reset a forgotten password",), ("Connection pool timeout settings",)],
    )
    return conn


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("reset password", '"reset" OR "password"'),
        ("How do I reset my password?", '"reset" OR "password"'),
        ("the", '"the"'),  # only stop words: keep them
        ('"connection pool" timeout', '"connection pool" OR "timeout"'),
        ('unbalanced "quote here', '"unbalanced" OR "quote" OR "here"'),
        ("NOT a AND b OR c NEAR(d)", '"b" OR "c" OR "near" OR "d"'),
        ("c++ -v path/to:file *", '"c" OR "v" OR "path" OR "file"'),
        ("Überprüfung naïve", '"überprüfung" OR "naïve"'),
        ("reset reset Reset", '"reset"'),
        ('""', None),
        ("?!*^", None),
        ("", None),
    ],
)
def test_queries_are_built_from_words_only(text: str, query: str | None) -> None:
    assert fts_query(text) == query


def test_require_all_joins_with_and(fts: sqlite3.Connection) -> None:
    assert fts_query("reset password", require_all=True) == '"reset" AND "password"'
    rows = fts.execute("SELECT body FROM t WHERE t MATCH ?", (fts_query("reset pool"),)).fetchall()
    assert len(rows) == 2
    strict = fts_query("reset pool", require_all=True)
    assert fts.execute("SELECT body FROM t WHERE t MATCH ?", (strict,)).fetchall() == []


def test_terms_keep_phrases_apart() -> None:
    assert query_terms('"a b" c').items == (("a", "b"), ("c",))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.booleans())
def test_no_text_breaks_the_index(fts: sqlite3.Connection, text: str, require_all: bool) -> None:
    query = fts_query(text, require_all=require_all)
    if query is not None:
        fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (query,)).fetchone()
