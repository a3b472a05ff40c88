"""Writer leases: one writer at a time per source of a database (F-STATE).

A writer (a crawl, a refresh, ``reextract``) takes a lease on every source it writes
before it writes anything: a row of ``leases`` per (source, process) naming its holder,
the process (host, pid), its run and when it expires. :meth:`Store.acquire_leases`
takes or renews them in one transaction that succeeds only when each source is free,
its lease expired, its holder's process is known to be gone (same host, pid not
running), or the lease is already the holder's. The processes of one shared crawl
(``KC_REDIS_URL``) share a holder, the crawl's identity, so each of them may join.

:class:`LeaseKeeper` holds a writer's leases: it takes them (waiting for a holder to
finish if asked), renews them on a thread of its own every quarter of their time to
live (the heartbeat; the reactor thread never waits on the database), says when they
were lost, and releases them. A process killed outright keeps its lease until it
expires (``KC_LEASE_TTL_SECONDS``), or until the next writer on the same host sees
its pid gone.

Times are the writers' own clocks (ISO-8601 UTC text, as every time the store keeps):
writers on several machines need clocks that agree to well within the time to live.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

from knowledge_crawler.errors import LeaseHeldError, StoreError, TransientStoreError

__all__ = [
    "HOST",
    "Lease",
    "LeaseHolder",
    "LeaseKeeper",
    "LeaseTable",
    "expiry",
    "holder_gone",
    "pid_alive",
    "refusal",
]

logger = logging.getLogger(__name__)

#: this machine, as ``leases.host`` (and ``crawl_runs.host``) records it
HOST = socket.gethostname()


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who takes a lease: ``holder`` names the writer (this process, or the shared crawl
    it is one process of), ``token`` this process alone (so a new process with a reused
    pid is never taken for the old one)."""

    holder: str
    token: str
    host: str
    pid: int
    #: what writes: ``crawl``, ``refresh``, ``reextract``
    command: str
    #: the writer's run (``crawl_runs.id``), once recorded
    run_id: int | None = None

    @classmethod
    def this_process(cls, command: str, *, shared: str | None = None) -> LeaseHolder:
        """This process as a holder; ``shared``: the identity of the shared crawl it joins."""
        pid = os.getpid()
        token = f"{HOST}:{pid}:{secrets.token_hex(4)}"
        return cls(holder=shared or token, token=token, host=HOST, pid=pid, command=command)


@dataclass(frozen=True, slots=True)
class Lease:
    """A row of ``leases``: one process's lease on one source."""

    source_id: str
    holder: str
    token: str
    host: str
    pid: int
    run_id: int | None
    command: str
    acquired_at: str
    heartbeat_at: str
    expires_at: str

    def describe(self) -> str:
        """Who holds it, for a message: ``crawl run 7 (pid 4242 on host-a), heartbeat ...``."""
        run = f" run {self.run_id}" if self.run_id is not None else ""
        shared = f", one process of {self.holder}" if self.holder != self.token else ""
        return (
            f"{self.command}{run} (pid {self.pid} on {self.host}{shared}), last heartbeat "
            f"{self.heartbeat_at}, lease until {self.expires_at}"
        )


