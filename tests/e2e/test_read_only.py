"""Readers never write: every read command serves a database on a read-only filesystem.

A snapshot served to agents sits on a read-only filesystem (here a real one: the
folder bind-mounted read-only onto itself when run as root, its write bits taken
otherwise). `stats`, `search`, `history`, `export`, `changes`, `duplicates`,
`dead-letters`, `mcp` and `browse` read it as it is: no migration, no WAL switch,
no -wal or -shm file, the database's bytes and mtime unchanged. A database older
than the code is named in one line instead of migrated; a missing one is one line
and no new file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from knowledge_crawler.cli.main import cli
from knowledge_crawler.errors import StoreError
from knowledge_crawler.store import open_store
from tests.e2e.retrieval_data import Dataset, build_dataset
from tests.e2e.test_browse import free_port, get_json, wait_for_port
from tests.faults import read_only_folder
from tests.helpers import query

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]

#: the read commands that take --db, with arguments (the URL ones filled in per dataset)
READERS = ("stats", "search", "history", "export", "changes", "duplicates", "dead-letters")


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file of ``folder``: its SHA-256 and mtime (ns)."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.iterdir())
    }


def database_state(folder: Path) -> tuple[str, int]:
    """The database file's SHA-256 and mtime. In a folder it may write, SQLite's reader
    of a WAL file makes the (empty) -wal and -shm it reads through; the file stays."""
    return state(folder)["knowledge.db"]


@pytest.fixture
def snapshot(tmp_path: Path) -> Iterator[tuple[Dataset, Path]]:
    """A dataset written through the store, then its folder made read-only."""
    folder = tmp_path / "snapshot"
    folder.mkdir()
    data = build_dataset(f"sqlite:///{folder}/knowledge.db")
    assert sorted(p.name for p in folder.iterdir()) == ["knowledge.db"]  # WAL checkpointed
    with read_only_folder(folder):
        yield data, folder


def read_commands(data: Dataset) -> dict[str, list[str]]:
    db = ["--db", data.db_url]
    return {
        "stats": ["stats", "--json", *db],
        "search": ["search", "impeller seal", "-k", "2", "--json", *db],
        "history": ["history", data.pump, "--json", *db],
        "export": ["export", "--format", "jsonl", *db],
        "changes": ["changes", "--since", "3h", "--no-diff", "--json", *db],
        "duplicates": ["duplicates", "--json", *db],
        "dead-letters": ["dead-letters", "--json", *db],
    }


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_every_read_command_serves_a_read_only_snapshot(
    snapshot: tuple[Dataset, Path],
) -> None:
    data, folder = snapshot
    before = state(folder)
    out: dict[str, Result] = {}
    for name, args in read_commands(data).items():
        out[name] = result = run(*args)
        assert result.exit_code == 0, f"{name}: {result.output}"
    assert set(out) == set(READERS)

    stats = json.loads(out["stats"].stdout)
    assert stats["sanity"]["total_rows"] == stats["sanity"]["distinct_identities"] == 7
    [best, *_] = lines(out["search"].stdout)
    assert best["canonical_url"] == data.pump
    assert [v["content_hash"] is not None for v in json.loads(out["history"].stdout)] == [
        True,
        True,
    ]
    exported = {r["canonical_url"] for r in lines(out["export"].stdout)}
    assert data.pump in exported and data.kettle not in exported
    assert data.valve_print not in exported and len(exported) == 5
    kinds = {(c["kind"], c["canonical_url"]) for c in lines(out["changes"].stdout)}
    assert ("changed", data.pump) in kinds and ("tombstoned", data.kettle) in kinds
    [cluster] = json.loads(out["duplicates"].stdout)
    assert cluster["representative"]["canonical_url"] == data.valve
    assert [d["canonical_url"] for d in cluster["duplicates"]] == [data.valve_print]
    [letter] = json.loads(out["dead-letters"].stdout)
    assert letter["canonical_url"] == data.dead

    assert state(folder) == before  # same bytes, same mtime, no -wal or -shm


def test_mcp_serves_a_read_only_snapshot(snapshot: tuple[Dataset, Path], tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    data, folder = snapshot
    before = state(folder)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "knowledge_crawler", "mcp", "--db", data.db_url],
        cwd=str(REPO),
    )
    errlog = tmp_path / "mcp.stderr"

    async def session() -> dict[str, Any]:
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                found = await client.call_tool("search", {"query": "impeller seal", "k": 2})
                page = await client.call_tool("get_page", {"url": data.valve})
                return {"search": found.structured_content, "page": page.structured_content}

    def client() -> dict[str, Any]:
        return asyncio.run(asyncio.wait_for(session(), 120))

    try:
        with ThreadPoolExecutor(1) as pool:
            seen = pool.submit(client).result()
    except Exception as exc:
        raise AssertionError(f"mcp failed: {exc!r}\n{errlog.read_text()[-3000:]}") from exc
    assert seen["search"]["passages"][0]["canonical_url"] == data.pump, seen
    assert seen["page"]["canonical_url"] == data.valve
    assert state(folder) == before


def test_browse_serves_a_read_only_snapshot(snapshot: tuple[Dataset, Path], tmp_path: Path) -> None:
    data, folder = snapshot
    before = state(folder)
    port = free_port()
    log = tmp_path / "browse.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "knowledge_crawler", "browse", "--db", data.db_url),
                *("--port", str(port), "--no-open"),
            ],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, proc, log)
        base = f"http://127.0.0.1:{port}/knowledge"
        checks = get_json(f"{base}/sanity_checks.json?_shape=array")
        pages = get_json(f"{base}.json?sql=select+count(*)+as+n+from+pages&_shape=array")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert checks[0]["value"] == "7 = 7", checks
    assert pages == [{"n": 7}]
    assert state(folder) == before


def test_a_snapshot_with_its_write_ahead_log_is_read_whole(tmp_path: Path) -> None:
    """A copy taken while a writer had rows only in its -wal: read with them, on a read-only
    filesystem; with the -wal but no -shm it cannot be read correctly, and says so."""
    live = tmp_path / "live"
    live.mkdir()
    data = build_dataset(f"sqlite:///{live}/knowledge.db")
    writer = sqlite3.connect(live / "knowledge.db", isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute(
            "UPDATE page_meta SET title = 'Only in the log' WHERE canonical_url = ?", (data.lamp,)
        )
        whole, torn = tmp_path / "whole", tmp_path / "torn"
        for copy in (whole, torn):
            copy.mkdir()
            for name in ("knowledge.db", "knowledge.db-wal", "knowledge.db-shm"):
                if copy is whole or name != "knowledge.db-shm":
                    shutil.copy(live / name, copy / name)
    finally:
        writer.close()

    with read_only_folder(whole):
        before = state(whole)
        result = run("export", "--format", "jsonl", "--db", f"sqlite:///{whole}/knowledge.db")
        assert result.exit_code == 0, result.output
        titles = {r["canonical_url"]: r["title"] for r in lines(result.stdout)}
        assert titles[data.lamp] == "Only in the log"
        assert state(whole) == before

    with read_only_folder(torn) as how:
        if how == "chmod":
            pytest.skip("a folder without write bits still lets SQLite read its -wal here")
        result = run("stats", "--db", f"sqlite:///{torn}/knowledge.db")
        assert result.exit_code == 2, result.output
        [line] = result.stderr.splitlines()
        assert line.startswith("knowledge-crawler: error: ") and "knowledge.db-wal" in line


def older_schema(path: Path) -> None:
    """Make ``path`` look as the code before its last migration left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("DROP TABLE outlinks")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0015_outlinks'")
    finally:
        conn.close()


