"""Worker processes for the CPU-heavy part of stages 1-4, fed in batches.

The crawl's event loop (Scrapy's reactor) runs on one core; extraction, cleaning,
hashing, MinHash and passages (``knowledge_crawler.transform.stages.prepare``)
cost several times what fetching and parsing a page does. :class:`StagePool`
sends them to ``KC_STAGE_WORKERS`` processes of a ``forkserver`` context (never
a fork of the crawl, whose threads may hold locks): a page's decoded HTML goes
in, its stage results come back, no response object is pickled. While a batch
is in a worker, the pages that arrive wait and go together in the next one, so
a busy crawl sends large batches and an idle one waits for none. Each worker
gets the sources' rules once, when it starts.

A worker that dies (killed, out of memory, a crash in a C library) breaks the
pool: a new one is started and the pages of the broken batch are sent again,
one at a time with nothing beside them, so that a page that kills a worker by
itself is found: it fails with :class:`WorkerCrashed`, and the rest are done.
Nothing of the crawl stops.

Batches travel through the pool's pipes. A Linux pipe holds 64 KiB, and a batch of
pages is ten times that: the worker then read its next batch, and wrote its results,
64 KiB at a time, each time waiting for a thread of the busy crawl process to win the
GIL and move the next piece (about 10% of the worker's time went idle that way, with
hundreds of pages waiting). So the pipes are widened to :data:`PIPE_BYTES` where the
system allows it, and a batch holds at most :data:`MAX_BATCH_BYTES` of HTML, which
fits in them with its results.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver

try:
    import fcntl
except ImportError:  # not on Windows: the pipes keep their size
    fcntl = None  # type: ignore[assignment]

from knowledge_crawler.transform.stages import (
    PageInput,
    Prepared,
    StageRules,
    prepare,
    prepare_batch,
)

__all__ = [
    "MAX_BATCH",
    "MAX_BATCH_BYTES",
    "PIPE_BYTES",
    "StagePool",
    "WorkerCrashed",
    "run_batch",
    "start_forkserver",
    "widen_pipes",
    "worker_count",
]

logger = logging.getLogger(__name__)

#: the most pages sent to a worker in one call
MAX_BATCH = 64
#: the most HTML (characters) in one call, but for a single page larger than that
MAX_BATCH_BYTES = 384 * 1024
#: the size asked for the pool's pipes (Linux; 1 MiB is what an unprivileged process
#: may ask for by default, /proc/sys/fs/pipe-max-size)
PIPE_BYTES = 1024 * 1024

#: the rules of the crawl's sources, in a worker process (set by its initializer)
_RULES: dict[str, StageRules] = {}


class WorkerCrashed(RuntimeError):
    """A page whose stages killed the worker process that ran them, on its own."""


def worker_count(setting: int) -> int:
    """Worker processes for ``KC_STAGE_WORKERS``: -1 is one fewer than the CPUs, at least 1.

    >>> worker_count(0), worker_count(3), worker_count(-1) >= 1
    (0, 3, True)
    """
    if setting >= 0:
        return setting
    return max(1, (os.cpu_count() or 1) - 1)


def _start_worker(rules: dict[str, StageRules]) -> None:
    _RULES.clear()
    _RULES.update(rules)
    # A worker waits for calls on a pipe it also holds the writing end of, so it never
    # sees the crawl go: a crawl killed outright (SIGKILL, out of memory) would leave it,
    # and the forkserver, behind for good. It leaves when the crawl process is gone.
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_with, args=(parent,), name="kc-crawl-watch", daemon=True
        ).start()


def _exit_with(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()  # returns once the crawl process has ended, however it ended
    os._exit(0)


def run_batch(pages: list[PageInput]) -> tuple[list[Prepared], float]:
    """The pages' stages, and the CPU time they took in this worker (s)."""
    started = time.process_time()
    return prepare_batch(pages, _RULES), time.process_time() - started


