"""A crawl stores what a page says word for word: code, nested lists, tables, and
ordinary paragraphs that mention cookies, copyright or newsletters."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from knowledge_crawler.testsite._guides import GUIDES
from tests.helpers import coroutine_test, query, run_crawl

pytestmark = pytest.mark.crawl


@coroutine_test
async def test_guides_are_stored_word_for_word(site: TestSite, db_url: str, tmp_path: Path) -> None:
    urls = [f"{site.url}guides/{name}" for name in GUIDES]
    seeds = tmp_path / "guides.toml"
    seeds.write_text(
        '[[source]]\nid = "guides"\nfollow_links = false\n'
        f"start_urls = [{', '.join(repr(u).replace(chr(39), chr(34)) for u in urls)}]\n",
        encoding="utf-8",
    )
    await run_crawl(db_url, seeds=str(seeds))
    stored = {
        r["canonical_url"].rsplit("/", 1)[-1]: r
        for r in query(db_url, "SELECT canonical_url, title, content FROM pages")
    }
    assert set(stored) == set(GUIDES)
    for name, (title, _, fragments) in GUIDES.items():
        content = stored[name]["content"]
        assert stored[name]["title"] == title
        for fragment in fragments:
            assert fragment in content, f"{name}: lost or changed:\n{fragment}\n---\n{content}"
        # the page chrome is boilerplate and is gone
        for chrome in ("Accept all cookies", "Reject all", "© 2026", "All rights reserved"):
            assert chrome not in content, f"{name}: kept {chrome!r}"
        assert "Subscribe to our newsletter\n" not in content + "\n"
