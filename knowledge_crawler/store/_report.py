"""What every backend assembles the same way from its query rows: the ``stats`` report,
duplicate clusters, search results and export objects."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = [
    "export_page",
    "export_passage",
    "fetch_errors",
    "group_duplicates",
    "search_result",
    "seconds_between",
    "stats_report",
]


def fetch_errors(counters: Mapping[str, Any]) -> dict[str, int]:
    """``{kind: count}`` of a run's failed fetches, from its ``kc/fetch/error/<kind>`` stats."""
    prefix = "kc/fetch/error/"
    return {
        k.removeprefix(prefix): int(v)
        for k, v in sorted(counters.items())
        if k.startswith(prefix) and isinstance(v, int)
    }


def seconds_between(earlier: str | None, later: str) -> int:
    """Whole seconds from one stored time to another (0 without the first)."""
    if not earlier:
        return 0
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    try:
        delta = datetime.strptime(later, fmt) - datetime.strptime(earlier, fmt)
    except ValueError:
        return 0
    return max(0, int(delta.total_seconds()))


def stats_report(
    *,
    url: str,
    now: str,
    stale_days: int,
    totals: Any,
    shared: Sequence[Any],
    shared_pages: Mapping[str, Sequence[Any]],
    stale: Sequence[Any],
    chained: Sequence[Any],
    per_source: Sequence[Any],
    clusters: int,
    dup_kinds: Mapping[str, int],
    versions: int,
    quarantined: int,
    freshness: Sequence[Any],
    retries: Any,
    frontier: int,
    last_runs: Sequence[Any],
) -> dict[str, Any]:
    """What ``Store.stats`` returns, from the rows a backend's queries gave (rows index by
    column name)."""
    return {
        "database": url,
        "sanity": {
            "total_rows": totals["total_rows"],
            "distinct_identities": totals["distinct_identities"],
            "rows_equal_identities": totals["total_rows"] == totals["distinct_identities"],
            "shared_content_hashes": len(shared),
            # urls: the pages' keys; fetched_urls: where each was fetched (to open), in step
            "shared_content_examples": [
                {
                    "content_hash": r["content_hash"],
                    "n": r["n"],
                    "urls": [p["canonical_url"] for p in shared_pages[r["content_hash"]]],
                    "fetched_urls": [p["final_url"] for p in shared_pages[r["content_hash"]]],
                }
                for r in shared[:10]
            ],
            "stale_days": stale_days,
            "stale_pages": len(stale),
            "stale_examples": [dict(r) for r in stale[:10]],
            "chained_duplicates": len(chained),
            "chained_duplicate_examples": [dict(r) for r in chained[:10]],
        },
        "sources": [dict(r) for r in per_source],
        "duplicates": {
            "clusters": clusters,
            "exact": dup_kinds.get("exact", 0),
            "near": dup_kinds.get("near", 0),
        },
        "page_versions": versions,
        "quarantined": quarantined,
        "health": {
            "now": now,
            "sources": [
                {**dict(r), "lag_seconds": seconds_between(r["most_overdue_since"], now)}
                for r in freshness
            ],
            "due_pages": sum(r["due"] or 0 for r in freshness),
            "oldest_unverified": min(
                (r["oldest_check"] for r in freshness if r["oldest_check"]), default=None
            ),
            "pending_retries": retries["pending"] or 0,
            "oldest_pending_retry": retries["oldest_pending_retry"],
            "dead_lettered": retries["dead_lettered"] or 0,
            "held_for_review": retries["review"] or 0,
            "frontier": frontier,
        },
        "runs": [
            {
                **{k: v for k, v in dict(r).items() if k != "counters"},
                "sources": json.loads(r["sources"]),
                "fetch_errors": fetch_errors(json.loads(r["counters"] or "{}")),
            }
            for r in last_runs
        ],
    }


def group_duplicates(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Representatives with their duplicates, from rows ordered by representative (columns
    ``rep_source, rep_url, rep_fetched_url, rep_title, source_id, canonical_url, url, title,
    kind, score``; ``*url``: the canonical URL, the key; ``*fetched_url``, ``url``: where
    the page was fetched, the URL to open)."""
    clusters: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        cluster = clusters.setdefault(
            (r["rep_source"], r["rep_url"]),
            {
                "representative": {
                    "source_id": r["rep_source"],
                    "canonical_url": r["rep_url"],
                    "url": r["rep_fetched_url"],
                    "title": r["rep_title"],
                },
                "duplicates": [],
            },
        )
        cluster["duplicates"].append(
            {
                "source_id": r["source_id"],
                "canonical_url": r["canonical_url"],
                "url": r["url"],
                "title": r["title"],
                "kind": r["kind"],
                "score": r["score"],
            }
        )
    return list(clusters.values())


def search_result(row: Any, score: float) -> dict[str, Any]:
    """One passage of ``Store.search``, from a row of the backend's search query."""
    return {
        "passage_id": row["passage_id"],
        "source_id": row["source_id"],
        "canonical_url": row["canonical_url"],
        "url": row["url"],
        "title": row["title"],
        "heading_path": json.loads(row["heading_path"]),
        "score": round(score, 4),
        "snippet": row["snippet"],
        "content": row["content"],
    }


def export_page(row: Any) -> dict[str, Any]:
    """One object of ``Store.export_pages``: the row, its JSON columns decoded."""
    page = dict(row)
    page["headings"] = json.loads(page["headings"] or "[]")
    page["extra"] = json.loads(page["extra"] or "{}")
    return page


def export_passage(row: Any) -> dict[str, Any]:
    """One object of ``Store.export_passages``: the row, its heading path decoded."""
    passage = dict(row)
    passage["heading_path"] = json.loads(passage["heading_path"] or "[]")
    return passage
