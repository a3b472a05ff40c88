"""A write that fails loses nothing and writes nothing twice; only a bad record is quarantined.

Real SQLite throughout: a second connection holding ``BEGIN EXCLUSIVE``, a
database capped by ``max_page_count`` (a full disk), and small subclasses of the
real store that make one statement fail on purpose. The tests that take ``store``
run on PostgreSQL too; its own faults (a lock timeout, a lost connection, a deadlock)
are in ``test_postgres.py`` and ``test_operations.py``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.errors import StoreError, TransientStoreError
from knowledge_crawler.store import DuplicateUpdate, Store, open_store
from knowledge_crawler.store.core import SqlStore
from knowledge_crawler.store.sqlite import SqliteStore, store_error
from tests.faults import exclusive_lock
from tests.store.backends import backend, execute, upsert_pages
from tests.store.test_contract import rec, rows

P = "https://example.com/p"


def key(n: int) -> tuple[str, str]:
    return ("s", f"{P}{n}")


def urls(store: Store, sql: str = "SELECT canonical_url FROM pages") -> set[str]:
    return {r["canonical_url"] for r in rows(store, sql)}


def count(store: Store, table: str) -> int:
    return int(rows(store, f"SELECT COUNT(*) AS n FROM {table}")[0]["n"])


# -- 2: a database error is not a bad record ------------------------------------------------


def test_a_locked_database_is_transient_and_quarantines_nothing(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with open_store(f"sqlite:///{db}", busy_timeout=0.1) as store:
        with exclusive_lock(db), pytest.raises(TransientStoreError, match="locked"):
            upsert_pages(store, [rec(1), rec(2)])
        assert count(store, "quarantine") == 0 and count(store, "page_meta") == 0
        # The lock is gone: the same batch loads, once.
        result = upsert_pages(store, [rec(1), rec(2)])
        assert sorted(result.inserted) == [key(1), key(2)]
        assert count(store, "quarantine") == 0 and count(store, "page_meta") == 2


def test_a_full_disk_is_transient_and_the_batch_loads_once_there_is_room(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/k.db") as store:
        upsert_pages(store, [rec(0)])
        [pages] = rows(store, "PRAGMA page_count")
        rows(store, f"PRAGMA max_page_count = {pages['page_count']}")  # no room to grow
        big = [rec(n, " ".join(f"word{i}" for i in range(20_000))) for n in (1, 2)]
        with pytest.raises(TransientStoreError, match="full"):
            upsert_pages(store, big)
        assert count(store, "quarantine") == 0 and urls(store) == {f"{P}0"}
        rows(store, "PRAGMA max_page_count = 1073741823")
        assert len(upsert_pages(store, big).inserted) == 2
        assert count(store, "quarantine") == 0 and count(store, "page_meta") == 3


def test_a_read_only_database_is_not_bad_data(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with open_store(f"sqlite:///{db}") as store:
        rows(store, "PRAGMA query_only = ON")  # writes fail: "attempt to write a readonly database"
        with pytest.raises(TransientStoreError, match="readonly"):
            upsert_pages(store, [rec(1)])
        rows(store, "PRAGMA query_only = OFF")
        assert count(store, "quarantine") == 0 and count(store, "page_meta") == 0
    # Met while opening (a read-only file or mount), it is the same one line.
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA query_only = ON")
    with pytest.raises(sqlite3.Error) as raised:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    error = store_error(raised.value, f"cannot open {db}")
    assert isinstance(error, TransientStoreError)
    assert str(error) == f"cannot open {db}: attempt to write a readonly database"


class FailingStore(SqliteStore):
    """The real store, with the next ``fail`` page loads failing with ``error``."""

    def __init__(self, url: str, **kw: Any) -> None:
        super().__init__(url, **kw)
        self.fail_loads: list[sqlite3.Error] = []
        self.fail_duplicates: list[sqlite3.Error] = []

    def _load(self, records: Any) -> Any:
        if self.fail_loads:
            raise self.fail_loads.pop(0)
        return super()._load(records)

    def _set_duplicates(self, updates: Any) -> None:
        if self.fail_duplicates:
            raise self.fail_duplicates.pop(0)
        super()._set_duplicates(updates)


def test_an_io_error_is_retried_never_quarantined(tmp_path: Path) -> None:
    store = FailingStore(f"sqlite:///{tmp_path}/k.db")
    with store:
        # The batch fails, and so would every record alone: the disk, not the data.
        store.fail_loads = [sqlite3.OperationalError("disk I/O error")] * 4
        with pytest.raises(TransientStoreError, match="disk I/O error"):
            upsert_pages(store, [rec(1), rec(2), rec(3)])
        assert count(store, "quarantine") == 0 and count(store, "page_meta") == 0
        store.fail_loads = []
        assert len(upsert_pages(store, [rec(1), rec(2), rec(3)]).inserted) == 3


# -- 3: duplicate updates commit with the records they point at --------------------------


def test_isolating_a_bad_record_keeps_duplicate_updates_in_the_records_transaction(
    tmp_path: Path,
) -> None:
    store = FailingStore(f"sqlite:///{tmp_path}/k.db")
    with store:
        upsert_pages(store, [rec(0, "zero")])
        batch = [rec(1, "one"), rec(2, content_hash="not-a-sha256"), rec(3, "three")]
        updates = [DuplicateUpdate(key(0), key(1), "near", 0.9)]
        # The bad record sends the batch to the record-by-record fallback, where
        # the duplicate update then fails for a reason that may pass.
        store.fail_duplicates = [sqlite3.OperationalError("database is locked")]
        with pytest.raises(TransientStoreError, match="locked"):
            upsert_pages(store, batch, duplicate_updates=updates)
        # Nothing of the batch is written: not its records, not its quarantine row.
        assert urls(store) == {f"{P}0"} and count(store, "quarantine") == 0
        # Retried: the records, the update and the quarantine row land together, once.
        result = upsert_pages(store, batch, duplicate_updates=updates)
        assert sorted(result.inserted) == [key(1), key(3)]
        assert [k for k, _ in result.quarantined] == [key(2)]
        assert urls(store) == {f"{P}0", f"{P}1", f"{P}3"}
        assert count(store, "quarantine") == 1
        [p0] = rows(
            store,
            "SELECT r.canonical_url AS rep, d.duplicate_kind AS kind FROM page_meta d "
            "JOIN page_meta r ON r.id = d.duplicate_of WHERE d.canonical_url = ?",
            f"{P}0",
        )
        assert p0 == {"rep": f"{P}1", "kind": "near"}


def test_a_bad_record_with_duplicate_updates_only_it_is_quarantined(store: Store) -> None:
    upsert_pages(store, [rec(0, "zero"), rec(5, "five")])
    bad = rec(2, "two", http_status=999)
    batch = [
        rec(1, "one"),
        bad,
        rec(3, "one", duplicate_of=key(1), duplicate_kind="exact", duplicate_score=1.0),
        # its representative is the bad record: stored, but as no duplicate
        rec(4, "two", duplicate_of=key(2), duplicate_kind="exact", duplicate_score=1.0),
    ]
    updates = [
        DuplicateUpdate(key(0), key(1), "near", 0.9),  # both ends stored: applied
        DuplicateUpdate(key(5), key(2), "near", 0.95),  # points at the bad record: dropped
    ]
    result = upsert_pages(store, batch, duplicate_updates=updates)
    assert [k for k, _ in result.quarantined] == [bad.key]
    assert "check constraint" in result.quarantined[0][1].lower()
    assert sorted(result.inserted) == [key(1), key(3), key(4)]
    assert [u.key for u, _ in result.dropped_updates] == [key(5)]
    assert result.unlinked == [key(4)]
    got = {
        r["url"]: (r["rep"], r["kind"], r["score"])
        for r in rows(
            store,
            "SELECT d.canonical_url AS url, r.canonical_url AS rep, "
            "d.duplicate_kind AS kind, d.duplicate_score AS score "
            "FROM page_meta d LEFT JOIN page_meta r ON r.id = d.duplicate_of",
        )
    }
    assert got == {
        f"{P}0": (f"{P}1", "near", 0.9),
        f"{P}1": (None, None, None),
        f"{P}3": (f"{P}1", "exact", 1.0),
        f"{P}4": (None, None, None),
        f"{P}5": (None, None, None),
    }
    [q] = rows(store, "SELECT canonical_url, error FROM quarantine")
    assert q["canonical_url"] == bad.canonical_url


# -- the database keeps duplicate pointers consistent ---------------------------------------


def test_the_database_refuses_a_kind_without_a_representative(store: Store) -> None:
    import psycopg

    upsert_pages(store, [rec(1), rec(2)])
    refused = (sqlite3.IntegrityError, psycopg.IntegrityError)
    with pytest.raises(refused, match=r"(?i)check"):
        execute(store, "UPDATE page_meta SET duplicate_kind = 'exact' WHERE id = 2")
    with pytest.raises(refused, match=r"(?i)check"):
        execute(store, "UPDATE page_meta SET duplicate_of = 1 WHERE id = 2")
    with pytest.raises(refused, match=r"(?i)check"):
        execute(store, "UPDATE page_meta SET duplicate_score = 0.5 WHERE id = 2")
    execute(store, "UPDATE page_meta SET duplicate_of = 1, duplicate_kind = 'exact' WHERE id = 2")


def test_a_duplicate_update_without_its_representative_is_dropped(store: Store) -> None:
    upsert_pages(store, [rec(1), rec(2)])
    result = upsert_pages(
        store, [rec(3)], duplicate_updates=[DuplicateUpdate(key(1), key(9), "near", 0.9)]
    )
    assert result.inserted == [key(3)] and not result.quarantined
    assert [u.key for u, _ in result.dropped_updates] == [key(1)]
    [p1] = rows(store, "SELECT duplicate_of, duplicate_kind FROM page_meta WHERE id = 1")
    assert p1 == {"duplicate_of": None, "duplicate_kind": None}


def test_deleting_a_representative_unlinks_its_duplicates(store: Store) -> None:
    upsert_pages(store, [rec(1, "x"), rec(2, "x", duplicate_of=key(1), duplicate_kind="exact")])
    execute(store, f"DELETE FROM page_meta WHERE canonical_url = '{P}1'")
    assert rows(store, "SELECT duplicate_of, duplicate_kind, duplicate_score FROM page_meta") == [
        {"duplicate_of": None, "duplicate_kind": None, "duplicate_score": None}
    ]


def test_stats_finds_duplicates_of_duplicates(store: Store) -> None:
    upsert_pages(store, [rec(1, "x"), rec(2, "x"), rec(3, "x")])
    assert store.stats()["sanity"]["chained_duplicates"] == 0
    # written behind the store's back
    execute(store, "UPDATE page_meta SET duplicate_of = 1, duplicate_kind = 'exact' WHERE id = 2")
    execute(store, "UPDATE page_meta SET duplicate_of = 2, duplicate_kind = 'exact' WHERE id = 3")
    sanity = store.stats()["sanity"]
    assert sanity["chained_duplicates"] == 1
    assert sanity["chained_duplicate_examples"] == [
        {
            "source_id": "s",
            "canonical_url": f"{P}3",
            "url": "http://example.com/p3",
            "duplicate_of": f"{P}2",
            "duplicate_of_url": "http://example.com/p2",
            "its_duplicate_of": f"{P}1",
            "its_duplicate_of_url": "http://example.com/p1",
        }
    ]


# -- runs: counters committed with their batch; unfinished runs -----------------------------


def test_each_batch_adds_to_its_runs_counters_in_the_same_transaction(store: Store) -> None:
    run = store.start_run(spider="k", sources=["s"], mode="crawl", pid=1, host="h")
    upsert_pages(store, [rec(1), rec(2)], run_id=run)
    upsert_pages(store, [rec(1, "changed"), rec(3), rec(4, content_hash="bad")], run_id=run)
    [r] = rows(store, "SELECT * FROM crawl_runs WHERE id = ?", run)
    assert (r["upserts_completed"], r["pages_new"], r["responses_200_changed"]) == (4, 3, 1)
    assert (r["quarantined"], r["outcome"], r["finished_at"]) == (1, "running", None)


def test_a_failed_batch_adds_nothing_to_its_run(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with open_store(f"sqlite:///{db}", busy_timeout=0.05) as store:
        run = store.start_run(spider="k", sources=["s"], mode="crawl", pid=1, host="h")
        with exclusive_lock(db), pytest.raises(TransientStoreError):
            upsert_pages(store, [rec(1)], run_id=run)
        [r] = rows(store, "SELECT upserts_completed FROM crawl_runs")
        assert r["upserts_completed"] == 0


def test_unfinished_runs_and_abandoning_one(store: Store) -> None:
    a = store.start_run(spider="k", sources=["s"], mode="crawl", pid=11, host="h1", job_id="j1")
    b = store.start_run(spider="k", sources=["s"], mode="crawl", pid=12, host="h2")
    done = store.start_run(spider="k", sources=["s"], mode="crawl", pid=13, host="h1")
    upsert_pages(store, [rec(1)], run_id=a)
    store.finish_run(done, reason="finished", outcome="finished", counters={})
    unfinished = store.unfinished_runs()
    assert [(r["id"], r["pid"], r["host"], r["job_id"]) for r in unfinished] == [
        (a, 11, "h1", "j1"),
        (b, 12, "h2", None),
    ]
    assert all(r["started_at"].endswith("Z") for r in unfinished)
    store.abandon_run(a)
    store.abandon_run(a)  # idempotent
    [r] = rows(store, "SELECT * FROM crawl_runs WHERE id = ?", a)
    assert r["outcome"] == "abandoned" and r["finished_at"] is not None
    assert r["upserts_completed"] == 1  # as stored so far
    assert [r["id"] for r in store.unfinished_runs()] == [b]


def test_stats_reports_outcome_job_and_fetch_errors_per_run(store: Store) -> None:
    run = store.start_run(spider="k", sources=["s"], mode="crawl", pid=1, host="h", job_id="J")
    counters = {
        "kc/fetch/error/ConnectionRefusedError": 3,
        "kc/fetch/error/http_404": 2,
        "pages_new": 0,
    }
    store.finish_run(run, reason="finished", outcome="failed", counters=counters)
    store.start_run(spider="k", sources=["s"], mode="crawl", pid=2, host="h")
    latest, first = store.stats()["runs"]
    assert first["outcome"] == "failed" and first["job_id"] == "J"
    assert first["fetch_errors"] == {"ConnectionRefusedError": 3, "http_404": 2}
    assert latest["outcome"] == "running" and latest["fetch_errors"] == {}


# -- 4: what cannot be opened says so in one line --------------------------------------------


@pytest.mark.parametrize("case", ["text file", "directory", "parent is a file"])
def test_a_path_that_is_no_database_is_one_line_naming_it(tmp_path: Path, case: str) -> None:
    if case == "text file":
        path = tmp_path / "notes.db"
        path.write_text("these are my notes, not a database\n" * 100)
        reason = "file is not a database"
    elif case == "directory":
        path = tmp_path / "adir"
        path.mkdir()
        reason = "unable to open database file"
    else:
        (tmp_path / "afile").write_text("x")
        path = tmp_path / "afile" / "k.db"
        reason = "afile is not a directory"
    with pytest.raises(StoreError) as err:
        open_store(f"sqlite:///{path}")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"cannot open {path}: ") and reason in message


def test_busy_timeout_is_the_sqlite_busy_timeout(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/k.db", busy_timeout=0.25) as store:
        assert rows(store, "PRAGMA busy_timeout")[0]["timeout"] == 250


def test_a_lock_shorter_than_the_busy_timeout_just_waits(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    locked = threading.Event()

    def hold() -> None:
        with exclusive_lock(db):
            locked.set()
            time.sleep(0.3)

    with open_store(f"sqlite:///{db}", busy_timeout=5) as store:
        holder = threading.Thread(target=hold)
        holder.start()
        assert locked.wait(5)
        assert len(upsert_pages(store, [rec(1)]).inserted) == 1
        holder.join()


def test_processes_opening_a_new_database_at_once_all_open_it(tmp_path: Path) -> None:
    # switching a new file to WAL does not wait for SQLite's busy handler: a second
    # opener used to fail at once with "database is locked" (a crawl and a reader
    # started together on a database that did not exist yet)
    failures: list[str] = []
    for trial in range(100):
        url = f"sqlite:///{tmp_path}/k{trial}.db"
        start = threading.Barrier(4)

        def open_it(url: str = url, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                with open_store(url) as store:
                    store.leases()
            except StoreError as exc:
                failures.append(str(exc))

        openers = [threading.Thread(target=open_it) for _ in range(4)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
    assert failures == []


def test_a_failure_after_part_of_a_run_is_written_leaves_nothing_of_the_batch(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run is written in several pieces when a record names a representative the same
    run inserts (or a page comes twice): the second piece failing for a reason that may
    pass rolls back the first with it, and the retry writes each row once."""
    assert isinstance(store, SqlStore)
    if backend(store) == "sqlite":
        error: Exception = sqlite3.OperationalError("disk I/O error")
    else:
        import psycopg

        error = psycopg.errors.DeadlockDetected("deadlock detected")
    pieces: list[int] = []
    write_pages = store.db.write_pages

    def second_piece_fails(writes: Any, now: str) -> None:
        pieces.append(len(writes.new))
        if len(pieces) == 2:
            raise error
        write_pages(writes, now)

    monkeypatch.setattr(store.db, "write_pages", second_piece_fails)
    batch = [rec(1, "same"), rec(2, "same", duplicate_of=key(1), duplicate_kind="exact")]
    with pytest.raises(TransientStoreError):
        store.write(batch)
    assert pieces == [1, 1]  # p1 was written before p2 failed
    assert count(store, "page_meta") == 0 and count(store, "page_content") == 0
    assert count(store, "passages") == 0 and count(store, "quarantine") == 0
    monkeypatch.undo()
    result = store.write(batch)
    assert sorted(result.inserted) == [key(1), key(2)] and not result.unlinked
    assert rows(store, "SELECT COUNT(*) AS n FROM page_meta WHERE duplicate_of IS NOT NULL") == [
        {"n": 1}
    ]
