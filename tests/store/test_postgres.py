"""What only the PostgreSQL backend has: its schema against SQLite's, its connection, its
errors, and the commands over a ``postgresql://`` URL (the contract itself runs on both
backends through the ``store`` fixture)."""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.errors import SchemaMismatchError, StoreError, TransientStoreError
from knowledge_crawler.store import (
    DuplicateUpdate,
    FetchFailure,
    StatusChange,
    Store,
    open_store,
)
from knowledge_crawler.store.migrations import MIGRATIONS
from knowledge_crawler.store.postgres import PostgresStore, pg_store_error
from tests.postgres import run_sql
from tests.store.backends import applied_migrations, upsert_pages
from tests.store.test_contract import T0, T1, rec, rows
from tests.store.test_passages_store import page

P = "https://example.com/p"


def key(n: int) -> tuple[str, str]:
    return ("s", f"{P}{n}")


def count(store: Store, table: str) -> int:
    return int(rows(store, f"SELECT COUNT(*) AS n FROM {table}")[0]["n"])


# -- the schema ------------------------------------------------------------------------------

#: each backend's own full-text index: SQLite's FTS5 table (and its shadow tables),
#: PostgreSQL's tsvector column on passages
SQLITE_SEARCH_TABLES = ("passages_fts",)
POSTGRES_SEARCH_COLUMNS = {("passages", "search_vector")}


def sqlite_schema(path: Path) -> dict[str, set[str]]:
    conn = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%'"
            )
            if not r[0].startswith(SQLITE_SEARCH_TABLES)
        ]
        return {n: {r[1] for r in conn.execute(f"PRAGMA table_info({n})")} for n in names}
    finally:
        conn.close()


def postgres_schema(url: str) -> dict[str, set[str]]:
    schema: dict[str, set[str]] = {}
    for table, column in run_sql(
        url,
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema()",
    ):
        if (table, column) not in POSTGRES_SEARCH_COLUMNS:
            schema.setdefault(str(table), set()).add(str(column))
    return schema


def test_migrations_make_the_same_tables_and_columns_as_on_sqlite(
    postgres_url: str, tmp_path: Path
) -> None:
    open_store(f"sqlite:///{tmp_path}/k.db").close()
    with open_store(postgres_url) as store:
        assert applied_migrations(store) == [m.name for m in MIGRATIONS]
    sqlite, postgres = sqlite_schema(tmp_path / "k.db"), postgres_schema(postgres_url)
    assert sorted(postgres) == sorted(sqlite)
    for table, names in sqlite.items():
        assert postgres[table] == names, table
    # SQLite's types as PostgreSQL spells them
    types = {
        (str(t), str(c)): (str(kind), str(collation) if collation else None, str(identity))
        for t, c, kind, collation, identity in run_sql(
            postgres_url,
            "SELECT table_name, column_name, data_type, collation_name, is_identity "
            "FROM information_schema.columns WHERE table_schema = current_schema()",
        )
    }
    for table in ("page_meta", "page_versions", "crawl_runs", "quarantine", "passages"):
        column = "seq" if table == "passages" else "id"
        assert types[(table, column)] == ("bigint", None, "YES"), table
    assert types[("page_content", "minhash")][0] == "bytea"
    assert types[("page_meta", "duplicate_score")][0] == "double precision"
    assert types[("page_meta", "archive_offset")][0] == "bigint"
    texts = [v for v in types.values() if v[0] == "text"]
    assert texts and all(collation == "C" for _, collation, _ in texts)


def test_reopening_applies_nothing_twice_and_a_newer_database_is_refused(
    postgres_url: str,
) -> None:
    with open_store(postgres_url) as store:
        store.write([rec(1)])
        first = applied_migrations(store)
    with open_store(postgres_url) as store:
        assert applied_migrations(store) == first
        assert count(store, "page_meta") == 1
    run_sql(postgres_url, "INSERT INTO schema_migrations VALUES ('9999_future', 'x')")
    with pytest.raises(SchemaMismatchError, match="9999_future"):
        open_store(postgres_url)


