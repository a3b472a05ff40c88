"""Duplicates judged together by every process of a shared crawl (SPEC F-SCALE).

One process judges each page against a :class:`~knowledge_crawler.sync.dedupe.DedupePolicy`
restored from the store: the exact-duplicate map (content hash -> representative)
and the LSH index of representatives' MinHash signatures. When several processes
crawl together (``KC_REDIS_URL``), that state is shared through one ordered log in
Redis, the crawl's ``PREFIX:SPIDER:dedupe`` stream: every process appends what it
is about to judge (page, content hash, signature, word count) and, before judging,
applies every entry up to its own to its own copy of the policy, in the log's order.
The policy is deterministic, so all processes hold the same exact map and the same
index and each page is judged against every page decided before it in the crawl,
whichever process fetched it: the decisions one process would take, with the log's
order as the order pages were seen. Only the process that appended an entry writes
what it decided (the page, and the other pages it re-decided); the others only
apply it.

A process that joins a crawl already going restores the stored pages less those the
log says are new in this crawl, then applies the whole log: pages first seen in this
crawl rank in log order in every process. Appending and reading are one Redis
transaction (``MULTI``), retried on connection errors; an entry appended twice by a
retry is applied once (entries carry their process and a sequence number).

The stream lasts as long as the crawl's other keys (``knowledge_crawler.crawl.frontier``):
the first process of a new crawl and the last one to leave delete it. An entry is
about 750 bytes (the 525-byte signature, key and hash) per page decided.

No Scrapy here: the pipeline calls :meth:`SharedDedupe.decide` on a thread of its own.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from knowledge_crawler.sync.dedupe import Decision, DedupePolicy, Key, Reassignment, StoredPage

__all__ = ["DedupeEntry", "SharedDedupe"]

logger = logging.getLogger(__name__)

#: entries read from the log at once when a process joins
_READ_CHUNK = 5000


@dataclass(frozen=True, slots=True)
class DedupeEntry:
    """One page judged by one process of the crawl, as the log holds it."""

    key: Key
    content_hash: str
    minhash: bytes | None
    words: int
    #: the page was not known to the crawl before this entry (not stored when it started)
    new: bool
    producer: str
    seq: int
    #: the page's in-scope links (canonical URLs), None: not read; its rel=canonical
    links: tuple[str, ...] | None = None
    canonical: str | None = None

    def fields(self) -> dict[str, bytes | str | int]:
        out: dict[str, bytes | str | int] = {
            "s": self.key[0],
            "u": self.key[1],
            "h": self.content_hash,
            "w": self.words,
            "n": int(self.new),
            "p": self.producer,
            "q": self.seq,
        }
        if self.minhash is not None:
            out["m"] = self.minhash
        if self.links is not None:
            out["l"] = "\n".join(self.links)
        if self.canonical is not None:
            out["c"] = self.canonical
        return out

    @classmethod
    def parse(cls, fields: dict[bytes, bytes]) -> DedupeEntry:
        return cls(
            key=(fields[b"s"].decode(), fields[b"u"].decode()),
            content_hash=fields[b"h"].decode(),
            minhash=fields.get(b"m"),
            words=int(fields[b"w"]),
            new=fields[b"n"] == b"1",
            producer=fields[b"p"].decode(),
            seq=int(fields[b"q"]),
            links=tuple(filter(None, fields[b"l"].decode().split("\n")))
            if b"l" in fields
            else None,
            canonical=fields[b"c"].decode() if b"c" in fields else None,
        )


class SharedDedupe:
    """A :class:`DedupePolicy` kept in step with the crawl's other processes through ``stream``.

    ``server`` is a redis-py client (``decode_responses`` off: signatures are bytes);
    ``member`` names this process in the crawl (unique among its processes).
    """

    def __init__(self, policy: DedupePolicy, server: Any, stream: str, member: str) -> None:
        self.policy = policy
        self.server = server
        self.stream = stream
        self.member = member
        self._last_id: bytes | None = None
        self._seq = itertools.count(1)
        #: the highest sequence number applied of each process, so a doubled entry counts once
        self._applied: dict[str, int] = {}
        #: entries of other processes applied (a counter for the crawl's stats)
        self.replayed = 0
        #: duplicates this process's own entries made the policy decide again
        self.examined = 0

    # -- joining -----------------------------------------------------------------

    def restore(self, rows: Iterable[StoredPage]) -> int:
        """Restore the stored pages, then apply the log so far; the number of pages restored.

        ``rows`` is read before the log, so every page in it that this crawl
        decided is already in the log, and left out if the log has it as new.
        """
        rows = iter(rows)
        first = next(rows, None)  # the store's answer is taken before the log is read
        entries = list(self._read_all())
        new = {entry.key for _, entry in entries if entry.new}
        stored: Iterator[StoredPage] = itertools.chain([first] if first is not None else [], rows)
        restored = self.policy.restore(row for row in stored if row.key not in new)
        for entry_id, entry in entries:
            self._apply(entry_id, entry)
        return restored

    def _read_all(self) -> Iterator[tuple[bytes, DedupeEntry]]:
        start: bytes | str = "-"
        while True:
            chunk = self.server.xrange(self.stream, min=start, count=_READ_CHUNK)
            for entry_id, fields in chunk:
                yield entry_id, DedupeEntry.parse(fields)
            if len(chunk) < _READ_CHUNK:
                return
            start = b"(" + chunk[-1][0]

    # -- judging -----------------------------------------------------------------

    def decide(
        self,
        key: Key,
        content_hash: str,
        minhash: bytes | None,
        words: int,
        *,
        links: Iterable[str] | None = None,
        canonical: str | None = None,
    ) -> tuple[Decision, list[Reassignment]]:
        """Append this page to the log, apply the log up to it, and return its decision.

        The reassignments are those of this page's own entry (the pages it re-decided),
        which this process writes; entries of other processes are applied only.
        """
        entry = DedupeEntry(
            key,
            content_hash,
            minhash,
            words,
            key not in self.policy,
            self.member,
            next(self._seq),
            tuple(links) if links is not None else None,
            canonical,
        )
        pipe = self.server.pipeline(transaction=True)
        pipe.xadd(self.stream, entry.fields())
        pipe.xrange(self.stream, min=b"(" + self._last_id if self._last_id else "-")
        _, entries = pipe.execute()
        result: tuple[Decision, list[Reassignment]] | None = None
        for entry_id, fields in entries:
            read = DedupeEntry.parse(fields)
            applied = self._apply(entry_id, read)
            # A transaction retried after its reply was lost appended the entry twice:
            # the first one is applied and answers.
            if applied is not None and (read.producer, read.seq) == (self.member, entry.seq):
                result = applied
        if result is None:  # cannot happen: the transaction read its own entry
            raise RuntimeError(f"dedupe log {self.stream}: this process's entry was not read")
        return result

    def _apply(
        self, entry_id: bytes, entry: DedupeEntry
    ) -> tuple[Decision, list[Reassignment]] | None:
        self._last_id = entry_id
        if entry.seq <= self._applied.get(entry.producer, 0):
            return None
        self._applied[entry.producer] = entry.seq
        examined = self.policy.examined
        decided = self.policy.decide(
            entry.key,
            entry.content_hash,
            entry.minhash,
            entry.words,
            links=entry.links,
            canonical=entry.canonical,
        )
        if entry.producer != self.member:
            self.replayed += 1
        else:
            self.examined += self.policy.examined - examined
        return decided
