"""SQLite backend: WAL, explicit transactions, batched ``executemany`` upserts.

One connection, guarded by a lock; callers run methods on a single writer
thread (see :mod:`knowledge_crawler.pipelines.store`) so the event loop never
blocks on disk.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from knowledge_crawler.errors import SchemaMismatchError, StoreError
from knowledge_crawler.store.base import HEAD_COUNTERS, PageRecord, Store, UpsertResult, utc_now
from knowledge_crawler.store.migrations import MIGRATIONS

__all__ = ["SqliteStore", "sqlite_path"]

_UPSERT = """
INSERT INTO pages (
    source_id, canonical_url, url, final_url, fetched_at, title, content, headings,
    word_count, language, thin, content_hash, minhash, minhash_params,
    duplicate_of, duplicate_kind, http_status, etag, last_modified, status,
    first_seen_at, last_seen_at, last_checked_at, last_changed_at, next_check_at
) VALUES (
    :source_id, :canonical_url, :url, :final_url, :fetched_at, :title, :content, :headings,
    :word_count, :language, :thin, :content_hash, :minhash, :minhash_params,
    (SELECT id FROM pages WHERE source_id = :dup_source AND canonical_url = :dup_url),
    :duplicate_kind, :http_status, :etag, :last_modified, 'active',
    :fetched_at, :fetched_at, :fetched_at, :fetched_at, :next_check_at
)
ON CONFLICT (source_id, canonical_url) DO UPDATE SET
    url             = excluded.url,
    final_url       = excluded.final_url,
    fetched_at      = excluded.fetched_at,
    title           = excluded.title,
    headings        = excluded.headings,
    word_count      = excluded.word_count,
    language        = excluded.language,
    thin            = excluded.thin,
    content         = CASE WHEN pages.content_hash = excluded.content_hash
                           THEN pages.content ELSE excluded.content END,
    minhash         = CASE WHEN pages.content_hash = excluded.content_hash
                            AND pages.minhash_params IS excluded.minhash_params
                           THEN pages.minhash ELSE excluded.minhash END,
    minhash_params  = excluded.minhash_params,
    last_changed_at = CASE WHEN pages.content_hash = excluded.content_hash
                           THEN pages.last_changed_at ELSE excluded.last_changed_at END,
    content_hash    = excluded.content_hash,
    duplicate_of    = excluded.duplicate_of,
    duplicate_kind  = excluded.duplicate_kind,
    http_status     = excluded.http_status,
    etag            = excluded.etag,
    last_modified   = excluded.last_modified,
    status          = 'active',
    last_seen_at    = excluded.last_seen_at,
    last_checked_at = excluded.last_checked_at,
    next_check_at   = excluded.next_check_at
    -- first_seen_at is deliberately absent: set once, never updated
"""

_SAVE_VERSION = """
INSERT INTO page_versions (page_id, content_hash, title, content, fetched_at, replaced_at)
SELECT id, content_hash, title, content, fetched_at, ? FROM pages WHERE id = ?
"""


def sqlite_path(url: str) -> str:
    """``sqlite:///rel/path.db`` -> ``rel/path.db``; ``sqlite:////abs.db`` -> ``/abs.db``."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        raise StoreError(f"not a SQLite URL (expected sqlite:///PATH): {url!r}")
    path = url[len(prefix) :]
    if not path:
        raise StoreError(f"SQLite URL has no path: {url!r}")
    return path


def _row_params(rec: PageRecord) -> dict[str, Any]:
    dup_source, dup_url = rec.duplicate_of or (None, None)
    return {
        "source_id": rec.source_id,
        "canonical_url": rec.canonical_url,
        "url": rec.url,
        "final_url": rec.final_url,
        "fetched_at": rec.fetched_at,
        "title": rec.title,
        "content": rec.content,
        "headings": json.dumps(list(rec.headings), ensure_ascii=False),
        "word_count": rec.word_count,
        "language": rec.language,
        "thin": int(rec.thin),
        "content_hash": rec.content_hash,
        "minhash": rec.minhash,
        "minhash_params": rec.minhash_params,
        "dup_source": dup_source,
        "dup_url": dup_url,
        "duplicate_kind": rec.duplicate_kind if rec.duplicate_of else None,
        "http_status": rec.http_status,
        "etag": rec.etag,
        "last_modified": rec.last_modified,
        "next_check_at": rec.next_check_at,
    }


