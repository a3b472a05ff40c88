"""The stage workers: real processes doing what ``prepare`` does here, batched, and a crash
losing no page."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys

import pytest

from knowledge_crawler.crawl.stage_pool import (
    MAX_BATCH_BYTES,
    PIPE_BYTES,
    StagePool,
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
