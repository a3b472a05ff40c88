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

Each worker marks on a board in shared memory (:class:`_Board`) which call and which
page of it it is working on, and since when. So the pool knows what a page costs it:

* a page whose stages raise fails alone (:class:`StageFailed`, naming the exception);
  the worker goes on with the rest of its batch;
* a worker that dies (killed, out of memory, a crash in a C library) breaks the pool: a
  new one is started, off the event loop, and the pages of the broken calls are sent
  again; the page a worker was on when it died goes alone, with nothing beside it, so
  that a page that kills a worker by itself is found: it fails with
  :class:`WorkerCrashed`, and the rest are done;
* a page that runs past the time limit (``timeout``, ``KC_STAGE_TIMEOUT_SECONDS``) has
  its worker killed and fails with :class:`StageTimeout`; the rest of its batch is sent
  again.

Nothing of the crawl stops for a page. A pool that cannot start (or start again) fails
every page waiting and every later one at once with :class:`StagePoolFailed`. Workers
ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and it is the
crawl, not its workers, that decides how to stop; the crawl ends them.

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
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver
from typing import Any

try:
    import fcntl
except ImportError:  # not on Windows: the pipes keep their size
    fcntl = None  # type: ignore[assignment]

from knowledge_crawler.transform.stages import (
    PageInput,
    Prepared,
    StageError,
    StageRules,
    prepare,
    prepare_batch,
)

