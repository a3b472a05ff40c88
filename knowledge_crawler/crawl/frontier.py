"""The shared frontier (SPEC F-SCALE): several ``scrapy crawl knowledge`` processes, one crawl.

With ``KC_REDIS_URL`` set, :func:`install_frontier` (called by the knowledge spider
before the crawl starts) gives the crawl scrapy-redis's scheduler, through
:class:`SharedScheduler`, and :class:`PageDupeFilter`, so that every process of the
crawl takes its requests from one queue in Redis and sends each page request through
one dupefilter there. Without it nothing here is used and a crawl is one process,
as before.

The keys of a crawl (``PREFIX`` is ``KC_REDIS_KEY_PREFIX``, ``SPIDER`` the spider's name):

``PREFIX:SPIDER:requests``    the request queue (a sorted set, by priority)
``PREFIX:SPIDER:leased``      the requests processes have taken and not finished (a sorted
                              set, by when their lease ends)
``PREFIX:SPIDER:dupefilter``  fingerprints of the page requests scheduled (a set)
``PREFIX:SPIDER:budget``      pages scheduled per source, for ``max_pages`` (a hash)
``PREFIX:SPIDER:workers``     the processes crawling now, with their last heartbeat (a hash)
``PREFIX:SPIDER:busy``        which of them has work in hand: 1 from taking a request from
                              the queue until it is idle again, else 0 (a hash)
``PREFIX:SPIDER:dedupe``      every page judged for duplicates, in order (a stream; see
                              knowledge_crawler.crawl.dedupe_log)

A page request's fingerprint is its source id and canonical URL (``kc_source`` and
``kc_key``): the pages two sources share are fetched once for each, as in one
process. A redirect is fingerprinted by where it leads, so a page reached both
directly and through a redirect is fetched once. Requests that are not pages
(sitemaps, feeds, API pages, retries) keep ``dont_filter`` and Scrapy's usual ways.
When the dupefilter first sees a page of a source with ``max_pages``, it counts it in
the source's budget (``HINCRBY``); a page over the budget is dropped
(``kc/discovery/over_max_pages``), whichever process found it.

Every process yields the start URLs and the known inventory; the dupefilter lets one
fetch each (a start URL another process fetches is not this one's: ``kc/start/requested``
counts only those it schedules). A process closes when the shared queue is empty, it has
nothing in flight and no other live process has work in hand (which may yet add to the
queue): until then it stays (``kc/frontier/waited_for_peers``) and looks at the queue again
every :data:`POLL_SECONDS`. A crawl lasts while
any of its processes does: the first process to join a crawl no live process is in
clears its keys (what a killed crawl left), and the last to leave clears them too.
A process that dies without leaving stops counting as live once its heartbeat is
:data:`STALE_SECONDS` old.

A request taken from the queue is leased to its process (``PREFIX:SPIDER:leased``, scored
by when the lease ends: ``KC_REDIS_LEASE_SECONDS``), renewed with the heartbeat while the
engine has it in progress, and its lease ends when the engine is done with it. Each take
first hands the expired leases back to the queue, so the requests of a process that died
are fetched by another (``kc/frontier/reclaimed``); no process ends while one is leased.

Queue entries are JSON (:mod:`knowledge_crawler.crawl.request_json`), never pickle.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task

from knowledge_crawler import meta
from knowledge_crawler.config import KcConfig, display_url
from knowledge_crawler.crawl import request_json
from knowledge_crawler.errors import ConfigError

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = [
    "DUPEFILTER",
    "HEARTBEAT_SECONDS",
    "POLL_SECONDS",
    "PROBE_SECONDS",
    "QUEUE",
    "REDIS_LOST",
    "SCHEDULER",
    "STALE_SECONDS",
    "CrawlKeys",
    "PageDupeFilter",
    "SharedQueue",
    "SharedScheduler",
    "check_redis",
    "install_frontier",
    "page_fingerprint",
]

logger = logging.getLogger(__name__)

#: what a Redis that is gone (stopped, unreachable, restarting) raises
_REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)

SCHEDULER = "knowledge_crawler.crawl.frontier.SharedScheduler"
DUPEFILTER = "knowledge_crawler.crawl.frontier.PageDupeFilter"
QUEUE = "knowledge_crawler.crawl.frontier.SharedQueue"
#: how often a process tells the crawl it is alive (s)
HEARTBEAT_SECONDS = 10.0
#: how often a process waiting for its peers looks at the shared queue (s)
POLL_SECONDS = 0.5
#: a process whose heartbeat is older than this (s) is gone (killed, its machine lost)
STALE_SECONDS = 60
#: how often a process whose Redis does not answer asks it again (s)
PROBE_SECONDS = 1.0
#: Scrapy close reason of a crawl that lost its Redis (KC_REDIS_GRACE_SECONDS)
REDIS_LOST = "redis_lost"
#: a Redis client's timeouts (s): a call to a Redis that does not answer fails, never hangs
REDIS_PARAMS = {"socket_timeout": 10, "socket_connect_timeout": 5, "retry_on_timeout": False}


@dataclass(frozen=True, slots=True)
class CrawlKeys:
    """The Redis keys of one shared crawl."""

    requests: str
    dupefilter: str
    budget: str
    workers: str
    busy: str
    dedupe: str
    leased: str

    @classmethod
    def of(cls, prefix: str, spider: str) -> CrawlKeys:
        """>>> CrawlKeys.of("kc", "knowledge").requests
        'kc:knowledge:requests'
        """
        base = f"{prefix}:{spider}"
        return cls(
            requests=f"{base}:requests",
            dupefilter=f"{base}:dupefilter",
            budget=f"{base}:budget",
            workers=f"{base}:workers",
            busy=f"{base}:busy",
            dedupe=f"{base}:dedupe",
            leased=f"{base}:leased",
        )

    @property
    def state(self) -> tuple[str, ...]:
        """The keys a crawl's end (or a new crawl) clears, beside ``workers``."""
        return (
            self.requests,
            self.dupefilter,
            self.budget,
            self.busy,
            self.dedupe,
            self.leased,
        )


