"""A crawl's private temporary SQLite databases, for state too large to keep in memory.

``sqlite3.connect("")`` opens a database SQLite creates for that connection alone and
deletes when it is closed, or with the process. Its pages live in SQLite's page cache,
bounded by ``cache_kib``; the rest is in a file in SQLite's temporary directory
(``SQLITE_TMPDIR``, else ``TMPDIR``, else ``/var/tmp``, ``/usr/tmp``, ``/tmp``).

Nothing in them is the crawl's data: what they hold is read again from the store by
every crawl, so they have no journal and are never synced.
"""

from __future__ import annotations

import sqlite3

__all__ = ["COMMIT_EVERY", "Writes", "connect_scratch"]

#: writes between two commits: a commit hands SQLite's dirty pages to the file
COMMIT_EVERY = 20_000


def connect_scratch(cache_kib: int, *, max_bytes: int | None = None) -> sqlite3.Connection:
    """A new temporary database with a page cache of ``cache_kib`` KiB. ``max_bytes``: the
    largest it may grow; past it a write fails with ``sqlite3.OperationalError``
    ("database or disk is full"), as on a full disk."""
    con = sqlite3.connect("", isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA locking_mode = EXCLUSIVE")
    con.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
    if max_bytes is not None:
        (page,) = con.execute("PRAGMA page_size").fetchone()
        con.execute(f"PRAGMA max_page_count = {max(1, int(max_bytes) // int(page))}")
    return con


class Writes:
    """The scratch database's one open transaction, committed every ``COMMIT_EVERY``
    writes so that dirty pages leave SQLite's cache for the file."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con
        self.count = 0
        con.execute("BEGIN")

    def done(self, n: int = 1) -> None:
        self.count += n
        if self.count >= COMMIT_EVERY:
            self.count = 0
            self.con.execute("COMMIT")
            self.con.execute("BEGIN")
