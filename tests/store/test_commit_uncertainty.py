"""A connection lost during COMMIT, on PostgreSQL, cut for real (``tests.pg_proxy``: a TCP
proxy on loopback that lets the COMMIT reach the server and drops the connection before
its answer comes back). The batch is retried the way the store pipeline retries it; it is
applied once whatever the server did: its records are reported as what they were (new,
changed), and its run's counters move once."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from knowledge_crawler.errors import TransientStoreError
from knowledge_crawler.store import Operation, Store, UpsertResult, open_store
from tests.pg_proxy import CommitCutter
from tests.postgres import run_sql
from tests.store.test_contract import T1, rec, rows

P1 = ("s", "https://example.com/p1")


@pytest.fixture
def cutter(postgres_url: str) -> Iterator[CommitCutter]:
    with CommitCutter(postgres_url) as proxy:
        yield proxy


@pytest.fixture
def proxied(postgres_url: str, cutter: CommitCutter) -> Iterator[Store]:
    """A PostgreSQL store whose connections go through the proxy."""
    with open_store(cutter.url(postgres_url)) as store:
        yield store


def write_retrying(
    store: Store, ops: Sequence[Operation], run_id: int, **kw: Any
) -> tuple[UpsertResult, int]:
    """What the store pipeline does with a batch: a transient error keeps it, and it is
    written again whole. The result, and how many tries failed."""
    failed = 0
    while True:
        try:
            return store.write(ops, run_id=run_id, **kw), failed
        except TransientStoreError:
            failed += 1
            assert failed < 10
            time.sleep(0.05)


def run_counters(store: Store, run_id: int) -> dict[str, object]:
    [row] = rows(
        store,
        "SELECT upserts_completed, pages_new, responses_200_changed, responses_200_unchanged "
        "FROM crawl_runs WHERE id = ?",
        run_id,
    )
    return row


def first_batch(store: Store) -> int:
    run_id = store.start_run(spider="k", sources=["s"], mode="crawl", pid=1, host="h")
    store.write([rec(1), rec(2)], run_id=run_id)
    return run_id


BATCH: list[Operation] = [rec(1, "page 1 rewritten", at=T1), rec(3), rec(4)]
#: what the batch does, once: one page changed, two new
ONCE = {
    "upserts_completed": 2 + 3,
    "pages_new": 2 + 2,
    "responses_200_changed": 1,
    "responses_200_unchanged": 0,
}


def test_a_batch_the_server_committed_as_the_connection_dropped_is_applied_once(
    proxied: Store, cutter: CommitCutter
) -> None:
    run_id = first_batch(proxied)
    cutter.arm(after=b"upserts_completed")  # the next batch's COMMIT
    result, failed = write_retrying(proxied, BATCH, run_id)
    # the connection was lost during COMMIT, after the server committed; a lookup on a
    # new connection found the batch applied, and the write succeeded
    assert (cutter.cuts, failed) == (1, 0)
    assert result.changed == [P1]
    assert sorted(result.inserted) == [
        ("s", "https://example.com/p3"),
        ("s", "https://example.com/p4"),
    ]
    assert run_counters(proxied, run_id) == ONCE
    [version] = rows(proxied, "SELECT content FROM page_versions")
    assert version["content"] == "page 1 body"  # saved once, from the text it replaced
    assert len(rows(proxied, "SELECT * FROM pages")) == 4


def test_when_the_server_cannot_be_asked_at_once_the_retry_asks(
    proxied: Store, cutter: CommitCutter
) -> None:
    """The lookup right after the lost COMMIT cannot connect either: the write fails as
    transient, and its retry, under the same batch id, finds the batch applied."""
    run_id = first_batch(proxied)
    cutter.arm(after=b"upserts_completed", refuse=1)
    result, failed = write_retrying(proxied, BATCH, run_id, batch_id="b-1")
    assert (cutter.cuts, cutter.refused, failed) == (1, 1, 1)
    assert result.changed == [P1] and len(result.inserted) == 2
    assert run_counters(proxied, run_id) == ONCE
    assert len(rows(proxied, "SELECT * FROM page_versions")) == 1


def test_a_commit_the_server_never_got_is_applied_by_the_retry(
    proxied: Store, cutter: CommitCutter
) -> None:
    run_id = first_batch(proxied)
    cutter.arm(after=b"upserts_completed", committed=False)
    result, failed = write_retrying(proxied, BATCH, run_id)
    assert (cutter.cuts, failed) == (1, 1)
    assert result.changed == [P1] and len(result.inserted) == 2
    assert run_counters(proxied, run_id) == ONCE


def test_each_batch_records_its_id_and_old_ids_are_pruned(postgres_url: str) -> None:
    with open_store(postgres_url) as store:
        run_id = first_batch(store)
        [batch] = rows(store, "SELECT batch_id, run_id, applied_at FROM applied_batches")
        assert batch["run_id"] == run_id
    run_sql(
        postgres_url,
        "INSERT INTO applied_batches (batch_id, run_id, applied_at) "
        "VALUES ('old', NULL, '2020-01-01T00:00:00.000000Z')",
    )
    with open_store(postgres_url) as store:  # a new writer prunes with its first batch
        store.write([rec(5)], batch_id="new")
        ids = {r["batch_id"] for r in rows(store, "SELECT batch_id FROM applied_batches")}
    assert ids == {batch["batch_id"], "new"}


def test_sqlite_records_no_batch_ids(tmp_path: Any) -> None:
    """A failed COMMIT on SQLite committed nothing: no id to look up, none written."""
    with open_store(f"sqlite:///{tmp_path}/k.db") as store:
        first_batch(store)
        assert rows(store, "SELECT * FROM applied_batches") == []
