"""``knowledge-crawler history URL``: every stored version of a page, newest first."""

from __future__ import annotations

import json
from typing import Any

import click

from knowledge_crawler.cli._common import (
    BadInput,
    database_option,
    open_existing_store,
    url_identities,
)

__all__ = ["history"]


@click.command("history")
@database_option
@click.argument("url")
@click.option("--source", "source_id", metavar="ID", help="Only the page of this source.")
@click.option("--content", is_flag=True, help="Print each version's full content too.")
@click.option("--json", "as_json", is_flag=True, help="Print the versions as a JSON array.")
def history(database: str, url: str, source_id: str | None, content: bool, as_json: bool) -> None:
    """Every stored version of the page at URL, newest first, and its status events.

    URL may be given in any form the crawl met it in (tracking parameters,
    www., a trailing slash): it is looked up by its canonical URL. The
    current content comes first (replaced: -), then each earlier content,
    kept in page_versions when the page's content hash moved. Then every
    move of the page's status, oldest first: suspected_missing, tombstoned
    (with the reason) and restored, each with what its URL answered. --json
    prints objects with source_id, canonical_url, url (where the page was
    fetched, as the text shows it), content_hash, title,
    content, fetched_at and replaced_at; the current one also has events
    (time, event, reason, http_status, evidence).
    """
    with open_existing_store(database) as store:
        versions: list[dict[str, Any]] = []
        for identity in url_identities(url):
            versions = store.history(identity, source_id=source_id)
            if versions:
                break
    if not versions:
        where = f" in source {source_id!r}" if source_id else ""
        raise BadInput(f"no stored page for {url}{where}")
    if as_json:
        click.echo(json.dumps(versions, indent=2, ensure_ascii=False))
        return
    shown: tuple[str, str] | None = None
    events: list[dict[str, Any]] = []
    for v in versions:
        if (v["source_id"], v["canonical_url"]) != shown:
            _echo_events(events)
            shown = (v["source_id"], v["canonical_url"])
            events = v.get("events") or []
            click.echo(f"{v['url']}  [{v['source_id']}]")
        label = "current " if v["replaced_at"] is None else "version "
        replaced = v["replaced_at"] or "-"
        click.echo(
            f"  {label} {v['content_hash'][:12]}  fetched {v['fetched_at']}  "
            f"replaced {replaced}  {v['title'] or ''}".rstrip()
        )
        if content:
            click.echo("")
            click.echo("\n".join(f"    {line}" for line in v["content"].splitlines()))
            click.echo("")
    _echo_events(events)
    n = len(versions)
    click.echo(f"{n} version{'s' if n != 1 else ''}")


def _echo_events(events: list[dict[str, Any]]) -> None:
    """A page's status events, oldest first: ``  tombstoned  TIME  HTTP 410  (gone (410))``."""
    for e in events:
        answer = f"HTTP {e['http_status']}" if e["http_status"] is not None else "no HTTP answer"
        reason = f"  ({e['reason']})" if e["reason"] else ""
        click.echo(f"  {e['event']:<17}  {e['time']}  {answer}{reason}")
