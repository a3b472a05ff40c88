"""5. dedupe: exact and near duplicates are stored and marked ``duplicate_of``, never dropped.

Glue only: the decisions (exact, near, which page represents a group, what
changes when a representative moves) are made by
:class:`knowledge_crawler.sync.dedupe.DedupePolicy`. This pipeline restores the
policy from the store once, when the spider opens (every active page, with the
MinHash signatures of representatives and of duplicates; read and indexed on a
worker thread, so the reactor thread never waits on the database), then asks it about
each page in memory: ``process_item`` never calls the store. Decisions about
other, already stored pages travel with the item as ``store.DuplicateUpdate``
values, written in the same transaction as the page.

Past ``KC_DEDUPE_MEMORY_PAGES`` pages, the policy's state moves (once, on that
thread) into a temporary SQLite file
(:class:`knowledge_crawler.crawl.dedupe_scratch.ScratchDedupeState`),
so that the crawl's memory stops growing with the pages it has seen; from then on
each decision runs on a thread of its own, one page after another, in the order the
pages came, never on the reactor thread. A store with more pages than that is
restored straight into the file.

When several processes crawl together (``KC_REDIS_URL``), every decision goes
through the crawl's dedupe log in Redis (:class:`knowledge_crawler.crawl.dedupe_log.SharedDedupe`)
so that all of them judge against the same pages: the Redis round trip and the
policy run on that thread too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from scrapy.exceptions import CloseSpider

from knowledge_crawler.crawl.dedupe_log import SharedDedupe
from knowledge_crawler.crawl.dedupe_scratch import ScratchDedupeState
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.items import FailureItem, PageItem
from knowledge_crawler.pipelines._base import KcPipeline, retry_later
from knowledge_crawler.store import DuplicateUpdate
from knowledge_crawler.sync.dedupe import Decision, DedupePolicy, Reassignment, StoredPage
from knowledge_crawler.transform.minhash import ParamsMismatchError

logger = logging.getLogger(__name__)

#: Scrapy close reason of a crawl stopped because its dedupe state file failed, and the
#: error kind of the pages it left unjudged (retried by the next crawl)
DEDUPE_FAILED = "dedupe_failed"
#: the error kind of a page the shared dedupe log could not judge (Redis gone)
SHARED_FAILED = "dedupe_shared_failed"


class _StateBroken(Exception):
    """A decision not tried: the dedupe state's file failed before it."""


def duplicate_update(change: Reassignment) -> DuplicateUpdate:
    decision = change.decision
    return DuplicateUpdate(change.key, decision.duplicate_of, decision.kind, decision.score)


