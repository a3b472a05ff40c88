"""Stored outlinks (F-STATE): a page's links replaced when its content is written, kept
on a 304, counted as inlinks and read back with the dedupe state; on every backend."""

from __future__ import annotations

from dataclasses import replace

from knowledge_crawler.store import DuplicateUpdate, Store, Touch
from tests.store.test_contract import T1, rec, rows

T2 = "2026-01-03T00:00:00.000000Z"


def url(n: int) -> str:
    return f"https://example.com/p{n}"


def outlinks(store: Store, n: int) -> dict[str, int]:
    return {
        str(r["to_url"]): int(r["canonical"])  # type: ignore[call-overload]
        for r in rows(
            store,
            "SELECT to_url, canonical FROM outlinks WHERE source_id = ? AND from_url = ?",
            "s",
            url(n),
        )
    }


def test_outlinks_are_replaced_on_content_change_and_kept_on_304(store: Store) -> None:
    page = rec(1, outlinks=[url(2), url(3), url(3), url(1)], canonical_link=url(9))
    store.write([page, rec(2, outlinks=[url(3)])])
    # each target once, not the page itself; what rel=canonical names is marked
    assert outlinks(store, 1) == {url(2): 0, url(3): 0, url(9): 1}
    assert outlinks(store, 2) == {url(3): 0}

    # a 304: no content written, the links stay
    store.write([Touch("s", url(1), checked_at=T1)])
    assert outlinks(store, 1) == {url(2): 0, url(3): 0, url(9): 1}
    # fetched again with the same content: nothing rewritten either
    store.write([replace(page, fetched_at=T1, outlinks=[url(4)])])
    assert outlinks(store, 1) == {url(2): 0, url(3): 0, url(9): 1}
    # links not read (a refresh): the stored ones stay, even if the content moved
    store.write([rec(2, "page 2 moved", at=T1, outlinks=None)])
    assert outlinks(store, 2) == {url(3): 0}

    # the content moved: the links are the new page's, in the page's transaction
    store.write([rec(1, "page 1 moved on", at=T2, outlinks=[url(4), url(2)])])
    assert outlinks(store, 1) == {url(4): 0, url(2): 0}
    assert outlinks(store, 2) == {url(3): 0}


def test_a_record_that_is_refused_writes_no_outlinks(store: Store) -> None:
    bad = rec(5, outlinks=[url(6)], canonical_url="not a url")
    result = store.write([rec(4, outlinks=[url(6)]), bad])
    assert [key for key, _ in result.quarantined] == [("s", "not a url")]
    assert outlinks(store, 4) == {url(6): 0}
    assert rows(store, "SELECT from_url FROM outlinks WHERE to_url = ?", url(6)) == [
        {"from_url": url(4)}
    ]


def test_dedupe_state_reads_inlinks_and_the_canonical_link(store: Store) -> None:
    store.write(
        [
            rec(1, "the article", outlinks=[url(3)]),
            rec(2, "the article", outlinks=[url(1)], canonical_link=url(1)),
            rec(3, "a hub", outlinks=[url(1), url(2)]),
            DuplicateUpdate(("s", url(2)), ("s", url(1)), "exact", 1.0),
        ]
    )
    got = {row.canonical_url: row for row in store.dedupe_state()}
    assert got[url(1)].inlinks == 2  # p2 and p3, each once
    assert got[url(2)].inlinks == 1
    assert got[url(3)].inlinks == 1
    assert got[url(2)].canonical_link == url(1) and got[url(1)].canonical_link is None
    assert got[url(2)].duplicate_of == ("s", url(1))
    [dep] = store.dependents(("s", url(1)))
    assert (dep.canonical_url, dep.canonical_link, dep.inlinks) == (url(2), url(1), 1)
