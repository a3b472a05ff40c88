"""6. store: one ordered batch of operations, one transaction per batch, off the event loop.

Every outcome item becomes operations, appended in arrival order: a page
(:class:`PageItem`) its upsert and the duplicate decisions it caused, a 304
(:class:`NotModifiedItem`) a touch. Each also gets its next check time from
:func:`knowledge_crawler.sync.policy.revisit` (changed or not, against the
stored page). Operations wait in memory until the batch holds
``KC_STORE_BATCH_SIZE`` of them, the oldest has waited ``KC_STORE_FLUSH_SECONDS``,
or the spider closes. Each flush runs on one writer thread that owns all
database writes.

No row is lost and none is written twice:

* rows leave memory only once their transaction has committed, and the
  ``kc/store/*`` stats count committed rows only;
* a transient database error (locked, busy, I/O, full) is retried with backoff
  for ``KC_STORE_RETRY_SECONDS``, every try the same batch under one batch id (a
  PostgreSQL COMMIT whose answer was lost is looked up, never applied twice); rows
  that arrive meanwhile wait for the next batch;
* when the retries run out, or the store fails otherwise, the crawl stops
  (close reason ``store_failed``, stats ``kc/store/failed`` and
  ``kc/store/error``, one ERROR line); at close the rows still in memory are
  tried once more and, if the database is still unusable, written to a rescue
  file beside it, ``<database>.unsaved-<run id>.jsonl`` (0600; PostgreSQL: in
  ``KC_RESCUE_DIR`` or the working folder, named for the database; see
  :mod:`knowledge_crawler.store.rescue`, which loads it back): one JSON object a
  line, ``{"page": {...}}`` or ``{"duplicate_update": {...}}``; never in another
  folder;
* the age ticker outlives any error, and ``close_spider`` always flushes;
* it counts the operations items made and how many of them are committed
  (``Runtime.ops_made``, ``Runtime.ops_committed``): in a shared crawl a request's
  lease in Redis ends only once what its page made is committed, so a process killed
  with rows in memory leaves their pages to another process
  (:mod:`knowledge_crawler.crawl.frontier`).

When several processes crawl together (``KC_REDIS_URL``), a page may be judged the
duplicate of a page another process fetched and has not stored yet (its batch
commits up to ``KC_STORE_FLUSH_SECONDS`` later), and a decision about a page may
reach the database before the page does. Such a link is not dropped: the page is
stored as no duplicate for the moment, and the link waits and is written again
with every batch until both pages are stored (``kc/store/links_deferred``,
``kc/store/links_resolved``); at close it waits up to twice
``KC_STORE_FLUSH_SECONDS`` plus 10 s for the other processes' batches, and only
then is it given up (``kc/store/unlinked``, ``kc/store/dropped_updates``). A newer
decision about the page replaces a waiting one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from scrapy.crawler import Crawler

from knowledge_crawler.config import KcConfig
from knowledge_crawler.crawl.runtime import STORE_FAILED
from knowledge_crawler.errors import StoreError, TransientStoreError
from knowledge_crawler.items import (
    DiscoveryItem,
    FailureItem,
    NotModifiedItem,
    PageItem,
    UrlOutcomeItem,
)
from knowledge_crawler.pipelines._base import KcPipeline, retry_record
from knowledge_crawler.sources import Source
from knowledge_crawler.store import (
    PAGE_NOT_STORED,
    REPRESENTATIVE_NOT_STORED,
    CheckpointAdvance,
    DuplicateUpdate,
    FetchFailure,
    FrontierAdd,
    KnownPage,
    Operation,
    PageRecord,
    PassageRecord,
    StatusChange,
    Touch,
    UpsertResult,
    UrlOutcome,
    new_batch_id,
)
from knowledge_crawler.store.rescue import rescue_path, write_rescue
from knowledge_crawler.sync.deletion import PageStatus, evidence_to_json, next_check, on_response
from knowledge_crawler.sync.policy import iso_utc, revisit

logger = logging.getLogger(__name__)

#: first and longest pause between two attempts at a batch (s)
_FIRST_DELAY = 0.1
_MAX_DELAY = 5.0
#: the GIL switch interval while the spider runs (s); see StorePipeline.open_spider
_WRITER_SWITCH_INTERVAL = 0.0005
#: at most one "retrying" WARNING line per this many seconds
_WARN_EVERY = 10.0
#: how long close waits for other processes' batches beyond twice the flush age (s)
_PEER_WAIT_SECONDS = 10.0
#: why a duplicate update waits for another process in a shared crawl
_NOT_YET_STORED = (PAGE_NOT_STORED, REPRESENTATIVE_NOT_STORED)

Key = tuple[str, str]


def to_record(item: PageItem, **schedule: Any) -> PageRecord:
    return PageRecord(
        source_id=item.source_id,
        canonical_url=item.canonical_url,
        url=item.url,
        final_url=item.final_url,
        fetched_at=item.fetched_at,
        http_status=item.http_status,
        content_hash=item.content_hash,
        content=item.content,
        title=item.title,
        headings=tuple(item.headings),
        word_count=item.word_count,
        language=item.language,
        thin=item.thin,
        minhash=item.minhash,
        minhash_params=item.minhash_params,
        duplicate_of=item.duplicate_of,
        duplicate_kind=item.duplicate_kind,
        duplicate_score=item.duplicate_score,
        etag=item.etag,
        last_modified=item.last_modified,
        depth=item.depth,
        archive_file=item.archive_file,
        archive_offset=item.archive_offset,
        passages=PassageRecord.of(item.passages),
        extra=item.extra,
        outlinks=item.links,
        canonical_link=item.canonical_link if item.links is not None else None,
        **schedule,
    )


def link_operations(item: PageItem) -> list[Operation]:
    """The links a page's parse found that the crawl did not know: frontier entries
    written in the page's own batch, so that a stop after it commits loses none."""
    depth = item.depth + 1
    ops: list[Operation] = [
        FrontierAdd(
            item.source_id,
            key,
            url,
            adapter="link",
            discovered_at=item.fetched_at,
            depth=depth,
            found_on=item.canonical_url,
        )
        for key, url in item.outlinks
    ]
    # refused before any request (robots.txt): judged again by every crawl, no download
    ops += [
        UrlOutcome(item.source_id, key, url, "refused", item.fetched_at, why, depth=depth)
        for key, url, why in item.refused_links
    ]
    return ops


