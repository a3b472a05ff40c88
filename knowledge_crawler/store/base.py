"""The store contract: what every backend (SQLite now, PostgreSQL later) provides.

The store persists values and never computes them: hashes, canonical URLs and
duplicate decisions are made by the pipelines before a record gets here.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "HEAD_COUNTERS",
    "DedupeRow",
    "DuplicateUpdate",
    "PageRecord",
    "Store",
    "UpsertResult",
    "utc_now",
]

#: The per-run counters of SPEC F-METRICS, stored as columns of ``crawl_runs``.
HEAD_COUNTERS: tuple[str, ...] = (
    "candidates_discovered",
    "conditional_requests_sent",
    "responses_304",
    "responses_200_changed",
    "responses_200_unchanged",
    "responses_404",
    "responses_429",
    "retries_scheduled",
    "parse_failures",
    "upserts_completed",
    "duplicates_found",
    "tombstones_created",
    "pages_new",
    "quarantined",
)


def utc_now() -> str:
    """Now as ISO-8601 UTC text ending in ``Z`` (microseconds kept for ordering)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(slots=True)
class PageRecord:
    """One fetched page, ready to load: the row of ``pages`` that a fetch produced."""

    source_id: str
    canonical_url: str
    url: str
    final_url: str
    fetched_at: str
    http_status: int
    content_hash: str
    content: str
    title: str | None = None
    headings: Sequence[str] = ()
    word_count: int = 0
    language: str | None = None
    thin: bool = False
    minhash: bytes | None = None
    minhash_params: str | None = None
    #: ``(source_id, canonical_url)`` of the representative page when a duplicate.
    duplicate_of: tuple[str, str] | None = None
    duplicate_kind: str | None = None
    #: estimated Jaccard similarity with the representative (1.0 for exact duplicates)
    duplicate_score: float | None = None
    etag: str | None = None
    last_modified: str | None = None
    next_check_at: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(frozen=True, slots=True)
class DuplicateUpdate:
    """A new duplicate decision for a page already stored (``duplicate_of=None``: none)."""

    key: tuple[str, str]
    duplicate_of: tuple[str, str] | None
    kind: str | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class DedupeRow:
    """What deduplication needs to know of one stored, active page."""

    source_id: str
    canonical_url: str
    content_hash: str
    word_count: int
    #: representative's ``(source_id, canonical_url)`` when the page is a duplicate
    duplicate_of: tuple[str, str] | None
    duplicate_kind: str | None = None
    duplicate_score: float | None = None
    minhash: bytes | None = None
    minhash_params: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_id, self.canonical_url)


@dataclass(slots=True)
class UpsertResult:
    """What one batch did, key by key."""

    inserted: list[tuple[str, str]] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    #: ``(key, error)`` of each record that failed and was quarantined.
    quarantined: list[tuple[tuple[str, str], str]] = field(default_factory=list)

    @property
    def loaded(self) -> int:
        return len(self.inserted) + len(self.changed) + len(self.unchanged)


class Store(abc.ABC):
    """A knowledge dataset on some database. Methods are blocking; call them off the event loop."""

    url: str

    @abc.abstractmethod
    def upsert_pages(
        self,
        records: Sequence[PageRecord],
        *,
        run_id: int | None = None,
        duplicate_updates: Sequence[DuplicateUpdate] = (),
    ) -> UpsertResult:
        """Load ``records``, then apply ``duplicate_updates``, in one transaction.

        Upsert on ``(source_id, canonical_url)``: ``first_seen_at`` is set once;
        content, minhash and ``last_changed_at`` move only when the hash moves,
        and then the previous content is appended to ``page_versions``. A record
        that fails never half-loads the batch: the batch is rolled back, each
        record is retried alone, and the offenders go to ``quarantine`` with
        their error while the rest load.
        """

    @abc.abstractmethod
    def dedupe_state(self, *, signatures: bool = True) -> Iterator[DedupeRow]:
        """Every active page, earliest ``first_seen_at`` first (ties by id).

        With ``signatures``, representatives (pages that are no duplicate) carry
        their stored MinHash bytes and parameters fingerprint.
        """

    @abc.abstractmethod
    def dependents(self, key: tuple[str, str]) -> list[DedupeRow]:
        """The pages stored as duplicates of ``key``, earliest first, with their MinHash."""

    @abc.abstractmethod
    def duplicate_clusters(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Each representative with its duplicates (of ``kind`` "exact"/"near", or both)."""

    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None:
        """A dataset-level value (e.g. the MinHash parameters of stored signatures)."""

    @abc.abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Store a dataset-level value."""

    @abc.abstractmethod
    def start_run(self, *, spider: str, sources: Sequence[str], mode: str) -> int:
        """Record a crawl run as started; return its id."""

    @abc.abstractmethod
    def finish_run(self, run_id: int, *, reason: str, counters: Mapping[str, int]) -> None:
        """Record a run's end and its counters (see :data:`HEAD_COUNTERS`)."""

    @abc.abstractmethod
    def stats(self, *, stale_days: int = 7, runs: int = 5) -> dict[str, Any]:
        """The sanity checks, per-source counts and the last runs' counters."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection; further calls fail."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