class SqliteStore(Store):
    """The default backend: one SQLite file in WAL mode."""

    def __init__(self, url: str) -> None:
        self.url = url
        path = sqlite_path(url)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}") from exc
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA busy_timeout = 10000")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._migrate()

    # -- schema ---------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            applied = {r[0] for r in self._conn.execute("SELECT name FROM schema_migrations")}
            known = {m.name for m in MIGRATIONS}
            unknown = sorted(applied - known)
            if unknown:
                raise SchemaMismatchError(
                    f"{self.url} was written by a newer knowledge_crawler "
                    f"(unknown migrations: {', '.join(unknown)})"
                )
            for migration in MIGRATIONS:
                if migration.name in applied:
                    continue
                with self._transaction():
                    for statement in migration.statements:
                        self._conn.execute(statement)
                    self._conn.execute(
                        "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                        (migration.name, utc_now()),
                    )

    def applied_migrations(self) -> list[str]:
        with self._lock:
            return [
                r[0] for r in self._conn.execute("SELECT name FROM schema_migrations ORDER BY name")
            ]

    # -- transactions -----------------------------------------------------------

    class _Tx:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def __enter__(self) -> sqlite3.Connection:
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, exc_type: object, *rest: object) -> None:
            self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")

    def _transaction(self) -> SqliteStore._Tx:
        return SqliteStore._Tx(self._conn)

    # -- writes -----------------------------------------------------------------

    def upsert_pages(
        self, records: Sequence[PageRecord], *, run_id: int | None = None
    ) -> UpsertResult:
        if not records:
            return UpsertResult()
        with self._lock:
            try:
                with self._transaction():
                    return self._load(records)
            except (sqlite3.Error, ValueError, TypeError, OverflowError):
                pass  # isolate the offender(s) below
            result = UpsertResult()
            for rec in records:
                try:
                    with self._transaction():
                        one = self._load([rec])
                except (sqlite3.Error, ValueError, TypeError, OverflowError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    self._quarantine(rec, error, run_id)
                    result.quarantined.append((rec.key, error))
                    continue
                result.inserted += one.inserted
                result.changed += one.changed
                result.unchanged += one.unchanged
            return result

    def _load(self, records: Sequence[PageRecord]) -> UpsertResult:
        conn = self._conn
        result = UpsertResult()
        now = utc_now()
        rows = []
        for rec in records:
            prior = conn.execute(
                "SELECT id, content_hash FROM pages WHERE source_id = ? AND canonical_url = ?",
                rec.key,
            ).fetchone()
            if prior is None:
                result.inserted.append(rec.key)
            elif prior[1] == rec.content_hash:
                result.unchanged.append(rec.key)
            else:
                conn.execute(_SAVE_VERSION, (now, prior[0]))
                result.changed.append(rec.key)
            rows.append(_row_params(rec))
        conn.executemany(_UPSERT, rows)
        return result

    def _quarantine(self, rec: PageRecord, error: str, run_id: int | None) -> None:
        record = asdict(rec)
        if isinstance(record.get("minhash"), bytes):
            record["minhash"] = record["minhash"].hex()
        with self._transaction():
            self._conn.execute(
                "INSERT INTO quarantine (run_id, source_id, canonical_url, url, error, record, "
                "quarantined_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    str(rec.source_id),
                    str(rec.canonical_url),
                    str(rec.url),
                    error,
                    json.dumps(record, default=repr, ensure_ascii=False),
                    utc_now(),
                ),
            )

    def start_run(self, *, spider: str, sources: Sequence[str], mode: str) -> int:
        with self._lock, self._transaction() as conn:
            cur = conn.execute(
                "INSERT INTO crawl_runs (spider, mode, sources, started_at) VALUES (?, ?, ?, ?)",
                (spider, mode, json.dumps(list(sources)), utc_now()),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def finish_run(self, run_id: int, *, reason: str, counters: Mapping[str, int]) -> None:
        head = {name: int(counters.get(name, 0)) for name in HEAD_COUNTERS}
        assignments = ", ".join(f"{name} = :{name}" for name in HEAD_COUNTERS)
        with self._lock, self._transaction() as conn:
            conn.execute(
                f"UPDATE crawl_runs SET finished_at = :finished_at, finish_reason = :reason, "
                f"counters = :counters, {assignments} WHERE id = :run_id",
                {
                    **head,
                    "finished_at": utc_now(),
                    "reason": reason,
                    "counters": json.dumps(dict(sorted(counters.items()))),
                    "run_id": run_id,
                },
            )

    # -- reads ------------------------------------------------------------------

    def representatives(self) -> Iterator[tuple[str, str, str]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT content_hash, source_id, canonical_url FROM pages "
                "WHERE duplicate_of IS NULL AND status = 'active' ORDER BY first_seen_at, id"
            ).fetchall()
        yield from rows

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a read-only query and return rows that index by column name."""
        with self._lock:
            cur = self._conn.cursor()
            cur.row_factory = sqlite3.Row
            return cur.execute(sql, params).fetchall()

    def stats(self, *, stale_days: int = 7, runs: int = 5) -> dict[str, Any]:
        stale_before = (datetime.now(UTC) - timedelta(days=stale_days)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        q = self.query
        totals = q(
            "SELECT COUNT(*) AS total_rows, "
            "(SELECT COUNT(*) FROM (SELECT DISTINCT source_id, canonical_url FROM pages)) "
            "AS distinct_identities FROM pages"
        )[0]
        shared = q(
            "SELECT content_hash, COUNT(*) AS n, GROUP_CONCAT(canonical_url, ' ') AS urls "
            "FROM pages GROUP BY content_hash HAVING COUNT(*) > 1 ORDER BY n DESC, content_hash"
        )
        stale = q(
            "SELECT source_id, canonical_url, last_seen_at FROM pages "
            "WHERE last_seen_at < ? AND status != 'tombstoned' ORDER BY last_seen_at",
            (stale_before,),
        )
        per_source = q(
            "SELECT source_id, status, COUNT(*) AS n, SUM(duplicate_of IS NOT NULL) AS duplicates, "
            "SUM(thin) AS thin, MAX(last_seen_at) AS last_seen_at "
            "FROM pages GROUP BY source_id, status ORDER BY source_id, status"
        )
        versions = q("SELECT COUNT(*) AS n FROM page_versions")[0]["n"]
        quarantined = q("SELECT COUNT(*) AS n FROM quarantine")[0]["n"]
        last_runs = q("SELECT * FROM crawl_runs ORDER BY id DESC LIMIT ?", (runs,))
        return {
            "database": self.url,
            "sanity": {
                "total_rows": totals["total_rows"],
                "distinct_identities": totals["distinct_identities"],
                "rows_equal_identities": totals["total_rows"] == totals["distinct_identities"],
                "shared_content_hashes": len(shared),
                "shared_content_examples": [
                    {"content_hash": r["content_hash"], "n": r["n"], "urls": r["urls"].split(" ")}
                    for r in shared[:10]
                ],
                "stale_days": stale_days,
                "stale_pages": len(stale),
                "stale_examples": [dict(r) for r in stale[:10]],
            },
            "sources": [dict(r) for r in per_source],
            "page_versions": versions,
            "quarantined": quarantined,
            "runs": [
                {
                    **{k: r[k] for k in r.keys() if k != "counters"},  # noqa: SIM118 (Row iterates values)
                    "sources": json.loads(r["sources"]),
                }
                for r in last_runs
            ],
        }

    def close(self) -> None:
        with self._lock:
            self._conn.close()
