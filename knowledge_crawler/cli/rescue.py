"""``knowledge-crawler rescue FILE``: load what a crawl could not store back into the database."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from knowledge_crawler.cli._common import DEFAULT_DATABASE_URL, PROG, BadInput, open_existing_store

__all__ = ["rescue"]


def _beside(path: Path) -> str | None:
    """The SQLite database a rescue file sits beside (``NAME.unsaved-RUN.jsonl`` -> ``NAME``)."""
    name = path.name.removesuffix(".loaded")
    if ".unsaved-" not in name:
        return None
    database = path.with_name(name.rsplit(".unsaved-", 1)[0])
    return f"sqlite:///{database}" if database.is_file() else None


@click.command("rescue")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--db",
    "database",
    envvar="KC_DATABASE_URL",
    default=None,
    metavar="URL",
    help="Database to load into (sqlite:///PATH or postgresql://...); default: the SQLite "
    "file FILE sits beside, else KC_DATABASE_URL, else " + DEFAULT_DATABASE_URL + ".",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Wait up to SECONDS for another writer's lease on the file's sources "
    "(default KC_LEASE_WAIT_SECONDS, else 0: stop at once).",
)
def rescue(file: Path, database: str | None, wait: float | None) -> None:
    """Load a rescue file (what a crawl could not store) into the database.

    When the database stays unusable past KC_STORE_RETRY_SECONDS, a crawl stops
    and writes the rows it still holds to DATABASE.unsaved-RUN.jsonl beside the
    database (readable by its owner only; never in a temporary folder; for
    PostgreSQL, knowledge-DIGEST.unsaved-RUN.jsonl in KC_RESCUE_DIR, else in its
    working folder, named for the database). The next crawl of that database loads such files before
    it starts; this command loads one now, e.g. for a source no crawl will run
    soon:

    \b
        knowledge-crawler rescue data/knowledge.db.unsaved-41.jsonl

    The operations are written in their order through the store's normal batches,
    so content hashes, versions and duplicates behave as in a crawl. Loading is
    idempotent: a page checked at or after a line's time (stored by an earlier
    load, or crawled since) is left as it is, so loading a file twice writes
    nothing twice and an old file never reverts newer pages. Once loaded, the
    file is renamed FILE.loaded; one line says what was loaded.

    It holds the writer lease of the file's sources while it loads, as a crawl
    does. Exit status: 0 when loaded, 2 when FILE is missing or not a rescue
    file or another writer holds a source, 1 when the database cannot be written.
    """
    from knowledge_crawler.config import KcConfig
    from knowledge_crawler.errors import ConfigError, LeaseHeldError, StoreError
    from knowledge_crawler.store import Lease, LeaseHolder, LeaseKeeper
    from knowledge_crawler.store.leases import refusal
    from knowledge_crawler.store.rescue import load_rescue, read_rescue, rescue_sources

    if not file.is_file():
        raise BadInput(f"no rescue file at {file}")
    try:
        config = KcConfig.from_settings({k: v for k, v in os.environ.items() if k[:3] == "KC_"})
        operations = read_rescue(file)
    except ConfigError as exc:
        raise BadInput(exc) from exc
    except OSError as exc:
        raise BadInput(f"cannot read {file}: {exc.strerror or exc}") from exc
    url = database or _beside(file) or DEFAULT_DATABASE_URL
    patience = config.lease_wait_seconds if wait is None else wait

    def waiting(blocking: list[Lease]) -> None:
        message = f"waiting up to {patience:.0f} s for the writer lease: {refusal(blocking)}"
        click.echo(f"{PROG}: warning: {message}", err=True)

    with (
        open_existing_store(url, write=True) as store,
        LeaseKeeper(
            store,
            sorted(rescue_sources(operations)),
            LeaseHolder.this_process("rescue"),
            ttl=config.lease_ttl_seconds,
        ) as lease,
    ):
        try:
            lease.acquire(patience, waiting=waiting)
            summary = load_rescue(store, file, operations, batch_size=config.store_batch_size)
        except LeaseHeldError as exc:
            raise BadInput(f"{exc}; or wait for it with --wait SECONDS") from exc
        except StoreError as exc:
            click.echo(f"{PROG}: error: {exc}", err=True)
            sys.exit(1)
    where = f"; renamed to {summary.renamed_to}" if summary.renamed_to else ""
    click.echo(f"rescue: loaded {file} into {store.url}: {summary.line()}{where}")
