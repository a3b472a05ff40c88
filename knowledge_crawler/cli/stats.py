"""``knowledge-crawler stats``: is the dataset trustworthy, and what did the last runs do?"""

from __future__ import annotations

import json
from typing import Any

import click

from knowledge_crawler.cli._common import counted, database_option, open_existing_store

__all__ = ["render_stats", "stats"]

_RUN_COLUMNS = (
    ("pages_new", "new"),
    ("responses_200_changed", "changed"),
    ("responses_200_unchanged", "unchanged"),
    ("conditional_requests_sent", "conditional"),
    ("responses_304", "304"),
    ("responses_404", "404"),
    ("responses_429", "429"),
    ("retries_scheduled", "retries"),
    ("tombstones_created", "tombstoned"),
    ("duplicates_found", "dups"),
    ("parse_failures", "parse_fail"),
    ("quarantined", "quarantined"),
    ("candidates_discovered", "discovered"),
    ("upserts_completed", "upserts"),
)


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]


def _duration(seconds: int) -> str:
    """``0s``, ``42s``, ``5m``, ``3h``, ``2d``: the largest whole unit."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def render_stats(report: dict[str, Any]) -> str:
    """The human-readable form of :meth:`Store.stats`."""
    s = report["sanity"]
    ok = "ok" if s["rows_equal_identities"] else "MISMATCH: URL normalisation leaked"
    lines = [
        f"database: {report['database']}",
        "",
        "sanity checks",
        f"  rows = distinct identities:      {s['total_rows']} = {s['distinct_identities']}  {ok}",
        "  one content under several URLs:  "
        + counted(s["shared_content_hashes"], "content hash", "content hashes"),
    ]
    for ex in s["shared_content_examples"][:5]:
        shown = " ".join(ex["fetched_urls"][:3])
        lines.append(f"      {ex['content_hash'][:12]}  x{ex['n']}  {shown}")
    lines.append(f"  pages not seen in {s['stale_days']} days:       {s['stale_pages']}")
    for ex in s["stale_examples"][:5]:
        lines.append(f"      {ex['last_seen_at']}  {ex['url']}")
    d = report["duplicates"]
    lines.append(
        f"  duplicate clusters:              {d['clusters']} ({d['exact']} exact and "
        f"{counted(d['near'], 'near duplicate page')}; see `knowledge-crawler duplicates`)"
    )
    chained = s["chained_duplicates"]
    lines.append(
        f"  duplicates of duplicates:        {chained}  "
        + ("ok" if not chained else "MISMATCH: a representative is itself a duplicate")
    )
    for ex in s["chained_duplicate_examples"][:5]:
        lines.append(
            f"      {ex['url']} -> {ex['duplicate_of_url']} -> {ex['its_duplicate_of_url']}"
        )
    lines += ["", "sources"]
    if report["sources"]:
        lines += _table(
            ["source", "status", "pages", "duplicates", "thin", "last seen"],
            [
                [r["source_id"], r["status"], r["n"], r["duplicates"], r["thin"], r["last_seen_at"]]
                for r in report["sources"]
            ],
        )
    else:
        lines.append("  (no pages yet)")
    lines.append(
        f"  page versions kept: {report['page_versions']}   quarantined records: "
        f"{report['quarantined']}"
    )
    h = report["health"]
    lines += [
        "",
        "freshness and failures",
        f"  pages due for a check:           {h['due_pages']}",
        f"  oldest unverified record:        {h['oldest_unverified'] or '-'}",
        f"  pending retries:                 {h['pending_retries']} (oldest due "
        f"{h['oldest_pending_retry'] or '-'})",
        f"  dead letters / held for review:  {h['dead_lettered']} / {h['held_for_review']}"
        "  (see `knowledge-crawler dead-letters`)",
        f"  discovered, not yet stored:      {h['frontier']}",
    ]
    for r in h["sources"]:
        lines.append(
            f"  source {r['source_id']}: {r['due'] or 0} due, lag {_duration(r['lag_seconds'])}"
        )
    lines += ["", "last runs"]
    if report["runs"]:
        lines += _table(
            ["run", "started", "outcome", "reason", *(label for _, label in _RUN_COLUMNS)],
            [
                [
                    r["id"],
                    r["started_at"][:19] + "Z",
                    r["outcome"],
                    r["finish_reason"] or "-",
                    *(r[name] for name, _ in _RUN_COLUMNS),
                ]
                for r in report["runs"]
            ],
        )
        for r in report["runs"]:
            errors = ", ".join(f"{kind}={n}" for kind, n in r["fetch_errors"].items())
            job = f"job {r['job_id']}  " if r.get("job_id") else ""
            lines.append(f"  run {r['id']}  {job}errors: {errors or 'none'}")
    else:
        lines.append("  (no runs yet)")
    return "\n".join(lines)


@click.command("stats")
@database_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--stale-days",
    default=7,
    show_default=True,
    type=click.IntRange(min=1),
    help="A page not seen for this many days counts as stale.",
)
@click.option(
    "--runs",
    default=5,
    show_default=True,
    type=click.IntRange(min=0),
    help="How many of the last crawl runs to show.",
)
def stats(database: str, as_json: bool, stale_days: int, runs: int) -> None:
    """Sanity checks, per-source counts by status, and the last runs' counters.

    The sanity checks: rows equal distinct (source, canonical URL)
    identities; content hashes shared by several URLs (duplicates or a
    normalisation bug); pages not seen for --stale-days days; duplicates whose
    representative is itself a duplicate (there should be none). Each run shows
    its outcome (running, finished, interrupted, failed, abandoned) and its
    fetch errors by kind.
    """
    with open_existing_store(database) as store:
        report = store.stats(stale_days=stale_days, runs=runs)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(render_stats(report))