def test_processes_opening_a_new_database_at_once_migrate_it_once(postgres_url: str) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_it() -> None:
        try:
            start.wait()
            open_store(postgres_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    [(n,)] = run_sql(postgres_url, "SELECT COUNT(*) FROM schema_migrations")
    assert n == len(MIGRATIONS)


def test_the_unlink_trigger_and_duplicate_checks_exist(postgres_url: str) -> None:
    with open_store(postgres_url) as store:
        store.write([rec(1, "x"), rec(2, "x", duplicate_of=key(1), duplicate_kind="exact")])
    with pytest.raises(psycopg.errors.CheckViolation, match="page_meta_duplicate_kind"):
        run_sql(postgres_url, "UPDATE page_meta SET duplicate_kind = NULL WHERE id = 2")
    run_sql(postgres_url, "DELETE FROM page_meta WHERE id = 1")
    assert run_sql(postgres_url, "SELECT duplicate_of, duplicate_kind FROM page_meta") == [
        (None, None)
    ]


# -- the connection --------------------------------------------------------------------------


def test_busy_timeout_is_the_lock_timeout(postgres_url: str) -> None:
    with open_store(postgres_url, busy_timeout=0.25) as store:
        assert rows(store, "SHOW lock_timeout")[0]["lock_timeout"] == "250ms"


def test_a_lost_connection_is_transient_and_the_next_call_reconnects(postgres_url: str) -> None:
    with open_store(postgres_url) as store:
        store.write([rec(1)])
        pid = store.db.conn.info.backend_pid  # type: ignore[attr-defined]
        run_sql(postgres_url, "SELECT pg_terminate_backend(%s)", pid)
        with pytest.raises(TransientStoreError, match="cannot write to"):
            store.write([rec(2), rec(3)])
        # retried, as the store pipeline does: a new connection, the batch loads once
        result = store.write([rec(2), rec(3)])
        assert sorted(result.inserted) == [key(2), key(3)]
        assert count(store, "page_meta") == 3 and count(store, "quarantine") == 0


def test_a_server_that_does_not_answer_is_one_line_without_the_password() -> None:
    with pytest.raises(StoreError) as raised:
        open_store("postgresql://kc:s3cret@127.0.0.1:9/kc?connect_timeout=2")
    message = str(raised.value)
    assert message.startswith("cannot open postgresql://kc:***@127.0.0.1:9/kc")
    assert "s3cret" not in message and "\n" not in message


def test_a_closed_store_says_so(postgres_url: str) -> None:
    store = open_store(postgres_url)
    store.close()
    store.close()  # a second close does nothing
    with pytest.raises(StoreError, match="closed"):
        store.write([rec(1)])


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (psycopg.errors.SerializationFailure("could not serialize access"), True),
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),
        (psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"), True),
        (psycopg.errors.AdminShutdown("terminating connection"), True),
        (psycopg.errors.DiskFull("could not extend file"), True),
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.errors.UndefinedTable('relation "page_meta" does not exist'), False),
        (psycopg.errors.InsufficientPrivilege("permission denied"), False),
    ],
)
def test_errors_are_sorted_by_whether_they_may_pass(error: Exception, transient: bool) -> None:
    sorted_ = pg_store_error(error, "cannot write to db")
    assert isinstance(sorted_, TransientStoreError) is transient
    assert str(sorted_).startswith("cannot write to db: ")


class FailingStore(PostgresStore):
    """The real store, with the next page loads / duplicate updates failing with an error."""

    def __init__(self, url: str, **kw: Any) -> None:
        super().__init__(url, **kw)
        self.fail_loads: list[Exception] = []
        self.fail_duplicates: list[Exception] = []

    def _load(self, records: Any) -> Any:
        if self.fail_loads:
            raise self.fail_loads.pop(0)
        return super()._load(records)

    def _set_duplicates(self, updates: Any) -> None:
        if self.fail_duplicates:
            raise self.fail_duplicates.pop(0)
        super()._set_duplicates(updates)


