"""The crawl state in the store (F-STATE): links, redirects and refusals, on every backend."""

from __future__ import annotations

import pytest

from knowledge_crawler.errors import StoreError
from knowledge_crawler.store import (
    FetchFailure,
    FrontierAdd,
    Store,
    UrlOutcome,
)
from tests.store.test_contract import T0, T1, rec, rows

T2 = "2026-01-03T00:00:00.000000Z"
LATER = "2026-02-01T00:00:00.000000Z"
P1 = "https://example.com/p1"


def link(n: int, depth: int = 1, found_on: str = P1, at: str = T0) -> FrontierAdd:
    url = f"https://example.com/l{n}"
    return FrontierAdd("s", url, url, "link", at, depth=depth, found_on=found_on)


def states(store: Store) -> dict[str, dict[str, object]]:
    return {r["canonical_url"]: r for r in rows(store, "SELECT * FROM urls")}


def test_a_pages_links_commit_with_it_and_are_what_the_next_crawl_drains(store: Store) -> None:
    result = store.write([rec(1), link(1), link(2), link(3, depth=2)])
    assert result.frontier_added == 3
    entries = {e.canonical_url: e for e in store.frontier(["s"], due_by=T1)}
    assert set(entries) == {f"https://example.com/l{n}" for n in (1, 2, 3)}
    assert {e.found_on for e in entries.values()} == {P1}
    assert entries["https://example.com/l3"].depth == 2
    urls = states(store)
    assert urls[P1]["state"] == "fetched"
    assert urls["https://example.com/l1"]["state"] == "discovered"
    assert urls["https://example.com/l1"]["found_on"] == P1


def test_a_link_found_again_by_a_shorter_path_keeps_the_smaller_depth(store: Store) -> None:
    store.write([link(1, depth=3)])
    store.write([link(1, depth=1), link(1, depth=4)])
    [entry] = store.frontier(["s"])
    assert entry.depth == 1


def test_a_batch_that_fails_writes_neither_the_page_nor_its_links(store: Store) -> None:
    url = "https://example.com/l9"
    bad = FrontierAdd(None, url, url, "link", T0)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        # a frontier row without a source: the database refuses it, the batch rolls back
        store.write([rec(1), link(1), bad])
    assert rows(store, "SELECT COUNT(*) AS n FROM page_meta")[0]["n"] == 0
    assert store.frontier(["s"]) == []


def test_a_refused_url_waits_for_its_due_time_and_keeps_no_retry_state(store: Store) -> None:
    url = "https://example.com/report.pdf"
    store.write(
        [
            FrontierAdd("s", url, url, "sitemap", T0),
            FetchFailure("s", url, url, T0, attempts=1, first_failed_at=T0, next_retry_at=T0),
        ]
    )
    result = store.write(
        [UrlOutcome("s", url, url, "refused", T1, "not HTML (application/pdf)", next_due_at=LATER)]
    )
    assert result.refused == 1
    assert store.frontier(["s"], due_by=T2) == []  # not due: not drained
    assert [e.canonical_url for e in store.frontier(["s"], due_by=LATER)] == [url]
    [row] = rows(store, "SELECT * FROM frontier")
    assert (row["state"], row["reason"], row["adapter"]) == (
        "refused",
        "not HTML (application/pdf)",
        "sitemap",
    )
    assert rows(store, "SELECT COUNT(*) AS n FROM fetch_attempts")[0]["n"] == 0
    assert states(store)[url]["state"] == "refused"


def test_a_stored_page_that_redirects_is_tombstoned_with_its_target_and_content_kept(
    store: Store,
) -> None:
    store.write([rec(1, etag='"e1"')])
    moved = "https://example.com/moved/p1"
    result = store.write(
        [
            rec(2, url=moved),
            UrlOutcome(
                "s",
                P1,
                P1,
                "redirected",
                T1,
                f"redirected (301) to {moved}",
                target=moved,
                status=301,
                next_due_at=LATER,
            ),
        ]
    )
    assert (result.redirected, result.redirected_pages, result.tombstones) == (1, 1, 0)
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", P1)
    assert (row["status"], row["redirect_to"], row["http_status"]) == ("tombstoned", moved, 301)
    assert row["etag"] is None and row["final_url"] == row["url"]
    assert row["next_check_at"] == LATER and row["status_changed_at"] == T1
    assert row["content"] == "page 1 body"
    assert states(store)[P1]["state"] == "redirected"
    assert store.frontier(["s"]) == []

    # it answers again as a page: active, the redirect gone; both moves are events
    store.write([rec(1, at=T2)])
    [row] = rows(store, "SELECT * FROM pages WHERE canonical_url = ?", P1)
    assert (row["status"], row["redirect_to"]) == ("active", None)
    events = rows(store, "SELECT event, reason, http_status, at FROM page_events ORDER BY id")
    assert [(e["event"], e["http_status"], e["at"]) for e in events] == [
        ("tombstoned", 301, T1),
        ("restored", 200, T2),
    ]
    assert events[0]["reason"] == f"redirected (301) to {moved}"


def test_a_url_never_stored_that_redirects_is_recorded_in_the_frontier(store: Store) -> None:
    url, target = "https://example.com/old", "https://example.com/new"
    store.write([FrontierAdd("s", url, url, "link", T0)])
    store.write(
        [
            UrlOutcome(
                "s", url, url, "redirected", T1, "r", target=target, status=308, next_due_at=LATER
            )
        ]
    )
    [row] = rows(store, "SELECT * FROM frontier")
    assert (row["state"], row["target"], row["last_status"], row["adapter"]) == (
        "redirected",
        target,
        308,
        "link",
    )
    assert store.frontier(["s"], due_by=T2) == []


def test_the_frontier_is_read_a_page_at_a_time_shallowest_first(store: Store) -> None:
    # what a crawl's start drains (frontier_due), page after page: every due URL once,
    # by depth then URL; a URL not due yet is only among the waiting keys
    pdf = "https://example.com/report.pdf"
    store.write(
        [link(n, depth=1 + n % 3) for n in range(7)] + [FrontierAdd("s", pdf, pdf, "sitemap", T0)]
    )
    store.write([UrlOutcome("s", pdf, pdf, "refused", T1, "not HTML", next_due_at=LATER)])
    read: list[tuple[int, str]] = []
    after = None
    while True:
        page = store.frontier_due("s", due_by=T2, after=after, limit=3)
        read += [(e.depth, e.canonical_url) for e in page]
        if len(page) < 3:
            break
        after = (page[-1].depth, page[-1].canonical_url)
    assert read == sorted((1 + n % 3, f"https://example.com/l{n}") for n in range(7))
    assert store.frontier_due("other", due_by=T2) == []
    assert store.frontier_waiting(["s"], due_by=T2) == [("s", pdf)]
    assert store.frontier_waiting(["s"], due_by=LATER) == []
    assert store.frontier_due("s", due_by=LATER)[0].canonical_url == pdf  # depth 0: first
