"""`knowledge-crawler browse`: Datasette on a small dataset, in headless Chromium and as JSON."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.store import open_store
from tests.e2e.conftest import CrawledSite
from tests.e2e.retrieval_data import SITE, Dataset, build_dataset, record

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"browse exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"browse did not listen on {port} within {limit}s:\n{log.read_text()[-3000:]}")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


@pytest.fixture
def data(db_url: str) -> Dataset:
    return build_dataset(db_url)


@contextlib.contextmanager
def serving(db_url: str, tmp_path: Path) -> Iterator[str]:
    """``knowledge-crawler browse`` running on ``db_url``: the database's base URL."""
    port = free_port()
    log = tmp_path / "browse.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "knowledge_crawler", "browse", "--db", db_url),
                *("--port", str(port), "--no-open"),
            ],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, proc, log)
        yield f"http://127.0.0.1:{port}/knowledge"
    finally:
        proc.send_signal(signal.SIGTERM)  # as a supervisor stops it; Ctrl-C ends it the same way
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    printed = log.read_text()
    assert proc.returncode == 0, printed[-3000:]
    assert f"Datasette on http://127.0.0.1:{port}/knowledge" in printed
    assert "Traceback" not in printed, printed[-3000:]


@pytest.fixture
def served(data: Dataset, tmp_path: Path) -> Iterator[str]:
    """``knowledge-crawler browse`` running on the dataset: the database's base URL."""
    with serving(data.db_url, tmp_path) as url:
        yield url


def page_texts(chromium: str, urls: list[str], shots: Path) -> list[str]:
    """Each page's rendered text, from headless Chromium (Playwright's sync API, in a thread
    of its own: the test session's event loop belongs to the Twisted reactor)."""
    from playwright.sync_api import sync_playwright

    from knowledge_crawler.crawl.chromium import LAUNCH_ARGS

    def render() -> list[str]:
        texts = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=list(LAUNCH_ARGS))
            try:
                page = browser.new_page()
                for n, url in enumerate(urls):
                    response = page.goto(url, wait_until="load")
                    assert response is not None and response.status == 200, url
                    page.screenshot(path=str(shots / f"page{n}.png"), full_page=True)
                    texts.append(page.inner_text("body"))
            finally:
                browser.close()
        return texts

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(render).result(timeout=120)


def test_canned_queries_in_chromium_and_json(
    served: str, data: Dataset, chromium: str, tmp_path: Path
) -> None:
    sanity_url = f"{served}/sanity_checks"
    search_url = f"{served}/search?" + urllib.parse.urlencode({"q": "backflow"})
    sanity_page, search_page, home = page_texts(
        chromium, [sanity_url, search_url, served], tmp_path
    )

    assert "Sanity checks" in sanity_page
    rows = [line.split("\t") for line in sanity_page.splitlines() if "\t" in line]
    assert rows == [
        ["sanity_check", "value", "verdict"],
        ["rows = distinct identities", "7 = 7", "ok"],  # six pages and the print copy
        # the print copy has the valve page's text
        [
            "content hashes under several URLs",
            "1",
            "see shared_content: exact duplicates, or a normalisation bug",
        ],
        ["pages not seen in 7 days", "1", "see stale_pages"],  # the lamp page
        ["duplicates of duplicates", "0", "ok"],
    ]

    assert "Check valves" in search_page and SITE + "/valves" in search_page
    assert "/print/valves" not in search_page  # a duplicate: left out

    for title in ("Sanity checks", "Recent changes", "Dead letters", "Search passages"):
        assert title in home  # the database page lists the canned queries

    checks = {r["sanity_check"]: r for r in get_json(f"{sanity_url}.json?_shape=array")}
    assert checks["rows = distinct identities"]["value"] == "7 = 7"
    assert checks["content hashes under several URLs"]["value"] == 1
    assert checks["pages not seen in 7 days"]["value"] == 1
    assert checks["duplicates of duplicates"] == {
        "sanity_check": "duplicates of duplicates",
        "value": 0,
        "verdict": "ok",
    }
    [shared] = get_json(f"{served}/shared_content.json?_shape=array")
    assert shared["urls"] == 2 and set(shared["canonical_urls"].split()) == {
        data.valve,
        data.valve_print,
    }
    [stale] = get_json(f"{served}/stale_pages.json?_shape=array")
    assert stale["canonical_url"] == data.lamp

    [change] = get_json(f"{served}/recent_changes.json?_shape=array")
    assert change["canonical_url"] == data.pump and change["title"] == "Centrifugal pumps"
    assert change["previous_content_hash"] != change["current_content_hash"]

    [dead] = get_json(f"{served}/dead_letters.json?_shape=array")
    assert dead["canonical_url"] == data.dead and dead["attempts"] == 6
    assert dead["last_status"] == 503 and dead["dead_lettered_at"]

    found = get_json(f"{served}/search.json?_shape=array&q=impeller")
    assert found[0]["url"] == data.pump and found[0]["score"] > 0
    assert json.loads(found[0]["heading_path"])[-1] == "How the impeller works"
    assert get_json(f"{served}/search.json?_shape=array&q=limescale") == []  # tombstoned
    assert get_json(f"{served}/search.json?_shape=array&q=") == []  # nothing asked

    # Read-only, yet not frozen: a crawl writing meanwhile is seen by the next query.
    with open_store(data.db_url) as writer:
        writer.write(
            [
                record(
                    "/turbines",
                    "Turbines",
                    "# Turbines\n\nA Pelton wheel turns water jets into torque.\n",
                    "2026-01-01T00:00:00.000000Z",
                )
            ]
        )
    [turbine] = get_json(f"{served}/search.json?_shape=array&q=pelton")
    assert turbine["canonical_url"] == SITE + "/turbines"
    with pytest.raises(urllib.error.HTTPError) as refused:
        get_json(f"{served}.json?" + urllib.parse.urlencode({"sql": "DELETE FROM page_meta"}))
    refused.value.close()
    assert refused.value.code == 400


def test_pages_and_urls_views_of_a_real_crawl_in_chromium(
    crawled_site: CrawledSite, chromium: str, tmp_path: Path
) -> None:
    """The views a crawl fills, blobs (the MinHash signatures) included, render: Datasette
    cannot link a view's row, so a binary cell is shown as its size (it answered 500)."""
    with serving(crawled_site.db_url, tmp_path) as served:
        pages, pages_sorted, urls = page_texts(
            chromium, [f"{served}/pages", f"{served}/pages?_sort=id", f"{served}/urls"], tmp_path
        )
        [row] = get_json(f"{served}/pages.json?_shape=array&_size=1&_sort=id")
    for page in (pages, pages_sorted):
        assert crawled_site.changed_url in page  # rows render, the fetched URL with them
        assert "<Binary:" in page and "bytes>" in page  # the signature, by its size
    assert crawled_site.changed_url in urls
    assert row["minhash"]["$base64"] is True  # JSON still carries the signature itself
