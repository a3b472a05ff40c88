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
from knowledge_crawler.store.base import (
    HEAD_COUNTERS,
    DedupeRow,
    DuplicateUpdate,
    PageRecord,
    Store,
    UpsertResult,
    utc_now,
)
from knowledge_crawler.store.migrations import MIGRATIONS

__all__ = ["SqliteStore", "sqlite_path"]

# Metadata: rewritten on every visit. Content: only when the hash moves (_PUT_CONTENT).
_UPSERT = """
INSERT INTO page_meta (
    source_id, canonical_url, url, final_url, fetched_at, title, headings,
    word_count, language, thin, content_hash,
    duplicate_of, duplicate_kind, duplicate_score, http_status, etag, last_modified, status,
    first_seen_at, last_seen_at, last_checked_at, last_changed_at, next_check_at
) VALUES (
    :source_id, :canonical_url, :url, :final_url, :fetched_at, :title, :headings,
    :word_count, :language, :thin, :content_hash,
    (SELECT id FROM page_meta WHERE source_id = :dup_source AND canonical_url = :dup_url),
    :duplicate_kind, :duplicate_score, :http_status, :etag, :last_modified, 'active',
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
    last_changed_at = CASE WHEN page_meta.content_hash = excluded.content_hash
                           THEN page_meta.last_changed_at ELSE excluded.last_changed_at END,
    content_hash    = excluded.content_hash,
    duplicate_of    = excluded.duplicate_of,
    duplicate_kind  = excluded.duplicate_kind,
    duplicate_score = excluded.duplicate_score,
    http_status     = excluded.http_status,
    etag            = excluded.etag,
    last_modified   = excluded.last_modified,
    status          = 'active',
    last_seen_at    = excluded.last_seen_at,
    last_checked_at = excluded.last_checked_at,
    next_check_at   = excluded.next_check_at
    -- first_seen_at is deliberately absent: set once, never updated
"""

_PUT_CONTENT = """
INSERT INTO page_content (page_id, content, minhash, minhash_params)
VALUES ((SELECT id FROM page_meta WHERE source_id = :source_id AND canonical_url = :canonical_url),
        :content, :minhash, :minhash_params)
ON CONFLICT (page_id) DO UPDATE SET
    content = excluded.content, minhash = excluded.minhash, minhash_params = excluded.minhash_params
"""

_SET_DUPLICATE = """
UPDATE page_meta SET
    duplicate_of = (SELECT id FROM page_meta
                    WHERE source_id = :dup_source AND canonical_url = :dup_url),
    duplicate_kind = :kind,
    duplicate_score = :score
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

_SAVE_VERSION = """
INSERT INTO page_versions (page_id, content_hash, title, content, fetched_at, replaced_at)
SELECT id, content_hash, title, content, fetched_at, ? FROM pages WHERE id = ?
"""

_PRIOR = """
SELECT m.id, m.content_hash, c.minhash_params, c.page_id IS NOT NULL
FROM page_meta m LEFT JOIN page_content c ON c.page_id = m.id
WHERE m.source_id = ? AND m.canonical_url = ?
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
        "duplicate_score": rec.duplicate_score if rec.duplicate_of else None,
        "http_status": rec.http_status,
        "etag": rec.etag,
        "last_modified": rec.last_modified,
        "next_check_at": rec.next_check_at,
    }


