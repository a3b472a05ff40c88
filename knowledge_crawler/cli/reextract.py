"""``knowledge-crawler reextract --seeds FILE``: rebuild stored pages from the raw archive.

Glue only (click, no Scrapy): the work is :class:`knowledge_crawler.archive.reextract.Reextractor`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from knowledge_crawler.cli._common import PROG, BadInput, database_option, open_existing_store

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
def reextract(database: str, seeds: str, source_id: str | None, archive: str) -> None:
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
    Run it while no crawl writes the same sources. KC_PASSAGE_WORDS,
    KC_STORE_BATCH_SIZE, KC_STORE_BUSY_TIMEOUT and KC_STORE_RETRY_SECONDS are
    read from the environment.

    Exit status: 0 when every archived page was re-extracted, 1 when some could
    not be (or the database could not be written), 2 on bad input.
    """
    from knowledge_crawler.archive.reextract import Reextractor
    from knowledge_crawler.archive.warc import archive_dir
    from knowledge_crawler.config import KcConfig
    from knowledge_crawler.errors import ConfigError, StoreError
    from knowledge_crawler.sources import resolve_seeds

    try:
        config = KcConfig.from_settings({k: v for k, v in os.environ.items() if k[:3] == "KC_"})
        sources = {s.id: s for s in resolve_seeds(seeds, only=source_id)}
        directory = archive_dir(database, archive)
    except ConfigError as exc:  # a SeedsError is one too
        raise BadInput(exc) from exc

    def warn(message: str) -> None:
        click.echo(f"{PROG}: warning: {message}", err=True)

    with open_existing_store(database) as store:
        try:
            worker = Reextractor(
                store,
                sources,
                directory,
                passage_words=config.passage_words,
                batch_size=config.store_batch_size,
                retry_seconds=config.store_retry_seconds,
                warn=warn,
            )
            pages = worker.pages()
            archived = sum(p.archive_file is not None for p in pages)
            if archived and not directory.is_dir():
                raise BadInput(
                    f"no archive folder at {directory} ({archived} pages have archive "
                    "records; pass --archive DIR or set KC_ARCHIVE_DIR)"
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
        warn(f"{summary.rekeyed} pages would now have another canonical URL; kept under theirs")
    click.echo(f"reextract: {summary.line()}")
    if summary.errors:
        sys.exit(1)
