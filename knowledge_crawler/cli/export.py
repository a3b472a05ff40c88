"""``knowledge-crawler export --format jsonl``: every page with its provenance, streamed."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import click

from knowledge_crawler.cli._common import BadInput, database_option, open_existing_store
from knowledge_crawler.cli._time import TIME_FORMS, time_callback

__all__ = ["FORMATS", "export", "write_jsonl"]

#: the output formats ``--format`` accepts
FORMATS = ("jsonl",)


def write_jsonl(records: Iterable[dict[str, Any]], out: IO[bytes]) -> int:
    """Write each record as one line of UTF-8 JSON as it comes; how many were written."""
    n = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        n += 1
    return n


@contextlib.contextmanager
def _atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """A new file beside ``path`` that replaces it once written whole, or disappears."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        out = tmp.open("xb")
    except FileNotFoundError:
        raise BadInput(f"cannot write {path}: no folder {path.parent}") from None
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_output(output: Path, database: str, *, force: bool) -> None:
    """Refuse (:class:`BadInput`) an ``--output`` that is the SQLite database ``database``
    or one of its files (journal, WAL), whatever ``force`` says, or an existing file
    without ``force``."""
    if database.startswith("sqlite:///"):
        db = Path(database.removeprefix("sqlite:///"))
        own = [db.with_name(db.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
        if any(_same_file(output, path) for path in own):
            raise BadInput(
                f"refusing to write {output}: it is the database being exported, or one of "
                "its files"
            )
    if output.exists() and not force:
        raise BadInput(f"{output} exists; --force replaces it")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist: the same path then
        return os.path.abspath(a) == os.path.abspath(b)


@click.command("export")
@database_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="jsonl",
    show_default=True,
    help="Output format: JSON Lines, one object per page.",
)
@click.option(
    "--since",
    callback=time_callback,
    metavar="TIME",
    help=f"Only pages whose content or status moved from this time on: {TIME_FORMS}.",
)
@click.option("--source", "source_id", metavar="ID", help="Only the pages of this source.")
@click.option("--include-duplicates", is_flag=True, help="Also the pages marked duplicate_of.")
@click.option("--include-tombstoned", is_flag=True, help="Also the tombstoned pages.")
@click.option(
    "--passages",
    is_flag=True,
    help="One object per passage (the unit of search) instead of per page.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="FILE",
    help="Write to FILE (replaced whole, only once complete) instead of stdout.",
)
@click.option("--force", is_flag=True, help="Replace FILE if it exists (never the database).")
def export(
    database: str,
    fmt: str,
    since: str | None,
    source_id: str | None,
    include_duplicates: bool,
    include_tombstoned: bool,
    passages: bool,
    output: Path | None,
    force: bool,
) -> None:
    """Every stored page as one JSON object a line, for vector stores and agents.

    Each object: source_id, canonical_url, url (requested), final_url (after
    redirects), title, content (markdown), content_hash, language,
    word_count, headings, fetched_at, last_changed_at, version (the current
    version's number: stored versions + 1), status, duplicate_of (the
    representative's canonical URL, or null) and extra (a per-site spider's
    extra fields, an object; {} for none). Duplicates and tombstoned pages
    are left out unless asked for.

    --since exports only what changed (content, or status: tombstoned or
    restored) from that time on, for an incremental load. Rows are read and
    written as they go, so memory stays flat however large the dataset.
    --output writes a temporary file beside FILE and renames it over FILE
    once complete; a failed export leaves FILE as it was. An existing FILE
    is replaced only with --force, and the database being exported never.

    --passages writes one object per passage instead: passage_id (stable
    across runs while its text and headings stay), ord, heading_path,
    content, word_count, and its page's source_id, canonical_url, url,
    title, page_content_hash, fetched_at, last_changed_at, version, status
    and duplicate_of: ready to embed, with the provenance to cite.
    """
    assert fmt in FORMATS  # click.Choice: only JSON Lines for now
    if output is not None:
        check_output(output, database, force=force)
    with open_existing_store(database) as store:
        rows = store.export_passages if passages else store.export_pages
        records = rows(
            since=since,
            source_id=source_id,
            include_duplicates=include_duplicates,
            include_tombstoned=include_tombstoned,
        )
        with contextlib.closing(records):  # its cursor closes before the store, even on error
            if output is None:
                sys.stdout.flush()
                write_jsonl(records, sys.stdout.buffer)
                sys.stdout.buffer.flush()
                return
            with _atomic_file(output) as out:
                n = write_jsonl(records, out)
    what = "passage" if passages else "page"
    click.echo(f"exported {n} {what}{'s' if n != 1 else ''} to {output}", err=True)
