"""Passages and search over a real crawl of the loopback site (SPEC F-RETRIEVAL)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


def search(db_url: str, *args: str) -> Any:
    return CliRunner().invoke(cli, ["search", "--db", db_url, *args])


def passages_of(db_url: str, key: str) -> list[dict[str, Any]]:
    return query(
        db_url,
        "SELECT p.seq, p.id, p.content FROM passages p JOIN page_meta m ON m.id = p.page_id "
        "WHERE m.canonical_url = ? ORDER BY p.ord",
        key,
    )


@coroutine_test
async def test_a_question_finds_its_article_and_a_re_crawl_re_splits_only_what_changed(
    site: TestSite, db_url: str
) -> None:
    await run_crawl(db_url, seeds=site.url)
    articles = site.manifest()["articles"]
    article = site_key(site, articles[7]["path"])
    sentence = site.js_expected(7)["paragraphs"][2]

    result = search(db_url, sentence, "-k", "5", "--json", "--all")
    assert result.exit_code == 0, result.output
    found = [json.loads(line) for line in result.output.splitlines()]
    # The article itself answers; its exact print copy and near-duplicate syndicated copy,
    # marked duplicates, are left out.
    assert found[0]["canonical_url"] == article
    assert sentence in found[0]["content"]
    assert all("/print/" not in r["canonical_url"] for r in found)
    assert all("/syndicated/" not in r["canonical_url"] for r in found)

    other = site_key(site, articles[8]["path"])
    before, before_other = passages_of(db_url, article), passages_of(db_url, other)
    site.mutate(7, "text", copies=False)
    await run_crawl(db_url, seeds=site.url)
    after = passages_of(db_url, article)
    assert passages_of(db_url, other) == before_other  # not rewritten: same rows, same seq
    kept = {p["id"] for p in before} & {p["id"] for p in after}
    assert kept and len(kept) < len(before)  # unchanged passages keep their ids
    changed = [p for p in after if p["id"] not in kept]
    assert changed and all(p["seq"] > max(q["seq"] for q in before) for p in changed)


@coroutine_test
async def test_search_text_is_never_query_syntax(site: TestSite, db_url: str) -> None:
    await run_crawl(db_url, seeds=site.url)
    for text in ['"unbalanced', "AND OR NOT", "c++ -v (x) * ^", "NEAR(a b)", "a:b"]:
        result = search(db_url, text)
        assert result.exit_code == 0, (text, result.output)
    raw = search(db_url, "--fts", '"unbalanced')
    assert raw.exit_code == 2
    assert raw.output.strip().count("\n") == 0 and "cannot search" in raw.output
    nothing = search(db_url, "?!")
    assert nothing.exit_code == 2 and "no words" in nothing.output
    word = max(site.js_expected(3)["paragraphs"][1].split(), key=len).strip(".,")
    human = search(db_url, word, "-k", "2")
    assert human.exit_code == 0 and human.output.startswith("1. ")
    assert "(score " in human.output and f"**{word.lower()}**" in human.output.lower()