def page_fingerprint(source_id: str, key: str) -> str:
    """The dupefilter's fingerprint of a page: its source and canonical URL.

    >>> page_fingerprint("docs", "https://example.com/a") == page_fingerprint("docs", "https://example.com/a")
    True
    >>> page_fingerprint("docs", "https://example.com/a") == page_fingerprint("blog", "https://example.com/a")
    False
    """
    return hashlib.sha1(f"{source_id}\n{key}".encode(), usedforsecurity=False).hexdigest()


def check_redis(settings: Mapping[str, Any] | BaseSettings) -> None:
    """:class:`ConfigError` (one line, no password) when ``KC_REDIS_URL`` is set and its Redis
    does not answer."""
    config = KcConfig.from_settings(settings)
    if not config.redis_url:
        return
    import redis

    try:
        server = redis.Redis.from_url(config.redis_url, socket_connect_timeout=5)
        try:
            server.ping()
        finally:
            server.close()
    except redis.RedisError as exc:
        raise ConfigError(
            f"KC_REDIS_URL {display_url(config.redis_url)}: Redis does not answer: {exc}"
        ) from None


def install_frontier(crawler: Crawler) -> bool:
    """Give the crawl the shared frontier when ``KC_REDIS_URL`` is set; whether it did.

    Raises :class:`ConfigError` (one line, no password) when Redis does not answer.
    """
    config = KcConfig.from_settings(crawler.settings)
    if not config.redis_url:
        return False
    check_redis(crawler.settings)
    # scrapy-redis formats its key settings with %(spider)s: no other % may reach it
    keys = CrawlKeys.of(config.redis_key_prefix, "%(spider)s")
    settings = crawler.settings
    for name, value in {
        "SCHEDULER": SCHEDULER,
        "DUPEFILTER_CLASS": DUPEFILTER,
        "REDIS_URL": config.redis_url,
        "REDIS_PARAMS": REDIS_PARAMS,
        "SCHEDULER_QUEUE_KEY": keys.requests,
        "SCHEDULER_DUPEFILTER_KEY": keys.dupefilter,
        # JSON entries, never pickle (request_json): anyone who can write to the Redis
        # can add to the queue. The serializer too, should another queue class be set.
        "SCHEDULER_QUEUE_CLASS": QUEUE,
        "SCHEDULER_SERIALIZER": "knowledge_crawler.crawl.request_json",
        # A process that finishes must not clear what the others still crawl with: the
        # crawl's keys are cleared by the last process to leave (SharedScheduler.close).
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_FLUSH_ON_START": False,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
    }.items():
        settings.set(name, value, priority="spider")
    return True


