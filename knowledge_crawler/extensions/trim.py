"""Freed heap memory handed back to the system while a crawl runs (glibc's ``malloc_trim``).

glibc's allocator keeps the memory a process frees for its next allocations, and gives
back to the system only what lies at the top of its heap. When a crawl changes what it is
doing, the memory it needs for a while grows and then shrinks again: on the 20,000-article
test site, when the articles run out and the redirects and duplicate pages follow, the main
heap grew by 18 MiB in a few seconds and, freed again, stayed in the process, 5-17 MiB of
resident memory a crawl kept to its end for nothing (a 50,000-page crawl's memory looked as
if it grew after its warm-up). ``malloc_trim(0)`` returns every whole free page of every
arena; called every ``KC_MALLOC_TRIM_SECONDS`` (default 5) it took 1.6 ms a call there, and
the resident memory followed what the crawl holds.

``0`` turns it off; on a C library without ``malloc_trim`` (musl, macOS) the extension is
off. The crawl's stats count the calls (``kc/memory/trims``), their time
(``kc/memory/trim_ms``) and the calls that gave memory back (``kc/memory/trimmed``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from knowledge_crawler.config import KcConfig

__all__ = ["MallocTrim", "malloc_trim"]


def _load() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        function = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return function


#: glibc's ``malloc_trim(pad)``: 1 when it gave memory back; None without glibc
malloc_trim = _load()


class MallocTrim:
    def __init__(self, crawler: Crawler, every: float, trim: Callable[[int], int]) -> None:
        self.crawler = crawler
        self.every = every
        self._trim = trim
        self._ns = 0
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        every = KcConfig.from_settings(crawler.settings).malloc_trim_seconds
        if every == 0:
            raise NotConfigured("KC_MALLOC_TRIM_SECONDS is 0")
        if malloc_trim is None:
            raise NotConfigured("this C library has no malloc_trim")
        extension = cls(crawler, every, malloc_trim)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        self._loop = task.LoopingCall(self.trim)
        self._loop.start(self.every, now=False)

    def engine_stopped(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def trim(self) -> None:
        """Give the free heap pages back now (counted in the crawl's stats)."""
        started = time.perf_counter_ns()
        gave_back = self._trim(0)
        self._ns += time.perf_counter_ns() - started
        stats = self.crawler.stats
        if stats is None:
            return
        stats.inc_value("kc/memory/trims")
        if gave_back:
            stats.inc_value("kc/memory/trimmed")
        stats.set_value("kc/memory/trim_ms", self._ns // 1_000_000)
