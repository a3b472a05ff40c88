"""Small pieces shared by the ``knowledge-crawler`` sub-commands (click only, no Scrapy)."""

from __future__ import annotations

from typing import IO, Any

import click

from knowledge_crawler.config import DEFAULTS, database_url

__all__ = [
    "DEFAULT_DATABASE_URL",
    "EXIT_BAD_INPUT",
    "PROG",
    "BadInput",
    "counted",
    "database_option",
    "open_existing_store",
]

PROG = "knowledge-crawler"
EXIT_BAD_INPUT = 2
DEFAULT_DATABASE_URL = DEFAULTS.database_url


class BadInput(click.ClickException):
    """Bad input from the user: exit status 2 and exactly one line on stderr.

    The line reads ``knowledge-crawler: error: <message>``; any newline in the
    message is folded into a space so the output stays one line.

    >>> BadInput("seeds.toml: file not found").exit_code
    2
    """

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: object) -> None:
        super().__init__(" ".join(str(message).split()))

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"{PROG}: error: {self.format_message()}", file=file, err=file is None)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular or plural.

    >>> counted(1, "cluster"), counted(3, "content hash", "content hashes")
    ('1 cluster', '3 content hashes')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def database_option(function: Any) -> Any:
    """``--db URL``: the database to read, default ``KC_DATABASE_URL`` or the project default."""
    return click.option(
        "--db",
        "database",
        envvar="KC_DATABASE_URL",
        default=DEFAULT_DATABASE_URL,
        show_default=True,
        metavar="URL",
        callback=lambda _ctx, _param, value: database_url(value),
        help="Database: sqlite:///PATH (or just PATH) or postgresql://...; also read from "
        "KC_DATABASE_URL.",
    )(function)


def open_existing_store(url: str, *, write: bool = False) -> Any:
    """Open the store at ``url``: read-only, unless ``write`` (a command that writes).

    Read-only, it is opened as it is (DESIGN: readers never write): a SQLite file
    with ``mode=ro`` (``immutable=1`` on a read-only filesystem), PostgreSQL in a
    read-only session; never migrated, never created.

    :class:`BadInput` (exit 2, one line naming the path and the reason) when a
    SQLite file is missing, its path leads through a file, or it cannot be
    opened: not a database, a directory, written by a newer version or (read-only)
    by an older one; or when a PostgreSQL server cannot be reached or refuses the
    connection (the URL is shown without its password).
    """
    import os

    from knowledge_crawler.errors import StoreError
    from knowledge_crawler.store import open_store

    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if path != ":memory:" and not os.path.exists(path):
            blocker = _file_on_the_way(path)
            if blocker is not None:
                raise BadInput(f"cannot open {path}: {blocker} is not a directory")
            raise BadInput(f"no database at {path} (crawl first, or pass --db URL)")
    try:
        return open_store(url, read_only=not write)
    except StoreError as exc:
        raise BadInput(str(exc)) from exc


def _file_on_the_way(path: str) -> str | None:
    """The first folder of ``path`` that exists but is a file, if any."""
    import os

    parent = os.path.dirname(path)
    while parent and parent != os.path.dirname(parent):
        if os.path.exists(parent):
            return None if os.path.isdir(parent) else parent
        parent = os.path.dirname(parent)
    return None


def url_identities(url: str) -> list[str]:
    """The forms ``url`` may be stored under: its canonical URL first, then as given."""
    import contextlib

    from knowledge_crawler.transform.canonical import canonical_url

    forms: list[str] = []
    with contextlib.suppress(ValueError):
        forms.append(canonical_url(url))
    if url.strip() not in forms:
        forms.append(url.strip())
    return forms


def change_diff(entry: dict[str, Any]) -> str:
    """The unified diff of a ``changed`` entry of ``Store.changes``, taking its two texts out
    of it; labelled with the URL the page was fetched at and the two fetch times."""
    from knowledge_crawler.transform.diff import text_diff

    url = entry["url"]
    return text_diff(
        entry.pop("previous_content"),
        entry.pop("content"),
        old_label=f"{url}\t{entry['previous_fetched_at']}",
        new_label=f"{url}\t{entry['fetched_at']}",
    )
