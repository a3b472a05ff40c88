"""Fixtures of the subprocess tests: a real scrapyd with the project deployed to it, and a
real crawl of a small loopback test site."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.e2e.scrapyd_server import ScrapydServer


@pytest.fixture(scope="session")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScrapydServer]:
    """scrapyd on a free loopback port in a temporary folder, with this checkout deployed by
    ``scrapyd-deploy``; stopped at the end of the session."""
    server = ScrapydServer(tmp_path_factory.mktemp("scrapyd"))
    server.start()
    try:
        result = server.deploy()
        assert result.returncode == 0, f"scrapyd-deploy failed:\n{server.deploy_output[-4000:]}"
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class CrawledSite:
    """A real crawl of a small loopback test site (plain http) into a SQLite file, then a
    second crawl after its first article changed (a page version, a change)."""

    site: TestSite
    db: Path
    #: the article that changed: its stored final URL (http://...) and its key (https://...)
    changed_url: str
    changed_key: str

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.db}"


@pytest.fixture(scope="session")
def crawled_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrawledSite]:
    from knowledge_crawler.transform.canonical import canonical_url
    from tests.e2e.crawl_process import crawl_to_end
    from tests.helpers import query

    db = tmp_path_factory.mktemp("crawled") / "knowledge.db"
    with TestSite(pages=8, seed=1) as site:
        crawl_to_end(db, site.url)
        key = canonical_url(site.manifest()["articles"][0]["url"])
        site.mutate(0, "text")
        crawl_to_end(db, site.url)
        [page] = query(f"sqlite:///{db}", "SELECT * FROM pages WHERE canonical_url = ?", key)
        assert key.startswith("https://") and page["final_url"].startswith("http://")
        yield CrawledSite(site, db, page["final_url"], key)