@pytest.mark.parametrize("command", [*READERS, "mcp", "browse"])
def test_a_database_older_than_the_code_is_named_not_migrated(tmp_path: Path, command: str) -> None:
    data = build_dataset(f"sqlite:///{tmp_path}/knowledge.db")
    older_schema(tmp_path / "knowledge.db")
    before = database_state(tmp_path)
    args = read_commands(data).get(command, [command, "--db", data.db_url])
    result = run(*args)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("knowledge-crawler: error: ")
    assert "older" in line and "0015_outlinks" in line and "crawl" in line, line
    assert database_state(tmp_path) == before  # not migrated, not switched, nothing written
    applied = query(data.db_url, "SELECT name FROM schema_migrations")
    assert "0015_outlinks" not in {r["name"] for r in applied}


@pytest.mark.parametrize("command", [*READERS, "mcp", "browse"])
def test_a_missing_database_is_one_line_and_no_new_file(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nowhere" / "knowledge.db"
    data = Dataset(f"sqlite:///{missing}", *(["https://docs.example.com/x"] * 6))
    args = read_commands(data).get(command, [command, "--db", data.db_url])
    result = run(*args)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.endswith(f"error: no database at {missing} (crawl first, or pass --db URL)")
    assert not missing.parent.exists()


def test_the_read_only_store_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/knowledge.db"
    build_dataset(url)
    before = database_state(tmp_path)
    with open_store(url, read_only=True) as store:
        assert store.stats()["sanity"]["total_rows"] == 7
        with pytest.raises(StoreError, match="read-only"):
            store.set_meta("x", "y")
    assert database_state(tmp_path) == before


def test_a_postgres_reader_opens_a_read_only_session_and_never_migrates(
    postgres_url: str,
) -> None:
    open_store(postgres_url).close()  # the schema, as a crawl leaves it
    with open_store(postgres_url, read_only=True) as store:
        [row] = store.query("SHOW default_transaction_read_only")
        assert row[0] == "on"
        assert store.stats()["sanity"]["total_rows"] == 0
        with pytest.raises(StoreError, match="read-only"):
            store.set_meta("x", "y")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE name = '0015_outlinks'")
        conn.execute("DROP TABLE outlinks")
    result = run("stats", "--db", postgres_url)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert "older" in line and "0015_outlinks" in line, line
    with psycopg.connect(postgres_url) as conn:  # not migrated by the reader
        assert conn.execute("SELECT to_regclass('outlinks')").fetchone() == (None,)
