"""``knowledge-crawler changes --since TIME``: new, changed and tombstoned pages, with diffs."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from typing import Any

import click

from knowledge_crawler.cli._common import (
    BadInput,
    change_diff,
    database_option,
    open_existing_store,
)
from knowledge_crawler.cli._time import TIME_FORMS, time_callback

__all__ = ["changes"]

_KIND_WIDTH = len("tombstoned")


def _header(entry: dict[str, Any]) -> str:
    line = (
        f"{entry['time']}  {entry['kind']:<{_KIND_WIDTH}}  {entry['url']}  "
        f"[{entry['source_id']}]  {entry['title'] or ''}"
    ).rstrip()
    if entry["reason"]:
        line += f"  ({entry['reason']})"
    return line


@click.command("changes")
@database_option
@click.option(
    "--since",
    required=True,
    callback=time_callback,
    metavar="TIME",
    help=f"From this time on (included): {TIME_FORMS}; no offset means UTC.",
)
@click.option(
    "--until",
    callback=time_callback,
    metavar="TIME",
    help="Up to this time (excluded); default: no end.",
)
@click.option("--source", "source_id", metavar="ID", help="Only the pages of this source.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line (JSON Lines).")
@click.option("--no-diff", "no_diff", is_flag=True, help="Leave the diffs out.")
def changes(
    database: str,
    since: str,
    until: str | None,
    source_id: str | None,
    as_json: bool,
    no_diff: bool,
) -> None:
    """New, changed, tombstoned and restored pages since --since, oldest first.

    new: first seen in the window. changed: the content hash moved, one entry
    per change, with a unified diff of the stored text (the previous text
    against the one that replaced it, each labelled with the time it was
    fetched). tombstoned: the page was tombstoned (gone or missing too long),
    with the reason. restored: a missing or tombstoned page answered again.
    Every tombstone and restore is listed, in order (a page tombstoned and
    restored in the window shows both); a page only suspected missing is not
    (see history).

    TIME is an ISO-8601 date or date-time (2026-12-01, 2026-12-01T08:00:00Z,
    2026-12-01T10:00+02:00; no offset means UTC), a duration back from now
    (30m, 24h, 7d, 1h30m) or now, today, yesterday (midnight UTC).

    Each page is shown at the URL it was fetched at. --json prints one object
    per line (kind, time, source_id, canonical_url, url (fetched),
    title, content_hash, reason, previous_content_hash, previous_fetched_at,
    fetched_at, diff) as it is read, so a large window streams. Nothing in the
    window: nothing on stdout, one line on stderr, exit 0.
    """
    if until is not None and until <= since:
        raise BadInput(f"--until {until} is not after --since {since}")
    counts: Counter[str] = Counter()
    with (
        open_existing_store(database) as store,
        contextlib.closing(
            store.changes(since, until, source_id=source_id, contents=not no_diff)
        ) as entries,
    ):
        for entry in entries:
            counts[entry["kind"]] += 1
            diff = change_diff(entry) if entry["kind"] == "changed" and not no_diff else None
            if as_json:
                click.echo(json.dumps({**entry, "diff": diff}, ensure_ascii=False))
                continue
            click.echo(_header(entry))
            if diff:
                click.echo("\n".join(f"    {line}" for line in diff.splitlines()))
    window = f"since {since}" + (f" until {until}" if until else "")
    if source_id:
        window += f" in source {source_id!r}"
    total = sum(counts.values())
    if not total:
        click.echo(f"no changes {window}", err=True)
    elif not as_json:
        kinds = ", ".join(
            f"{counts[k]} {k}" for k in ("new", "changed", "tombstoned", "restored") if counts[k]
        )
        click.echo(f"{total} change{'s' if total != 1 else ''} {window}: {kinds}")
