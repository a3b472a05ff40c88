"""Crawler-scoped handles shared by the spider and the pipelines.

:func:`runtime_for` opens the store once per crawler, synchronously, the first
time any component asks for it (``KC_STORE_BUSY_TIMEOUT``). When the spider
opens it marks ``abandoned`` the unfinished runs of this host whose process is
gone, and records the new run (pid, host, scrapyd job id). On ``spider_closed``
(sent after every pipeline's ``close_spider``) it decides the run's outcome
(stat ``kc/outcome``, see :func:`run_outcome`), writes it with the run's
counters and closes the store. Store calls here run off the event loop and
retry transient errors for ``KC_STORE_RETRY_SECONDS``. Pipelines use the
handle; none of them owns its lifecycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.settings import BaseSettings

from knowledge_crawler.config import KcConfig, display_url
from knowledge_crawler.crawl.known import KnownPages
from knowledge_crawler.crawl.stage_pool import StagePool
from knowledge_crawler.errors import ConfigError, LeaseHeldError, StoreError, TransientStoreError
from knowledge_crawler.sources import Source
from knowledge_crawler.store import (
    HEAD_COUNTERS,
    FetchFailure,
    Lease,
    LeaseHolder,
    LeaseKeeper,
    Store,
    open_store,
    utc_now,
)
from knowledge_crawler.store.leases import holder_gone, pid_alive, refusal
from knowledge_crawler.store.rescue import (
    left_over_rescues,
    load_rescue,
    read_rescue,
    rescue_sources,
)
from knowledge_crawler.sync.junk import PARSE_FAILURE
from knowledge_crawler.sync.retry import AttemptState
from knowledge_crawler.transform.minhash import MinHashParams
from knowledge_crawler.transform.stages import StageRules

__all__ = [
    "LEASE_HELD",
    "LEASE_LOST",
    "STAGES_FAILED",
    "STORE_FAILED",
    "Runtime",
    "check_database",
    "check_lease",
    "check_signatures",
    "child_processes",
    "group_members",
    "lease_holder",
    "minhash_params_from",
    "pid_alive",
    "retry_transient",
    "run_counters",
    "run_outcome",
    "runtime_for",
]

T = TypeVar("T")

#: Scrapy close reason of a crawl stopped because its database could not be written.
STORE_FAILED = "store_failed"
#: ... of a crawl that another writer's lease on one of its sources kept from starting
LEASE_HELD = "lease_held"
#: ... of a crawl whose lease expired and was taken by another writer
LEASE_LOST = "lease_lost"
#: ... of a crawl whose stage workers could not start (or start again)
STAGES_FAILED = "stage_pool_failed"
#: how a crawl refused for a lease says how to wait for it instead
WAIT_HINT = "or wait for it with -s KC_LEASE_WAIT_SECONDS=SECONDS"

#: links to these file types are not worth a request (images, media, archives, office files)
SKIPPED_EXTENSIONS = frozenset(f".{ext}" for ext in IGNORED_EXTENSIONS)

#: this machine, as ``crawl_runs.host`` records it
HOST = socket.gethostname()

#: ids of the runs this process has started and not yet finished
_LIVE_RUNS: set[int] = set()

logger = logging.getLogger(__name__)

#: dataset_meta key recording the MinHash parameters of the stored signatures
META_SIGNATURES = "minhash_signature"

#: crawl_runs column <- Scrapy stats keys that add up to it.
_COUNTER_SOURCES: dict[str, tuple[str, ...]] = {
    "candidates_discovered": ("kc/discovery/candidates",),
    "conditional_requests_sent": ("kc/fetch/conditional",),
    "responses_304": ("kc/fetch/status/304",),
    "responses_200_changed": ("kc/store/changed",),
    "responses_200_unchanged": ("kc/store/unchanged",),
    # page responses as the spider saw them: robots.txt answers are not pages
    "responses_404": ("kc/fetch/status/404",),
    "responses_429": ("kc/fetch/status/429",),
    "retries_scheduled": ("kc/retry/scheduled", "kc/retry/deferred"),
    # pages whose content could not be parsed: extraction failed, a stage raised, the page
    # killed its stage worker or ran past the stages' time limit
    "parse_failures": (
        "kc/extract/failed",
        "kc/stages/failed",
        "kc/extract/worker_crashed",
        "kc/stages/timed_out",
    ),
    "upserts_completed": ("kc/store/upserted",),
    "duplicates_found": ("kc/dedupe/exact", "kc/dedupe/near"),
    "tombstones_created": ("kc/tombstones/created",),
    "pages_new": ("kc/store/inserted",),
    "quarantined": ("kc/store/quarantined",),
}
assert set(_COUNTER_SOURCES) == set(HEAD_COUNTERS)


async def _nothing_to_flush() -> None:
    """What :attr:`Runtime.flush_store` does without a store pipeline."""


def run_outcome(reason: str, stats: Mapping[str, Any]) -> str:
    """How a run ended, from Scrapy's close ``reason`` and the crawl's stats.

    ``refused`` when another writer's lease kept it from starting (``kc/lease/refused``:
    it wrote nothing and recorded no run); ``failed`` when the store failed
    (``kc/store/failed``), when it lost its lease (``kc/lease/lost``) or its shared
    crawl's Redis (``kc/frontier/redis_lost``), when the dedupe state's file failed
    (``kc/dedupe/state_failed``), when its stage workers could not start
    (``kc/stages/pool_failed``) or when none of the
    start URLs could be fetched (``kc/start/fetched`` 0 of ``kc/start/requested``
    > 0); ``interrupted`` on ``shutdown`` (Ctrl-C, SIGTERM); else ``finished``
    (a ``closespider_*`` limit is a normal end).

    >>> run_outcome("finished", {"kc/start/requested": 2, "kc/start/fetched": 0})
    'failed'
    >>> run_outcome("shutdown", {}), run_outcome("closespider_pagecount", {})
    ('interrupted', 'finished')
    """
    if stats.get("kc/lease/refused"):
        return "refused"
    if stats.get("kc/store/failed") or stats.get("kc/dedupe/state_failed"):
        return "failed"
    if stats.get("kc/stages/pool_failed"):
        return "failed"
    if stats.get("kc/lease/lost") or stats.get("kc/frontier/redis_lost"):
        return "failed"
    if reason == "shutdown":
        return "interrupted"
    requested = int(stats.get("kc/start/requested", 0) or 0)
    fetched = int(stats.get("kc/start/fetched", 0) or 0)
    if reason in ("finished", "start_error") and requested > 0 and fetched == 0:
        return "failed"
    return "finished"


def _processes() -> Iterator[tuple[Path, list[str]]]:
    """Each process's /proc folder and the fields of its ``stat`` after the command name
    (state, parent, process group, ...)."""
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                yield entry, (entry / "stat").read_text().rpartition(")")[2].split()


def child_processes(pid: int, command_has: bytes = b"") -> list[int]:
    """The live child processes of ``pid`` whose command line holds ``command_has``
    (from /proc; empty where there is none)."""
    found: list[int] = []
    for entry, fields in _processes():
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(fields[1]) != pid or fields[0] == "Z":
                continue
            if command_has and command_has not in (entry / "cmdline").read_bytes():
                continue
            found.append(int(entry.name))
    return found


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid`` (from /proc)."""
    found: list[int] = []
    for entry, fields in _processes():
        with contextlib.suppress(IndexError, ValueError):
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