def widen_pipes(executor: ProcessPoolExecutor, size: int = PIPE_BYTES) -> int:
    """Ask for ``size``-byte pipes between the crawl and ``executor``'s workers: its call
    queue and its result queue. The pipes that were widened (0 where the system or the
    executor does not allow it: not Linux, a lower pipe-max-size, another Python)."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only; fcntl is None on Windows
    if set_size is None:
        return 0
    widened = 0
    # CPython's ProcessPoolExecutor creates both queues in its constructor, each with one
    # pipe (a reader and a writer connection); nothing public reaches them.
    for queue in (getattr(executor, "_call_queue", None), getattr(executor, "_result_queue", None)):
        reader = getattr(queue, "_reader", None)
        try:
            fcntl.fcntl(reader.fileno(), set_size, size)  # type: ignore[union-attr]
        except (AttributeError, OSError, ValueError):
            continue
        widened += 1
    return widened


def _warm_up() -> None:
    """What each worker's first page would otherwise wait for: the extractor's and
    MinHash's libraries loaded and their settings built."""
    prepare(
        PageInput("", "https://example.com/", "<html><body><p>warm up</p></body></html>"),
        StageRules(),
    )


def _context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    # The server imports the stages and what they load once; each worker is a fork of
    # it, started in milliseconds, with all of that already in memory.
    context.set_forkserver_preload(
        ["knowledge_crawler.transform.stages", "trafilatura.core", "datasketch"]
    )
    return context


def start_forkserver() -> None:
    """Start the process the workers are forked from, with its libraries loading, now.

    The crawl command calls it first thing: the server then imports the stages'
    libraries on another core while the crawl itself starts up (half a second or
    more), and the pool's first worker is a fork of a server already loaded.
    """
    _context()  # the server's preload list
    forkserver.ensure_running()


def _exit_of(code: int | None) -> str:
    if code is None:
        return "running"
    if code == 255:  # also what a forkserver child's status is when it cannot be read
        return "exit code 255 or unknown"
    return f"exit code {code}"


def _how_workers_ended(executor: ProcessPoolExecutor, error: BaseException) -> str:
    """What a broken pool's workers ended with, for the log: each one's exit code (a
    negative code is the signal that ended it; the pool ends the others with SIGTERM
    once one is gone), and the pool's own account when it has one."""
    # Nothing public lists a pool's processes; CPython keeps them in _processes.
    processes = getattr(executor, "_processes", None) or {}
    codes = ", ".join(f"pid {pid}: {_exit_of(p.exitcode)}" for pid, p in sorted(processes.items()))
    cause = error.__cause__
    return codes + (f"; {str(cause).strip()[-300:]}" if cause is not None else "")