def discovery_operations(
    item: DiscoveryItem, deletions: Sequence[StatusChange] = ()
) -> list[Operation]:
    """The pages a discovery response listed and the tombstones of the stored pages it
    says were deleted (``deletions``), then its checkpoint: never ahead of them."""
    ops: list[Operation] = [
        FrontierAdd(
            item.source_id,
            page.canonical_url,
            page.url,
            adapter=item.adapter,
            discovered_at=item.discovered_at,
            lastmod=page.lastmod,
        )
        for page in item.pages
    ]
    ops += deletions
    if item.checkpoint is not None:
        key = item.checkpoint_key or item.adapter
        ops.append(CheckpointAdvance(item.source_id, key, item.checkpoint))
    return ops


class StorePipeline(KcPipeline):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = KcConfig.from_settings(crawler.settings)
        self.batch_size = config.store_batch_size
        self.flush_seconds = config.store_flush_seconds
        self.retry_seconds = config.store_retry_seconds
        #: operations not yet committed, in arrival order; a flush removes what it committed
        self._ops: list[Operation] = []
        self._oldest = 0.0
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kc-store")
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._ticker: asyncio.Task[None] | None = None
        #: why the store failed (no more writes until close), or None
        self._failed: str | None = None
        self._closing = False
        self._close_task: asyncio.Task[None] | None = None
        self._switch_interval = sys.getswitchinterval()
        #: several processes crawl together: links to pages not stored yet wait (see above)
        self._shared = False
        #: duplicate links waiting for their page or representative to be stored, by page
        self._waiting: dict[Key, DuplicateUpdate] = {}
        #: the batch a failed flush left (its operations, its id, and how many of the first
        #: operations in memory it holds): the last try at close writes it again under the
        #: same id, so that a batch whose COMMIT may have succeeded is not applied twice
        self._unsettled: tuple[list[Operation], str, int] | None = None

    async def open_spider(self) -> None:
        self._shared = bool(getattr(self.crawler.spider, "shared_frontier", False))
        # The writer thread releases the GIL around every SQLite step and must win it
        # back from a busy reactor thread each time; at Python's default 5 ms switch
        # interval a batch of 200 touches took 4-5 s during a 304 re-crawl, items
        # queued behind it and the crawler's memory doubled (0.3 s and flat at 0.5 ms).
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, _WRITER_SWITCH_INTERVAL))
        self._ticker = asyncio.get_running_loop().create_task(self._tick())
        self.runtime.flush_store = self.flush

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            ops: list[Operation] = [to_record(item, **self._schedule(item, changed=None))]
            ops += item.dedupe_updates
            ops += link_operations(item)
            if self._waiting:  # a newer decision replaces a waiting one
                self._waiting.pop((item.source_id, item.canonical_url), None)
                for update in item.dedupe_updates:
                    self._waiting.pop(update.key, None)
        elif isinstance(item, NotModifiedItem):
            ops = [self._touch(item)]
        elif isinstance(item, DiscoveryItem):
            ops = discovery_operations(item, self._deletions(item))
        elif isinstance(item, FailureItem):
            ops = self._failure(item)
        elif isinstance(item, UrlOutcomeItem):
            ops = self._outcome(item)
        else:
            return item
        if not self._ops:
            self._oldest = time.monotonic()
        self._ops += ops
        self.runtime.ops_made += len(ops)
        if len(self._ops) >= self.batch_size and self._failed is None:
            await self.flush()
        return item

    def _schedule(
        self, item: PageItem | NotModifiedItem, *, changed: bool | None
    ) -> dict[str, Any]:
        """``next_check_at`` and ``check_interval`` of a page checked now.

        ``changed`` None: compare the item's hash with the stored page's (a new
        page counts as changed).
        """
        key = (item.source_id, item.canonical_url)
        known = self.runtime.known.get(key)
        if changed is None:
            assert isinstance(item, PageItem)
            changed = known is None or known.content_hash != item.content_hash
        source: Source | None = self.runtime.sources.get(item.source_id)
        if source is None:
            return {}
        plan = revisit(
            datetime.now(UTC),
            known.check_interval if known is not None else None,
            changed=changed,
            min_interval=source.min_interval,
            max_interval=source.max_interval,
        )
        return {"next_check_at": plan.next_check_at, "check_interval": plan.interval}

    def _failure(self, item: FailureItem) -> list[Operation]:
        """The retry state the middleware decided, and for a stored page its new status."""
        ops: list[Operation] = []
        state = item.state
        if state is not None:
            ops.append(retry_record(item, state))
        known = self.runtime.known.get((item.source_id, item.canonical_url))
        source = self.runtime.sources.get(item.source_id)
        if item.action in ("missing", "gone") and known is not None and source is not None:
            ops.append(self._status_change(known, source, item.status, item.failed_at))
        elif item.action in ("missing", "gone") and state is None:
            # A page never stored answered 404/410: nothing to keep, nothing to retry.
            ops.append(
                FetchFailure(
                    item.source_id,
                    item.canonical_url,
                    item.url,
                    failed_at=item.failed_at,
                    attempts=1,
                    first_failed_at=item.failed_at,
                    last_error=item.error,
                    last_status=item.status,
                    dead_lettered_at=item.failed_at,
                    depth=item.depth,
                    settled=True,
                )
            )
        return ops

    def _outcome(self, item: UrlOutcomeItem) -> list[Operation]:
        """A redirect or refusal, due again after the URL's own interval (a stored page's)
        or the source's longest; a redirect's target joins the frontier, so that a stop
        before its page is stored loses nothing."""
        source = self.runtime.sources.get(item.source_id)
        known = self.runtime.known.get((item.source_id, item.canonical_url))
        due: str | None = None
        if source is not None and not item.due_at_once:
            wait = source.max_interval
            if known is not None and known.check_interval:
                wait = timedelta(seconds=known.check_interval)
            due = iso_utc(datetime.now(UTC) + wait)
        ops: list[Operation] = [
            UrlOutcome(
                item.source_id,
                item.canonical_url,
                item.url,
                item.state,
                item.checked_at,
                item.reason,
                target=item.target,
                status=item.status,
                next_due_at=due,
                depth=item.depth,
            )
        ]
        if item.target is not None and item.target_url is not None:
            ops.append(
                FrontierAdd(
                    item.source_id,
                    item.target,
                    item.target_url,
                    adapter="redirect",
                    discovered_at=item.checked_at,
                    depth=item.depth,
                    found_on=item.canonical_url,
                )
            )
        self.inc(f"crawl_state/{item.state}")
        return ops

    def _deletions(self, item: DiscoveryItem) -> list[StatusChange]:
        """The tombstones of the stored pages a discovery response says were deleted."""
        source = self.runtime.sources.get(item.source_id)
        changes: list[StatusChange] = []
        for deleted in item.deleted if source is not None else ():
            known = self.runtime.known.get((item.source_id, deleted.canonical_url))
            if known is not None and source is not None:
                changes.append(
                    self._status_change(known, source, None, item.discovered_at, deleted.signal)
                )
        return changes

    def _status_change(
        self,
        known: KnownPage,
        source: Source,
        status: int | None,
        at: str,
        signal: str | None = None,
    ) -> StatusChange:
        """A stored page's new status after its URL answered ``status`` (404, 410), or after
        an authoritative deletion ``signal`` (no answer of its own), with the next check
        the policy sets for it.

        The page as this crawl knows it moves too, so a later answer in the same crawl
        (a 404 after a feed's deletion marker, say) starts from this one.
        """
        try:  # the time of the answer (the evidence's and the next check's base)
            now = datetime.fromisoformat(at)
        except ValueError:
            now = datetime.now(UTC)
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        current = PageStatus.restore(known.status, known.status_evidence, known.status_reason)
        move = on_response(
            current,
            status,
            now,
            missing_after=source.missing_after,
            missing_window=source.missing_window,
            signal=signal,
        )
        evidence = evidence_to_json(move.evidence)
        due = next_check(
            move,
            now,
            min_interval=source.min_interval,
            max_interval=source.max_interval,
            missing_window=source.missing_window,
        )
        self.runtime.known[known.key] = dataclasses.replace(
            known,
            status=move.new_status,
            status_reason=move.reason,
            status_evidence=evidence,
            next_check_at=due or known.next_check_at,
        )
        self.inc(f"deletion/{move.new_status}")
        return StatusChange(
            known.source_id,
            known.canonical_url,
            move.new_status,
            at,
            move.reason,
            evidence,
            http_status=status,
            next_check_at=due,
        )

    def _touch(self, item: NotModifiedItem) -> Touch:
        return Touch(
            item.source_id,
            item.canonical_url,
            checked_at=item.checked_at,
            etag=item.etag,
            last_modified=item.last_modified,
            **self._schedule(item, changed=False),
        )

    async def _tick(self) -> None:
        """Flush by age. Stopped by ``_stop``, never cancelled: a flush in flight completes.

        An error in a flush is logged and the ticker goes on: the rows stay in
        memory for the next flush.
        """
        interval = min(self.flush_seconds / 2, 1.0)
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)
            try:
                if (self._ops or self._waiting) and (
                    time.monotonic() - self._oldest >= self.flush_seconds
                ):
                    await self.flush()
            except Exception:
                logger.exception("store: a flush by age failed; its rows stay in memory")

    async def flush(self) -> None:
        """Write the rows in memory; they leave it only once committed.

        Transient errors are retried for ``KC_STORE_RETRY_SECONDS``; then, or on
        any other error, the store has failed (see :meth:`_fail`) and the rows
        stay for :meth:`close_spider`.
        """
        async with self._lock:
            if self._failed is not None:
                return
            n = len(self._ops)
            if not n and not self._waiting:
                return
            waiting, self._waiting = self._waiting, {}
            started = time.monotonic()
            batch = self._ops[:n] + list(waiting.values())
            batch_id = new_batch_id()  # one id for every try of this batch
            try:
                result = await self._write_retrying(batch, batch_id)
            except Exception as exc:
                for key, update in waiting.items():  # newer decisions came in meanwhile
                    self._waiting.setdefault(key, update)
                self._unsettled = (batch, batch_id, n)
                self._fail(exc, time.monotonic() - started)
                return
            del self._ops[:n]
            self.runtime.ops_committed += n
            self._oldest = started  # rows that came in meanwhile are younger than that
            if self._shared:
                self._wait_for_peers(batch, result, waiting)
        self._count(result)

    def _wait_for_peers(
        self, batch: Sequence[Operation], result: UpsertResult, sent: dict[Key, DuplicateUpdate]
    ) -> None:
        """Keep the links of ``result`` whose page or representative another process has
        not stored yet (taking them out of ``result``), to be written again."""
        records = {op.key: op for op in batch if isinstance(op, PageRecord)}
        later = {op.key for op in self._ops if isinstance(op, (PageRecord, DuplicateUpdate))}
        waiting: list[DuplicateUpdate] = []
        for key in result.unlinked:
            rec = records[key]
            waiting.append(
                DuplicateUpdate(key, rec.duplicate_of, rec.duplicate_kind, rec.duplicate_score)
            )
        waiting += [update for update, why in result.dropped_updates if why in _NOT_YET_STORED]
        result.unlinked = []
        result.dropped_updates = [d for d in result.dropped_updates if d[1] not in _NOT_YET_STORED]
        for update in waiting:
            if update.key in later or update.key in self._waiting:
                continue  # a newer decision about the page is queued
            if update.key not in sent:
                self.inc("store/links_deferred")
            self._waiting[update.key] = update
        self.inc("store/links_resolved", sum(1 for key in sent if key not in self._waiting))

    async def _write(self, ops: Sequence[Operation], batch_id: str) -> UpsertResult:
        loop = asyncio.get_running_loop()
        run_id = self.runtime.run_id
        store = self.runtime.store
        runtime = self.runtime

        def write() -> UpsertResult:
            runtime.check_lease()  # a crawl that lost its writer lease writes no more
            return store.write(ops, run_id=run_id, batch_id=batch_id)

        return await loop.run_in_executor(self._writer, write)

    async def _write_retrying(self, ops: Sequence[Operation], batch_id: str) -> UpsertResult:
        """Write ``ops``, retrying transient errors whole under the same ``batch_id``: a
        batch whose COMMIT failed but took effect is then not applied again."""
        deadline = time.monotonic() + self.retry_seconds
        delay = _FIRST_DELAY
        warned = 0.0
        while True:
            try:
                return await self._write(ops, batch_id)
            except TransientStoreError as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                self.inc("store/retries")
                if time.monotonic() - warned >= _WARN_EVERY:
                    warned = time.monotonic()
                    logger.warning(
                        "store: %s; %d operations kept in memory, retrying for up to %.0f s more",
                        exc,
                        len(ops),
                        remaining,
                    )
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, _MAX_DELAY)

    def _fail(self, exc: BaseException, waited: float) -> None:
        """The database cannot be written: say so once, and stop the crawl."""
        if isinstance(exc, StoreError):
            message = str(exc)
        else:
            message = f"cannot write to {self.runtime.store.url}: {type(exc).__name__}: {exc}"
        if isinstance(exc, TransientStoreError):
            message += f" (retried for {waited:.0f} s, KC_STORE_RETRY_SECONDS)"
        message = " ".join(message.split())
        self._failed = message
        self.runtime.store_failed(message)
        logger.error(
            "store failed, stopping the crawl: %s; %d operations in memory are kept",
            message,
            len(self._ops),
            exc_info=not isinstance(exc, StoreError),
        )
        engine = self.crawler.engine
        if not self._closing and engine is not None and engine.spider is not None:
            # Not awaited: closing waits for the items in flight, this one included.
            self._close_task = asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=STORE_FAILED)
            )

    def _count(self, result: UpsertResult) -> None:
        self.inc("store/batches")
        self.inc("store/inserted", len(result.inserted))
        self.inc("store/changed", len(result.changed))
        self.inc("store/unchanged", len(result.unchanged))
        self.inc("store/upserted", result.loaded)
        self.inc("store/touched", len(result.touched))
        self.inc("store/untouched", len(result.untouched))
        self.inc("store/checkpoints", len(result.checkpoints))
        self.inc("store/frontier_added", result.frontier_added)
        self.inc("store/redirected", result.redirected)
        self.inc("store/redirected_pages", result.redirected_pages)
        self.inc("store/refused", result.refused)
        self.inc("store/failures", result.failures)
        self.inc("store/dead_lettered", result.dead_lettered)
        self.inc("store/status_changes", result.status_changes)
        self.inc("tombstones/created", result.tombstones)
        self.inc("store/quarantined", len(result.quarantined))
        self.inc("store/unlinked", len(result.unlinked))
        self.inc("store/dropped_updates", len(result.dropped_updates))
        for key, error in result.quarantined:
            logger.error("quarantined %s %s: %s", key[0], key[1], error)
        for key in result.unlinked:
            logger.warning("%s %s: its representative is not stored; stored as no duplicate", *key)
        for update, why in result.dropped_updates:
            logger.warning("duplicate update of %s %s not applied: %s", *update.key, why)

    async def close_spider(self) -> None:
        self._closing = True
        self._stop.set()
        if self._ticker is not None:
            try:
                await self._ticker
            except Exception:
                logger.exception("store: the age ticker failed")
        try:
            await self.flush()
            await self._settle_waiting()
            if self._ops:  # the store failed: one last try, then rescue
                await self._last_try()
        finally:
            self._writer.shutdown(wait=True)
            sys.setswitchinterval(self._switch_interval)

    async def _settle_waiting(self) -> None:
        """Give the other processes of a shared crawl time to store what waiting links name."""
        if not self._waiting:
            return
        limit = 2 * self.flush_seconds + _PEER_WAIT_SECONDS
        logger.info(
            "store: %d duplicate links name pages other processes have not stored yet; "
            "waiting up to %.0f s for them",
            len(self._waiting),
            limit,
        )
        deadline = time.monotonic() + limit
        while self._waiting and self._failed is None and time.monotonic() < deadline:
            await asyncio.sleep(min(0.5, self.flush_seconds))
            await self.flush()
        if self._failed is not None:
            return
        for update in self._waiting.values():
            self.inc("store/dropped_updates")
            logger.warning(
                "duplicate link of %s %s not stored: %s %s was never stored",
                *update.key,
                *(update.duplicate_of or ("", "")),
            )
        self._waiting.clear()

    async def _last_try(self) -> None:
        n = len(self._ops)
        try:
            if self._unsettled is not None:  # the failed batch first, under its own id
                batch, batch_id, held = self._unsettled
                result = await self._write(batch, batch_id)
                self._unsettled = None
                del self._ops[:held]
                self.runtime.ops_committed += held
                n -= held
                self._count(result)
            if n:
                result = await self._write(self._ops[:n], new_batch_id())
                del self._ops[:n]
                self.runtime.ops_committed += n
                self._count(result)
        except Exception as exc:
            logger.warning("store: still cannot write: %s", " ".join(str(exc).split()))
            self._rescue(self._ops[:])
            return
        logger.warning("store: the database is back: the operations kept in memory are stored")

    def _rescue(self, ops: Sequence[Operation]) -> None:
        """Write what could not be stored to a file beside the database (0600), where the
        next crawl or ``knowledge-crawler rescue`` loads it; never anywhere else."""
        pages = [op for op in ops if isinstance(op, PageRecord)]
        run = self.runtime.run_id if self.runtime.run_id is not None else f"pid{os.getpid()}"
        path = rescue_path(self.runtime.store.url, run, self.runtime.config.rescue_dir)
        try:
            write_rescue(path, ops)
        except OSError as exc:
            why = f"cannot write the rescue file {path}: {exc.strerror or exc}"
            self.stats.set_value("kc/store/rescue_failed", why)
            self.inc("store/lost", len(pages))
            logger.critical(
                "store: %s; %d rows and %d other operations are lost (no other folder is "
                "used: a shared temporary folder would expose them)",
                why,
                len(pages),
                len(ops) - len(pages),
            )
            for rec in pages:  # nowhere to write: at least say what is lost
                logger.critical("store: lost %s %s", rec.source_id, rec.canonical_url)
            return
        del self._ops[: len(ops)]
        self.inc("store/rescued", len(pages))
        self.stats.set_value("kc/store/rescue_file", str(path))
        logger.error(
            "store: %d rows and %d other operations were not stored in %s; they are saved "
            "in %s (one JSON object a line), which the next crawl of this database loads "
            "first, or: knowledge-crawler rescue %s",
            len(pages),
            len(ops) - len(pages),
            self.runtime.store.url,
            path,
            path,
        )
