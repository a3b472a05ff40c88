"""A shared crawl never waits on Redis on the reactor thread (issue 24, F-SCALE).

Every command a redis-py connection sends (one command or a pipeline: both go through
``send_packed_command``, where the socket is written) is recorded with the thread that sent
it, in a real crawl of the loopback test site with its frontier in Redis.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from tests.conftest import REDIS_URL
from tests.helpers import coroutine_test, query, run_crawl

pytestmark = pytest.mark.crawl


@coroutine_test
async def test_no_redis_round_trip_runs_on_the_reactor_thread(
    site: TestSite,
    db_url: str,
    redis_server: Any,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from redis.connection import AbstractConnection
    from scrapy.core.engine import ExecutionEngine

    reactor_thread = threading.get_ident()  # pytest-twisted runs the reactor here
    calls: list[tuple[int, str]] = []
    crawling = threading.Event()
    send = AbstractConnection.send_packed_command

    def recorded(self: Any, command: Any, check_health: bool = True) -> None:
        if crawling.is_set():
            first = command[0] if isinstance(command, list) and command else command
            name = bytes(first).split(b"\r\n")[2:3]  # *N, $len, NAME
            calls.append((threading.get_ident(), (name or [b"?"])[0].decode("latin-1")))
        send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", recorded)
    open_spider = ExecutionEngine.open_spider_async

    async def opening(self: ExecutionEngine, **kwargs: Any) -> None:
        # From the engine opening the spider on: what came before (the spider's one
        # check that Redis answers) is the crawl's set-up.
        crawling.set()
        await open_spider(self, **kwargs)

    monkeypatch.setattr(ExecutionEngine, "open_spider_async", opening)

    crawler = await run_crawl(
        db_url,
        {"KC_REDIS_URL": REDIS_URL, "KC_REDIS_KEY_PREFIX": redis_prefix},
        seeds=site.url,
    )
    assert crawler.stats.get_value("finish_reason") == "finished"
    [stored] = query(db_url, "SELECT COUNT(*) AS n FROM pages")
    assert stored["n"] > 20
    assert len(calls) > 50, calls  # the frontier did work in Redis
    on_reactor = sorted({name for ident, name in calls if ident == reactor_thread})
    assert on_reactor == [], f"Redis commands sent on the reactor thread: {on_reactor}"
    # and the thread that sent them is gone: none is left behind
    assert not [t for t in threading.enumerate() if "frontier" in t.name.lower()]
    assert list(redis_server.scan_iter(match=f"{redis_prefix}:*")) == []