async def retry_transient(call: Callable[[], T], *, seconds: float, what: str) -> T:
    """``call()`` on a worker thread, retried with backoff while it raises a transient error.

    Gives up (re-raising the last :class:`TransientStoreError`) once ``seconds``
    have passed; other errors propagate at once.
    """
    deadline = time.monotonic() + seconds
    delay = 0.05
    while True:
        try:
            return await asyncio.to_thread(call)
        except TransientStoreError as exc:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            logger.warning("%s: %s; retrying", what, exc)
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 5.0)


def run_counters(stats: Mapping[str, Any]) -> dict[str, int]:
    """The F-METRICS counters, plus every other integer stat, from a Scrapy stats dict."""
    counters = {k: int(v) for k, v in stats.items() if isinstance(v, int)}
    for name, keys in _COUNTER_SOURCES.items():
        counters[name] = sum(int(stats.get(k, 0)) for k in keys)
    return counters


def minhash_params_from(settings: BaseSettings) -> MinHashParams:
    """The crawl's MinHash parameters from ``KC_MINHASH_*`` / ``KC_SHINGLE_SIZE``."""
    config = KcConfig.from_settings(settings)
    try:
        return MinHashParams(
            num_perm=config.minhash_permutations,
            seed=config.minhash_seed,
            shingle_size=config.shingle_size,
        )
    except ValueError as exc:
        raise ConfigError(f"MinHash settings: {exc}") from None


