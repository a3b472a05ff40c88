"""The crawl state (F-STATE): every URL the crawl learned survives any stop.

Real ``scrapy crawl knowledge`` processes against the loopback test site, with a source
that reaches its pages only through links (no sitemap, feed or API): a link found on a
page is stored with the page, so a crawl stopped at any moment (SIGKILL, Ctrl-C) and run
again ends with the rows of a crawl never stopped, and a stored page is revalidated (304),
never downloaded again. The same state lets a deeper ``depth_limit`` find the pages past
the old limit while the pages stored already answer 304.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.e2e.crawl_process import REPO, command, count, crawl_to_end, env, rows
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def link_seeds(tmp_path: Path, site: TestSite, depth_limit: int = 5, name: str = "links") -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[[source]]\nid = "links"\nstart_urls = ["{site.url}"]\ndepth_limit = {depth_limit}\n',
        encoding="utf-8",
    )
    return str(path)


#: four requests at a time, so that a stop lands mid-crawl on the slowed site
SLOW = "CONCURRENT_REQUESTS=4"


def fetched(db: Path) -> dict[str, str]:
    """When each stored page's content was last downloaded (a 304 does not move it)."""
    return {
        r["canonical_url"]: r["fetched_at"]
        for r in query(f"sqlite:///{db}", "SELECT canonical_url, fetched_at FROM pages")
    }


def stop_at(db: Path, seeds_file: str, stored: int, sig: signal.Signals) -> None:
    """Start a crawl and send it ``sig`` once ``stored`` pages are in the database."""
    process = subprocess.Popen(
        command(seeds_file, SLOW), cwd=REPO, env=env(db), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if count(db, "SELECT COUNT(*) FROM page_meta") >= stored:
                break
            time.sleep(0.02)
        process.send_signal(sig)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def whole(site: TestSite, tmp_path: Path) -> set[tuple[str, str, str]]:
    """The rows of the link-only crawl, never stopped."""
    db = tmp_path / "whole.db"
    crawl_to_end(db, link_seeds(tmp_path, site), SLOW)
    expected = rows(db)
    assert len(expected) > 40  # hubs, articles, copies: found only through links
    return expected


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "ctrl-c"])
def test_a_link_only_crawl_stopped_again_and_again_ends_with_the_same_rows(
    site: TestSite, tmp_path: Path, whole: set[tuple[str, str, str]], sig: signal.Signals
) -> None:
    seeds_file = link_seeds(tmp_path, site)
    db = tmp_path / "stopped.db"
    site.slow("/", 0.2)  # with 4 requests at a time (below): each stop lands mid-crawl
    rng = random.Random(23)
    marks = sorted(rng.sample(range(3, len(whole) * 2 // 3), 3))
    before: dict[str, str] = {}
    for mark in marks:
        stop_at(db, seeds_file, mark, sig)
        now = fetched(db)
        # what an earlier run stored was revalidated, never downloaded again
        assert {url: now[url] for url in before} == before
        before = now
    site.slow("/", 0)
    assert rows(db) < whole, "the stops must land mid-crawl for this test to mean anything"

    crawl_to_end(db, seeds_file, SLOW)
    assert rows(db) == whole  # nothing lost: pages found only through links included
    now = fetched(db)
    assert {url: now[url] for url in before} == before  # no stored page fetched with a 200
    assert count(db, "SELECT COUNT(*) FROM page_versions") == 0  # nothing written twice
    runs = query(f"sqlite:///{db}", "SELECT outcome, responses_200_unchanged FROM crawl_runs")
    assert sum(r["responses_200_unchanged"] for r in runs) == 0
    assert runs[-1]["outcome"] == "finished"
    # the crawl state holds no URL left undone
    assert query(f"sqlite:///{db}", "SELECT * FROM frontier WHERE state = 'discovered'") == []


def test_a_deeper_depth_limit_finds_the_pages_past_the_old_one_without_downloading_again(
    site: TestSite, tmp_path: Path
) -> None:
    deep = tmp_path / "deep.db"
    crawl_to_end(deep, link_seeds(tmp_path, site, depth_limit=3, name="deep"), SLOW)
    expected = rows(deep)

    db = tmp_path / "grown.db"
    crawl_to_end(db, link_seeds(tmp_path, site, depth_limit=1, name="shallow"), SLOW)
    shallow = fetched(db)
    assert rows(db) < expected
    # the links past the limit are known, not fetched
    past = count(db, "SELECT COUNT(*) FROM frontier WHERE depth = 2 AND state = 'discovered'")
    assert past > 0

    crawl_to_end(db, link_seeds(tmp_path, site, depth_limit=3, name="deep"), SLOW)
    assert rows(db) == expected
    now = fetched(db)
    assert {url: now[url] for url in shallow} == shallow  # the hubs only revalidated (304)
    [run] = query(f"sqlite:///{db}", "SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1")
    assert run["responses_304"] >= len(shallow)
    assert run["responses_200_unchanged"] == 0