def test_a_deadlock_is_retried_never_quarantined(postgres_url: str) -> None:
    with FailingStore(postgres_url) as store:
        store.fail_loads = [psycopg.errors.DeadlockDetected("deadlock detected")]
        with pytest.raises(TransientStoreError, match="deadlock"):
            store.write([rec(1), rec(2), FetchFailure(*key(3), "u", T1, 1, T0)])
        assert count(store, "quarantine") == 0 and count(store, "page_meta") == 0
        assert count(store, "fetch_attempts") == 0
        assert len(store.write([rec(1), rec(2)]).inserted) == 2


def test_isolating_a_bad_record_keeps_duplicate_updates_in_the_records_transaction(
    postgres_url: str,
) -> None:
    with FailingStore(postgres_url) as store:
        store.write([rec(0, "zero")])
        batch = [rec(1, "one"), rec(2, content_hash="not-a-sha256"), rec(3, "three")]
        updates = [DuplicateUpdate(key(0), key(1), "near", 0.9)]
        store.fail_duplicates = [psycopg.errors.SerializationFailure("could not serialize")]
        with pytest.raises(TransientStoreError, match="serialize"):
            upsert_pages(store, batch, duplicate_updates=updates)
        assert count(store, "page_meta") == 1 and count(store, "quarantine") == 0
        result = upsert_pages(store, batch, duplicate_updates=updates)
        assert sorted(result.inserted) == [key(1), key(3)]
        assert [k for k, _ in result.quarantined] == [key(2)]
        assert count(store, "quarantine") == 1
        [p0] = rows(
            store,
            "SELECT r.canonical_url AS rep FROM page_meta d "
            "JOIN page_meta r ON r.id = d.duplicate_of WHERE d.canonical_url = ?",
            f"{P}0",
        )
        assert p0 == {"rep": f"{P}1"}


def test_what_postgresql_cannot_store_is_quarantined_and_the_rest_loads(
    postgres_url: str,
) -> None:
    """Text SQLite keeps but PostgreSQL cannot: a NUL character, a lone surrogate, a key
    too long for its index. Each is the record's fault, not the database's."""
    nul = rec(2, "a NUL \x00 inside")
    surrogate = rec(3, "a lone surrogate", content="a lone \udc80 surrogate")
    long_key = rec(4, canonical_url="https://example.com/" + secrets.token_urlsafe(6000))
    with open_store(postgres_url) as store:
        result = store.write([rec(1), nul, surrogate, long_key, rec(5)])
        assert sorted(result.inserted) == [key(1), key(5)]
        assert [k for k, _ in result.quarantined] == [nul.key, surrogate.key, long_key.key]
        errors = [e for _, e in result.quarantined]
        assert errors[0].startswith("DataError") and "NUL" in errors[0]
        assert errors[1].startswith("UnicodeEncodeError")
        assert errors[2].startswith("ProgramLimitExceeded")
        assert count(store, "quarantine") == 3
        [record] = rows(store, "SELECT record FROM quarantine WHERE canonical_url = ?", nul.key[1])
        assert json.loads(record["record"])["content"] == nul.content  # kept as it came


def test_a_status_change_counts_a_tombstone_once(postgres_url: str) -> None:
    with open_store(postgres_url) as store:
        store.write([rec(1)])
        gone = StatusChange(*key(1), "tombstoned", T1, "gone (410)")
        assert store.write([gone, gone]).tombstones == 1
        assert store.write([gone]).tombstones == 0


# -- the commands ------------------------------------------------------------------------


