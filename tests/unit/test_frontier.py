"""The shared frontier's pieces: its settings, its keys, the page dupefilter and its budgets."""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.utils.test import get_reactor_settings

from knowledge_crawler import meta
from knowledge_crawler.config import KcConfig
from knowledge_crawler.crawl.frontier import (
    CrawlKeys,
    PageDupeFilter,
    SharedScheduler,
    check_redis,
    page_fingerprint,
)
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.sources import Source
from tests.conftest import REDIS_URL


def test_redis_settings_are_checked() -> None:
    assert KcConfig.from_settings({}).redis_url == ""
    with pytest.raises(ConfigError, match="KC_REDIS_URL: expected redis://"):
        KcConfig.from_settings({"KC_REDIS_URL": "http://redis.example"})
    with pytest.raises(ConfigError, match="KC_REDIS_KEY_PREFIX"):
        KcConfig.from_settings({"KC_REDIS_URL": "redis://h/0", "KC_REDIS_KEY_PREFIX": "a b"})


def test_unreachable_redis_is_one_line_without_the_password() -> None:
    check_redis({})  # not set: nothing to check
    with pytest.raises(ConfigError) as caught:
        check_redis({"KC_REDIS_URL": "redis://:s3cret@127.0.0.1:1/0"})
    message = str(caught.value)
    assert "Redis does not answer" in message and "s3cret" not in message
    assert "\n" not in message


def test_keys_and_fingerprints() -> None:
    keys = CrawlKeys.of("kc_x", "knowledge")
    assert keys.requests == "kc_x:knowledge:requests"
    assert keys.workers not in keys.state and keys.dupefilter in keys.state
    assert page_fingerprint("a", "https://x.test/p") != page_fingerprint("b", "https://x.test/p")


@pytest.fixture
def dupefilter(redis_server: Any, redis_prefix: str) -> Iterator[PageDupeFilter]:
    server = redis_server
    keys = CrawlKeys.of(redis_prefix, "knowledge")
    stats: dict[str, int] = {}

    def inc_value(key: str, count: int = 1) -> None:
        stats[key] = stats.get(key, 0) + count

    sources = {
        "docs": Source("docs", ("https://x.test/",), ("x.test",), max_pages=2),
        "blog": Source("blog", ("https://x.test/",), ("x.test",)),
    }
    spider: Any = SimpleNamespace(
        sources=sources, crawler=SimpleNamespace(stats=SimpleNamespace(inc_value=inc_value))
    )
    df = PageDupeFilter(server, key=keys.dupefilter)
    df.spider, df.budget_key = spider, keys.budget
    df.stats_seen = stats  # for the test's eyes
    try:
        yield df
    finally:
        server.delete(*keys.state, keys.workers)


def page(source: str, url: str, **extra: Any) -> Request:
    return Request(
        url, meta={meta.SOURCE: source, meta.KEY: url.replace("http:", "https:"), **extra}
    )


def test_a_page_is_scheduled_once_per_source_and_the_budget_is_the_crawls(
    dupefilter: PageDupeFilter,
) -> None:
    seen = dupefilter.request_seen
    stats: dict[str, int] = dupefilter.stats_seen
    assert not seen(page("docs", "http://x.test/a"))
    assert seen(page("docs", "http://x.test/a"))  # another process's, or this one's again
    assert not seen(page("blog", "http://x.test/a"))  # another source's page
    assert stats["kc/frontier/already_scheduled"] == 1
    # a redirect to another spelling of its own page is the page's own request
    assert not seen(
        page("docs", "http://x.test/a", redirect_urls=["http://x.test/a"]).replace(
            url="https://x.test/a"
        )
    )
    # a redirect to a page already scheduled is dropped
    redirect = page("blog", "http://x.test/old", redirect_urls=["http://x.test/old"])
    assert seen(redirect.replace(url="https://x.test/a"))
    # docs has max_pages = 2: the third new page is over it, whoever found it
    assert not seen(page("docs", "http://x.test/b"))
    assert seen(page("docs", "http://x.test/c", **{meta.START: True}))
    assert stats["kc/discovery/over_max_pages"] == 1
    assert stats["kc/start/requested"] == -1 and stats["kc/start/elsewhere"] == 1
    # requests that are not pages keep scrapy-redis's own fingerprint
    assert not seen(Request("https://x.test/sitemap.xml"))
    assert seen(Request("https://x.test/sitemap.xml"))


