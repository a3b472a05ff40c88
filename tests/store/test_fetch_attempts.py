"""Failures and page status in the store: retry state apart from content, tombstones kept."""

from __future__ import annotations

from knowledge_crawler.store import FetchFailure, FrontierAdd, StatusChange, Store, Touch
from tests.store.test_contract import T0, T1, rec, rows

T2 = "2026-01-03T00:00:00.000000Z"
KEY = ("s", "https://example.com/p1")


def failure(n: int = 1, attempts: int = 1, **kw: object) -> FetchFailure:
    return FetchFailure(
        "s",
        f"https://example.com/p{n}",
        f"http://example.com/p{n}",
        failed_at=T1,
        attempts=attempts,
        first_failed_at=T0,
        **kw,  # type: ignore[arg-type]
    )


def test_a_failure_is_kept_apart_from_content_and_cleared_by_a_fetch(store: Store) -> None:
    store.write([rec(1)])
    before = rows(store, "SELECT * FROM pages")[0]
    result = store.write([failure(attempts=2, last_error="DownloadTimeoutError", next_retry_at=T2)])
    assert result.failures == 1
    [state] = store.fetch_attempts(["s"])
    assert (state.attempts, state.last_error, state.next_retry_at) == (
        2,
        "DownloadTimeoutError",
        T2,
    )
    assert rows(store, "SELECT * FROM pages")[0] == before  # content, times: untouched
    store.write([Touch(*KEY, checked_at=T2)])
    assert store.fetch_attempts(["s"]) == []


def test_a_parse_failure_keeps_its_evidence_and_the_page_its_words(store: Store) -> None:
    """A junk 200 of a stored page: its observations (JSON text) are kept with the retry
    state and read back; the page's stored word count is what it is measured against."""
    store.write([rec(1, "four words of text")])
    evidence = (
        '[{"at":"2026-01-02T00:00:00Z","status":200,"reason":"empty body served as text/html",'
        '"digest":"d","archive_file":"kc-1.warc.gz","archive_offset":512}]'
    )
    store.write(
        [
            failure(
                last_error="parse failure: empty body served as text/html",
                last_status=200,
                next_retry_at=T2,
                evidence=evidence,
            ),
            failure(2, last_error="http_503", last_status=503, next_retry_at=T2),
        ]
    )
    by_key = {f.key: f for f in store.fetch_attempts(["s"])}
    assert by_key[KEY].evidence == evidence
    assert by_key[("s", "https://example.com/p2")].evidence == "[]"  # a failed fetch: none
    [known] = store.known_pages(["s"])
    assert known.word_count == 4
    store.write([rec(1, "four words of text", at=T2)])  # the page again: settled
    assert [f.key for f in store.fetch_attempts(["s"])] == [("s", "https://example.com/p2")]


def test_dead_letters_and_review_are_listed_and_settle_the_frontier(store: Store) -> None:
    store.write(
        [
            FrontierAdd("s", "https://example.com/p1", "http://example.com/p1", "api", T0),
            FrontierAdd("s", "https://example.com/p2", "http://example.com/p2", "api", T0),
            FrontierAdd("s", "https://example.com/p3", "http://example.com/p3", "api", T0),
        ]
    )
    result = store.write(
        [
            failure(
                1,
                attempts=6,
                last_error="http_503",
                last_status=503,
                dead_lettered_at=T1,
                settled=True,
            ),
            failure(2, last_status=403, last_error="http_403", needs_review=True, settled=True),
            failure(3, last_status=503, next_retry_at=T2),
        ]
    )
    assert result.dead_lettered == 1
    letters = store.dead_letters()
    assert [d["canonical_url"][-2:] for d in letters] == ["p1", "p2"]
    assert letters[1]["needs_review"] == 1
    # the two settled ones leave the frontier; the one that will be retried stays
    assert [f.canonical_url[-2:] for f in store.frontier(["s"])] == ["p3"]
    assert store.dead_letters("other") == []