class DedupePipeline(KcPipeline):
    #: the crawl's shared dedupe log, when several processes crawl together
    shared: SharedDedupe | None = None
    #: where decisions run once they no longer run on the reactor thread
    _thread: ThreadPoolExecutor | None = None
    #: the policy's state once it is kept in a file
    _scratch: ScratchDedupeState | None = None
    #: why that file can no longer be used, once it failed (the crawl is stopping)
    _broken: str | None = None
    #: clusters decided again at restore (their signals moved since they were stored):
    #: written with the first page decided
    _pending: list[Reassignment] = []

    async def open_spider(self) -> None:
        # The state is restored from what is stored once no other writer can change it.
        if not await self.runtime.hold_lease():
            raise CloseSpider(self.runtime.not_held_reason())
        spider = self.crawler.spider
        self._limit = self.runtime.config.dedupe_memory_pages
        self._shared_mode = bool(getattr(spider, "shared_frontier", False))
        if spider is not None and self._shared_mode:
            import redis

            from knowledge_crawler.crawl.frontier import CrawlKeys

            config = self.runtime.config
            self._server = redis.Redis.from_url(
                config.redis_url, socket_connect_timeout=10, socket_timeout=30
            )
            stream = CrawlKeys.of(config.redis_key_prefix, spider.name).dedupe
            member = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
            self._stream = stream
            self._member = member
            self._start_thread()
        await asyncio.to_thread(self._restore)

    async def close_spider(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True)
        if self._shared_mode:
            self._server.close()
        if self._scratch is not None:
            self._scratch.close()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kc-dedupe")

    def _restore(self) -> None:
        started = time.monotonic()
        # One index per threshold in use: the sources' own, and the default that pages
        # of sources outside this crawl are judged by. All are built here.
        thresholds = {sid: s.near_duplicate_threshold for sid, s in self.runtime.sources.items()}
        # A store.DedupeRow is a StoredPage (checked structurally by mypy here): the
        # rows reach the policy as they are, in a list to count them first.
        rows: list[StoredPage] = list(self.runtime.store.dedupe_state())
        state = self._new_scratch(len(rows)) if len(rows) > self._limit else None
        self.policy = DedupePolicy(self.runtime.minhash_params(), thresholds, state=state)
        try:
            if not self._shared_mode:
                restored = self.policy.restore(rows)
                self._pending = self.policy.reconcile()
                self.stats.set_value("kc/dedupe/reconciled", len(self._pending))
            else:
                self.shared = SharedDedupe(self.policy, self._server, self._stream, self._member)
                restored = self.shared.restore(rows)
                self.stats.set_value("kc/dedupe/shared_replayed", self.shared.replayed)
        except ParamsMismatchError as exc:
            raise ConfigError(f"stored MinHash signatures do not match: {exc}") from exc
        self.stats.set_value("kc/dedupe/restored_pages", restored)
        self.stats.set_value("kc/dedupe/restore_seconds", round(time.monotonic() - started, 3))

    def _new_scratch(self, pages: int) -> ScratchDedupeState:
        """The file the policy's state goes to, and the thread that decides from now on."""
        self._scratch = ScratchDedupeState()
        self._start_thread()
        self.stats.set_value("kc/dedupe/state_moved_at_pages", pages)
        logger.info(
            "dedupe state of %d pages: from now on in a temporary file, decided on a thread",
            pages,
        )
        return self._scratch

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        if self._scratch is None and len(self.policy) >= self._limit:
            # the state moves now, on the thread; every decision after it queues behind
            scratch = self._new_scratch(len(self.policy))
            assert self._thread is not None
            self._thread.submit(self._move, scratch)
        if self._thread is not None:
            return self._process_threaded(item)  # a coroutine, awaited by Scrapy
        return self.process_page(item)

    def _move(self, scratch: ScratchDedupeState) -> None:
        started = time.monotonic()
        try:
            self.policy.move_to(scratch)
        except Exception:  # the state stays in memory, whole: decisions go on from there
            self.inc("dedupe/state_move_failed")
            logger.exception("the dedupe state could not move to a temporary file")
        else:
            moved_ms = round(1000 * (time.monotonic() - started))
            self.stats.set_value("kc/dedupe/state_move_ms", moved_ms)

    def process_page(self, item: PageItem) -> PageItem:
        return self._judged(item, *self._decide(item))

    def _decide(self, item: PageItem) -> tuple[Decision, list[Reassignment], int]:
        """The page's decision, the others it changed, and how many duplicates were
        decided again; through the shared dedupe log when there is one."""
        decider = self.policy if self.shared is None else self.shared
        examined = decider.examined
        released: list[Reassignment] = []
        requested = (item.source_id, item.request_key or item.canonical_url)
        if requested[1] != item.canonical_url and requested in self.policy:
            # A page that now redirects here holds no content of its own any more (the
            # store tombstones it): its duplicates are decided again without it, and this
            # page is not judged a copy of what it used to be.
            _, released = decider.decide(requested, "", None, 0)
        decision, changes = decider.decide(
            (item.source_id, item.canonical_url),
            item.content_hash,
            item.minhash,
            item.word_count,
            links=item.links,
            canonical=item.canonical_link,
        )
        return decision, released + changes, decider.examined - examined

    def _decide_on_thread(self, item: PageItem) -> tuple[Decision, list[Reassignment], int]:
        """:meth:`_decide` on the thread. Once a decision failed on the state's file, none
        is tried again (the file may be half written), also not those queued behind it."""
        if self._broken is not None:
            raise _StateBroken(self._broken)
        try:
            return self._decide(item)
        except Exception as exc:
            if self.shared is None or isinstance(exc, sqlite3.Error):
                self._broken = f"{type(exc).__name__}: {exc}"
            raise

    async def _process_threaded(self, item: PageItem) -> PageItem | FailureItem:
        if self._broken is not None:
            return self._not_judged(item, DEDUPE_FAILED)
        try:
            decided = await asyncio.get_running_loop().run_in_executor(
                self._thread, self._decide_on_thread, item
            )
        except Exception as exc:
            if self._broken is not None:  # the state's file failed
                if not isinstance(exc, _StateBroken):
                    self._state_failed(item)
                return self._not_judged(item, DEDUPE_FAILED)
            # Redis gone past its client's retries: not judged, not stored, retried later
            logger.error(
                "shared dedupe log %s: %s: %s not stored; the next crawl fetches it again",
                self._stream,
                exc,
                item.final_url,
            )
            return self._not_judged(item, SHARED_FAILED)
        if self.shared is not None:
            self.stats.set_value("kc/dedupe/shared_replayed", self.shared.replayed)
        return self._judged(item, *decided)

    def _not_judged(self, item: PageItem, error: str) -> FailureItem:
        """A page the dedupe state cannot judge: not stored, retried by the next crawl."""
        self.inc("dedupe/state_dropped" if error == DEDUPE_FAILED else "dedupe/shared_failed")
        return retry_later(item, error)

    def _state_failed(self, item: PageItem) -> None:
        """The state's file failed (a full disk): the state may be half written, so no
        page is judged against it any more. Say so once and stop the crawl; this page
        and those after it are not stored, and the next crawl fetches them again."""
        self.stats.set_value("kc/dedupe/state_failed", 1)
        self.stats.set_value("kc/dedupe/error", f"the dedupe state file failed: {self._broken}")
        logger.error(
            "the dedupe state file failed, stopping the crawl: %s; %s and the pages after "
            "it are not stored but kept as retries due at once (the next crawl fetches "
            "them); SQLITE_TMPDIR or TMPDIR names where the file goes",
            self._broken,
            item.final_url,
        )
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            # Not awaited: closing waits for the items in flight, this one included.
            self._close_task = asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=DEDUPE_FAILED)
            )

    def _judged(
        self, item: PageItem, decision: Decision, changes: list[Reassignment], examined: int
    ) -> PageItem:
        self.inc("dedupe/reevaluated", examined)
        item.duplicate_of, item.duplicate_kind, item.duplicate_score = (
            decision.duplicate_of,
            decision.kind,
            decision.score,
        )
        if decision.kind:
            self.inc(f"dedupe/{decision.kind}")
        if self._pending:
            # the restore's new decisions go first, in this page's transaction; one about
            # this page itself is its record's (decided since)
            key = (item.source_id, item.canonical_url)
            changes = [c for c in self._pending if c.key != key] + changes
            self._pending = []
        self.inc("dedupe/reassigned", len(changes))
        item.dedupe_updates = [duplicate_update(change) for change in changes]
        return item