@pytest.fixture
def dataset(postgres_url: str) -> str:
    with open_store(postgres_url) as store:
        store.write(
            [
                page(1, "The impeller spins the water outward.", at=T0),
                page(
                    2,
                    "The impeller spins the water outward.",
                    duplicate_of=key(1),
                    duplicate_kind="exact",
                ),
                FetchFailure(*key(3), "u", T1, 6, T0, last_error="http_503", dead_lettered_at=T1),
            ]
        )
        store.write([page(1, "The impeller spins faster now.", at=T1)])
        store.write(
            [
                DuplicateUpdate(key(2), key(1), "exact", 1.0),
                StatusChange(*key(2), "suspected_missing", T1, "404 once"),
            ]
        )
    return postgres_url


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_every_command_that_reads_the_dataset_reads_postgresql(dataset: str) -> None:
    stats = invoke("stats", "--json", "--db", dataset)
    assert stats.exit_code == 0, stats.output
    report = json.loads(stats.output)
    assert report["sanity"]["total_rows"] == 2 and report["page_versions"] == 1
    assert report["database"] == dataset
    history = invoke("history", f"{P}1", "--json", "--db", dataset)
    assert history.exit_code == 0, history.output
    assert [v["content"] for v in json.loads(history.output)] == [
        "The impeller spins faster now.",
        "The impeller spins the water outward.",
    ]
    changes = invoke("changes", "--since", "2026-01-01", "--json", "--db", dataset)
    assert changes.exit_code == 0, changes.output
    kinds = [json.loads(line)["kind"] for line in changes.output.splitlines()]
    assert kinds == ["new", "new", "changed"]
    export = invoke("export", "--include-duplicates", "--db", dataset)
    assert export.exit_code == 0, export.output
    assert [json.loads(line)["version"] for line in export.output.splitlines()] == [2, 1]
    dups = invoke("duplicates", "--json", "--db", dataset)
    assert dups.exit_code == 0 and json.loads(dups.output)[0]["duplicates"][0]["kind"] == "exact"
    letters = invoke("dead-letters", "--json", "--db", dataset)
    assert letters.exit_code == 0 and json.loads(letters.output)[0]["last_error"] == "http_503"
    found = invoke("search", "impeller", "--json", "--db", dataset)
    assert found.exit_code == 0, found.output
    [hit] = [json.loads(line) for line in found.stdout.splitlines()]  # p2 is a duplicate
    assert hit["canonical_url"] == f"{P}1" and "**impeller**" in hit["snippet"]
    raw = invoke("search", "--fts", "impell:* & !faster", "--db", dataset)
    assert raw.exit_code == 0 and raw.stdout == ""  # the only passage says "faster"
    bad = invoke("search", "--fts", "impeller &", "--db", dataset)
    assert bad.exit_code == 2 and "cannot search" in bad.stderr


def test_the_mcp_tools_read_postgresql(dataset: str) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from knowledge_crawler.cli.mcp_server import DatasetTools

    with open_store(dataset) as store:
        tools = DatasetTools(store)
        stored = tools.get_page(f"{P}1/", include_versions=True)
        assert stored["content"] == "The impeller spins faster now." and stored["versions"] == 2
        assert [v["content"] for v in stored["previous_versions"]] == [
            "The impeller spins the water outward."
        ]
        [passage] = tools.search("spinning impellers")["passages"]
        assert passage["url"] == f"{P}1" and passage["content"] == stored["content"]
        assert [c["kind"] for c in tools.changes("2026-01-01")["changes"]] == [
            "new",
            "new",
            "changed",
        ]


def test_browse_is_sqlite_only_and_says_so_in_one_line(postgres_url: str) -> None:
    url = postgres_url.replace("postgres@", "postgres:s3cret@")
    result = invoke("browse", "--db", url, "--no-open")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "browse needs a SQLite database" in line and "s3cret" not in line


def test_a_database_that_cannot_be_opened_is_bad_input(postgres_url: str) -> None:
    result = invoke("stats", "--db", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("knowledge-crawler: error: cannot open postgresql://nobody@")
