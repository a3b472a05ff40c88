"""``knowledge-crawler duplicates``: clusters of pages with the same or nearly the same content."""

from __future__ import annotations

import json

import click

from knowledge_crawler.cli._common import counted, database_option, open_existing_store

__all__ = ["duplicates"]


@click.command("duplicates")
@database_option
@click.option("--near", "kind", flag_value="near", help="Only near duplicates (MinHash).")
@click.option("--exact", "kind", flag_value="exact", help="Only exact duplicates (same hash).")
@click.option("--json", "as_json", is_flag=True, help="Print the clusters as JSON.")
@click.option(
    "--limit",
    default=0,
    type=click.IntRange(min=0),
    help="Show at most this many clusters (0 = all).",
)
def duplicates(database: str, kind: str | None, as_json: bool, limit: int) -> None:
    """List duplicate clusters: each representative with the pages marked duplicate of it.

    A representative is chosen by signals: not a page whose rel=canonical names
    another stored page, then the most pages linking to it, then a URL without
    print/AMP/mobile/page markers, then the shorter path, then the page seen
    first. Exact duplicates share its content
    hash; near duplicates have an estimated word-shingle Jaccard similarity of at
    least the source's near_duplicate_threshold (shown as the score). Pages
    are shown at the URL they were fetched at; --json gives each its
    canonical_url (its identity) and url (fetched).
    """
    with open_existing_store(database) as store:
        clusters = store.duplicate_clusters(kind)
    if limit:
        clusters = clusters[:limit]
    if as_json:
        click.echo(json.dumps(clusters, indent=2))
        return
    pages = 0
    for cluster in clusters:
        rep = cluster["representative"]
        click.echo(f"{rep['url']}  [{rep['source_id']}]  {rep['title'] or ''}".rstrip())
        for dup in cluster["duplicates"]:
            pages += 1
            score = "" if dup["score"] is None else f"{dup['score']:.2f}"
            click.echo(f"    {dup['kind']:<5}  {score:>4}  {dup['url']}")
    what = f"{kind} " if kind else ""
    click.echo(f"{counted(len(clusters), 'cluster')}, {counted(pages, what + 'duplicate page')}")
