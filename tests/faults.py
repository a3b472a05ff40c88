"""Failures made on purpose, on the real store: another writer's lock, writes that fail."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from knowledge_crawler.store.sqlite import SqliteStore


@contextmanager
def exclusive_lock(path: str | Path) -> Iterator[sqlite3.Connection]:
    """Another writer: ``BEGIN EXCLUSIVE`` held on a second connection to ``path``."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=5)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")
        conn.close()


def hold_lock(
    path: str | Path,
    *,
    seconds: float = 60.0,
    when: Callable[[], bool] = lambda: True,
    until: Callable[[], bool] = lambda: False,
) -> tuple[threading.Thread, threading.Event]:
    """From a thread: once ``when()`` holds, lock ``path`` for ``seconds`` or until ``until()``.

    Returns the thread and an event set once the lock is taken.
    """
    locked = threading.Event()

    def hold() -> None:
        deadline = time.monotonic() + 60
        while not when() and time.monotonic() < deadline:
            time.sleep(0.01)
        with exclusive_lock(path):
            locked.set()
            end = time.monotonic() + seconds
            while time.monotonic() < end and not until():
                time.sleep(0.01)

    thread = threading.Thread(target=hold, name="kc-test-lock", daemon=True)
    thread.start()
    return thread, locked


def stored_rows(path: str | Path, table: str = "page_meta") -> int:
    """Rows in ``table``, read on a connection of its own (0 before the schema exists)."""
    try:
        conn = sqlite3.connect(path, timeout=5)
        try:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


class FlakyStore(SqliteStore):
    """The real SQLite store whose next ``write`` calls raise ``fail_upserts`` in turn."""

    def __init__(self, url: str, **kw: Any) -> None:
        super().__init__(url, **kw)
        self.fail_upserts: list[BaseException] = []
        self.upsert_calls = 0

    def write(self, operations: Any, **kw: Any) -> Any:
        self.upsert_calls += 1
        if self.fail_upserts:
            raise self.fail_upserts.pop(0)
        return super().write(operations, **kw)
