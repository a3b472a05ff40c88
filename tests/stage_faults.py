"""Stage faults made on purpose, in real stage worker processes.

A page is hit when its URL is the test site's ``/about`` or its HTML holds
:data:`MARK`: its stages then raise, kill their worker or spin. The ``work`` hooks
below are module-level (a worker imports them by name, so this module imports no
Scrapy); ``tests.stage_fault_pipelines`` puts them in a crawl.
"""

from __future__ import annotations

import errno
import functools
import os
import time
from typing import Any

from knowledge_crawler.crawl.stage_pool import StagePool, run_batch
from knowledge_crawler.transform.stages import PageInput, Prepared, StageRules, prepare

#: what marks a page for a fault in its HTML
MARK = "STAGE-FAULT-HERE"
#: the test site's page hit by the faults in a crawl
PATH = "/about"


def hit(page: PageInput) -> bool:
    return page.final_url.rstrip("/").endswith(PATH) or MARK in page.html


def raising(page: PageInput, rules: StageRules) -> Prepared:
    """A stage that raises on a hit page (a bug in cleaning, say)."""
    if hit(page):
        raise ValueError("a stage fault made on purpose")
    return prepare(page, rules)


def crashing(page: PageInput, rules: StageRules) -> Prepared:
    """A stage that kills its worker on a hit page (a crash in a C library, say)."""
    if hit(page):
        os._exit(3)
    return prepare(page, rules)


def spinning(page: PageInput, rules: StageRules) -> Prepared:
    """A stage that spins on a hit page (for ten minutes: longer than any test waits)."""
    if hit(page):
        end = time.monotonic() + 600
        while time.monotonic() < end:
            pass
    return prepare(page, rules)


raise_in_stage = functools.partial(run_batch, stages=raising)
crash_in_stage = functools.partial(run_batch, stages=crashing)
spin_in_stage = functools.partial(run_batch, stages=spinning)


class UnstartablePool(StagePool):
    """A pool whose processes cannot start, as on a system without POSIX semaphores."""

    def _start(self) -> Any:
        raise OSError(errno.ENOSYS, "Function not implemented (no semaphores in /dev/shm)")