def test_status_moves_keep_content_and_a_fetch_restores_active(store: Store) -> None:
    run = store.start_run(spider="knowledge", sources=["s"], mode="crawl", pid=1, host="h")
    store.write([rec(1, text="kept words")], run_id=run)
    store.write(
        [StatusChange(*KEY, "suspected_missing", T1, "missing (404) once", '[{"status": 404}]')],
        run_id=run,
    )
    row = rows(store, "SELECT * FROM pages")[0]
    assert row["status"] == "suspected_missing" and row["content"] == "kept words"
    assert row["status_reason"] == "missing (404) once" and row["status_changed_at"] == T1
    result = store.write([StatusChange(*KEY, "tombstoned", T2, "gone (410)")], run_id=run)
    assert result.tombstones == 1
    row = rows(store, "SELECT * FROM pages")[0]
    assert row["status"] == "tombstoned" and row["content"] == "kept words"
    [counted] = rows(store, "SELECT tombstones_created FROM crawl_runs WHERE id = ?", run)
    assert counted["tombstones_created"] == 1
    # a tombstone again is no new tombstone; a status change of a page not stored is ignored
    again = store.write(
        [
            StatusChange(*KEY, "tombstoned", T2, "gone"),
            StatusChange("s", "https://x/none", "tombstoned", T2),
        ]
    )
    assert again.tombstones == 0 and again.status_changes == 1
    store.write([rec(1, text="kept words", at=T2)])
    row = rows(store, "SELECT * FROM pages")[0]
    assert row["status"] == "active" and row["status_reason"] is None
    assert row["status_evidence"] == "[]"


def test_dead_letters_command(tmp_path: object) -> None:
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from knowledge_crawler.cli.dead_letters import dead_letters
    from knowledge_crawler.store import open_store

    url = f"sqlite:///{Path(str(tmp_path)) / 'k.db'}"
    with open_store(url) as store:
        store.write(
            [
                failure(1, attempts=6, last_error="http_503", last_status=503, dead_lettered_at=T1),
                failure(2, last_status=403, last_error="http_403", needs_review=True),
                failure(3, next_retry_at=T2),
            ]
        )
    human = CliRunner().invoke(dead_letters, ["--db", url])
    assert human.exit_code == 0 and "2 pages" in human.output
    assert "http_503" in human.output and "review" in human.output
    # the URL to open is the one fetched (http here), not the https identity key
    assert "http://example.com/p1" in human.output and "https://" not in human.output
    data = json.loads(CliRunner().invoke(dead_letters, ["--db", url, "--json"]).output)
    assert [d["canonical_url"][-2:] for d in data] == ["p1", "p2"]


def test_stats_report_freshness_and_failures(store: Store) -> None:
    from knowledge_crawler.cli.stats import render_stats

    store.write(
        [
            rec(1, next_check_at="2000-01-01T00:00:00.000000Z"),  # long overdue
            rec(2, next_check_at="2999-01-01T00:00:00.000000Z"),  # not due
            rec(3),  # never scheduled: due
            failure(4, next_retry_at=T1),
            failure(5, attempts=6, dead_lettered_at=T1),
            failure(6, needs_review=True),
            FrontierAdd("s", "https://example.com/p7", "http://example.com/p7", "api", T0),
        ]
    )
    health = store.stats()["health"]
    assert health["due_pages"] == 2 and health["oldest_unverified"] == T0
    assert (health["pending_retries"], health["oldest_pending_retry"]) == (1, T1)
    assert (health["dead_lettered"], health["held_for_review"], health["frontier"]) == (1, 1, 1)
    [source] = health["sources"]
    assert source["lag_seconds"] > 20 * 365 * 86400
    text = render_stats(store.stats())
    assert (
        "pages due for a check:           2" in text
        and "dead letters / held for review:  1 / 1" in text
    )