class StagePool:
    """``workers`` processes running :func:`~knowledge_crawler.transform.stages.prepare`."""

    def __init__(
        self,
        workers: int,
        rules: dict[str, StageRules],
        *,
        work: Callable[[list[PageInput]], tuple[list[Prepared], float]] | None = None,
        eager: bool = True,
    ) -> None:
        """``work`` replaces what a worker does with a batch (tests; a module-level function).
        ``eager``: start the workers now (else with the first page)."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.rules = rules
        self._work = work or run_batch
        self._eager = eager
        # Starting the first process waits for the forkserver to start and load its
        # libraries (a second or more): on a thread, so the crawl goes on meanwhile and the
        # pages that arrive wait for it.
        self._executor: ProcessPoolExecutor | None = None
        self._starting = asyncio.get_running_loop().run_in_executor(None, self._start)
        self._starting.add_done_callback(self._started)
        #: pages waiting for a worker: (page, future of its result, sent alone)
        self._waiting: list[tuple[PageInput, asyncio.Future[Prepared], bool]] = []
        #: calls a worker is running or has queued; one more than the workers keeps each busy
        self._in_flight = 0
        self._closed = False
        #: counters for the crawl's stats: calls, pages, restarts, the workers' CPU time (s)
        self.batches = 0
        self.pages = 0
        self.restarts = 0
        self.worker_cpu = 0.0
        #: the pool's pipes widened to PIPE_BYTES (see widen_pipes)
        self.pipes_widened = 0
        self._warm_ups: list[Future[None]] = []

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=_context(),
            initializer=_start_worker,
            initargs=(self.rules,),
        )
        self.pipes_widened = widen_pipes(executor)
        if self._eager:  # started now, while the crawl starts, not with its first page
            self._warm_ups = [executor.submit(_warm_up) for _ in range(self.workers)]
        return executor

    @property
    def ready(self) -> bool:
        """Whether the workers are up (and warmed up, if started eagerly): a page sent now
        is not held up by their start, which takes a second or so."""
        return self._executor is not None and all(f.done() for f in self._warm_ups)

    def _started(self, starting: asyncio.Future[ProcessPoolExecutor]) -> None:
        error = starting.exception() if not starting.cancelled() else RuntimeError("cancelled")
        if error is not None:
            for _, future, _ in self._waiting:
                if not future.done():
                    future.set_exception(error)
            self._waiting.clear()
            return
        self._executor = starting.result()
        if self._closed:
            self._executor.shutdown(wait=False, cancel_futures=True)
        else:
            self._send()

    async def prepare(self, page: PageInput) -> Prepared:
        """Stages 1-4 of ``page`` in a worker; :class:`WorkerCrashed` if it kills one alone."""
        if self._closed:
            raise RuntimeError("the stage pool is closed")
        future: asyncio.Future[Prepared] = asyncio.get_running_loop().create_future()
        self._waiting.append((page, future, False))
        self._send()
        return await future

    def _send(self) -> None:
        if self._executor is None:  # still starting: _started sends what waits
            return
        loop = asyncio.get_running_loop()
        while self._waiting and self._in_flight <= self.workers:
            if self._waiting[0][2]:
                # After a crash, the pages it took are tried one at a time, nothing else
                # beside them: a breakage then names its page.
                if self._in_flight:
                    return
                batch = self._waiting[:1]
            else:
                n = size = 0
                while n < min(MAX_BATCH, len(self._waiting)) and not self._waiting[n][2]:
                    size += len(self._waiting[n][0].html)
                    if n and size > MAX_BATCH_BYTES:
                        break
                    n += 1
                batch = self._waiting[:n]
            del self._waiting[: len(batch)]
            self._in_flight += 1
            alone = batch[0][2]
            self.batches += 1
            executor = self._executor
            try:
                call: Future[tuple[list[Prepared], float]] = executor.submit(
                    self._work, [p for p, _, _ in batch]
                )
            except BrokenProcessPool as exc:  # broken before the call was taken
                call = Future()
                call.set_exception(exc)
            asyncio.wrap_future(call, loop=loop).add_done_callback(
                functools.partial(self._done, batch=batch, executor=executor)
            )
            if alone:
                return

    def _done(
        self,
        done: asyncio.Future[tuple[list[Prepared], float]],
        batch: list[tuple[PageInput, asyncio.Future[Prepared], bool]],
        executor: ProcessPoolExecutor,
    ) -> None:
        self._in_flight -= 1
        error = done.exception() if not done.cancelled() else RuntimeError("cancelled")
        if error is None:
            results, cpu = done.result()
            self.pages += len(results)
            self.worker_cpu += cpu
            for (_, future, _), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
        elif isinstance(error, BrokenProcessPool) and not self._closed:
            if executor is self._executor:  # the first failed call of this breakage
                self._restart(error)
            if len(batch) == 1 and batch[0][2]:
                page, future, _ = batch[0]
                if not future.done():
                    future.set_exception(
                        WorkerCrashed(f"a worker process died on {page.final_url}")
                    )
            else:  # each page again, on its own, ahead of the pages still waiting
                self._waiting[:0] = [(p, f, True) for p, f, _ in batch if not f.done()]
        else:
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(error)
        if not self._closed:
            self._send()

    def _restart(self, error: BaseException) -> None:
        """A worker died: a new pool (the old one's calls all fail). The forkserver is up,
        so a new worker is a fork of it, started in milliseconds."""
        assert self._executor is not None
        self.restarts += 1
        logger.warning(
            "a stage worker process died (%s); starting a new pool",
            _how_workers_ended(self._executor, error),
        )
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._executor = self._start()

    async def close(self) -> None:
        """Stop the workers (after the calls in flight); pages still waiting fail."""
        self._closed = True
        for _, future, _ in self._waiting:
            if not future.done():
                future.set_exception(RuntimeError("the stage pool was closed"))
        self._waiting.clear()
        with contextlib.suppress(Exception):  # a pool that failed to start has nothing to stop
            await self._starting
        if self._executor is not None:
            await asyncio.to_thread(self._executor.shutdown, True, cancel_futures=True)
