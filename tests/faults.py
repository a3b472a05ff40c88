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


@contextmanager
def read_only_folder(folder: str | Path) -> Iterator[str]:
    """``folder`` made read-only for this process, the way a served snapshot is.

    As root (whom file modes do not stop), a bind mount of the folder onto itself,
    remounted read-only: a real read-only filesystem (EROFS), undone at the end. As
    another user, the folder and its files lose their write bits. Yields how
    (``"mount"`` or ``"chmod"``); skips the test when neither is possible.
    """
    import os
    import shutil
    import subprocess

    import pytest

    folder = Path(folder)
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [*folder.iterdir(), folder]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield "chmod"
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    mount = shutil.which("mount")
    umount = shutil.which("umount")
    if mount is None or umount is None:
        pytest.skip("root, and no mount(8) to make a read-only folder (modes do not stop root)")
    bound = subprocess.run([mount, "--bind", str(folder), str(folder)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"root without a bind mount (modes do not stop root): {bound.stderr!r}")
    try:
        ro = subprocess.run(
            [mount, "-o", "remount,bind,ro", str(folder)], capture_output=True, check=False
        )
        if ro.returncode != 0:
            pytest.skip(f"cannot remount {folder} read-only: {ro.stderr!r}")
        yield "mount"
    finally:
        subprocess.run([umount, str(folder)], check=True)