def check_signatures(store: Store, params: MinHashParams) -> None:
    """Refuse a database whose stored MinHash signatures were made with other parameters."""
    wanted = params.signature_fingerprint()
    stored = store.get_meta(META_SIGNATURES)
    if stored is None:
        store.set_meta(META_SIGNATURES, wanted)
    elif stored != wanted:
        raise ConfigError(
            f"{store.url}: its MinHash signatures were made with {stored}, this crawl uses "
            f"{wanted} (KC_MINHASH_PERMUTATIONS, KC_MINHASH_SEED, KC_SHINGLE_SIZE); "
            "use the database's parameters or another database"
        )


def check_database(settings: BaseSettings) -> None:
    """Open the configured database once (migrating it) and check it suits these settings."""
    config = KcConfig.from_settings(settings)
    try:
        store = open_store(config.database_url, busy_timeout=config.store_busy_timeout)
    except StoreError as exc:
        raise ConfigError(str(exc)) from exc
    with store:
        check_signatures(store, minhash_params_from(settings))


def lease_holder(settings: BaseSettings, spider: str, mode: str) -> LeaseHolder:
    """This process as the holder of a crawl's writer lease: itself, or with
    ``KC_REDIS_URL`` one process of the shared crawl (its Redis, key prefix and spider),
    whose other processes hold the same lease."""
    config = KcConfig.from_settings(settings)
    shared = None
    if config.redis_url:
        shared = f"shared crawl {display_url(config.redis_url)} {config.redis_key_prefix}:{spider}"
    return LeaseHolder.this_process(mode, shared=shared)


def check_lease(settings: BaseSettings, sources: list[Source], spider: str, mode: str) -> None:
    """:class:`LeaseHeldError` (one line naming the holder) when another writer holds a
    lease on one of ``sources`` and the crawl would not wait for it
    (``KC_LEASE_WAIT_SECONDS`` 0). A look, not a claim: the crawl takes its lease when it
    opens (:meth:`Runtime.hold_lease`)."""
    config = KcConfig.from_settings(settings)
    if config.lease_wait_seconds > 0:
        return
    me = lease_holder(settings, spider, mode)
    try:
        store = open_store(config.database_url, busy_timeout=config.store_busy_timeout)
    except StoreError as exc:
        raise ConfigError(str(exc)) from exc
    with store:
        now = utc_now()
        blocking = [
            lease
            for lease in store.leases(sorted({s.id for s in sources}))
            if lease.holder != me.holder and lease.expires_at > now and not holder_gone(lease)
        ]
    if blocking:
        raise LeaseHeldError(f"{refusal(blocking)}; {WAIT_HINT}")


