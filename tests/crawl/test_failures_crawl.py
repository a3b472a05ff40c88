"""Failed fetches on the test site's fault paths: retries, dead letters, review, deletions.

Delays are scaled down with the KC_RETRY_* settings; no test waits for a real backoff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, last_run, query, run_crawl, site_key

pytestmark = pytest.mark.crawl

FAST_RETRY = {
    "KC_RETRY_BASE_SECONDS": 0.01,
    "KC_RETRY_MAX_SECONDS": 0.05,
    "KC_RETRY_MAX_ATTEMPTS": 4,
    "KC_RETRY_WAIT_SECONDS": 5,
}


def source(tmp_path: Path, site: TestSite, *paths: str, **extra: str) -> str:
    urls = ", ".join(f'"{site.url.rstrip("/")}{p}"' for p in paths)
    lines = ["[[source]]", 'id = "f"', f"start_urls = [{urls}]", "follow_links = false"]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    path = tmp_path / "faults.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def attempts(db_url: str) -> dict[str, dict[str, Any]]:
    return {r["url"]: r for r in query(db_url, "SELECT * FROM fetch_attempts")}


def page(db_url: str, site: TestSite, path: str) -> dict[str, Any] | None:
    rows = query(db_url, "SELECT * FROM pages WHERE canonical_url = ?", site_key(site, path))
    return rows[0] if rows else None


@coroutine_test
async def test_transient_errors_are_retried_with_backoff_and_the_page_stored(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    seeds = source(tmp_path, site, "/faults/flaky-503?fails=2", "/faults/flaky-500?fails=2")
    crawler = await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    assert page(db_url, site, "/faults/flaky-503?fails=2") is not None
    assert page(db_url, site, "/faults/flaky-500?fails=2") is not None
    assert crawler.stats.get_value("kc/retry/scheduled") == 4
    assert attempts(db_url) == {}  # a success clears the retry state
    assert "retry/count" not in crawler.stats.get_stats()  # Scrapy's retries are off


@coroutine_test
async def test_exhausted_retries_are_dead_lettered_and_picked_up_by_no_later_crawl(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    path = "/faults/flaky-503?fails=1000000"
    seeds = source(tmp_path, site, path)
    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    [state] = attempts(db_url).values()
    assert state["attempts"] == 4 and state["dead_lettered_at"] and state["last_status"] == 503
    assert page(db_url, site, path) is None
    run = query(db_url, "SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1")[0]
    assert run["retries_scheduled"] == 3


@coroutine_test
async def test_a_retry_due_later_is_left_to_the_next_crawl(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    path = "/faults/flaky-503?fails=1"
    seeds = source(tmp_path, site, path)
    slow = {**FAST_RETRY, "KC_RETRY_BASE_SECONDS": 30, "KC_RETRY_MAX_SECONDS": 60}
    slow["KC_RETRY_WAIT_SECONDS"] = 0  # nothing waits in this crawl
    first = await run_crawl(db_url, slow, seeds=seeds)
    assert first.stats.get_value("kc/retry/deferred") == 1
    [state] = attempts(db_url).values()
    assert state["next_retry_at"] and not state["dead_lettered_at"]
    # Pretend its time has come; the next crawl fetches it (now 200) and clears the state.
    import sqlite3

    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    with conn:
        conn.execute("UPDATE fetch_attempts SET next_retry_at = '2000-01-01T00:00:00.000000Z'")
    conn.close()
    await run_crawl(db_url, slow, seeds=source(tmp_path, site, "/about"))
    assert attempts(db_url) == {}
    assert page(db_url, site, path) is not None


@coroutine_test
async def test_429_honours_retry_after_and_slows_the_host(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    faults = {f["name"]: f for f in site.manifest()["faults"]}
    rate_limited = [f for f in faults.values() if 429 in (f.get("statuses") or [])]
    assert rate_limited, "the fault site serves 429s"
    paths = [f["path"] for f in rate_limited]  # Retry-After in seconds and as an HTTP date
    assert len(paths) >= 2
    crawler = await run_crawl(db_url, FAST_RETRY, seeds=source(tmp_path, site, *paths))
    for path in paths:
        assert page(db_url, site, path) is not None, path
    assert crawler.stats.get_value("kc/retry/slowed_down", 0) >= 1
    assert crawler.stats.get_value("kc/retry/waited_ms", 0) >= 1000  # Retry-After >= 1 s
    # every 429 the pages answered is counted, the retried ones too (each page: its 429s,
    # then one 200); responses_429 used to stay 0 when the retry succeeded
    served = {f["name"]: f for f in site.manifest()["faults"]}
    answered_429 = sum(served[f["name"]]["hits"] - 1 for f in rate_limited)
    assert answered_429 >= len(paths)
    assert last_run(db_url)["responses_429"] == answered_429


@coroutine_test
async def test_401_and_403_are_held_for_review_without_blind_retries(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    faults = {f["name"]: f for f in site.manifest()["faults"]}
    denied = [f["path"] for f in faults.values() if f.get("statuses") in ([401], [403])]
    assert len(denied) == 2
    crawler = await run_crawl(db_url, FAST_RETRY, seeds=source(tmp_path, site, *denied))
    assert crawler.stats.get_value("kc/retry/scheduled") is None
    states = attempts(db_url)
    assert len(states) == 2 and all(s["needs_review"] == 1 for s in states.values())
    assert {s["last_status"] for s in states.values()} == {401, 403}


@coroutine_test
async def test_a_stored_page_that_disappears_is_suspected_then_tombstoned_and_kept(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    path = "/faults/doc/alpha"
    seeds = source(tmp_path, site, path, missing_after="2", missing_window='"0s"')
    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    stored = page(db_url, site, path)
    assert stored is not None and stored["status"] == "active"

    site.fault(path, 404)
    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    row = page(db_url, site, path)
    assert row is not None and row["status"] == "suspected_missing"
    assert row["content"] == stored["content"]  # the content is kept
    assert [e["status"] for e in json.loads(row["status_evidence"])] == [404]

    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    row = page(db_url, site, path)
    assert row is not None and row["status"] == "tombstoned" and row["content"] == stored["content"]
    assert "404" in row["status_reason"]
    assert query(db_url, "SELECT tombstones_created FROM crawl_runs ORDER BY id DESC")[0] == {
        "tombstones_created": 1
    }

    site.fault(path, 200)  # it is back: a later 200 restores active and clears the evidence
    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    row = page(db_url, site, path)
    assert row is not None and row["status"] == "active" and row["status_evidence"] == "[]"


@coroutine_test
async def test_410_tombstones_at_once(site: TestSite, db_url: str, tmp_path: Path) -> None:
    path = "/faults/doc/beta"
    seeds = source(tmp_path, site, path)
    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    site.fault(path, 410)
    await run_crawl(db_url, FAST_RETRY, seeds=seeds)
    row = page(db_url, site, path)
    assert row is not None and row["status"] == "tombstoned" and row["content"]


@coroutine_test
async def test_a_body_over_the_size_limit_is_dead_lettered_at_once_not_retried(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    # Content-Length over DOWNLOAD_MAXSIZE: Scrapy cancels the download, and the same
    # request would get the same body: one fetch, dead-lettered as BodyTooLarge.
    path = "/faults/huge?mb=2"
    seeds = source(tmp_path, site, path)
    crawler = await run_crawl(db_url, {**FAST_RETRY, "DOWNLOAD_MAXSIZE": 1024 * 1024}, seeds=seeds)
    [state] = attempts(db_url).values()
    assert state["last_error"] == "BodyTooLarge"
    assert state["attempts"] == 1 and state["dead_lettered_at"]
    assert crawler.stats.get_value("kc/retry/scheduled") is None
    assert crawler.stats.get_value("kc/fetch/error/BodyTooLarge") == 1
    assert page(db_url, site, path) is None
