"""JavaScript sites with a real headless Chromium (SPEC F-RENDER).

The test site's ``/js/inline/<i>`` pages build their article from a script when the
DOM is ready; ``/js/fetch/<i>`` pages fetch it as JSON a moment after ``load``. Over
plain HTTP both are empty shells. Every test here checks the stored text against
what the page's script builds (``TestSite.js_expected``), word for word.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, last_run, pages_by_url, query, run_crawl, site_key

pytestmark = [pytest.mark.crawl, pytest.mark.usefixtures("chromium")]


def seeds(
    tmp_path: Path,
    site: TestSite,
    *,
    render: str,
    paths: list[str],
    wait_for: str | None = None,
    follow: bool = False,
    include: str | None = None,
) -> str:
    lines = [
        "[[source]]",
        'id = "js"',
        f"start_urls = {[site.url.rstrip('/') + p for p in paths]!r}".replace("'", '"'),
        'allowed_domains = ["localhost"]',
        f'render = "{render}"',
        f"follow_links = {'true' if follow else 'false'}",
        "depth_limit = 1",
    ]
    if wait_for is not None:
        lines.append(f"wait_for = {wait_for!r}".replace("'", '"'))
    if include is not None:
        lines.append(f"include = ['{include}']")
    path = tmp_path / f"js-{render}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def chromium_processes() -> dict[int, str]:
    """Live Chromium processes and Playwright drivers (pid -> command line), whoever their
    parent is now: a browser left behind would have been re-parented."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if ("chrom" in cmdline or "playwright/driver" in cmdline) and state != "Z":
            found[int(entry.name)] = cmdline
    return found


def assert_rendered(content: str, expected: dict[str, Any]) -> None:
    """The stored text holds everything the script built, word for word."""
    for paragraph in expected["paragraphs"]:
        assert paragraph in content
    assert expected["code"] in content  # indentation kept
    for item in expected["list"]:
        assert f"- {item['text']}" in content
        for nested in item["items"]:
            assert f"  - {nested}" in content  # nesting kept


def page(db_url: str, site: TestSite, path: str) -> dict[str, Any]:
    return pages_by_url(db_url)[site_key(site, path)]