class Runtime:
    """The store handle, the crawl run and the sources of one crawler."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.config = KcConfig.from_settings(crawler.settings)
        self.store: Store = open_store(
            self.config.database_url, busy_timeout=self.config.store_busy_timeout
        )
        self.sources: dict[str, Source] = {}
        self.mode = "crawl"
        self.run_id: int | None = None
        #: the stored pages of this crawl's sources (validators, hash, interval), by key;
        #: loaded once, off the reactor thread, by :meth:`load_known`
        self.known = KnownPages(self.config.known_memory_pages)
        #: the retry state of the sources' failed pages, by key (loaded with ``known``;
        #: the retry middleware keeps it current during the crawl)
        self.attempts: dict[tuple[str, str], AttemptState] = {}
        #: their rows as stored (URL, depth, dead letters...), for the spider's due retries
        self.failed: list[FetchFailure] = []
        self._known_loaded: asyncio.Future[None] | None = None
        self._minhash = minhash_params_from(crawler.settings)
        self._params_by_threshold: dict[float, MinHashParams] = {}
        self._rules: dict[str, StageRules] = {}
        #: the crawl's stage workers, once the extract pipeline has started them
        self.stage_pool: StagePool | None = None
        #: commits what the store pipeline holds in memory (set by it when it opens)
        self.flush_store: Callable[[], Awaitable[None]] = _nothing_to_flush
        #: how many store operations items have made, and how many of the first of them
        #: are committed (the store pipeline counts both): a request whose items were
        #: made when ``ops_made`` was N is in the database once ``ops_committed`` >= N
        self.ops_made = 0
        self.ops_committed = 0
        #: the crawl's writer lease on its sources, once taken (:meth:`hold_lease`)
        self.lease: LeaseKeeper | None = None
        self._lease_taken: asyncio.Future[bool] | None = None
        #: held while the run is being recorded (on a thread): see :meth:`close_after_stop`
        self._recording_run = threading.Lock()
        self._recorded_run: int | None = None
        self._closing = False  # _spider_closed has begun
        self._stopped_waiting = False
        try:
            check_signatures(self.store, self._minhash)
        except ConfigError:
            self.store.close()
            raise
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    async def load_known(self) -> KnownPages:
        """Read the stored pages of the crawl's sources once, on a worker thread."""
        if self._known_loaded is None:
            self._known_loaded = asyncio.get_running_loop().create_future()
            ids = sorted(self.sources)
            store = self.store
            try:
                known = self.known

                def load() -> list[FetchFailure]:
                    known.extend(store.known_pages(ids))  # streamed, into the map
                    return store.fetch_attempts(ids)

                failed = await asyncio.to_thread(load)
            except asyncio.CancelledError:  # the crawl stopped: nobody waits for it now
                self._known_loaded.cancel()
                raise
            except BaseException as exc:
                self._known_loaded.set_exception(exc)
                raise
            self.failed = failed
            self.attempts = {
                f.key: AttemptState(
                    attempts=f.attempts,
                    first_failed_at=f.first_failed_at,
                    last_error=f.last_error,
                    last_status=f.last_status,
                    next_retry_at=f.next_retry_at,
                    dead_lettered_at=f.dead_lettered_at,
                )
                for f in failed
                # a parse failure (a junk 200) is no failed fetch: a fetch that fails
                # later starts its own count, not from the junk answers'
                if not (f.last_error or "").startswith(PARSE_FAILURE)
            }
            assert self.crawler.stats is not None
            self.crawler.stats.set_value("kc/sync/known_pages", len(self.known))
            self._known_loaded.set_result(None)
        await asyncio.shield(self._known_loaded)
        return self.known

    def source(self, source_id: str) -> Source:
        try:
            return self.sources[source_id]
        except KeyError:
            raise ConfigError(f"item of unknown source {source_id!r}") from None

    def minhash_params(self, threshold: float | None = None) -> MinHashParams:
        """The MinHash parameters of this crawl, with a source's near-duplicate threshold."""
        if threshold is None:
            return self._minhash
        params = self._params_by_threshold.get(threshold)
        if params is None:
            params = self._params_by_threshold[threshold] = dataclasses.replace(
                self._minhash, threshold=threshold
            )
        return params

    def stage_rules(self, source_id: str) -> StageRules:
        """What pipeline stages 1-4 need of a source (``transform.stages``)."""
        rules = self._rules.get(source_id)
        if rules is None:
            source = self.source(source_id)
            rules = self._rules[source_id] = StageRules(
                boilerplate=source.boilerplate,
                keep_params=source.keep_params,
                tracking_params=source.tracking_params,
                minhash=self.minhash_params(source.near_duplicate_threshold),
                passage_words=self.config.passage_words,
                skipped_extensions=SKIPPED_EXTENSIONS,
            )
        return rules

    async def hold_lease(self) -> bool:
        """Take the crawl's writer lease on its sources, once: every caller waits for the
        same attempt. Whatever reads the stored state the crawl works from (the dedupe
        state, the known pages) or writes comes after it.

        Waits up to ``KC_LEASE_WAIT_SECONDS`` for another writer to release or lose it,
        polling off the reactor thread; then the heartbeat renews it on a thread of its
        own. False when the crawl must stop and write nothing: the lease is held by
        another writer (stats ``kc/lease/refused``: who) or cannot be taken (the store
        failed).
        """
        if self._lease_taken is None:
            self._lease_taken = asyncio.get_running_loop().create_future()
            try:
                taken = await self._take_lease()
                if taken:
                    await self._load_rescues()
            except asyncio.CancelledError:  # the crawl stopped: nobody waits for it now
                self._lease_taken.cancel()
                raise
            except BaseException as exc:
                self._lease_taken.set_exception(exc)
                raise
            self._lease_taken.set_result(taken)
        return await asyncio.shield(self._lease_taken)

    async def _take_lease(self) -> bool:
        assert self.crawler.stats is not None and self.crawler.spider is not None
        stats = self.crawler.stats
        holder = lease_holder(self.crawler.settings, self.crawler.spider.name, self.mode)
        loop = asyncio.get_running_loop()
        keeper = LeaseKeeper(
            self.store,
            sorted(self.sources),
            holder,
            ttl=self.config.lease_ttl_seconds,
            on_lost=lambda blocking: loop.call_soon_threadsafe(self._lease_lost, blocking),
        )
        began = time.monotonic()
        deadline = began + self.config.lease_wait_seconds
        told = False
        while True:
            try:
                blocking = await self._store_call(keeper.try_acquire, "taking the writer lease")
            except StoreError as exc:
                self.store_failed(str(exc))
                logger.error("the crawl cannot start: %s", exc)
                return False
            if not blocking:
                break
            if not self.crawler.crawling:  # Ctrl-C or SIGTERM while it waited
                self._stopped_waiting = True
                logger.info("stopped while waiting for the writer lease: nothing was written")
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                message = refusal(blocking)
                if not told:
                    message += f"; {WAIT_HINT}"
                stats.set_value("kc/lease/refused", message)
                logger.error("the crawl cannot start: %s", message)
                return False
            if not told:
                told = True
                stats.set_value("kc/lease/waiting", refusal(blocking))
                logger.warning(
                    "waiting up to %.0f s for the writer lease: %s",
                    remaining,
                    refusal(blocking),
                )
            await asyncio.sleep(min(1.0, remaining))
        keeper.start()
        self.lease = keeper
        stats.set_value("kc/lease/holder", holder.holder)
        if told:
            stats.set_value("kc/lease/waited_ms", round(1000 * (time.monotonic() - began)))
        return True

    async def _load_rescues(self) -> None:
        """Load the rescue files an earlier crawl left beside the database (what it could
        not store), before anything reads the stored state: idempotent, through the
        store's batches (:mod:`knowledge_crawler.store.rescue`). A file that writes a
        source this crawl does not hold the lease of is left for ``knowledge-crawler
        rescue``; one that cannot be loaded stays, and the crawl goes on."""
        assert self.crawler.stats is not None
        stats = self.crawler.stats
        for path in left_over_rescues(self.config.database_url, self.config.rescue_dir):
            try:
                operations = await asyncio.to_thread(read_rescue, path)
            except (OSError, ConfigError) as exc:
                logger.error("rescue file %s not loaded: %s", path, exc)
                continue
            others = sorted(rescue_sources(operations) - set(self.sources))
            if others:
                logger.warning(
                    "rescue file %s not loaded: it writes sources this crawl does not hold "
                    "(%s); load it with: knowledge-crawler rescue %s",
                    path,
                    ", ".join(others),
                    path,
                )
                continue
            load = functools.partial(
                load_rescue, self.store, path, operations, batch_size=self.config.store_batch_size
            )
            try:
                summary = await self._store_call(load, f"loading the rescue file {path}")
            except StoreError as exc:
                logger.error("rescue file %s not loaded: %s", path, exc)
                continue
            stats.inc_value("kc/rescue/files")
            stats.inc_value("kc/rescue/pages", summary.pages - summary.already_stored)
            where = f"; renamed to {summary.renamed_to}" if summary.renamed_to else ""
            logger.warning("loaded the rescue file %s: %s%s", path, summary.line(), where)

    def not_held_reason(self) -> str:
        """The close reason of a crawl that could not take its lease (see :meth:`hold_lease`)."""
        assert self.crawler.stats is not None
        if self._stopped_waiting:
            return "shutdown"  # interrupted
        return LEASE_HELD if self.crawler.stats.get_value("kc/lease/refused") else STORE_FAILED

    def check_lease(self) -> None:
        """:class:`StoreError` once the crawl lost its writer lease: it must write no more."""
        if self.lease is not None:
            self.lease.check()

    def _lease_lost(self, blocking: list[Lease]) -> None:
        """On the reactor thread: another writer took the crawl's lease; stop the crawl."""
        assert self.crawler.stats is not None
        self.crawler.stats.set_value(
            "kc/lease/lost", f"the writer lease was lost: {refusal(blocking)}"
        )
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            asyncio.get_running_loop().create_task(engine.close_spider_async(reason=LEASE_LOST))

    async def _release_lease(self) -> None:
        keeper, self.lease = self.lease, None
        if keeper is not None:
            await asyncio.to_thread(keeper.release)

    def store_failed(self, message: str) -> None:
        """Record that the database cannot be written: stats ``kc/store/failed``, ``/error``."""
        assert self.crawler.stats is not None
        self.crawler.stats.set_value("kc/store/failed", 1)
        self.crawler.stats.set_value("kc/store/error", message)

    async def _store_call(self, call: Callable[[], T], what: str) -> T:
        return await retry_transient(
            call, seconds=self.config.store_retry_seconds, what=f"{what} ({self.store.url})"
        )

    async def _spider_opened(self, spider: Spider) -> None:
        # Nothing is written, not even the run, before the crawl holds its sources' lease.
        if not await self.hold_lease():
            raise CloseSpider(self.not_held_reason())
        try:
            await self._store_call(self._abandon_dead_runs, "marking dead runs abandoned")
        except StoreError as exc:
            logger.warning("could not check for abandoned runs: %s", exc)
        record = functools.partial(
            self.store.start_run,
            spider=spider.name,
            sources=sorted(self.sources),
            mode=self.mode,
            job_id=_job_id(spider),
            pid=os.getpid(),
            host=HOST,
        )

        def start() -> int:
            with self._recording_run:
                self._recorded_run = record()
                return self._recorded_run

        try:
            self.run_id = await self._store_call(start, "recording the run")
        except StoreError as exc:
            message = str(exc)
            self.store_failed(message)
            logger.error("the crawl cannot start: %s", message)
            raise CloseSpider(STORE_FAILED) from exc
        _LIVE_RUNS.add(self.run_id)
        assert self.crawler.stats is not None
        self.crawler.stats.set_value("kc/run_id", self.run_id)
        if self.lease is not None:  # the lease names the run from now on
            lease, run_id = self.lease, self.run_id
            try:
                await self._store_call(lambda: lease.set_run(run_id), "naming the run in the lease")
            except StoreError as exc:
                logger.warning("could not name run %s in the writer lease: %s", run_id, exc)

    def _abandon_dead_runs(self) -> None:
        """Mark ``abandoned`` the unfinished runs of this host whose process is gone.

        A run of our own pid that this process did not start was a previous
        process's (pids are reused); runs of other hosts are left alone, and so
        are runs recorded before pids were (no pid to check).
        """
        for run in self.store.unfinished_runs():
            pid = run["pid"]
            if run["host"] != HOST or pid is None or run["id"] in _LIVE_RUNS:
                continue
            if pid != os.getpid() and pid_alive(pid):
                continue
            self.store.abandon_run(run["id"])
            logger.warning(
                "run %s (pid %s on %s, started %s%s) never finished and its process is gone: "
                "marked abandoned, its counters as its last stored batch left them",
                run["id"],
                pid,
                run["host"],
                run["started_at"],
                f", job {run['job_id']}" if run["job_id"] else "",
            )

    async def _spider_closed(self, spider: Spider, reason: str) -> None:
        self._closing = True
        try:
            assert self.crawler.stats is not None
            outcome = run_outcome(reason, self.crawler.stats.get_stats())
            self.crawler.stats.set_value("kc/outcome", outcome)
            if self.run_id is not None:
                run_id = self.run_id
                counters = run_counters(self.crawler.stats.get_stats())
                finish = functools.partial(
                    self.store.finish_run,
                    run_id,
                    reason=reason,
                    outcome=outcome,
                    counters=counters,
                )
                try:
                    await self._store_call(finish, f"recording the end of run {run_id}")
                except StoreError as exc:
                    logger.error(
                        "could not record the end of run %s: %s (the next run will mark it "
                        "abandoned; its stored counters hold what its batches wrote)",
                        run_id,
                        exc,
                    )
        finally:
            if self.run_id is not None:
                _LIVE_RUNS.discard(self.run_id)
            try:
                await self._release_lease()
            finally:
                self.known.close()
                self.store.close()
            _RUNTIMES.pop(self.crawler, None)

    def close_after_stop(self) -> None:
        """Finish what a crawl stopped before its spider closed left open.

        A SIGTERM or Ctrl-C while the spider is still opening stops Scrapy's reactor
        without closing the spider (its engine is not running yet, so there is nothing
        for the graceful stop to wait for): the run, recorded on a thread meanwhile,
        stayed ``running`` and the lease held. Called from the crawl command once the
        reactor has stopped; the run is recorded ``interrupted``.
        """
        if self._closing:  # the spider was closing: its store calls end on their threads
            return
        stats = self.crawler.stats
        assert stats is not None
        with self._recording_run:  # a recording in progress on its thread finishes first
            run_id = self._recorded_run
        try:
            if run_id is not None:
                stats.set_value("kc/run_id", run_id)
                stats.set_value("kc/outcome", "interrupted")
                finish = functools.partial(
                    self.store.finish_run,
                    run_id,
                    reason="shutdown",
                    outcome="interrupted",
                    counters=run_counters(stats.get_stats()),
                )
                call = self._store_call(finish, f"recording the end of run {run_id}")
                try:  # the retries on a loop of their own: the reactor's has stopped
                    with ThreadPoolExecutor(1, thread_name_prefix="kc-run-end") as apart:
                        apart.submit(asyncio.run, call).result()
                except StoreError as exc:
                    logger.error("could not record the end of run %s: %s", run_id, exc)
                _LIVE_RUNS.discard(run_id)
        finally:
            keeper, self.lease = self.lease, None
            try:
                if keeper is not None:
                    keeper.release()
            finally:
                self.known.close()
                self.store.close()
                _RUNTIMES.pop(self.crawler, None)


def close_unclosed(crawler: Crawler) -> None:
    """:meth:`Runtime.close_after_stop` for a crawler whose spider never closed (its
    runtime is still there); nothing for one that closed."""
    runtime = _RUNTIMES.get(crawler)
    if runtime is not None:
        runtime.close_after_stop()


def _job_id(spider: Spider) -> str | None:
    """The scheduler's job id: scrapyd runs each job with ``-a _job=ID``."""
    job = getattr(spider, "_job", None)
    return None if job is None else str(job)


_RUNTIMES: WeakKeyDictionary[Crawler, Runtime] = WeakKeyDictionary()


def open_runtime(crawler: Crawler) -> Runtime | None:
    """The crawler's :class:`Runtime` if one is open (None: nothing in this crawl uses the
    store, and nothing is opened for asking)."""
    return _RUNTIMES.get(crawler)


def runtime_for(crawler: Crawler) -> Runtime:
    """The crawler's :class:`Runtime`, created (and the store opened) on first use."""
    runtime = _RUNTIMES.get(crawler)
    if runtime is None:
        runtime = _RUNTIMES[crawler] = Runtime(crawler)
    return runtime