def _dedupe_row(row: Sequence[Any]) -> DedupeRow:
    source_id, url, digest, words, rep_source, rep_url, kind, score, minhash, params = row
    return DedupeRow(
        source_id=source_id,
        canonical_url=url,
        content_hash=digest,
        word_count=words,
        duplicate_of=(rep_source, rep_url) if rep_url is not None else None,
        duplicate_kind=kind,
        duplicate_score=score,
        minhash=bytes(minhash) if minhash is not None else None,
        minhash_params=params,
    )


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
        self,
        records: Sequence[PageRecord],
        *,
        run_id: int | None = None,
        duplicate_updates: Sequence[DuplicateUpdate] = (),
    ) -> UpsertResult:
        if not records and not duplicate_updates:
            return UpsertResult()
        with self._lock:
            try:
                with self._transaction():
                    result = self._load(records)
                    self._set_duplicates(duplicate_updates)
                    return result
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
            with self._transaction():
                self._set_duplicates(duplicate_updates)
            return result

    def _set_duplicates(self, updates: Sequence[DuplicateUpdate]) -> None:
        if not updates:
            return
        self._conn.executemany(
            _SET_DUPLICATE,
            [
                {
                    "source_id": u.key[0],
                    "canonical_url": u.key[1],
                    "dup_source": u.duplicate_of[0] if u.duplicate_of else None,
                    "dup_url": u.duplicate_of[1] if u.duplicate_of else None,
                    "kind": u.kind if u.duplicate_of else None,
                    "score": u.score if u.duplicate_of else None,
                }
                for u in updates
            ],
        )

    def _load(self, records: Sequence[PageRecord]) -> UpsertResult:
        conn = self._conn
        result = UpsertResult()
        now = utc_now()
        rows: list[dict[str, Any]] = []
        contents: list[dict[str, Any]] = []
        pending: set[tuple[str, str]] = set()

        def write() -> None:
            conn.executemany(_UPSERT, rows)
            conn.executemany(_PUT_CONTENT, contents)
            rows.clear()
            contents.clear()
            pending.clear()

        for rec in records:
            if rec.key in pending:  # the same page twice in one batch: write the first one
                write()
            prior = conn.execute(_PRIOR, rec.key).fetchone()
            params = _row_params(rec)
            if prior is None:
                result.inserted.append(rec.key)
                contents.append(params)
            elif prior[1] == rec.content_hash:
                result.unchanged.append(rec.key)
                if not prior[3] or prior[2] != rec.minhash_params:
                    contents.append(params)  # re-signed with other MinHash parameters
            else:
                conn.execute(_SAVE_VERSION, (now, prior[0]))
                result.changed.append(rec.key)
                contents.append(params)
            rows.append(params)
            pending.add(rec.key)
        write()
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

    def dedupe_state(self, *, signatures: bool = True) -> Iterator[DedupeRow]:
        minhash = (
            "CASE WHEN p.duplicate_of IS NULL THEN p.minhash END, "
            "CASE WHEN p.duplicate_of IS NULL THEN p.minhash_params END"
            if signatures
            else "NULL, NULL"
        )
        with self._lock:
            rows = self._conn.execute(
                "SELECT p.source_id, p.canonical_url, p.content_hash, p.word_count, "
                "r.source_id, r.canonical_url, p.duplicate_kind, p.duplicate_score, "
                f"{minhash} "
                "FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of "
                "WHERE p.status = 'active' ORDER BY p.first_seen_at, p.id"
            ).fetchall()
        for row in rows:
            yield _dedupe_row(row)

    def dependents(self, key: tuple[str, str]) -> list[DedupeRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT d.source_id, d.canonical_url, d.content_hash, d.word_count, "
                "r.source_id, r.canonical_url, d.duplicate_kind, d.duplicate_score, "
                "d.minhash, d.minhash_params "
                "FROM pages d JOIN page_meta r ON r.id = d.duplicate_of "
                "WHERE r.source_id = ? AND r.canonical_url = ? AND d.status = 'active' "
                "ORDER BY d.first_seen_at, d.id",
                key,
            ).fetchall()
        return [_dedupe_row(row) for row in rows]

    def duplicate_clusters(self, kind: str | None = None) -> list[dict[str, Any]]:
        where = "d.duplicate_of IS NOT NULL" + (" AND d.duplicate_kind = ?" if kind else "")
        rows = self.query(
            "SELECT r.source_id AS rep_source, r.canonical_url AS rep_url, r.title AS rep_title, "
            "d.source_id, d.canonical_url, d.title, d.duplicate_kind AS kind, "
            "d.duplicate_score AS score "
            f"FROM pages d JOIN pages r ON r.id = d.duplicate_of WHERE {where} "
            "ORDER BY r.first_seen_at, r.id, d.first_seen_at, d.id",
            (kind,) if kind else (),
        )
        clusters: dict[tuple[str, str], dict[str, Any]] = {}
        for r in rows:
            cluster = clusters.setdefault(
                (r["rep_source"], r["rep_url"]),
                {
                    "representative": {
                        "source_id": r["rep_source"],
                        "canonical_url": r["rep_url"],
                        "title": r["rep_title"],
                    },
                    "duplicates": [],
                },
            )
            cluster["duplicates"].append(
                {
                    "source_id": r["source_id"],
                    "canonical_url": r["canonical_url"],
                    "title": r["title"],
                    "kind": r["kind"],
                    "score": r["score"],
                }
            )
        return list(clusters.values())

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM dataset_meta WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock, self._transaction() as conn:
            conn.execute(
                "INSERT INTO dataset_meta (key, value, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (key, value, utc_now()),
            )

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
        dup_kinds = {
            r["duplicate_kind"]: r["n"]
            for r in q(
                "SELECT duplicate_kind, COUNT(*) AS n FROM pages "
                "WHERE duplicate_of IS NOT NULL GROUP BY duplicate_kind"
            )
        }
        clusters = q(
            "SELECT COUNT(DISTINCT duplicate_of) AS n FROM pages WHERE duplicate_of IS NOT NULL"
        )[0]["n"]
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
            "duplicates": {
                "clusters": clusters,
                "exact": dup_kinds.get("exact", 0),
                "near": dup_kinds.get("near", 0),
            },
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
