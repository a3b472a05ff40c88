"""Junk 200s on the loopback site: a stored page that starts answering 200 with an empty
body, 256 KiB of binary labelled text/html or a short error page keeps its stored text;
the answer is a parse failure (``fetch_attempts``, with its reason and the archived
response as evidence, counted in ``parse_failures``); only the same answer repeated over
the source's deletion window (``missing_after``, ``missing_window``) becomes the page's
new content."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.archive.warc import read_record
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, last_run, query, run_crawl, site_key

pytestmark = pytest.mark.crawl

WINDOW = 6  # seconds: the source's missing_window

EMPTY, BINARY, ERROR = "/faults/doc/empty-soon", "/faults/doc/binary-soon", "/faults/doc/error-soon"
#: a URL never stored that answers binary labelled text/html from the start
NEW_BINARY = "/faults/binary"


def seeds_file(tmp_path: Path, site: TestSite) -> str:
    urls = ", ".join(f'"{site.url.rstrip("/")}{p}"' for p in (EMPTY, BINARY, ERROR, NEW_BINARY))
    path = tmp_path / "junk.toml"
    path.write_text(
        "\n".join(
            [
                "[[source]]",
                'id = "j"',
                f"start_urls = [{urls}]",
                "follow_links = false",
                "missing_after = 2",
                f'missing_window = "{WINDOW}s"',
                'min_interval = "1s"',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return str(path)


def page(db_url: str, site: TestSite, path: str) -> dict[str, Any]:
    [row] = query(db_url, "SELECT * FROM pages WHERE canonical_url = ?", site_key(site, path))
    return row


def attempt(db_url: str, site: TestSite, path: str) -> dict[str, Any] | None:
    rows = query(
        db_url, "SELECT * FROM fetch_attempts WHERE canonical_url = ?", site_key(site, path)
    )
    return rows[0] if rows else None


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


@coroutine_test
async def test_a_junk_200_keeps_the_stored_text_until_it_repeats_over_the_window(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = seeds_file(tmp_path, site)
    await run_crawl(db_url, seeds=seeds)
    good = {path: page(db_url, site, path) for path in (EMPTY, BINARY, ERROR)}
    assert all(row["word_count"] > 100 for row in good.values())
    # a URL never stored that answers binary as HTML: refused with its reason, counted
    [refused] = query(
        db_url, "SELECT * FROM urls WHERE canonical_url = ?", site_key(site, NEW_BINARY)
    )
    assert (refused["state"], refused["reason"]) == ("refused", "binary body served as text/html")
    assert last_run(db_url)["parse_failures"] == 1

    site.fault(EMPTY, 200, "empty")
    site.fault(BINARY, 200, "binary")
    site.fault(ERROR, 200, "error")
    crawler = await run_crawl(db_url, seeds=seeds)
    reasons = {
        EMPTY: "parse failure: empty body served as text/html",
        BINARY: "parse failure: binary body served as text/html",
    }
    archive = tmp_path / "archive"
    for path, before in good.items():
        now = page(db_url, site, path)
        # the stored text is what the page said before the junk
        for column in ("content", "content_hash", "word_count", "fetched_at", "status"):
            assert now[column] == before[column], (path, column)
        failed = attempt(db_url, site, path)
        assert failed is not None, path
        assert failed["last_status"] == 200 and failed["attempts"] == 1
        assert failed["dead_lettered_at"] is None and failed["next_retry_at"] is not None
        if path in reasons:
            assert failed["last_error"] == reasons[path]
        else:
            assert failed["last_error"].startswith("parse failure: collapsed to ")
            assert failed["last_error"].endswith(f"from {before['word_count']} (error page)")
        [seen] = json.loads(failed["evidence"])
        assert seen["status"] == 200 and seen["reason"] == failed["last_error"].split(": ", 1)[1]
        # the evidence: the junk response as archived
        archived = read_record(archive, seen["archive_file"], seen["archive_offset"])
        assert archived.status == 200 and archived.url.endswith(path)
        if path == EMPTY:
            assert archived.body == b""
        elif path == BINARY:
            assert len(archived.body) == 256 * 1024 and b"\x00" in archived.body
    assert last_run(db_url)["parse_failures"] == 3
    assert crawler.stats.get_value("kc/extract/failed") == 3
    assert last_run(db_url)["responses_200_changed"] == 0

    # The same answers again, within the window: still junk, one more observation each.
    first = when(attempt(db_url, site, EMPTY)["first_failed_at"])  # type: ignore[index]
    third = await run_crawl(db_url, seeds=seeds)
    for path, before in good.items():
        failed = attempt(db_url, site, path)
        if failed is None:  # a busy machine took longer than the window: accepted already
            continue
        evidence = json.loads(failed["evidence"])
        assert when(evidence[-1]["at"]) - when(evidence[0]["at"]) < timedelta(seconds=WINDOW)
        assert page(db_url, site, path)["content"] == before["content"], path
        assert failed["attempts"] == 2 and len(evidence) == 2

    # Past the window, the same answer is the page's new content; the old text is a version.
    await asyncio.sleep(
        max(0.0, (first + timedelta(seconds=WINDOW) - datetime.now(UTC)).total_seconds()) + 0.2
    )
    fourth = await run_crawl(db_url, seeds=seeds)
    for path, before in good.items():
        now = page(db_url, site, path)
        assert now["content_hash"] != before["content_hash"], path
        assert now["word_count"] < 10, path
        assert attempt(db_url, site, path) is None, path  # settled by the stored answer
        [version] = query(
            db_url, "SELECT content_hash FROM page_versions WHERE page_id = ?", now["id"]
        )
        assert version["content_hash"] == before["content_hash"]
    assert page(db_url, site, EMPTY)["content"] == ""
    assert page(db_url, site, BINARY)["content"] == ""
    accepted = [c.stats.get_value("kc/extract/junk_accepted", 0) for c in (third, fourth)]
    assert sum(accepted) == 3
    changed = query(db_url, "SELECT responses_200_changed AS n FROM crawl_runs ORDER BY id")
    assert changed[-2]["n"] + changed[-1]["n"] == 3
    assert last_run(db_url)["parse_failures"] == 0
    # the page as now stored says nothing: the same junk again is that page, unchanged
    again = await run_crawl(db_url, seeds=seeds)
    assert again.stats.get_value("kc/extract/junk_as_stored") == 2  # empty, binary
    assert last_run(db_url)["parse_failures"] == 0
    assert not query(
        db_url, "SELECT * FROM fetch_attempts WHERE canonical_url <> ?", site_key(site, NEW_BINARY)
    )


@coroutine_test
async def test_a_good_answer_after_junk_clears_the_failure(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = seeds_file(tmp_path, site)
    await run_crawl(db_url, seeds=seeds)
    before = page(db_url, site, EMPTY)
    site.fault(EMPTY, 200, "empty")
    await run_crawl(db_url, seeds=seeds)
    assert attempt(db_url, site, EMPTY) is not None
    site.fault(EMPTY, 0)  # the page again
    await run_crawl(db_url, seeds=seeds)
    assert attempt(db_url, site, EMPTY) is None
    after = page(db_url, site, EMPTY)
    assert (after["content_hash"], after["status"]) == (before["content_hash"], "active")
    assert after["fetched_at"] > before["fetched_at"]