class _Spider(Spider):
    name = "knowledge"

    def parse(self, response: Any) -> None:
        """The page callback a queued request names."""


def open_scheduler(prefix: str, **settings: Any) -> SharedScheduler:
    """A process's shared scheduler of the crawl of ``prefix``, open, as the engine has it."""
    from knowledge_crawler.crawl.frontier import install_frontier

    crawler = Crawler(
        _Spider,
        Settings(
            {
                "KC_REDIS_URL": REDIS_URL,
                "KC_REDIS_KEY_PREFIX": prefix,
                **settings,
                **get_reactor_settings(),
            }
        ),
    )
    assert install_frontier(crawler)
    crawler._apply_settings()
    crawler.spider = crawler._create_spider()
    shared = SharedScheduler.from_crawler(crawler)
    shared.open(crawler.spider)
    return shared


def take(scheduler: SharedScheduler) -> Request | None:
    """The scheduler's next request once its Redis thread has done what it was handed (the
    engine, instead, is woken when it has: it never waits)."""
    scheduler._sync()
    return scheduler.next_request()


@pytest.fixture
def scheduler(redis_server: Any, redis_prefix: str) -> Iterator[SharedScheduler]:
    shared = open_scheduler(redis_prefix)
    try:
        yield shared
    finally:
        shared.close("finished")