# KEYS: workers, then the state keys. ARGV: this process, stale seconds, "join" or "leave".
# Drops workers whose heartbeat is stale; a join with nobody left clears the state of a
# crawl that ended without clearing it, a leave that leaves nobody clears it all.
_MEMBERSHIP = """
local now = tonumber(redis.call('TIME')[1])
local stale = tonumber(ARGV[2])
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  if now - tonumber(entries[i + 1]) > stale then
    redis.call('HDEL', KEYS[1], entries[i])
  end
end
redis.call('HDEL', KEYS[1], ARGV[1])
local others = redis.call('HLEN', KEYS[1])
if others == 0 then
  for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
end
if ARGV[3] == 'join' then
  redis.call('HSET', KEYS[1], ARGV[1], now)
elseif others == 0 then
  redis.call('DEL', KEYS[1])
end
return others
"""

_HEARTBEAT = """
redis.call('HSET', KEYS[1], ARGV[1], redis.call('TIME')[1])
"""

# KEYS: workers, busy, leased. ARGV: this process, stale seconds. 1 when another live
# process has work in hand, or a request is leased (taken and not finished: by a live
# process, or by a dead one until its lease ends and it is handed out again).
_PEERS_BUSY = """
if redis.call('ZCARD', KEYS[3]) > 0 then return 1 end
local now = tonumber(redis.call('TIME')[1])
local busy = redis.call('HGETALL', KEYS[2])
for i = 1, #busy, 2 do
  if busy[i] ~= ARGV[1] and busy[i + 1] == '1' then
    local beat = redis.call('HGET', KEYS[1], busy[i])
    if beat and now - tonumber(beat) <= tonumber(ARGV[2]) then return 1 end
  end
end
return 0
"""


# KEYS: requests, leased. ARGV: lease seconds, most to reclaim. First hands the expired
# leases back to the queue (at their request's priority), then takes the first request
# and leases it: {entry, reclaimed}, or {false, reclaimed} when the queue is empty.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, entry in ipairs(expired) do
  redis.call('ZREM', KEYS[2], entry)
  local score = 0
  local ok, request = pcall(cjson.decode, entry)
  if ok and type(request) == 'table' and tonumber(request['priority']) then
    score = -tonumber(request['priority'])
  end
  redis.call('ZADD', KEYS[1], 'NX', score, entry)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if #first == 0 then return {false, #expired} end
