"""The stage workers: real processes doing what ``prepare`` does here, batched, and a crash
losing no page."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.crawl.stage_pool import (
    MAX_BATCH_BYTES,
    PIPE_BYTES,
    StageFailed,
    StagePool,
    StagePoolFailed,
    StagePoolStopped,
    StageTimeout,
    WorkerCrashed,
    run_batch,
    worker_count,
)
from knowledge_crawler.transform.stages import (
    Extracted,
    PageInput,
    Prepared,
    StageRules,
    prepare,
)
from tests.helpers import coroutine_test
from tests.stage_faults import (
    MARK,
    UnstartablePool,
    crash_in_stage,
    raise_in_stage,
    spin_in_stage,
)

RULES = {"s": StageRules(boilerplate=())}


def page(n: int, marker: str = "") -> PageInput:
    html = (
        f"<html><head><title>Page {n}</title></head><body><nav>Home About</nav><main>"
        f"<h1>Page {n}</h1><h2>Setup {n}</h2><p>Install the tool number {n} {marker} with care "
        "and read the whole manual before the first run of it.</p>"
        "<pre><code>def main():\n    return 1\n</code></pre>"
        f"<ul><li>first {n}<ul><li>nested</li></ul></li><li>second</li></ul>"
        "<p>" + " ".join(f"word{n}x{i}" for i in range(80)) + "</p></main></body></html>"
    )
    return PageInput("s", f"https://example.com/p/{n}", html)


def deadly(pages: list[PageInput]) -> tuple[list[Prepared], float]:
    """A batch with the marked page kills its worker (a crash in a C library, say)."""
    if any("KILLME" in p.html for p in pages):
        os._exit(3)
    return run_batch(pages)


def test_worker_count_setting() -> None:
    assert worker_count(0) == 0 and worker_count(2) == 2
    assert worker_count(-1) == max(1, (os.cpu_count() or 1) - 1)


@coroutine_test
async def test_workers_give_what_prepare_gives_here_in_few_batches() -> None:
    pool = StagePool(1, RULES)
    try:
        pages = [page(n) for n in range(120)]
        got = await asyncio.gather(*(pool.prepare(p) for p in pages))
    finally:
        await pool.close()
    assert got == [prepare(p, RULES["s"]) for p in pages]
    assert got[0].fingerprint is not None and "    return 1" in got[0].cleaned.content
    assert pool.pages == 120 and pool.batches <= 10  # pages waiting go together
    assert pool.worker_cpu > 0


class _AtOnce(concurrent.futures.ThreadPoolExecutor):
    """An executor that runs what it is given before ``submit`` returns: the extreme of a
    start thread that is quicker than the code after it (a busy machine's schedule)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


@coroutine_test
async def test_a_pool_whose_start_thread_finishes_at_once_works() -> None:
    """The pool's start ran on a thread started before the pool had all its fields: once in
    120 scheduled refreshes on a loaded machine it read ``restarts`` first, and the crawl
    failed with "the stage worker pool could not start: AttributeError"."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_AtOnce())
    try:
        pool = StagePool(1, RULES, eager=False)  # a refresh's pool
        try:
            got = await pool.prepare(page(1))
            assert pool.ready
        finally:
            await pool.close()
    finally:
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor())
    assert got == prepare(page(1), RULES["s"])


@coroutine_test
async def test_a_killed_worker_is_replaced_and_every_page_is_done() -> None:
    pool = StagePool(1, RULES)
    try:
        pages = [page(n) for n in range(200)]
        tasks = [asyncio.ensure_future(pool.prepare(p)) for p in pages]
        await tasks[0]
        for pid in list(pool._executor._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        got = await asyncio.gather(*tasks)
    finally:
        await pool.close()
    assert got == [prepare(p, RULES["s"]) for p in pages]
    assert pool.restarts >= 1


@coroutine_test
async def test_a_page_that_kills_its_worker_fails_alone(caplog: pytest.LogCaptureFixture) -> None:
    pool = StagePool(1, RULES, work=deadly)
    try:
        pages = [page(n, "KILLME" if n == 7 else "") for n in range(30)]
        got = await asyncio.gather(*(pool.prepare(p) for p in pages), return_exceptions=True)
    finally:
        await pool.close()
    # the log says how the worker ended: what an operator needs to tell a crash from a kill
    died = [r.getMessage() for r in caplog.records if "worker process died" in r.getMessage()]
    # (the first report of a batch's crash may come before the worker's status can be read)
    assert any("exit code 3" in m for m in died), died
    assert all(re.search(r"\(pid \d+: (exit code|running)", m) for m in died), died
    assert isinstance(got[7], WorkerCrashed) and "https://example.com/p/7" in str(got[7])
    assert [g for i, g in enumerate(got) if i != 7] == [
        prepare(p, RULES["s"]) for i, p in enumerate(pages) if i != 7
    ]


@coroutine_test
async def test_a_closed_pool_takes_no_more_pages() -> None:
    pool = StagePool(1, RULES)
    await pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        await pool.prepare(page(1))


def sizes(pages: list[PageInput]) -> tuple[list[Prepared], float]:
    """What the worker got: one result a page whose error names the batch's size."""
    return [Prepared(p.final_url, Extracted(None, error=str(len(pages)))) for p in pages], 0.0


@coroutine_test
async def test_a_batch_holds_at_most_max_batch_bytes_of_html_but_one_page_always_goes() -> None:
    # Batches travel through a pipe: one larger than the pipe is passed piece by piece by
    # the crawl process's threads while the worker waits.
    big = PageInput("s", "https://example.com/big", "x" * (MAX_BATCH_BYTES + 1))
    pages = [page(n, "y" * (MAX_BATCH_BYTES // 4)) for n in range(12)]
    pool = StagePool(1, RULES, work=sizes)
    try:
        got = await asyncio.gather(*(pool.prepare(p) for p in [big, *pages]))
    finally:
        await pool.close()
    batch_sizes = [int(r.extracted.error or 0) for r in got]
    assert batch_sizes[0] == 1  # a page larger than the bound goes alone, it is not stuck
    assert max(batch_sizes[1:]) <= 3  # 4 pages of a quarter each would be over the bound
    assert [r.final_url for r in got] == [p.final_url for p in [big, *pages]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are Linux's")
@coroutine_test
async def test_the_pipes_to_the_workers_are_widened_on_linux() -> None:
    import fcntl

    pool = StagePool(1, RULES)
    try:
        await pool.prepare(page(1))
        executor = pool._executor
        assert pool.pipes_widened == 2
        for queue in (executor._call_queue, executor._result_queue):  # type: ignore[union-attr]
            size = fcntl.fcntl(queue._reader.fileno(), fcntl.F_GETPIPE_SZ)
            assert size >= PIPE_BYTES
    finally:
        await pool.close()


@coroutine_test
async def test_a_pool_is_ready_once_its_workers_are_up_and_warm() -> None:
    # Until then the stage middleware reads a page's links itself (the crawl goes on).
    pool = StagePool(1, RULES)
    try:
        assert not pool.ready  # the workers start on a thread, a second or so
        await pool.prepare(page(1))
        for _ in range(3000):  # the warm-up call may still be on its way back
            if pool.ready:
                break
            await asyncio.sleep(0.01)
        assert pool.ready
    finally:
        await pool.close()


def marked(n: int, fault_at: int) -> list[PageInput]:
    return [page(i, MARK if i == fault_at else "") for i in range(n)]


def done_here(pages: list[PageInput], skip: int) -> list[Prepared]:
    return [prepare(p, RULES["s"]) for i, p in enumerate(pages) if i != skip]


@coroutine_test
async def test_a_page_whose_stages_raise_fails_alone_and_its_batch_is_done() -> None:
    pool = StagePool(1, RULES, work=raise_in_stage)
    try:
        pages = marked(20, 7)
        got = await asyncio.gather(*(pool.prepare(p) for p in pages), return_exceptions=True)
    finally:
        await pool.close()
    failed = got[7]
    assert isinstance(failed, StageFailed), failed
    assert failed.url == "https://example.com/p/7" and failed.kind == "StageFailed"
    assert failed.error == "StageFailed: ValueError: a stage fault made on purpose"
    assert [g for i, g in enumerate(got) if i != 7] == done_here(pages, 7)
    assert pool.restarts == 0


@coroutine_test
async def test_a_page_that_kills_its_worker_is_found_without_sending_its_batch_page_by_page(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = StagePool(1, RULES, work=crash_in_stage)
    try:
        pages = marked(40, 7)
        got = await asyncio.gather(*(pool.prepare(p) for p in pages), return_exceptions=True)
    finally:
        await pool.close()
    assert isinstance(got[7], WorkerCrashed) and got[7].url == "https://example.com/p/7"
    assert [g for i, g in enumerate(got) if i != 7] == done_here(pages, 7)
    # once in its batch, once alone; the pages beside it go on in batches, not one by one
    assert pool.restarts == 2
    assert pool.batches <= 10, pool.batches


@coroutine_test
async def test_a_page_past_the_time_limit_has_its_worker_killed_and_fails_alone() -> None:
    pool = StagePool(1, RULES, work=spin_in_stage, timeout=5)
    try:
        pages = marked(20, 5)
        got = await asyncio.wait_for(
            asyncio.gather(*(pool.prepare(p) for p in pages), return_exceptions=True), 180
        )
    finally:
        await pool.close()
    assert isinstance(got[5], StageTimeout), got[5]
    assert got[5].error == "StageTimeout: over 5 s"
    assert [g for i, g in enumerate(got) if i != 5] == done_here(pages, 5)
    assert pool.restarts == 1  # killed once: the page it was on is known


@coroutine_test
async def test_a_pool_that_cannot_start_fails_each_page_at_once_with_why() -> None:
    pool = UnstartablePool(1, RULES)
    try:
        for _ in range(2):  # the first waits for the start, the next one is told at once
            with pytest.raises(StagePoolFailed, match=r"could not start: OSError: .*semaphores"):
                await asyncio.wait_for(pool.prepare(page(1)), 60)
    finally:
        await pool.close()


class ThreadNoted(StagePool):
    """A pool that notes the thread each of its executors is started on."""

    threads: list[int]

    def _start(self) -> Any:
        self.threads = [*getattr(self, "threads", []), threading.get_ident()]
        return super()._start()


@coroutine_test
async def test_a_new_pool_after_a_crash_is_started_off_the_event_loop() -> None:
    pool = ThreadNoted(1, RULES, work=crash_in_stage)
    try:
        pages = marked(30, 3)
        got = await asyncio.gather(*(pool.prepare(p) for p in pages), return_exceptions=True)
    finally:
        await pool.close()
    assert isinstance(got[3], WorkerCrashed)
    assert [g for i, g in enumerate(got) if i != 3] == done_here(pages, 3)
    assert pool.restarts == 2 and len(pool.threads) == 3
    assert threading.get_ident() not in pool.threads


@coroutine_test
async def test_workers_ignore_ctrl_c_the_crawl_decides(caplog: pytest.LogCaptureFixture) -> None:
    # Ctrl-C in a terminal signals the whole process group, workers included.
    pool = StagePool(1, RULES)
    try:
        await pool.prepare(page(0))
        workers = list(pool._executor._processes)  # type: ignore[union-attr]
        for pid in workers:
            os.kill(pid, signal.SIGINT)
        await asyncio.sleep(1.0)  # what a worker taking it would need to die
        got = await asyncio.gather(*(pool.prepare(page(n)) for n in range(1, 30)))
        alive = list(pool._executor._processes)  # type: ignore[union-attr]
    finally:
        await pool.close()
    assert got == [prepare(page(n), RULES["s"]) for n in range(1, 30)]
    assert pool.restarts == 0 and alive == workers
    assert not [r for r in caplog.records if "died" in r.getMessage()]


@coroutine_test
async def test_a_pool_that_breaks_while_the_crawl_stops_is_not_started_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stopping = False
    pool = StagePool(1, RULES, work=spin_in_stage, stopping=lambda: stopping)
    try:
        tasks = [asyncio.ensure_future(pool.prepare(p)) for p in marked(5, 0)]
        for _ in range(1200):  # until the worker is on the first page (it spins there)
            if pool._board is not None and pool._board.page_of(1) == 0:
                break
            await asyncio.sleep(0.05)
        stopping = True  # Ctrl-C or SIGTERM for the crawl, and a signal that ends its worker
        for pid in list(pool._executor._processes):  # type: ignore[union-attr]
            os.kill(pid, signal.SIGTERM)
        got = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 120)
    finally:
        await pool.close()
    assert [type(g) for g in got] == [StagePoolStopped] * 5
    assert pool.restarts == 0
    assert not [r for r in caplog.records if "died" in r.getMessage()]


_SLOW_SERVER = """
import os, time
from multiprocessing import forkserver, get_context
from knowledge_crawler.crawl.stage_pool import stop_forkserver

get_context("forkserver").set_forkserver_preload(["slow_preload"])
forkserver.ensure_running()
server = forkserver._forkserver
pid, listener = server._forkserver_pid, server._forkserver_address
t0 = time.monotonic()
stop_forkserver(timeout=0.3)
took = time.monotonic() - t0
try:
    os.kill(pid, 0)
    alive = True
except ProcessLookupError:
    alive = False
print(f"{took:.2f} {alive} {os.path.exists(listener)}")
"""


def test_a_server_still_loading_its_libraries_is_stopped_before_the_crawl_exits(
    tmp_path: Path,
) -> None:
    # The forkserver reads the pipe that tells it to stop only once its preload list is
    # imported. A crawl interrupted in its first seconds (Ctrl-C while it waits for the
    # writer lease) on a loaded machine gave up waiting for it; the server then removed
    # its socket while the crawl's exit was removing the same folder, and the crawl's
    # last line was "FileNotFoundError: ... 'listener-...'".
    (tmp_path / "slow_preload.py").write_text("import time\ntime.sleep(20)\n")
    path = os.pathsep.join([str(tmp_path), *sys.path])  # the server imports from it too
    done = subprocess.run(
        [sys.executable, "-c", _SLOW_SERVER],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    took, alive, listener = done.stdout.split()
    assert (alive, listener) == ("False", "False")
    assert float(took) < 5
