"""The stored pages a crawl knows (validators, schedule, status), in memory or on disk.

:class:`KnownPages` maps ``(source_id, canonical_url)`` to a
:class:`~knowledge_crawler.store.KnownPage`. Up to ``memory_pages`` pages it is a dict
(about 600 bytes a page); past that, every page moves once into a table of a private
temporary SQLite database (:mod:`knowledge_crawler.crawl.scratch`), so that a crawl of a
million stored pages holds SQLite's page cache, not a million objects. Lookups then cost
a few microseconds each; the decisions are the same either way.

Pages keep the order they were added in (the store's: most overdue first), which
:meth:`KnownPages.values` gives back. One thread uses it (the reactor's), after it was
filled on another.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from knowledge_crawler.crawl.scratch import Writes, connect_scratch
from knowledge_crawler.store import KnownPage

__all__ = ["KnownPages", "RecentKeys", "SeenKeys"]

Key = tuple[str, str]

#: SQLite's page cache for the table, KiB
_CACHE_KIB = 8 * 1024
#: pages read at a time by values()
_CHUNK = 1000
_FIELDS = tuple(f.name for f in dataclasses.fields(KnownPage))
_COLUMNS = ", ".join(_FIELDS)
_values = operator.attrgetter(*_FIELDS)


class KnownPages:
    """A mapping of the crawl's stored pages by key (see the module's docstring)."""

    def __init__(self, memory_pages: int = 50_000) -> None:
        self.memory_pages = memory_pages
        self._pages: dict[Key, KnownPage] = {}
        self._con: sqlite3.Connection | None = None
        self._writes: Writes | None = None
        self._count = 0
        self._next = 0  # the order of the next new page

    @property
    def on_disk(self) -> bool:
        """Whether the pages have moved into the temporary database."""
        return self._con is not None

    def extend(self, pages: Iterable[KnownPage]) -> None:
        """Add ``pages`` in order (a page already known is replaced, keeping its place)."""
        pages = iter(pages)
        while self._con is None:
            page = next(pages, None)
            if page is None:
                return
            self[page.key] = page
        while chunk := list(itertools.islice(pages, _CHUNK)):
            added = self._insert(chunk)
            self._count += added
            if added < len(chunk):  # some were known: replaced one by one
                for page in chunk:
                    self._update(page)

    def get(self, key: Key, default: Any = None) -> Any:
        if self._con is None:
            return self._pages.get(key, default)
        row = self._con.execute(
            f"SELECT {_COLUMNS} FROM known WHERE source_id = ? AND canonical_url = ?", key
        ).fetchone()
        return default if row is None else KnownPage(*row)

    def __getitem__(self, key: Key) -> KnownPage:
        page = self.get(key)
        if page is None:
            raise KeyError(key)
        return page  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        if self._con is None:
            return key in self._pages
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        found = self._con.execute(
            "SELECT 1 FROM known WHERE source_id = ? AND canonical_url = ?", key
        ).fetchone()
        return found is not None

    def __setitem__(self, key: Key, page: KnownPage) -> None:
        if key != page.key:
            raise ValueError(f"page {page.key} stored under key {key}")
        if self._con is None:
            if key not in self._pages:
                self._count += 1
            self._pages[key] = page
            if self._count > self.memory_pages:
                self._move_to_disk()
            return
        if not self._update(page):
            self._count += self._insert([page])

    def _update(self, page: KnownPage) -> bool:
        assert self._con is not None and self._writes is not None
        updated = self._con.execute(
            f"UPDATE known SET ({_COLUMNS}) = ({', '.join('?' * len(_FIELDS))}) "
            "WHERE source_id = ? AND canonical_url = ?",
            (*_values(page), *page.key),
        ).rowcount
        self._writes.done()
        return bool(updated)

    def __len__(self) -> int:
        return self._count

    def values(self) -> Iterator[KnownPage]:
        """Every page, in the order they were first added."""
        if self._con is None:
            yield from list(self._pages.values())
            return
        after = -1
        while True:
            rows = self._con.execute(
                f"SELECT pos, {_COLUMNS} FROM known WHERE pos > ? ORDER BY pos LIMIT ?",
                (after, _CHUNK),
            ).fetchall()
            for row in rows:
                yield KnownPage(*row[1:])
            if len(rows) < _CHUNK:
                return
            after = rows[-1][0]

    def close(self) -> None:
        """Drop the temporary database, if any (SQLite deletes its file)."""
        if self._con is not None:
            self._con.close()
            self._con = None
        self._pages = {}
        self._count = 0

    def _move_to_disk(self) -> None:
        con = connect_scratch(_CACHE_KIB)
        columns = ", ".join(
            f"{name} {'INTEGER' if name in ('depth', 'check_interval', 'word_count') else 'TEXT'}"
            for name in _FIELDS
        )
        con.execute(
            f"CREATE TABLE known (pos INTEGER NOT NULL, {columns}, "
            "PRIMARY KEY (source_id, canonical_url)) WITHOUT ROWID"
        )
        con.execute("CREATE INDEX known_pos ON known (pos)")
        self._con = con
        self._writes = Writes(con)
        pages, self._pages = self._pages, {}
        self._insert(pages.values())  # all new: the count stays

    def _insert(self, pages: Iterable[KnownPage]) -> int:
        """Insert the pages not known yet, after the others; how many were."""
        assert self._con is not None and self._writes is not None
        rows = []
        for page in pages:
            rows.append((self._next, *_values(page)))
            self._next += 1
        added = self._con.executemany(
            f"INSERT OR IGNORE INTO known (pos, {_COLUMNS}) "
            f"VALUES ({', '.join('?' * (len(_FIELDS) + 1))})",
            rows,
        ).rowcount
        self._writes.done(len(rows))
        return added


class SeenKeys:
    """The keys a crawl has requested, held as their 64-bit hashes (about 65 bytes a key
    instead of some 130 for the text): exact but for a hash collision, about one chance in
    3 * 10**7 in a crawl of a million pages. A string's hash is computed once and kept by
    the string, so a check costs what a set of strings costs."""

    __slots__ = ("_hashes",)

    def __init__(self) -> None:
        self._hashes: set[int] = set()

    def add(self, key: str) -> None:
        self._hashes.add(hash(key))

    def __contains__(self, key: object) -> bool:
        return hash(key) in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)


class RecentKeys:
    """The keys seen lately, at most ``limit`` of them (two generations of hashes: when the
    newer one is full, the older is forgotten). For a check whose miss costs only some
    repeated work, such as recording a link the crawl state already has."""

    __slots__ = ("_half", "_new", "_old")

    def __init__(self, limit: int = 200_000) -> None:
        self._half = max(1, limit // 2)
        self._new: set[int] = set()
        self._old: set[int] = set()

    def add(self, key: str) -> None:
        if len(self._new) >= self._half:
            self._old, self._new = self._new, set()
        self._new.add(hash(key))

    def __contains__(self, key: object) -> bool:
        h = hash(key)
        return h in self._new or h in self._old