redis.call('ZREM', KEYS[1], first[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), first[1])
return {first[1], #expired}
"""

# KEYS: leased. ARGV: lease seconds, then the entries still in hand: their lease starts again.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
"""

#: the most expired leases one take hands back
RECLAIM_BATCH = 100


class SharedQueue(PriorityQueue):  # type: ignore[misc]  # scrapy-redis has no type information
    """scrapy-redis's priority queue (a sorted set by priority), its entries JSON.

    An entry that is not a request this crawl wrote (:class:`request_json.BadEntry`) is
    dropped and counted (``kc/frontier/bad_entries``), with a warning; the next is taken.
    """

    spider: Spider

    def _encode_request(self, request: Request) -> bytes:
        return request_json.encode(request, self.spider)

    def _decode_request(self, encoded_request: bytes) -> Request:
        return request_json.decode(encoded_request, self.spider)

    def pop(self, timeout: int = 0) -> Request | None:
        taken = self.take(lease=0.0)
        if taken is None:
            return None
        self.server.zrem(self.leased_key, taken[1])
        return taken[0]

    def take(self, lease: float) -> tuple[Request, bytes] | None:
        """The first request of the queue and its entry, leased to this process for
        ``lease`` seconds (it is handed out again once that ends unless :meth:`finish` or
        :meth:`renew` came first); expired leases go back to the queue first
        (``kc/frontier/reclaimed``). None when the queue is empty."""
        if getattr(self, "_take", None) is None:
            self._take = self.server.register_script(_TAKE)
            self._renew = self.server.register_script(_RENEW)
        while True:
            entry, reclaimed = self._take(
                keys=[self.key, self.leased_key], args=[lease, RECLAIM_BATCH]
            )
            if reclaimed:
                self.spider.crawler.stats.inc_value("kc/frontier/reclaimed", int(reclaimed))
                logger.warning(
                    "shared frontier: %s request(s) whose lease ended handed out again "
                    "(a process died with them)",
                    reclaimed,
                )
            if not entry:
                return None
            try:
                return self._decode_request(entry), bytes(entry)
            except request_json.BadEntry as exc:
                self.server.zrem(self.leased_key, entry)
                self.bad_entry(exc)

    def finish(self, entries: list[bytes]) -> None:
        """The requests of ``entries`` are done with: their leases end."""
        if entries:
            self.server.zrem(self.leased_key, *entries)

    def renew(self, entries: list[bytes], lease: float) -> None:
        """The requests of ``entries`` are still in hand: their leases start again."""
        if entries:
            self._renew(keys=[self.leased_key], args=[lease, *entries])

    @property
    def leased_key(self) -> str:
        return str(self.key).removesuffix(":requests") + ":leased"

    def bad_entry(self, exc: Exception) -> None:
        self.spider.crawler.stats.inc_value("kc/frontier/bad_entries")
        logger.warning("shared frontier: dropped an entry of %s: %s", self.key, exc)


class SharedScheduler(Scheduler):  # type: ignore[misc]  # scrapy-redis has no type information
    """scrapy-redis's scheduler, with the crawl's membership (who is crawling, who clears)
    and a Redis that may stop answering.

    scrapy-redis 0.9.1 works with Scrapy 2.19 as it is (the engine builds the scheduler
    with ``from_crawler`` and calls ``open(spider)``, ``close(reason)``,
    ``enqueue_request``, ``next_request``, ``has_pending_requests``); only its stats
    calls are redone here, without the deprecated ``spider`` argument.

    Redis lost (a connection refused or timed out): requests to schedule wait in this
    process, none is handed out, and Redis is asked again every :data:`PROBE_SECONDS`.
    Back within ``KC_REDIS_GRACE_SECONDS`` with the crawl's keys, the waiting requests go
    to it and the crawl goes on (``kc/frontier/redis_outages``); else the crawl stops
    (close reason ``redis_lost``, stat ``kc/frontier/redis_lost``, outcome ``failed``).
    What it had queued is in the crawl state: the next run takes it from there.
    """

    server: Any
    crawler: Crawler
    _busy = False
    #: requests JSON cannot hold (request_json.UnserializableRequest): this process's own
    _local: deque[Request]
    #: requests to schedule while Redis does not answer
    _waiting: deque[Request]
    #: since when Redis does not answer (time.monotonic()), and why; None while it does
    _down_since: float | None = None
    _down_error = ""
    _next_probe = 0.0
    _gave_up = False
    #: KC_REDIS_GRACE_SECONDS, and the Redis as messages name it (no password)
    grace: float
    redis_url: str
    #: KC_REDIS_LEASE_SECONDS, and the requests taken from the queue and not finished,
    #: with their entries (leased to this process)
    lease: float
    _in_hand: dict[Request, bytes]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedScheduler:
        scheduler: SharedScheduler = super().from_crawler(crawler)
        scheduler.crawler = crawler
        scheduler._local = deque()
        scheduler._waiting = deque()
        config = KcConfig.from_settings(crawler.settings)
        scheduler.grace = config.redis_grace_seconds
        scheduler.lease = config.redis_lease_seconds
        scheduler._in_hand = {}
        scheduler.redis_url = display_url(config.redis_url)
        crawler.signals.connect(scheduler._spider_idle, signal=signals.spider_idle)
        return scheduler

    def open(self, spider: Spider) -> None:
        settings = spider.crawler.settings
        self.keys = CrawlKeys.of(KcConfig.from_settings(settings).redis_key_prefix, spider.name)
        self.member = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._membership = self.server.register_script(_MEMBERSHIP)
        self._heartbeat = self.server.register_script(_HEARTBEAT)
        self._peers_busy = self.server.register_script(_PEERS_BUSY)
        # Before the queue is looked at: a new crawl starts from nothing.
        others = self._membership(
            keys=[self.keys.workers, *self.keys.state],
            args=[self.member, STALE_SECONDS, "join"],
        )
        logger.info(
            "shared frontier in Redis (%s): %s other process(es) in this crawl",
            self.keys.requests,
            others,
        )
        spider.crawler.stats.set_value("kc/frontier/peers_at_start", int(others))
        super().open(spider)
        self._beat = task.LoopingCall(self._beat_once)
        self._beat.start(min(HEARTBEAT_SECONDS, self.lease / 3), now=False)
        self._watch = task.LoopingCall(self._watch_once)

    # -- Redis that may not answer ---------------------------------------------------

    def _up(self) -> bool:
        """Whether Redis is to be asked now: it answers, or it is time to ask it again."""
        if self._gave_up:
            return False
        if self._down_since is None:
            return True
        if time.monotonic() < self._next_probe:
            return False
        self._next_probe = time.monotonic() + PROBE_SECONDS
        try:
            self.server.ping()
        except _REDIS_DOWN as exc:
            self._down_error = str(exc)
            self._check_grace()
            return False
        return self._back()

    def _lost(self, exc: Exception) -> None:
        """A Redis call failed: from now on wait for Redis, up to the grace."""
        self._down_error = str(exc)
        if self._down_since is None:
            self._down_since = time.monotonic()
            self._next_probe = self._down_since + PROBE_SECONDS
            if self.stats is not None:
                self.stats.inc_value("kc/frontier/redis_outages")
            logger.error(
                "shared frontier: Redis %s does not answer (%s); waiting up to %g s "
                "(KC_REDIS_GRACE_SECONDS) for it",
                self.redis_url,
                exc,
                self.grace,
            )
            if not self._watch.running:
                self._watch.start(PROBE_SECONDS, now=False)
        self._check_grace()

    def _watch_once(self) -> None:
        """While Redis does not answer: ask it again, give up after the grace."""
        if self._down_since is None or self._gave_up:
            if self._watch.running:
                self._watch.stop()
            return
        self._up()

    def _check_grace(self) -> None:
        if self._down_since is None or self._gave_up:
            return
        waited = time.monotonic() - self._down_since
        if waited >= self.grace:
            self._give_up(
                f"the shared crawl's Redis {self.redis_url} did not answer for {waited:.0f} s "
                f"(KC_REDIS_GRACE_SECONDS={self.grace:g}): {self._down_error}"
            )

    def _back(self) -> bool:
        """Redis answers again: carry on if it kept the crawl's keys, else give up."""
        waited = time.monotonic() - (self._down_since or time.monotonic())
        try:
            kept = self.server.hexists(self.keys.workers, self.member)
            if kept:
                self._heartbeat(keys=[self.keys.workers], args=[self.member])
        except _REDIS_DOWN as exc:
            self._down_error = str(exc)
            self._check_grace()
            return False
        if not kept:
            # restarted empty (or this process was taken for dead): the queue and the
            # dupefilter of the crawl are gone, and with them what the other processes knew
            self._give_up(
                f"the shared crawl's Redis {self.redis_url} came back after {waited:.0f} s "
                "without the crawl's keys (restarted empty?)"
            )
            return False
        logger.warning(
            "shared frontier: Redis %s answers again after %.1f s", self.redis_url, waited
        )
        self._down_since = None
        if self._watch.running:
            self._watch.stop()
        while self._waiting and self._down_since is None:
            self._enqueue(self._waiting.popleft())  # back to _waiting if Redis fails again
        return self._down_since is None

    def _give_up(self, message: str) -> None:
        """Stop the crawl as failed: its Redis is lost."""
        if self._gave_up:
            return
        self._gave_up = True
        if self._watch.running:
            self._watch.stop()
        self._waiting.clear()  # in the crawl state: the next run requests them
        logger.error("shared frontier: %s; stopping the crawl (the next run resumes it)", message)
        stats = self.crawler.stats
        if stats is not None:
            stats.set_value("kc/frontier/redis_lost", message)
        engine = self._engine()
        if engine is not None and engine.spider is not None:
            asyncio.get_running_loop().create_task(engine.close_spider_async(reason=REDIS_LOST))

    # enqueue_request and next_request are scrapy-redis 0.9's, without the ``spider``
    # argument to the stats calls that Scrapy 2.19 deprecates (a warning per call site).

    def enqueue_request(self, request: Request) -> bool:
        if self._gave_up:
            return False  # in the crawl state: the next run requests it
        if not self._up():
            self._waiting.append(request)
            return True
        return self._enqueue(request)

    def _enqueue(self, request: Request) -> bool:
        try:
            if not request.dont_filter and self.df.request_seen(request):
                self.df.log(request, self.spider)
                return False
            if request.meta.get(meta.START) and self.stats is not None:
                # In the shared queue a start URL is the crawl's: it counts for the process
                # that takes it (next_request), which may be another one.
                self.stats.inc_value("kc/start/requested", -1)
            try:
                self.queue.push(request)
            except request_json.UnserializableRequest as exc:
                logger.debug("shared frontier: kept in this process: %s", exc)
                if self.stats is not None:
                    self.stats.inc_value("kc/frontier/kept_local")
                self._local.append(request)
        except _REDIS_DOWN as exc:
            self._lost(exc)
            if not self._gave_up:
                self._waiting.append(request)
            return not self._gave_up
        if self.stats is not None:
            self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def __len__(self) -> int:
        """Requests queued: the crawl's in Redis (none while it does not answer) and this
        process's own."""
        here = len(self._local) + len(self._waiting)
        if not self._up():
            return here
        try:
            return here + len(self.queue)
        except _REDIS_DOWN as exc:
            self._lost(exc)
            return here

    def has_pending_requests(self) -> bool:
        if self._local:
            return True
        if self._gave_up:
            return False
        if self._waiting or not self._up():
            return True  # it waits for Redis
        try:
            return len(self) > 0
        except _REDIS_DOWN as exc:
            self._lost(exc)
            return not self._gave_up

    def next_request(self) -> Request | None:
        request: Request | None = None
        if self._local:
            request = self._local.popleft()
        elif self._up():
            self._settle()
            try:
                taken = self.queue.take(self.lease)
            except _REDIS_DOWN as exc:
                self._lost(exc)
                taken = None
            if taken is not None:
                request, self._in_hand[taken[0]] = taken
        if request is not None and self.stats is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
            if request.meta.get(meta.START):
                self.stats.inc_value("kc/start/requested")
        if request is not None and not self._busy:
            self._busy = True
            self._set_busy(1)
        return request

    def _settle(self, *, renew: bool = False, done_all: bool = False) -> None:
        """End the leases of the requests this process is done with (the engine no longer
        has them in progress; all of them when ``done_all``); with ``renew``, start those
        of the others again."""
        if not self._in_hand or not self._up():
            return
        slot = getattr(self._engine(), "_slot", None)
        busy: set[Request] = set() if done_all else getattr(slot, "inprogress", set())
        done = [request for request in self._in_hand if request not in busy]
        entries = [self._in_hand[request] for request in done]
        try:
            self.queue.finish(entries)
            for request in done:
                del self._in_hand[request]
            if renew:
                self.queue.renew(list(self._in_hand.values()), self.lease)
        except _REDIS_DOWN as exc:
            self._lost(exc)

    def _engine(self) -> ExecutionEngine | None:
        """The crawl's engine; None before the crawl starts."""
        try:
            return self.crawler.engine
        except RuntimeError:
            return None

    def _set_busy(self, busy: int) -> None:
        if not self._up():
            return
        try:
            self.server.hset(self.keys.busy, self.member, busy)
        except _REDIS_DOWN as exc:
            self._lost(exc)

    def _spider_idle(self, spider: Spider) -> None:
        """Stay while another process has work in hand (it may yet fill the queue), or
        while Redis does not answer."""
        if self._gave_up:
            return
        self._settle(done_all=True)  # idle: nothing is in progress
        if self._busy:
            self._busy = False
            self._set_busy(0)
        wait = self._down_since is not None or bool(self._waiting)
        if not wait:
            try:
                wait = bool(
                    self._peers_busy(
                        keys=[self.keys.workers, self.keys.busy, self.keys.leased],
                        args=[self.member, STALE_SECONDS],
                    )
                )
            except _REDIS_DOWN as exc:
                self._lost(exc)
                wait = not self._gave_up
            if wait and self.stats is not None:
                self.stats.inc_value("kc/frontier/waited_for_peers")
        if wait:
            # Look at the queue again soon, not on the engine's 5 s heartbeat (Scrapy has no
            # public way to ask; without the engine's slot, the heartbeat it is).
            nextcall = getattr(getattr(self._engine(), "_slot", None), "nextcall", None)
            if nextcall is not None:
                nextcall.schedule(POLL_SECONDS)
            raise DontCloseSpider

    def _beat_once(self) -> None:
        if self._down_since is not None or self._gave_up:
            return
        self._settle(renew=True)
        try:
            self._heartbeat(keys=[self.keys.workers], args=[self.member])
        except Exception as exc:  # a missed beat is not fatal; STALE_SECONDS allows several
            logger.warning("shared frontier: heartbeat failed: %s", exc)

    def close(self, reason: str) -> None:
        for loop in (getattr(self, "_beat", None), getattr(self, "_watch", None)):
            if loop is not None and loop.running:
                loop.stop()
        super().close(reason)  # SCHEDULER_PERSIST: keeps the shared state
        if not hasattr(self, "keys") or self._gave_up:
            return  # Redis lost: the other processes (or the next crawl) clear the keys
        self._settle(done_all=True)
        if self._down_since is not None:
            return
        try:
            self.server.hdel(self.keys.busy, self.member)
            others = self._membership(
                keys=[self.keys.workers, *self.keys.state],
                args=[self.member, STALE_SECONDS, "leave"],
            )
        except _REDIS_DOWN as exc:
            logger.warning("shared frontier: could not leave the crawl in Redis: %s", exc)
            return
        if others:
            logger.info("shared frontier: %s other process(es) still crawling", others)
        else:
            logger.info("shared frontier: last process of the crawl, its Redis keys cleared")


class PageDupeFilter(RFPDupeFilter):  # type: ignore[misc]  # scrapy-redis has no type information
    """scrapy-redis's dupefilter with the project's page fingerprint and page budgets.

    Requests without ``kc_source`` (not pages) keep scrapy-redis's fingerprint.
    """

    spider: Spider | None = None
    budget_key: str | None = None

    @classmethod
    def from_spider(cls, spider: Spider) -> PageDupeFilter:
        dupefilter: PageDupeFilter = super().from_spider(spider)
        dupefilter.spider = spider
        dupefilter.budget_key = CrawlKeys.of(
            KcConfig.from_settings(spider.crawler.settings).redis_key_prefix, spider.name
        ).budget
        return dupefilter

    def _page(self, request: Request) -> tuple[str, str] | None:
        """(source id, canonical URL) of a page request: where it leads after redirects."""
        source_id = request.meta.get(meta.SOURCE)
        key = request.meta.get(meta.KEY)
        if not isinstance(source_id, str) or not isinstance(key, str):
            return None
        if request.meta.get("redirect_urls"):
            source = getattr(self.spider, "sources", {}).get(source_id)
            try:
                key = source.key(request.url) if source is not None else request.url
            except ValueError:
                key = request.url
        return source_id, key

    def request_fingerprint(self, request: Request) -> str:
        page = self._page(request)
        if page is None:
            return str(super().request_fingerprint(request))
        return page_fingerprint(*page)

    def request_seen(self, request: Request) -> bool:
        page = self._page(request)
        if page is None:
            return bool(super().request_seen(request))
        if request.meta.get("redirect_urls") and page[1] == request.meta.get(meta.KEY):
            return False  # a redirect to another spelling of the page: the page's own request
        if self.server.sadd(self.key, page_fingerprint(*page)) == 0:
            self._dropped(request, "kc/frontier/already_scheduled")
            return True
        source = getattr(self.spider, "sources", {}).get(page[0])
        budget = source.max_pages if source is not None else 0
        if not budget or self.budget_key is None:
            return False
        # a new page of the crawl: it takes one of the source's max_pages, if any is left
        if int(self.server.hincrby(self.budget_key, page[0], 1)) <= budget:
            return False
        self._dropped(request, "kc/discovery/over_max_pages")
        return True

    def _dropped(self, request: Request, counter: str) -> None:
        """Count a page request not scheduled; a start URL it was is not this process's."""
        if self.spider is None:
            return
        stats = self.spider.crawler.stats
        stats.inc_value(counter)
        if request.meta.get(meta.START):
            stats.inc_value("kc/start/requested", -1)
            stats.inc_value("kc/start/elsewhere")

    def close(self, reason: str = "") -> None:
        """Keep the fingerprints: the crawl's other processes still use them."""
