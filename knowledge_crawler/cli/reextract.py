"""``knowledge-crawler reextract --seeds FILE``: rebuild stored pages from the raw archive.

Glue only (click, no Scrapy): the work is :class:`knowledge_crawler.archive.reextract.Reextractor`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from knowledge_crawler.cli._common import (
    PROG,
    BadInput,
    counted,
    database_option,
    open_existing_store,
)

__all__ = ["reextract"]


@click.command("reextract")
@database_option
@click.option(
    "--seeds",
    required=True,
    metavar="FILE",
    help="The source file the pages were crawled from (or its comma-separated URLs); "
    "its current boilerplate, thin_words, near_duplicate_threshold and URL rules apply.",
)
@click.option("--source", "source_id", metavar="ID", help="Only the pages of this source.")
@click.option(
    "--archive",
    "archive",
    envvar="KC_ARCHIVE_DIR",
    default="",
    metavar="DIR",
    help="The archive folder; default KC_ARCHIVE_DIR, else archive/ beside the SQLite database.",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Wait up to this long for a crawl writing the sources to finish (default "
    "KC_LEASE_WAIT_SECONDS, else 0: give up at once, exit 2).",
)
def reextract(
    database: str, seeds: str, source_id: str | None, archive: str, wait: float | None
) -> None:
    """Rebuild stored pages from their archived responses, with no network.

    For every stored page of the sources in --seeds (or only --source) that has
    a record in the raw archive, the response is read back from its WARC file
    and goes through the crawl's later stages again: extract, clean (with the
    source's current boilerplate and thin_words), canonicalize, fingerprint
    (content hash, MinHash with the database's own parameters, passages),
    dedupe and store. A page whose content hash does not move keeps its
    content; a changed page gets a new version, as a crawl would give it. Times,
    validators, status and schedule are left as they are: nothing was fetched.

    Pages without an archive record (crawled before the archive, or with
    KC_ARCHIVE_ENABLED=false) are counted and skipped. A WARC file that is
    missing or unreadable is named once; its pages stay as stored and the rest
    go on. A progress bar goes to stderr, then one summary line to stdout.

    It holds the sources' writer lease while it runs, as a crawl does: while a
    crawl, a refresh or another reextract writes one of them, it stops with one
    line naming that writer (exit 2), or waits for it up to --wait seconds. A
    page stored anew since it was read is not reverted: it is skipped and
    counted. KC_PASSAGE_WORDS, KC_STORE_BATCH_SIZE, KC_STORE_BUSY_TIMEOUT,
    KC_STORE_RETRY_SECONDS, KC_LEASE_TTL_SECONDS and KC_LEASE_WAIT_SECONDS are
    read from the environment.

    Exit status: 0 when every archived page was re-extracted, 1 when some could
    not be (or the database could not be written), 2 on bad input or when
    another writer holds a source.
    """
    from knowledge_crawler.archive.reextract import Reextractor
    from knowledge_crawler.archive.warc import archive_dir
    from knowledge_crawler.config import KcConfig
    from knowledge_crawler.errors import ConfigError, LeaseHeldError, StoreError
    from knowledge_crawler.sources import resolve_seeds
    from knowledge_crawler.store import Lease, LeaseHolder, LeaseKeeper
    from knowledge_crawler.store.leases import refusal

    try:
        config = KcConfig.from_settings({k: v for k, v in os.environ.items() if k[:3] == "KC_"})
        sources = {s.id: s for s in resolve_seeds(seeds, only=source_id)}
        directory = archive_dir(database, archive)
    except ConfigError as exc:  # a SeedsError is one too
        raise BadInput(exc) from exc

    def warn(message: str) -> None:
        click.echo(f"{PROG}: warning: {message}", err=True)

    patience = config.lease_wait_seconds if wait is None else wait

    def waiting(blocking: list[Lease]) -> None:
        warn(f"waiting up to {patience:.0f} s for the writer lease: {refusal(blocking)}")

    with (
        open_existing_store(database, write=True) as store,
        LeaseKeeper(
            store,
            sorted(sources),
            LeaseHolder.this_process("reextract"),
            ttl=config.lease_ttl_seconds,
        ) as lease,
    ):
        try:
            lease.acquire(patience, waiting=waiting)
        except LeaseHeldError as exc:
            raise BadInput(f"{exc}; or wait for it with --wait SECONDS") from exc
        except StoreError as exc:
            click.echo(f"{PROG}: error: {exc}", err=True)
            sys.exit(1)
        try:
            worker = Reextractor(
                store,
                sources,
                directory,
                passage_words=config.passage_words,
                batch_size=config.store_batch_size,
                retry_seconds=config.store_retry_seconds,
                warn=warn,
                lease=lease,
            )
            pages = worker.pages()
            archived = sum(p.archive_file is not None for p in pages)
            if archived and not directory.is_dir():
                raise BadInput(
                    f"no archive folder at {directory} ({counted(archived, 'page')} with "
                    "archive records; pass --archive DIR or set KC_ARCHIVE_DIR)"
                )
            bar: Any
            with click.progressbar(
                length=len(pages), label="re-extracting", file=sys.stderr
            ) as bar:
                summary = worker.run(pages, progress=bar.update)
        except ConfigError as exc:
            raise BadInput(exc) from exc
        except StoreError as exc:
            click.echo(f"{PROG}: error: {exc}", err=True)
            sys.exit(1)
    if summary.rekeyed:
        warn(
            f"{counted(summary.rekeyed, 'page')} would now have another canonical URL; "
            "kept under theirs"
        )
    click.echo(f"reextract: {summary.line()}")
    if summary.errors:
        sys.exit(1)