@coroutine_test
async def test_playwright_stores_the_text_only_a_browser_sees(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    before = chromium_processes()
    paths = ["/js/inline/1", "/js/fetch/2"]
    crawler = await run_crawl(
        db_url,
        seeds=seeds(tmp_path, site, render="playwright", paths=paths, wait_for="networkidle"),
    )
    stats = crawler.stats.get_stats()
    for i, path in ((1, paths[0]), (2, paths[1])):
        expected = site.js_expected(i)
        row = page(db_url, site, path)
        assert row["title"] == expected["title"]  # document.title set by the script
        assert_rendered(row["content"], expected)
    assert stats["kc/render/browser_first"] == 2 and stats["kc/render/pages"] == 2
    assert stats["playwright/browser_count"] == 1
    # images, fonts and media were never downloaded
    assert site.hits() == dict.fromkeys(site.hits(), 0)
    assert stats["kc/render/blocked/image"] == 2 and stats["kc/render/blocked/font"] >= 1
    assert last_run(db_url)["outcome"] == "finished"
    assert chromium_processes().keys() <= before.keys()  # no browser left behind


@coroutine_test
async def test_http_render_stores_only_the_empty_shell_and_starts_no_browser(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    crawler = await run_crawl(
        db_url, seeds=seeds(tmp_path, site, render="http", paths=["/js/inline/1"])
    )
    row = page(db_url, site, "/js/inline/1")
    expected = site.js_expected(1)
    assert expected["paragraphs"][0] not in row["content"]
    assert row["title"] != expected["title"]
    assert crawler.stats.get_value("playwright/browser_count") is None
    assert not any(k.startswith("kc/render/") for k in crawler.stats.get_stats())


@coroutine_test
async def test_content_fetched_after_load_needs_a_selector_or_networkidle(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """``wait_for = "load"`` reads the page before its data arrives; a selector waits."""
    expected = site.js_expected(3)
    await run_crawl(
        db_url,
        seeds=seeds(tmp_path, site, render="playwright", paths=["/js/fetch/3"], wait_for="load"),
    )
    assert expected["paragraphs"][0] not in (page(db_url, site, "/js/fetch/3")["content"] or "")
    other = f"sqlite:///{tmp_path}/selector.db"
    await run_crawl(
        other,
        seeds=seeds(
            tmp_path, site, render="playwright", paths=["/js/fetch/3"], wait_for="#app article p"
        ),
    )
    assert_rendered(page(other, site, "/js/fetch/3")["content"], expected)


@coroutine_test
async def test_auto_renders_shells_only_and_a_recrawl_renders_only_what_changed(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    source = seeds(
        tmp_path,
        site,
        render="auto",
        paths=["/js/"],
        wait_for="networkidle",
        follow=True,
        include=r"/js/($|(inline|fetch)/[0-3]$)",
    )
    crawler = await run_crawl(db_url, seeds=source)
    stats = crawler.stats.get_stats()
    stored = pages_by_url(db_url)
    assert len(stored) == 9  # the index and eight shells
    # The index has its text in the HTML: never rendered. Every shell was, and helped.
    assert stats["kc/render/shell"] == 8 and stats["kc/render/pages"] == 8
    assert stats["kc/render/helped"] == 8
    for i in range(4):
        for kind in ("inline", "fetch"):
            assert_rendered(page(db_url, site, f"/js/{kind}/{i}")["content"], site.js_expected(i))

    # Nothing changed: every page is checked with plain HTTP, and no browser starts.
    crawler = await run_crawl(db_url, seeds=source)
    stats = crawler.stats.get_stats()
    assert stats["kc/fetch/status/304"] == 9
    assert stats.get("playwright/browser_count") is None
    assert not any(k.startswith("kc/render/") for k in stats)

    # One article changed: its two pages (and the index? no: it lists titles only)
    site.mutate(2, "text", copies=False)
    crawler = await run_crawl(db_url, seeds=source)
    stats = crawler.stats.get_stats()
    assert stats["kc/fetch/status/304"] == 7
    assert stats["kc/render/pages"] == 2
    changed = site.js_expected(2)
    for kind in ("inline", "fetch"):
        assert_rendered(page(db_url, site, f"/js/{kind}/2")["content"], changed)
    assert last_run(db_url)["responses_200_changed"] == 2


@coroutine_test
async def test_a_host_where_rendering_helped_sends_new_pages_straight_to_the_browser(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """Once rendering helped on a host, ``auto`` stops fetching its new pages twice."""
    # the index's links come after the first shell is judged: after Chromium's launch and
    # a render, which took over 3 s on a loaded machine (the links then went by HTTP first)
    site.slow("/js/?slow=1", 10.0)
    source = seeds(
        tmp_path,
        site,
        render="auto",
        paths=["/js/fetch/0", "/js/?slow=1"],
        wait_for="networkidle",
        follow=True,
        include=r"/js/(\?slow=1|(inline|fetch)/[0-3])$",
    )
    crawler = await run_crawl(db_url, seeds=source)
    stats = crawler.stats.get_stats()
    assert stats["kc/render/after_http"] == 1  # /js/fetch/0: fetched, judged a shell, rendered
    assert stats["kc/render/helped"] == 1
    assert stats["kc/render/browser_first"] == 7  # the index's other links: rendered at once
    assert stats["kc/render/pages"] == 8
    for i in range(4):
        for kind in ("inline", "fetch"):
            assert_rendered(page(db_url, site, f"/js/{kind}/{i}")["content"], site.js_expected(i))


#: retries fast enough for a test, through a browser killed or stopped mid-render
FAST_RETRY = {"KC_RETRY_BASE_SECONDS": 0.2, "KC_RETRY_MAX_SECONDS": 0.5}


def new_browsers(before: dict[int, str]) -> list[int]:
    """Browsers started since ``before`` (not their renderers, helpers or crash handlers)."""
    return [
        pid
        for pid, cmd in chromium_processes().items()
        if pid not in before
        and "/chromium" in cmd
        and "--type=" not in cmd
        and "crashpad" not in cmd
    ]


async def signal_browser_once_rendering(
    before: dict[int, str], sig: signal.Signals, sent: list[int]
) -> None:
    """Send ``sig`` to the first browser started after ``before``, a second after it
    appears, so that some pages are mid-render."""
    while not sent:
        await asyncio.sleep(0.05)
        fresh = new_browsers(before)
        if fresh:
            await asyncio.sleep(1.0)  # let some pages start
            for pid in fresh:
                with contextlib.suppress(ProcessLookupError):  # a launcher's subshell, gone
                    os.kill(pid, sig)
                    sent.append(pid)


@coroutine_test
async def test_a_killed_browser_is_started_again_and_the_crawl_completes(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    before = chromium_processes()
    site.slow("/js/data/", 0.4)  # pages stay mid-render long enough to be killed
    paths = [f"/js/fetch/{i}" for i in range(12)]
    killed: list[int] = []
    killer = asyncio.ensure_future(signal_browser_once_rendering(before, signal.SIGKILL, killed))
    try:
        crawler = await run_crawl(
            db_url,
            # a render caught in the kill may never be answered: its deadline is 2*4+10 s
            settings={**FAST_RETRY, "KC_BROWSER_TIMEOUT_SECONDS": 4},
            seeds=seeds(tmp_path, site, render="playwright", paths=paths, wait_for="networkidle"),
        )
    finally:
        killer.cancel()
    assert killed, "the browser was never seen running"
    stats = crawler.stats.get_stats()
    assert stats["playwright/browser_count"] >= 2  # launched again after the kill
    for i, path in enumerate(paths):
        assert_rendered(page(db_url, site, path)["content"], site.js_expected(i))
    assert last_run(db_url)["outcome"] == "finished"
    assert chromium_processes().keys() <= before.keys()


@coroutine_test
async def test_a_browser_that_stops_answering_is_killed_and_the_crawl_completes(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """A stopped Chromium answers nothing, not even new_page(), which has no timeout of
    its own: each render's deadline gives up on it, the browser is killed and a new one
    renders the retried pages."""
    before = chromium_processes()
    site.slow("/js/data/", 0.4)
    paths = [f"/js/fetch/{i}" for i in range(6)]
    stopped: list[int] = []
    stopper = asyncio.ensure_future(signal_browser_once_rendering(before, signal.SIGSTOP, stopped))
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        crawler = await run_crawl(
            db_url,
            settings={
                **FAST_RETRY,
                "KC_RETRY_MAX_ATTEMPTS": 6,
                "KC_BROWSER_TIMEOUT_SECONDS": 2,  # a render's deadline: 2*2+10 s
            },
            seeds=seeds(tmp_path, site, render="playwright", paths=paths, wait_for="networkidle"),
        )
    finally:
        stopper.cancel()
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert stopped, "the browser was never seen running"
    stats = crawler.stats.get_stats()
    assert stats["kc/render/deadline_exceeded"] >= 1
    assert stats["kc/render/browsers_killed"] >= 1
    assert stats["playwright/browser_count"] >= 2
    for i, path in enumerate(paths):
        assert_rendered(page(db_url, site, path)["content"], site.js_expected(i))
    assert query(db_url, "SELECT * FROM fetch_attempts WHERE dead_lettered_at IS NOT NULL") == []
    assert last_run(db_url)["outcome"] == "finished"
    assert loop.time() - started < 120  # bounded by the deadline, not by luck
    assert chromium_processes().keys() <= before.keys()


@coroutine_test
async def test_closing_a_browser_that_does_not_answer_kills_it(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """The crawl's last page is rendered, then the browser stops: closing it cannot hang
    the crawl's end, and nothing of it is left running."""
    from scrapy import signals

    before = chromium_processes()
    stopped: list[int] = []

    def stop_browsers(spider: Any, reason: str) -> None:
        for pid in new_browsers(before):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)

    from scrapy.crawler import AsyncCrawlerRunner

    from knowledge_crawler.spiders.knowledge import KnowledgeSpider
    from tests.helpers import crawl_settings

    runner = AsyncCrawlerRunner(crawl_settings(db_url))
    crawler = runner.create_crawler(KnowledgeSpider)
    crawler.signals.connect(stop_browsers, signal=signals.spider_closed)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        await crawler.crawl_async(
            seeds=seeds(tmp_path, site, render="playwright", paths=["/js/inline/1"])
        )
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert stopped, "no browser was running at the end"
    assert_rendered(page(db_url, site, "/js/inline/1")["content"], site.js_expected(1))
    assert crawler.stats.get_value("kc/render/close_timeouts") == 1
    assert loop.time() - started < 60
    await asyncio.sleep(0.5)  # the killed processes are reaped
    assert chromium_processes().keys() <= before.keys()


@coroutine_test
async def test_a_page_that_never_shows_its_selector_times_out_is_retried_then_dead_lettered(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    source = seeds(
        tmp_path, site, render="playwright", paths=["/js/inline/1"], wait_for="#never-there"
    )
    settings = {
        "KC_BROWSER_TIMEOUT_SECONDS": 1,
        "KC_RETRY_MAX_ATTEMPTS": 2,
        "KC_RETRY_BASE_SECONDS": 0.1,
        "KC_RETRY_MAX_SECONDS": 0.2,
    }
    crawler = await run_crawl(db_url, settings, seeds=source)
    assert pages_by_url(db_url) == {}  # nothing half-rendered is stored
    [state] = query(db_url, "SELECT * FROM fetch_attempts")
    assert state["attempts"] == 2 and state["dead_lettered_at"]
    assert state["last_error"] == "TimeoutError"
    assert crawler.stats.get_value("kc/retry/scheduled") == 1
