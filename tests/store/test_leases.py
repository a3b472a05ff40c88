"""Writer leases (F-STATE): one writer at a time per source, on every backend.

Each test that takes ``store`` runs on SQLite and on PostgreSQL; the race tests open
one store per writer (a connection each), as separate processes would.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from knowledge_crawler.errors import LeaseHeldError, StoreError
from knowledge_crawler.store import (
    Lease,
    LeaseHolder,
    LeaseKeeper,
    PageRecord,
    Store,
    open_store,
    utc_now,
)
from knowledge_crawler.store.leases import holder_gone
from knowledge_crawler.transform.fingerprint import content_hash


def holder(name: str, *, shared: str | None = None, pid: int = 4242) -> LeaseHolder:
    return LeaseHolder(
        holder=shared or f"host-a:{pid}:{name}",
        token=f"host-a:{pid}:{name}",
        host="host-a",
        pid=pid,
        command="crawl",
    )


def test_a_free_source_is_taken_and_a_second_writer_is_refused_naming_the_holder(
    store: Store,
) -> None:
    first, second = holder("one"), holder("two", pid=4343)
    assert store.acquire_leases(["site"], first, ttl=60) == []
    [blocking] = store.acquire_leases(["site"], second, ttl=60)
    assert (blocking.source_id, blocking.holder, blocking.host, blocking.pid) == (
        "site",
        first.holder,
        "host-a",
        4242,
    )
    assert "crawl (pid 4242 on host-a)" in blocking.describe()
    # the refused writer took nothing
    assert [lease.token for lease in store.leases(["site"])] == [first.token]
    store.release_leases(first)
    assert store.leases() == []
    assert store.acquire_leases(["site"], second, ttl=60) == []
    assert [lease.token for lease in store.leases()] == [second.token]


def test_a_lease_of_ones_own_is_renewed_and_names_the_run(store: Store) -> None:
    me = holder("me")
    assert store.acquire_leases(["site"], me, ttl=60) == []
    [taken] = store.leases()
    time.sleep(0.01)
    assert store.acquire_leases(["site"], dataclasses.replace(me, run_id=7), ttl=60) == []
    [renewed] = store.leases()
    assert renewed.acquired_at == taken.acquired_at
    assert renewed.heartbeat_at > taken.heartbeat_at and renewed.expires_at > taken.expires_at
    assert renewed.run_id == 7
    assert store.acquire_leases(["site"], me, ttl=60) == []  # run_id None keeps it
    assert store.leases()[0].run_id == 7


def test_an_expired_lease_or_one_whose_process_is_gone_is_taken_over(store: Store) -> None:
    dead, hung, late = holder("dead"), holder("hung", pid=4343), holder("late", pid=4444)
    assert store.acquire_leases(["a"], dead, ttl=60) == []
    assert store.acquire_leases(["b"], hung, ttl=0.2) == []
    assert store.acquire_leases(["b"], late, ttl=60) != []  # not expired yet
    time.sleep(0.3)
    assert store.acquire_leases(["b"], late, ttl=60) == []  # expired
    assert store.acquire_leases(["a"], late, ttl=60) != []  # alive, says gone=None
    assert store.acquire_leases(["a"], late, ttl=60, gone=lambda lease: lease.pid == 4242) == []
    assert {(lease.source_id, lease.token) for lease in store.leases()} == {
        ("a", late.token),
        ("b", late.token),
    }


def test_all_or_none(store: Store) -> None:
    first, second = holder("one"), holder("two", pid=4343)
    assert store.acquire_leases(["b"], first, ttl=60) == []
    [blocking] = store.acquire_leases(["a", "b", "c"], second, ttl=60)
    assert blocking.source_id == "b"
    assert [lease.source_id for lease in store.leases()] == ["b"]


def test_the_processes_of_one_shared_crawl_share_its_lease(store: Store) -> None:
    crawl = "shared crawl redis://127.0.0.1:6379/0 kc:knowledge"
    one, two = holder("one", shared=crawl), holder("two", shared=crawl, pid=4343)
    other = holder("other", pid=4444)
    assert store.acquire_leases(["site"], one, ttl=60) == []
    assert store.acquire_leases(["site"], two, ttl=60) == []
    blocking = store.acquire_leases(["site"], other, ttl=60)
    assert {lease.token for lease in blocking} == {one.token, two.token}
    assert "one process of shared crawl" in blocking[0].describe()
    store.release_leases(one)  # the first to leave: the crawl still holds it
    [left] = store.acquire_leases(["site"], other, ttl=60)
    assert left.token == two.token
    store.release_leases(two)
    assert store.acquire_leases(["site"], other, ttl=60) == []


def test_only_one_of_several_writers_racing_for_a_source_takes_it(store: Store) -> None:
    writers = 4
    stores = [open_store(store.url) for _ in range(writers)]
    try:
        for round_ in range(5):
            source = f"race{round_}"
            start = threading.Barrier(writers)
            won: list[int] = []

            def take(
                i: int,
                source: str = source,
                start: threading.Barrier = start,
                won: list[int] = won,
            ) -> None:
                start.wait()
                if not stores[i].acquire_leases([source], holder(f"w{i}", pid=i + 1), ttl=60):
                    won.append(i)

            threads = [threading.Thread(target=take, args=(i,)) for i in range(writers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len(won) == 1, won
            assert [lease.pid for lease in store.leases([source])] == [won[0] + 1]
    finally:
        for s in stores:
            s.close()


def test_a_keeper_renews_on_its_heartbeat_and_releases(store: Store) -> None:
    keeper = LeaseKeeper(store, ["site"], holder("k"), ttl=0.4, heartbeat=0.1)
    keeper.acquire()
    [first] = store.leases()
    time.sleep(0.6)  # past the time to live: alive only through its heartbeat
    [later] = store.leases()
    assert later.expires_at > utc_now() and later.heartbeat_at > first.heartbeat_at
    assert store.acquire_leases(["site"], holder("x", pid=1), ttl=60) != []
    keeper.set_run(12)
    assert store.leases()[0].run_id == 12
    keeper.release()
    assert store.leases() == []


def test_a_keeper_waits_for_the_holder_or_is_refused(store: Store) -> None:
    first = holder("first")
    assert store.acquire_leases(["site"], first, ttl=60) == []
    told: list[list[Lease]] = []
    with pytest.raises(LeaseHeldError, match=r"source 'site' is being written by crawl \(pid"):
        LeaseKeeper(store, ["site"], holder("second", pid=1), ttl=60).acquire(
            0.3, waiting=told.append, poll=0.05
        )
    assert len(told) == 1 and told[0][0].token == first.token
    threading.Timer(0.3, store.release_leases, args=(first,)).start()
    waiter = LeaseKeeper(store, ["site"], holder("second", pid=1), ttl=60)
    began = time.monotonic()
    waiter.acquire(10, poll=0.05)
    assert 0.25 < time.monotonic() - began < 5
    assert [lease.pid for lease in store.leases()] == [1]
    waiter.release()


def test_a_keeper_whose_lease_expired_and_was_taken_knows_it_lost_it(store: Store) -> None:
    lost: list[list[Lease]] = []
    keeper = LeaseKeeper(
        store, ["site"], holder("slow"), ttl=0.2, heartbeat=0.5, on_lost=lost.append
    )
    keeper.acquire()
    time.sleep(0.3)  # expired before its first heartbeat
    taker = holder("taker", pid=1)
    assert store.acquire_leases(["site"], taker, ttl=60) == []
    time.sleep(0.5)  # the heartbeat finds it
    assert lost and lost[0][0].token == taker.token
    with pytest.raises(StoreError, match="the writer lease was lost"):
        keeper.check()
    keeper.release()  # releases nothing of the taker's
    assert [lease.token for lease in store.leases()] == [taker.token]


def test_holder_gone_only_for_a_dead_pid_of_this_host() -> None:
    import subprocess

    from knowledge_crawler.store.leases import HOST

    done = subprocess.Popen(["true"])
    done.wait()
    lease = Lease("s", "h", "t", HOST, done.pid, None, "crawl", "x", "x", "9999")
    assert holder_gone(lease)
    assert not holder_gone(dataclasses.replace(lease, host="elsewhere"))
    import os

    assert not holder_gone(dataclasses.replace(lease, pid=os.getppid()))


def page(url: str, text: str, fetched_at: str, **kw: object) -> PageRecord:
    return PageRecord(
        source_id="site",
        canonical_url=url,
        url=url,
        final_url=url,
        fetched_at=fetched_at,
        http_status=200,
        content_hash=content_hash(text),
        content=text,
        **kw,  # type: ignore[arg-type]
    )


def test_a_record_with_a_read_state_is_written_only_if_the_page_is_still_so(
    store: Store,
) -> None:
    a, b = "https://example.com/a", "https://example.com/b"
    store.write(
        [page(a, "old a", "2026-01-01T00:00:00Z"), page(b, "old b", "2026-01-01T00:00:00Z")]
    )
    read = {url: (content_hash(f"old {url[-1]}"), "2026-01-01T00:00:00Z") for url in (a, b)}
    # a crawl stores a newer version of b after the re-extraction read it
    store.write([page(b, "new b", "2026-01-02T00:00:00Z")])
    result = store.write(
        [
            page(a, "reextracted a", "2026-01-01T00:00:00Z", reextracted=True, read_state=read[a]),
            page(b, "reextracted b", "2026-01-01T00:00:00Z", reextracted=True, read_state=read[b]),
        ]
    )
    assert result.changed == [("site", a)] and result.stale == [("site", b)]
    contents = {r["canonical_url"]: r["content"] for r in store.query("SELECT * FROM pages")}
    assert contents == {a: "reextracted a", b: "new b"}
    [versions] = store.query("SELECT COUNT(*) AS n FROM page_versions")
    assert versions["n"] == 2  # old a, old b: nothing of the stale record