class _Payload:
    """Unpickled, it creates the file it names: code run on a queue entry's word."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def test_a_pickled_entry_in_the_shared_queue_is_dropped_not_run(
    scheduler: SharedScheduler, redis_server: Any, tmp_path: Path
) -> None:
    spider = scheduler.spider
    scheduler.enqueue_request(Request("https://x.test/a", callback=spider.parse, priority=1))
    scheduler._sync(fill=False)
    # What anyone who can write to the crawl's Redis can do: an entry ahead of the others.
    ran = tmp_path / "ran"
    redis_server.zadd(scheduler.queue.key, {pickle.dumps(_Payload(ran)): -100})
    redis_server.zadd(
        scheduler.queue.key, {b'{"url": "https://x.test/b", "_class": "os.system"}': -99}
    )
    try:
        taken = take(scheduler)
    finally:
        assert not ran.exists(), "a queue entry ran code in the crawler"
    assert taken is not None and taken.url == "https://x.test/a" and taken.callback == spider.parse
    assert spider.crawler.stats.get_value("kc/frontier/bad_entries") == 2
    assert take(scheduler) is None
    # what the crawl writes there is JSON
    scheduler.enqueue_request(Request("https://x.test/c", body=b"\xff", meta={"kc_depth": 2}))
    scheduler._sync(fill=False)
    # in the queue, or already taken ahead of the engine (leased to this process)
    queue = scheduler.queue
    [entry] = redis_server.zrange(queue.key, 0, -1) + redis_server.zrange(queue.leased_key, 0, -1)
    assert json.loads(entry)["meta"] == {"kc_depth": 2}
    back = take(scheduler)
    assert back is not None and back.body == b"\xff" and back.meta["kc_depth"] == 2


def test_a_request_json_cannot_hold_stays_in_its_process(scheduler: SharedScheduler) -> None:
    scheduler.enqueue_request(Request("https://x.test/a", meta={"obj": object()}))
    assert scheduler.has_pending_requests()
    taken = take(scheduler)
    assert taken is not None and taken.url == "https://x.test/a"
    assert scheduler.spider.crawler.stats.get_value("kc/frontier/kept_local") == 1


def test_a_request_a_dead_process_had_taken_is_handed_out_again_when_its_lease_ends(
    redis_server: Any, redis_prefix: str
) -> None:
    dead = open_scheduler(redis_prefix, KC_REDIS_LEASE_SECONDS=2)
    live = open_scheduler(redis_prefix, KC_REDIS_LEASE_SECONDS=2)
    try:
        dead.enqueue_request(Request("https://x.test/a", callback=dead.spider.parse))
        taken = take(dead)
        assert taken is not None and taken.url == "https://x.test/a"
        # The process that took it dies (no close, no more heartbeats): its lease runs on.
        dead._vanish()
        assert take(live) is None  # leased: another process has it in hand
        deadline = time.monotonic() + 60
        again = None
        while again is None and time.monotonic() < deadline:
            time.sleep(0.2)
            again = take(live)
        assert again is not None and again.url == "https://x.test/a"
        assert again.callback == live.spider.parse
        assert live.spider.crawler.stats.get_value("kc/frontier/reclaimed") == 1
        # done with it: finished, never handed out again
        live._settle(done_all=True)
        live._sync(fill=False)
        time.sleep(2.5)
        assert take(live) is None
        assert redis_server.zcard(live.keys.leased) == 0
    finally:
        live.close("finished")


def test_a_batch_or_take_whose_answer_was_lost_is_neither_lost_nor_done_twice(
    scheduler: SharedScheduler, redis_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis that was stopped (SIGSTOP) past a call's timeout runs the call once it goes on:
    the call the client gave up on and the one it sends again must count once."""
    import hashlib
    import threading

    import redis
    from redis.connection import AbstractConnection

    from knowledge_crawler.crawl.frontier import _SCHEDULE, _TAKE

    lose = {hashlib.sha1(script.encode()).hexdigest().encode() for script in (_SCHEDULE, _TAKE)}
    sent: dict[int, bytes] = {}
    send, read = AbstractConnection.send_packed_command, AbstractConnection.read_response

    def sending(self: Any, command: Any, check_health: bool = True) -> None:
        sent[id(self)] = b"".join(command) if isinstance(command, list) else bytes(command)
        send(self, command, check_health)

    def reading(self: Any, *args: Any, **kwargs: Any) -> Any:
        answer = read(self, *args, **kwargs)  # Redis ran it ...
        if threading.current_thread().name == "kc-frontier-redis":
            for sha in list(lose):
                if sha in sent.get(id(self), b""):
                    lose.discard(sha)
                    raise redis.TimeoutError("Timeout reading from socket")  # ... the answer lost
        return answer

    monkeypatch.setattr(AbstractConnection, "send_packed_command", sending)
    monkeypatch.setattr(AbstractConnection, "read_response", reading)
    spider = scheduler.spider
    for url in ("https://x.test/a", "https://x.test/b"):
        scheduler.enqueue_request(page("docs", url).replace(callback=spider.parse))
    deadline = time.monotonic() + 30
    taken: list[str] = []
    while len(taken) < 2 and time.monotonic() < deadline:
        request = take(scheduler)
        if request is not None:
            taken.append(request.url)
    assert sorted(taken) == ["https://x.test/a", "https://x.test/b"]
    assert not lose, "both answers must have been lost for this test to mean anything"
    stats = spider.crawler.stats
    assert stats.get_value("kc/frontier/redis_outages") == 2
    assert stats.get_value("kc/frontier/already_scheduled") is None
    assert stats.get_value("scheduler/enqueued/redis") == 2
    assert stats.get_value("kc/frontier/kept_local") is None
    assert take(scheduler) is None
    scheduler._settle(done_all=True)
    scheduler._sync(fill=False)
    assert redis_server.zcard(scheduler.keys.leased) == 0
    assert redis_server.zcard(scheduler.keys.requests) == 0


def test_a_done_request_stays_leased_until_the_store_commits_its_items(
    scheduler: SharedScheduler, redis_server: Any
) -> None:
    """The engine is done with a page once its items are in the store pipeline's memory;
    its lease ends only once the store has committed them, so that a process killed in
    between leaves the page to another process."""
    from knowledge_crawler.crawl import runtime as runtime_module

    store = SimpleNamespace(ops_made=0, ops_committed=0)
    runtime_module._RUNTIMES[scheduler.crawler] = store  # type: ignore[assignment]
    try:
        scheduler.enqueue_request(Request("https://x.test/a", callback=scheduler.spider.parse))
        assert take(scheduler) is not None
        store.ops_made = 3  # the page, its links and a duplicate decision, in memory
        scheduler._settle(done_all=True)
        scheduler._sync(fill=False)
        assert redis_server.zcard(scheduler.keys.leased) == 1  # still this process's
        store.ops_committed = 2  # a batch that holds only part of them
        scheduler._settle()
        scheduler._sync(fill=False)
        assert redis_server.zcard(scheduler.keys.leased) == 1
        store.ops_committed = 3
        scheduler._settle()
        scheduler._sync(fill=False)
        assert redis_server.zcard(scheduler.keys.leased) == 0
    finally:
        del runtime_module._RUNTIMES[scheduler.crawler]
