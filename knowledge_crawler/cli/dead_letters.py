"""``knowledge-crawler dead-letters``: pages whose retries ran out, or that wait for review."""

from __future__ import annotations

import json

import click

from knowledge_crawler.cli._common import database_option, open_existing_store

__all__ = ["dead_letters"]


@click.command("dead-letters")
@database_option
@click.option("--source", "source_id", metavar="ID", help="Only the pages of this source.")
@click.option("--json", "as_json", is_flag=True, help="Print them as a JSON array.")
def dead_letters(database: str, source_id: str | None, as_json: bool) -> None:
    """Pages the crawl gave up on, oldest first.

    Dead-lettered: every retry failed (network errors, timeouts, 5xx, 429), the
    last error is shown. For review: the server refused access (401/403), which
    is never retried blindly. Retry state is kept apart from content: a page
    listed here keeps its last good content in `pages`, and is cleared from
    this list the next time it is fetched.
    """
    with open_existing_store(database) as store:
        letters = store.dead_letters(source_id)
    if as_json:
        click.echo(json.dumps(letters, indent=2))
        return
    for d in letters:
        what = "review" if d["needs_review"] and not d["dead_lettered_at"] else "dead"
        when = d["dead_lettered_at"] or d["last_failed_at"]
        status = d["last_status"] if d["last_status"] is not None else "-"
        click.echo(
            f"{what:<6}  {when}  {d['attempts']:>2}x  {status!s:>3}  "
            f"{d['last_error'] or ''}  {d.get('url') or d['canonical_url']}  [{d['source_id']}]"
        )
    click.echo(f"{len(letters)} page{'s' if len(letters) != 1 else ''}")