def expiry(seconds: float) -> str:
    """Now plus ``seconds``, as stored-time text."""
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (a zombie counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill()
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def holder_gone(lease: Lease) -> bool:
    """The lease's process is known to be gone: it ran on this host and its pid is not
    running (a process of another host is only gone once its lease expires)."""
    return lease.host == HOST and lease.pid != os.getpid() and not pid_alive(lease.pid)


def refusal(blocking: Sequence[Lease]) -> str:
    """One line on who holds the sources a writer wanted."""
    return "; ".join(
        f"source {lease.source_id!r} is being written by {lease.describe()}" for lease in blocking
    )


class LeaseTable(Protocol):
    """What :class:`LeaseKeeper` needs of a store: the two lease methods of
    :class:`~knowledge_crawler.store.base.Store` (this module stays below it)."""

    def acquire_leases(
        self,
        source_ids: Sequence[str],
        holder: LeaseHolder,
        *,
        ttl: float,
        gone: Callable[[Lease], bool] | None = None,
    ) -> list[Lease]: ...

    def release_leases(self, holder: LeaseHolder) -> None: ...


class LeaseKeeper:
    """Holds one writer's leases on ``source_ids`` of ``store``: take, renew, release.

    ``on_lost(blocking)`` is called from the heartbeat thread when a renewal finds
    another writer holding a source (this one's lease expired meanwhile); from then on
    :meth:`check` raises.
    """

    def __init__(
        self,
        store: LeaseTable,
        source_ids: Sequence[str],
        holder: LeaseHolder,
        *,
        ttl: float,
        heartbeat: float | None = None,
        on_lost: Callable[[list[Lease]], object] = lambda blocking: None,
    ) -> None:
        self.store = store
        self.source_ids = sorted(set(source_ids))
        self.holder = holder
        self.ttl = ttl
        self.heartbeat = heartbeat if heartbeat is not None else max(ttl / 4, 0.05)
        self._on_lost = on_lost
        #: the leases that replaced ours, once a renewal found them
        self.lost: list[Lease] = []
        self.held = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def try_acquire(self) -> list[Lease]:
        """One attempt (one transaction); the leases that stand in the way (empty: held)."""
        blocking = self.store.acquire_leases(
            self.source_ids, self.holder, ttl=self.ttl, gone=holder_gone
        )
        if not blocking:
            self.held = True
        return blocking

    def acquire(
        self,
        wait: float = 0.0,
        *,
        waiting: Callable[[list[Lease]], None] = lambda blocking: None,
        poll: float = 1.0,
    ) -> None:
        """Take the leases, waiting up to ``wait`` seconds for their holders (``waiting``
        is told once who they are), then start the heartbeat. Blocks: call it off the
        event loop. :class:`LeaseHeldError` when they are still held after ``wait``."""
        deadline = time.monotonic() + wait
        told = False
        while True:
            blocking = self.try_acquire()
            if not blocking:
                self.start()
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LeaseHeldError(refusal(blocking))
            if not told:
                waiting(blocking)
                told = True
            time.sleep(min(poll, remaining))

    def start(self) -> None:
        """Renew the leases every ``heartbeat`` seconds on a thread of its own."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._beat, name="kc-lease-heartbeat", daemon=True
            )
            self._thread.start()

    def set_run(self, run_id: int) -> None:
        """Name the writer's run in its leases (renewing them now)."""
        self.holder = dataclasses.replace(self.holder, run_id=run_id)
        self._renew()

    def check(self) -> None:
        """:class:`StoreError` once the leases were lost: the writer must write no more."""
        if self.lost:
            raise StoreError(f"the writer lease was lost: {refusal(self.lost)}")

    def release(self) -> None:
        """Stop the heartbeat and give the leases up (a failure to is logged: they expire)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if not self.held:
            return
        self.held = False
        try:
            self.store.release_leases(self.holder)
        except StoreError as exc:
            logger.warning("could not release the writer lease (it expires by itself): %s", exc)

    def _renew(self) -> None:
        if self.lost:
            return
        blocking = self.store.acquire_leases(
            self.source_ids, self.holder, ttl=self.ttl, gone=holder_gone
        )
        if blocking:
            self.lost = blocking
            self.held = False
            logger.error("the writer lease was lost: %s", refusal(blocking))
            self._on_lost(blocking)

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            try:
                self._renew()
            except TransientStoreError as exc:
                logger.warning("could not renew the writer lease (retrying): %s", exc)
            except StoreError as exc:
                logger.error("could not renew the writer lease: %s", exc)
                return
            if self.lost:
                return

    def __enter__(self) -> LeaseKeeper:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.release()