__all__ = [
    "MAX_BATCH",
    "MAX_BATCH_BYTES",
    "PIPE_BYTES",
    "StageFailed",
    "StagePageError",
    "StagePool",
    "StagePoolFailed",
    "StagePoolStopped",
    "StageTimeout",
    "WorkerCrashed",
    "run_batch",
    "start_forkserver",
    "stop_forkserver",
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
#: a worker's place on its pool's board: the board's values and the first of its own
_SLOT: tuple[Any, int] | None = None

#: what a batch's call gives back: a result (or a page's error) a page, and CPU seconds
BatchResult = tuple[list[Prepared | StageError], float]


class StagePageError(RuntimeError):
    """A page the stage workers could not do; the other pages of its batch are done."""

    def __init__(self, message: str, url: str, detail: str = "") -> None:
        super().__init__(message)
        self.url = url
        #: what happened, without the URL (``ValueError: ...``, ``over 60 s``)
        self.detail = detail

    @property
    def kind(self) -> str:
        """The failure's kind: the class name."""
        return type(self).__name__

    @property
    def error(self) -> str:
        """The failure as the retry state records it: kind and detail."""
        return f"{self.kind}: {self.detail}"[:300] if self.detail else self.kind


class StageFailed(StagePageError):
    """A page whose stages raised an exception (named in the message)."""


class WorkerCrashed(StagePageError):
    """A page whose stages killed the worker process that ran them, on its own."""


class StageTimeout(StagePageError):
    """A page whose stages ran past the pool's time limit: its worker was killed."""


class StagePoolFailed(RuntimeError):
    """The worker pool could not start (or start again): no page can be done."""


class StagePoolStopped(RuntimeError):
    """The crawl is stopping and the pool broke (a signal to the process group, say): its
    pages are left undone, and no new pool is started."""


class _Board:
    """Where each worker of a pool says what it is doing, in shared memory: four numbers a
    worker (its pid, the call it runs, the page of the call, since when: ``time.monotonic``,
    one clock for every process of the machine; 0 when idle). Written by the workers
    without a lock, in an order that makes a read half-way through harmless, and read by
    the pool on the event loop without waiting for anything."""

    FIELDS = 4

    def __init__(self, context: multiprocessing.context.BaseContext, workers: int) -> None:
        self.values = context.RawArray("d", workers * self.FIELDS)
        self.taken = context.Value("i", 0)

    def claim(self) -> tuple[Any, int] | None:
        """A worker's place, the next free one (None when all are taken)."""
        with self.taken.get_lock():
            n = self.taken.value
            self.taken.value = n + 1
        base = n * self.FIELDS
        if base >= len(self.values):
            return None
        self.values[base] = os.getpid()
        return self.values, base

    def entries(self) -> list[tuple[int, int, int, float]]:
        """Each worker's (pid, call, page, started); call 0 and started 0.0: idle."""
        v = self.values[:]
        return [
            (int(v[i]), int(v[i + 1]), int(v[i + 2]), v[i + 3])
            for i in range(0, len(v), self.FIELDS)
        ]

    def page_of(self, call: int) -> int | None:
        """The page of ``call`` a worker is on: its index, -1 when the call started but no
        page did (a ``work`` hook of its own), None when no worker is running the call."""
        for _, running, page, started in self.entries():
            if running == call and started:
                return page
        return None


def worker_count(setting: int) -> int:
    """Worker processes for ``KC_STAGE_WORKERS``: -1 is one fewer than the CPUs, at least 1.

    >>> worker_count(0), worker_count(3), worker_count(-1) >= 1
    (0, 3, True)
    """
    if setting >= 0:
        return setting
    return max(1, (os.cpu_count() or 1) - 1)


def _start_worker(rules: dict[str, StageRules], board: _Board | None = None) -> None:
    global _SLOT
    # Ctrl-C in a terminal signals the whole process group: the crawl decides how to stop,
    # and ends its workers itself (a worker that took it would die, and be taken for a crash).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _RULES.clear()
    _RULES.update(rules)
    _SLOT = board.claim() if board is not None else None
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


def run_batch(
    pages: list[PageInput], *, stages: Callable[[PageInput, StageRules], Prepared] = prepare
) -> BatchResult:
    """The pages' stages (a :class:`StageError` for a page whose stages raised), and the
    CPU time they took in this worker (s). ``stages`` replaces ``prepare`` (tests)."""
    started = time.process_time()
    results = prepare_batch(pages, _RULES, stages=stages, started=_page_started)
    return results, time.process_time() - started


def _page_started(page: int) -> None:
    """On the board: this worker starts page ``page`` of its call, now."""
    if _SLOT is not None:
        values, base = _SLOT
        values[base + 3] = time.monotonic()  # the time first: never a new page's old time
        values[base + 2] = page


def _run_call(
    work: Callable[[list[PageInput]], BatchResult], call: int, pages: list[PageInput]
) -> BatchResult:
    """``work`` of a call's pages in a worker, marked on the board while it runs."""
    if _SLOT is None:
        return work(pages)
    values, base = _SLOT
    values[base + 3] = 0.0  # idle while the call and page change
    values[base + 1] = call
    values[base + 2] = -1  # no page yet: run_batch says which, a hook of its own may not
    values[base + 3] = time.monotonic()
    try:
        return work(pages)
    finally:
        values[base + 3] = 0.0
        values[base + 1] = 0


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


def stop_forkserver(timeout: float = 5.0) -> None:
    """Stop the process the workers were forked from, and wait (up to ``timeout`` s) until
    it has gone. Left alone, it ends when it sees the crawl go, a moment after the crawl's
    exit: on a busy machine, something still running after the crawl said it was done.
    (multiprocessing's resource tracker is left to end that way: it must outlive the
    crawl's own exit handlers, which give their semaphores back to it.) A server that
    has not stopped by then (still loading its libraries, or held by a worker that
    outlived its pool) is killed.
    """
    server = getattr(forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if server is None or pid is None:
        return

    def stop() -> None:
        with contextlib.suppress(Exception):  # CPython's own: closes the pipe, then waitpid
            server._stop()

    stopping = threading.Thread(target=stop, name="kc-forkserver-stop", daemon=True)
    stopping.start()
    stopping.join(timeout)
    if stopping.is_alive():
        # Still importing its preload list (a crawl stopped in its first seconds on a
        # busy machine): it reads the pipe only after that, and nothing was forked from
        # it yet. Left to finish, it removed its socket while the crawl's exit was
        # removing the same folder.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        stopping.join(timeout)


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


#: a page waiting for a worker: the page, the future of its result, and whether it goes
#: alone (the page a worker was on when it died)
_Waiting = tuple[PageInput, "asyncio.Future[Prepared]", bool]


class StagePool:
    """``workers`` processes running :func:`~knowledge_crawler.transform.stages.prepare`."""

    def __init__(
        self,
        workers: int,
        rules: dict[str, StageRules],
        *,
        work: Callable[[list[PageInput]], BatchResult] | None = None,
        eager: bool = True,
        timeout: float | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        """``work`` replaces what a worker does with a batch (tests; a module-level function).
        ``eager``: start the workers now (else with the first page). ``timeout``: the
        longest a page's stages may take (s) before its worker is killed; None: no limit.
        ``stopping``: whether the crawl is stopping (a pool that breaks then is not started
        again, nor its breakage taken for a crash)."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.workers = workers
        self.rules = rules
        self.timeout = timeout
        self._work = work or run_batch
        self._eager = eager
        self._stopping = stopping
        self._loop = asyncio.get_running_loop()
        #: why no page can be done: the pool could not start (or start again)
        self.failed: StagePoolFailed | None = None
        # Starting the first process waits for the forkserver to start and load its
        # libraries (a second or more): on a thread, so the crawl goes on meanwhile and the
        # pages that arrive wait for it. So does every new pool after a worker died.
        self._executor: ProcessPoolExecutor | None = None
        self._board: _Board | None = None
        #: pages waiting for a worker
        self._waiting: list[_Waiting] = []
        #: calls a worker is running or has queued; one more than the workers keeps each busy
        self._in_flight = 0
        self._calls: dict[int, list[_Waiting]] = {}
        self._call_ids = 0
        #: the calls whose worker was killed for running past the limit, and on which page
        self._killed: dict[int, int] = {}
        self._watch: asyncio.TimerHandle | None = None
        self._closed = False
        #: counters for the crawl's stats: calls, pages, restarts, the workers' CPU time (s)
        self.batches = 0
        self.pages = 0
        self.restarts = 0
        self.worker_cpu = 0.0
        #: the pool's pipes widened to PIPE_BYTES (see widen_pipes)
        self.pipes_widened = 0
        self._warm_ups: list[Future[None]] = []
        # last: the start thread reads and sets the fields above, and may finish before
        # the next line of this method runs
        self._starting = self._loop.run_in_executor(None, self._start)
        self._starting.add_done_callback(self._started)

    def _start(self) -> tuple[ProcessPoolExecutor, _Board]:
        """A new executor and its board (on a thread: it waits for processes to start)."""
        context = _context()
        board = _Board(context, self.workers)
        executor = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(self.rules, board),
        )
        self.pipes_widened = widen_pipes(executor)
        # Started now, while the crawl starts, not with its first page; a new pool after a
        # crash has pages waiting: its workers start here too, not on the event loop with
        # the first call.
        if self._eager or self.restarts:
            self._warm_ups = [executor.submit(_warm_up) for _ in range(self.workers)]
        return executor, board

    @property
    def ready(self) -> bool:
        """Whether the workers are up (and warmed up, if started eagerly): a page sent now
        is not held up by their start, which takes a second or so."""
        return self._executor is not None and all(f.done() for f in self._warm_ups)

    def _started(self, starting: asyncio.Future[tuple[ProcessPoolExecutor, _Board]]) -> None:
        if starting.cancelled():
            error: BaseException | None = RuntimeError("cancelled")
        else:
            error = starting.exception()
        if error is not None:
            self.failed = StagePoolFailed(
                f"the stage worker pool could not start: {type(error).__name__}: {error}"
            )
            for _, future, _ in self._waiting:
                if not future.done():
                    future.set_exception(self.failed)
            self._waiting.clear()
            return
        self._executor, self._board = starting.result()
        if self._closed:
            self._executor.shutdown(wait=False, cancel_futures=True)
        else:
            self._send()

    async def prepare(self, page: PageInput) -> Prepared:
        """Stages 1-4 of ``page`` in a worker; a :class:`StagePageError` when the workers
        cannot do it (its stages raised, it kills a worker alone, it takes too long),
        :class:`StagePoolFailed` when the pool cannot start."""
        if self.failed is not None:
            raise StagePoolFailed(str(self.failed))
        if self._closed:
            raise RuntimeError("the stage pool is closed")
        future: asyncio.Future[Prepared] = self._loop.create_future()
        self._waiting.append((page, future, False))
        self._send()
        return await future

    def _send(self) -> None:
        if self._executor is None:  # still starting: _started sends what waits
            return
        while self._waiting and self._in_flight <= self.workers:
            if self._waiting[0][2]:
                # The page a worker died on goes alone, nothing beside it: a breakage
                # then names its page.
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
            self._call_ids += 1
            call = self._call_ids
            self._calls[call] = batch
            executor, board = self._executor, self._board
            try:
                submitted: Future[BatchResult] = executor.submit(
                    _run_call, self._work, call, [p for p, _, _ in batch]
                )
            except BrokenProcessPool as exc:  # broken before the call was taken
                submitted = Future()
                submitted.set_exception(exc)
            asyncio.wrap_future(submitted, loop=self._loop).add_done_callback(
                functools.partial(
                    self._done, batch=batch, executor=executor, board=board, call=call
                )
            )
            if self.timeout is not None and self._watch is None:
                self._watch = self._loop.call_later(self._watch_every(), self._check_times)
            if alone:
                return

    def _watch_every(self) -> float:
        assert self.timeout is not None
        return min(1.0, max(0.05, self.timeout / 4))

    def _check_times(self) -> None:
        """Kill the worker of a page that has run past the time limit (a read of shared
        memory and a signal: nothing here waits)."""
        self._watch = None
        if self._closed or self.timeout is None or not self._calls:
            return
        board, now = self._board, time.monotonic()
        for pid, call, page, started in board.entries() if board is not None else []:
            if not (pid and started and call in self._calls and call not in self._killed):
                continue
            if now - started <= self.timeout:
                continue
            self._killed[call] = page
            batch = self._calls[call]
            url = batch[page][0].final_url if 0 <= page < len(batch) else "a batch"
            logger.warning(
                "stage worker pid %s spent over %s s on %s (KC_STAGE_TIMEOUT_SECONDS): killed",
                pid,
                f"{self.timeout:g}",
                url,
            )
            with contextlib.suppress(OSError):  # it may have ended by itself meanwhile
                os.kill(pid, signal.SIGKILL)
        self._watch = self._loop.call_later(self._watch_every(), self._check_times)

    def _done(
        self,
        done: asyncio.Future[BatchResult],
        batch: list[_Waiting],
        executor: ProcessPoolExecutor,
        board: _Board | None,
        call: int,
    ) -> None:
        self._in_flight -= 1
        self._calls.pop(call, None)
        killed = self._killed.pop(call, None)
        error = done.exception() if not done.cancelled() else RuntimeError("cancelled")
        if error is None:
            results, cpu = done.result()
            self.pages += len(results)
            self.worker_cpu += cpu
            for (_, future, _), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, StageError):
                    future.set_exception(
                        StageFailed(
                            f"a stage raised {result} on {result.final_url}",
                            result.final_url,
                            str(result),
                        )
                    )
                else:
                    future.set_result(result)
        elif isinstance(error, BrokenProcessPool) and not self._closed and self._stopping():
            # The crawl is stopping (its process group was signalled, say): the pages are
            # left undone, as those it never fetched, and no new pool is started.
            logger.debug("the stage worker pool broke while the crawl stops: %s", error)
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(StagePoolStopped("the crawl is stopping"))
        elif isinstance(error, BrokenProcessPool) and not self._closed:
            if executor is self._executor:  # the first failed call of this breakage
                self._restart(error)
            self._send_again(batch, board, call, killed)
        else:
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(error)
        if not self._closed:
            self._send()

    def _send_again(
        self, batch: list[_Waiting], board: _Board | None, call: int, killed: int | None
    ) -> None:
        """The pages of a call its broken pool failed. The page its worker was killed on
        for time fails, and so does a page sent alone that broke a worker again; the page
        a worker was on when it died goes again alone; the others go again as they were,
        ahead of the pages waiting."""
        if len(batch) == 1 and batch[0][2]:
            blamed: int | None = 0
        elif killed is not None and 0 <= killed < len(batch):
            blamed = killed
        else:
            blamed = None
        if blamed is not None:
            page, future, _ = batch[blamed]
            if not future.done():
                future.set_exception(self._blame(page, timed_out=killed is not None))
            suspect = None
        elif killed is not None:  # killed on a page it did not say (a hook of its own)
            suspect = -1
        else:
            suspect = board.page_of(call) if board is not None else None
        if suspect is None:  # none left to blame: not started, or done but not returned
            again = [(p, f, False) for p, f, _ in batch]
        elif suspect < 0:  # started, on a page it does not say: each page alone
            again = [(p, f, True) for p, f, _ in batch]
        else:
            again = [(p, f, i == suspect) for i, (p, f, _) in enumerate(batch)]
            again.sort(key=lambda w: not w[2])  # the suspect first, alone
        self._waiting[:0] = [w for w in again if not w[1].done()]

    def _blame(self, page: PageInput, *, timed_out: bool) -> StagePageError:
        if timed_out:
            return StageTimeout(
                f"a stage worker spent over {self.timeout:g} s on {page.final_url} "
                "(KC_STAGE_TIMEOUT_SECONDS) and was killed",
                page.final_url,
                f"over {self.timeout:g} s",
            )
        return WorkerCrashed(f"a worker process died on {page.final_url}", page.final_url)

    def _restart(self, error: BaseException) -> None:
        """A worker died: a new pool (the old one's calls all fail), started on a thread
        like the first. The forkserver is up, so a new worker is a fork of it, started in
        milliseconds; the pages meanwhile wait."""
        old = self._executor
        assert old is not None
        self.restarts += 1
        logger.warning(
            "a stage worker process died (%s); starting a new pool", _how_workers_ended(old, error)
        )
        self._executor = self._board = None

        def replace() -> tuple[ProcessPoolExecutor, _Board]:
            old.shutdown(wait=False, cancel_futures=True)
            return self._start()

        self._starting = self._loop.run_in_executor(None, replace)
        self._starting.add_done_callback(self._started)

    async def close(self) -> None:
        """Stop the workers (after the calls in flight); pages still waiting fail."""
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        for _, future, _ in self._waiting:
            if not future.done():
                future.set_exception(RuntimeError("the stage pool was closed"))
        self._waiting.clear()
        with contextlib.suppress(Exception):  # a pool that failed to start has nothing to stop
            await self._starting
        if self._executor is not None:
            await asyncio.to_thread(self._executor.shutdown, True, cancel_futures=True)
        # let go of the board's shared memory and semaphore (the executor keeps them in
        # its workers' arguments): freed now, not at the interpreter's exit
        self._executor = self._board = None
