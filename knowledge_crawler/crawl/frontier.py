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
``PREFIX:SPIDER:sent``        each process's last batch of requests scheduled and last take,
                              with what Redis answered (a hash): sent again after an answer
                              was lost, they get the same answer and change nothing

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
engine has it in progress and until the store has committed what its page taught the
crawl (the page, its links, a failure), and then its lease ends. Each take first hands
the expired leases back to the queue, so the requests of a process that died, scraped
or not, written or not, are fetched by another (``kc/frontier/reclaimed``); no process
ends while one is leased. An idle process whose pages are not committed yet has its
store flush them, and stays until they are.

No Redis round trip runs on the reactor thread (issue 24): each scheduler has one thread
that does all of them (:class:`_RedisThread`). Requests to schedule go to it and on to
Redis in batches, one Lua script each (dupefilter, budget and queue together); it takes
a few requests ahead of the engine (:data:`BUFFER_REQUESTS`, leased like the others, so
that the processes share the queue fairly), finishes and renews leases, beats the heartbeat,
answers whether the crawl is idle and waits for a Redis that does not answer; counts,
verdicts, stats and log lines come back to the reactor thread (Scrapy's stats are not
thread-safe). A call whose answer was lost (a Redis stopped past the timeout runs it when
it goes on) is sent again with the same number and gets the answer Redis kept
(``PREFIX:SPIDER:sent``): no request is lost or scheduled twice for it.

Queue entries are JSON (:mod:`knowledge_crawler.crawl.request_json`), never pickle.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import queue as queue_module
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import redis
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.misc import load_object
from scrapy_redis import connection as redis_connection
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler
from twisted.internet.defer import Deferred

from knowledge_crawler import meta
from knowledge_crawler.config import KcConfig, display_url
from knowledge_crawler.crawl import request_json
from knowledge_crawler.crawl.runtime import open_runtime
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
#: how often an idle process looks whether the store has committed its pages (s)
COMMIT_POLL_SECONDS = 0.1
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
    sent: str

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
            sent=f"{base}:sent",
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
            self.sent,
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

# KEYS: workers, busy, leased, requests. ARGV: this process, stale seconds. This process is
# idle (its busy flag 0); then {1 when another live process has work in hand, or a request
# is queued or leased (taken and not finished: by a live process, or by a dead one until its
# lease ends and it is handed out again), else 0; the requests queued}.
_IDLE = """
redis.call('HSET', KEYS[2], ARGV[1], 0)
local queued = redis.call('ZCARD', KEYS[4])
if queued > 0 or redis.call('ZCARD', KEYS[3]) > 0 then return {1, queued} end
local now = tonumber(redis.call('TIME')[1])
local busy = redis.call('HGETALL', KEYS[2])
for i = 1, #busy, 2 do
  if busy[i] ~= ARGV[1] and busy[i + 1] == '1' then
    local beat = redis.call('HGET', KEYS[1], busy[i])
    if beat and now - tonumber(beat) <= tonumber(ARGV[2]) then return {1, 0} end
  end
end
return {0, 0}
"""

# KEYS: dupefilter, budget, requests, sent. ARGV: this process, the batch's number, then five
# per request: fingerprint ('' when it is not filtered), source and max pages ('' and 0 when
# it has no budget), score, entry ('' when JSON cannot hold it: it stays in its process).
# One verdict per request, a digit: 0 queued, 1 already scheduled, 2 over the source's
# max_pages, 3 new but kept by its process. The verdicts are kept (PREFIX:SPIDER:sent, per
# process): the same batch sent again (its answer was lost) gets them again and changes
# nothing.
_SCHEDULE = """
local last = redis.call('HGET', KEYS[4], ARGV[1])
local number = ARGV[2] .. ':'
if last and string.sub(last, 1, #number) == number then
  return string.sub(last, #number + 1)
end
local out = {}
for i = 3, #ARGV, 5 do
  local verdict = '0'
  if ARGV[i] ~= '' and redis.call('SADD', KEYS[1], ARGV[i]) == 0 then
    verdict = '1'
  elseif ARGV[i + 1] ~= '' and tonumber(ARGV[i + 2]) > 0
      and redis.call('HINCRBY', KEYS[2], ARGV[i + 1], 1) > tonumber(ARGV[i + 2]) then
    verdict = '2'
  elseif ARGV[i + 4] == '' then
    verdict = '3'
  else
    redis.call('ZADD', KEYS[3], ARGV[i + 3], ARGV[i + 4])
  end
  out[#out + 1] = verdict
end
local verdicts = table.concat(out)
redis.call('HSET', KEYS[4], ARGV[1], number .. verdicts)
return verdicts
"""

# KEYS: requests, leased, sent. ARGV: lease seconds, most to reclaim, most to take, the taker
# ('' for none) and the take's number. First hands the expired leases back to the queue (at
# their request's priority), then takes the first requests and leases them. Returns
# {record, requests still queued}; the record is "NUMBER:RECLAIMED:" then "LENGTH:ENTRY" for
# each request taken. A taker's last record is kept (PREFIX:SPIDER:sent): the same take sent
# again (its answer was lost) gets it again and takes nothing more.
_TAKE = """
local field = ARGV[4] .. '|take'
local number = ARGV[5] .. ':'
if ARGV[4] ~= '' then
  local last = redis.call('HGET', KEYS[3], field)
  if last and string.sub(last, 1, #number) == number then
    return {last, redis.call('ZCARD', KEYS[1])}
  end
end
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
local parts = {number, tostring(#expired), ':'}
local first = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
for _, entry in ipairs(first) do
  redis.call('ZREM', KEYS[1], entry)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), entry)
  parts[#parts + 1] = tostring(#entry) .. ':' .. entry
end
local record = table.concat(parts)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[3], field, record) end
return {record, redis.call('ZCARD', KEYS[1])}
"""

# KEYS: leased. ARGV: lease seconds, then the entries still in hand: their lease starts again.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
"""

# KEYS: requests, leased. ARGV: score and entry of each request taken and never handed to the
# engine: back to the queue.
_GIVE_BACK = """
for i = 1, #ARGV, 2 do
  if redis.call('ZREM', KEYS[2], ARGV[i + 1]) == 1 then
    redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
"""

#: the most expired leases one take hands back
RECLAIM_BATCH = 100
#: requests a process takes from the shared queue ahead of its engine (leased to it): few,
#: so that the processes of a crawl share the queue fairly
BUFFER_REQUESTS = 4
#: the most requests one Redis call schedules
BATCH_REQUESTS = 500
#: after a take found the queue empty, the next waits this long (s) unless this process
#: queued requests meanwhile
EMPTY_RETRY_SECONDS = 0.05


class Taken(NamedTuple):
    """What one take got: the entries now leased to the taker, the expired leases handed
    back to the queue first, and the requests still queued."""

    entries: list[bytes]
    reclaimed: int
    queued: int


def _parse_take(record: bytes) -> tuple[int, list[bytes]]:
    """(reclaimed, entries) of a :data:`_TAKE` record.

    >>> _parse_take(b"7:2:3:abc5:{\\"a\\"}")
    (2, [b'abc', b'{"a"}'])
    """
    _, _, rest = record.partition(b":")
    reclaimed, _, rest = rest.partition(b":")
    entries = []
    while rest:
        size, _, rest = rest.partition(b":")
        length = int(size)
        entries.append(rest[:length])
        rest = rest[length:]
    return int(reclaimed), entries


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
        """The first request, out of the queue for good (scrapy-redis's own scheduler)."""
        while True:
            taken = self.take(lease=0.0)
            if not taken.entries:
                return None
            [entry] = taken.entries
            self.finish([entry])
            try:
                return self._decode_request(entry)
            except request_json.BadEntry as exc:
                self.bad_entry(exc)

    def take(self, lease: float, count: int = 1, *, taker: str = "", number: int = 0) -> Taken:
        """The first ``count`` entries of the queue, leased to this process for ``lease``
        seconds (each is handed out again once that ends unless :meth:`finish` or
        :meth:`renew` came first); expired leases go back to the queue first. With a
        ``taker``, a take sent again with the same ``number`` (its answer lost) gets the
        same entries again and takes nothing more."""
        if getattr(self, "_take", None) is None:
            self._take = self.server.register_script(_TAKE)
            self._renew = self.server.register_script(_RENEW)
        record, queued = self._take(
            keys=[self.key, self.leased_key, self.sent_key],
            args=[lease, RECLAIM_BATCH, count, taker, number],
        )
        reclaimed, entries = _parse_take(bytes(record))
        return Taken(entries, reclaimed, int(queued))

    def finish(self, entries: list[bytes]) -> None:
        """The requests of ``entries`` are done with: their leases end."""
        if entries:
            self.server.zrem(self.leased_key, *entries)

    def renew(self, entries: list[bytes], lease: float) -> None:
        """The requests of ``entries`` are still in hand: their leases start again."""
        if entries:
            if getattr(self, "_renew", None) is None:
                self._renew = self.server.register_script(_RENEW)
            self._renew(keys=[self.leased_key], args=[lease, *entries])

    @property
    def leased_key(self) -> str:
        return str(self.key).removesuffix(":requests") + ":leased"

    @property
    def sent_key(self) -> str:
        return str(self.key).removesuffix(":requests") + ":sent"

    def bad_entry(self, exc: Exception) -> None:
        self.spider.crawler.stats.inc_value("kc/frontier/bad_entries")
        logger.warning("shared frontier: dropped an entry of %s: %s", self.key, exc)


@dataclass(slots=True)
class _Outgoing:
    """A request on its way to the shared queue, as the Redis thread sends it."""

    request: Request
    #: the dupefilter's fingerprint ('' when not filtered) and whether it is a page's
    fingerprint: str
    page: bool
    #: the page's source and its max_pages ('' and 0: no budget)
    source: str
    budget: int
    score: int
    #: the JSON entry (b'' when JSON cannot hold the request: it stays in this process)
    entry: bytes


class _RedisThread:
    """The one thread that talks to Redis for a :class:`SharedScheduler` (issue 24: no Redis
    round trip on the reactor thread).

    The reactor hands it requests to schedule (``outbox``), the entries it is done with
    (``done``), asks it to fill the ``buffer`` of requests taken ahead (``want_fill``) and
    whether the crawl is idle (``idle_ask``); all of these, under ``cond``, are the only state
    both threads touch. The thread sends them in batches, renews the leases of what this
    process holds (``leased``, its own) with the heartbeat, waits for a Redis that does not
    answer and gives up on it; what the reactor must know (verdicts, counts, stats, log
    lines) it posts back with :meth:`SharedScheduler._post`.
    """

    def __init__(self, scheduler: SharedScheduler) -> None:
        self.scheduler = scheduler
        self.queue: SharedQueue = scheduler.queue
        self.server = scheduler.server
        self.keys = scheduler.keys
        self.member = scheduler.member
        self.lease = scheduler.lease
        self.grace = scheduler.grace
        self.redis_url = scheduler.redis_url
        self.cond = threading.Condition()
        # shared with the reactor, under cond
        self.outbox: list[_Outgoing] = []
        self.done: list[bytes] = []
        self.buffer: deque[tuple[Request, bytes]] = deque()
        self.want_fill = False
        self.idle_ask: int | None = None
        self.stop = False
        self.sync_asked = 0
        self.sync_done = 0
        # the thread's own
        self.leased: set[bytes] = set()
        self.busy = False
        self.joined = False
        self.gave_up = False
        self.down_since: float | None = None
        self.down_error = ""
        self.next_probe = 0.0
        self.beat_every = min(HEARTBEAT_SECONDS, self.lease / 3)
        self.next_beat = time.monotonic() + self.beat_every
        self.retry_take_at = 0.0
        self.batches = 0
        self.takes = 0
        self.vanish = False
        self.closed = False
        self.server_scripts()
        self.thread = threading.Thread(target=self._run, name="kc-frontier-redis", daemon=True)

    def server_scripts(self) -> None:
        server = self.server
        self._membership = server.register_script(_MEMBERSHIP)
        self._heartbeat = server.register_script(_HEARTBEAT)
        self._idle = server.register_script(_IDLE)
        self._schedule = server.register_script(_SCHEDULE)
        self._give_back = server.register_script(_GIVE_BACK)

    # -- the loop --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._attempt(self._join)
            self.scheduler._post(self.scheduler._opened)
            while True:
                stopping = self._next()
                if stopping and (self.vanish or self.gave_up):
                    return
                if self.down_since is not None:
                    if stopping:
                        # Redis away at the end: the others (or the next crawl) clear up
                        return
                    if not self._probe():
                        self._synced()
                        continue
                self._attempt(self._cycle)
                if stopping and self.closed:
                    break
            if self.down_since is None and not self.gave_up:
                self._attempt(self._leave)
        except Exception as exc:  # a fault of its own: the crawl must not hang on it
            logger.exception("shared frontier: the Redis thread failed")
            self._give_up(f"the shared frontier's Redis thread failed: {exc!r}")
        finally:
            self._synced()
            self.scheduler._post(self.scheduler._stopped)

    def _next(self) -> bool:
        """Wait for work; whether the scheduler is closing."""
        with self.cond:
            while not self._has_work():
                self.cond.wait(self._wait_time())
            return self.stop

    def _synced(self) -> None:
        """What was asked before now is done (or cannot be: Redis does not answer)."""
        with self.cond:
            self.sync_done = self.sync_asked
            self.cond.notify_all()

    def _has_work(self) -> bool:
        if self.stop:
            return True
        if self.gave_up:
            return False
        now = time.monotonic()
        if self.down_since is not None:
            return now >= self.next_probe
        return bool(
            self.outbox
            or self.done
            or self.idle_ask is not None
            or self.sync_asked > self.sync_done
            or now >= self.next_beat
            or (self.want_fill and len(self.buffer) < BUFFER_REQUESTS and now >= self.retry_take_at)
        )

    def _wait_time(self) -> float:
        now = time.monotonic()
        until = self.next_probe if self.down_since is not None else self.next_beat
        if self.want_fill and self.down_since is None:
            until = min(until, self.retry_take_at)
        return min(max(until - now, 0.005), 1.0)

    def _attempt(self, work: Callable[[], object]) -> None:
        """Do ``work``; a Redis that does not answer is waited for, anything else it says
        stops the crawl (no retry would change it)."""
        try:
            work()
        except _REDIS_DOWN as exc:
            self._lost(exc)
        except redis.RedisError as exc:
            self._give_up(f"the shared crawl's Redis {self.redis_url} failed: {exc}")

    def _cycle(self) -> None:
        with self.cond:
            waiting = len(self.outbox)
            batch = self.outbox[:BATCH_REQUESTS]
            done = list(self.done)
            stopping = self.stop
        sent = self._send(batch) if batch else 0
        pushed = sent > 0
        # A request's lease ends only once what it led to is in the queue: until then the
        # crawl's other processes must not take this one for idle.
        if done and sent == waiting:
            self.queue.finish(done)
            self.leased.difference_update(done)
            with self.cond:
                del self.done[: len(done)]
        now = time.monotonic()
        if now >= self.next_beat:
            self.next_beat = now + self.beat_every
            self.queue.renew(list(self.leased), self.lease)
            self._heartbeat(keys=[self.keys.workers], args=[self.member])
        if stopping:
            with self.cond:
                more = bool(self.outbox or self.done)
            if not more:
                self._close()
        else:
            self._fill(pushed)
            self._answer_idle()
        self._synced()

    # -- what the cycle does ---------------------------------------------------------

    def _join(self) -> None:
        # Before the queue is looked at: a new crawl starts from nothing.
        others = self._membership(
            keys=[self.keys.workers, *self.keys.state],
            args=[self.member, STALE_SECONDS, "join"],
        )
        self.joined = True
        self.scheduler._post(self.scheduler._joined, int(others))

    def _send(self, batch: list[_Outgoing]) -> int:
        """Schedule ``batch`` (dupefilter, budget, queue) in one call; how many of it were.

        Sent again after a call whose answer was lost, the batch (the same first requests,
        maybe more after them) gets the verdicts Redis kept for it: those requests are
        settled and the rest wait for the next call.
        """
        args: list[Any] = [self.member, self.batches]
        for item in batch:
            args += [item.fingerprint, item.source, item.budget, item.score, item.entry]
        answer = self._schedule(
            keys=[self.keys.dupefilter, self.keys.budget, self.keys.requests, self.keys.sent],
            args=args,
        )
        self.batches += 1
        verdicts = bytes(answer).decode("ascii")
        settled = batch[: len(verdicts)]
        with self.cond:
            del self.outbox[: len(settled)]
        self.scheduler._post(self.scheduler._settled, settled, verdicts)
        return len(settled)

    def _fill(self, pushed: bool) -> None:
        """Take requests ahead of the engine while it wants them."""
        with self.cond:
            wanted = BUFFER_REQUESTS - len(self.buffer) if self.want_fill else 0
            self.want_fill = False
        if wanted <= 0 or (not pushed and time.monotonic() < self.retry_take_at):
            if wanted > 0:
                with self.cond:
                    self.want_fill = True  # later: the queue was empty a moment ago
            return
        # Sent again after a call whose answer was lost, a take (same number) gets what
        # that call took.
        taken = self.queue.take(self.lease, wanted, taker=self.member, number=self.takes)
        self.takes += 1
        good: list[tuple[Request, bytes]] = []
        bad: list[str] = []
        dropped: list[bytes] = []
        for entry in taken.entries:
            try:
                good.append((self.queue._decode_request(entry), entry))
            except request_json.BadEntry as exc:
                bad.append(str(exc))
                dropped.append(entry)
        self.leased.update(entry for _, entry in good)
        self.leased.update(dropped)  # until their leases end, just below
        with self.cond:
            self.buffer.extend(good)
        if not taken.entries:
            self.retry_take_at = time.monotonic() + EMPTY_RETRY_SECONDS
        self.scheduler._post(self.scheduler._took, taken.queued, taken.reclaimed, bad)
        if dropped:
            self.queue.finish(dropped)
            self.leased.difference_update(dropped)
        if good and not self.busy:
            self.server.hset(self.keys.busy, self.member, 1)
            self.busy = True

    def _answer_idle(self) -> None:
        """Whether the crawl is idle: nothing queued or leased, no other process busy."""
        with self.cond:
            epoch, self.idle_ask = self.idle_ask, None
            waiting = bool(self.outbox or self.buffer or self.done)
        if epoch is None:
            return
        if waiting:
            self.scheduler._post(self.scheduler._idle_answer, epoch, True, None)
            return
        busy, queued = self._idle(
            keys=[self.keys.workers, self.keys.busy, self.keys.leased, self.keys.requests],
            args=[self.member, STALE_SECONDS],
        )
        self.busy = False
        self.scheduler._post(self.scheduler._idle_answer, epoch, bool(busy), int(queued))

    def _close(self) -> None:
        """At the crawl's end: what was taken and never handed to the engine goes back to
        the queue, the rest of the leases end."""
        with self.cond:
            unused = list(self.buffer)
            self.buffer.clear()
        if unused:
            args: list[Any] = []
            for request, entry in unused:
                args += [-request.priority, entry]
            self._give_back(keys=[self.keys.requests, self.keys.leased], args=args)
            self.leased.difference_update(entry for _, entry in unused)
        self.queue.finish(list(self.leased))
        self.leased.clear()
        self.closed = True

    def _leave(self) -> None:
        self.server.hdel(self.keys.busy, self.member)
        self.server.hdel(self.keys.sent, self.member, f"{self.member}|take")
        others = self._membership(
            keys=[self.keys.workers, *self.keys.state],
            args=[self.member, STALE_SECONDS, "leave"],
        )
        self.scheduler._post(self.scheduler._left, int(others))

    # -- a Redis that may not answer -------------------------------------------------

    def _lost(self, exc: Exception) -> None:
        """A Redis call failed: from now on wait for Redis, up to the grace."""
        self.down_error = str(exc)
        if self.down_since is None:
            self.down_since = time.monotonic()
            self.next_probe = self.down_since + PROBE_SECONDS
            self.scheduler._post(self.scheduler._outage, str(exc))
        self._check_grace()

    def _probe(self) -> bool:
        """Ask a Redis that did not answer again; whether it answers (with the crawl's keys)."""
        self.next_probe = time.monotonic() + PROBE_SECONDS
        try:
            self.server.ping()
            waited = time.monotonic() - (self.down_since or time.monotonic())
            if self.joined:
                kept = self.server.hexists(self.keys.workers, self.member)
                if kept:
                    self._heartbeat(keys=[self.keys.workers], args=[self.member])
            else:
                self._join()
                kept = True
        except _REDIS_DOWN as exc:
            self.down_error = str(exc)
            self._check_grace()
            return False
        except redis.RedisError as exc:
            self._give_up(f"the shared crawl's Redis {self.redis_url} failed: {exc}")
            return False
        if not kept:
            # restarted empty (or this process was taken for dead): the queue and the
            # dupefilter of the crawl are gone, and with them what the other processes knew
            self._give_up(
                f"the shared crawl's Redis {self.redis_url} came back after {waited:.0f} s "
                "without the crawl's keys (restarted empty?)"
            )
            return False
        self.down_since = None
        self.scheduler._post(self.scheduler._back, waited)
        return True

    def _check_grace(self) -> None:
        if self.down_since is None or self.gave_up:
            return
        waited = time.monotonic() - self.down_since
        if waited >= self.grace:
            self._give_up(
                f"the shared crawl's Redis {self.redis_url} did not answer for {waited:.0f} s "
                f"(KC_REDIS_GRACE_SECONDS={self.grace:g}): {self.down_error}"
            )

    def _give_up(self, message: str) -> None:
        if self.gave_up:
            return
        self.gave_up = True
        with self.cond:
            self.outbox.clear()  # in the crawl state: the next run requests them
            self.buffer.clear()
        self.scheduler._post(self.scheduler._give_up, message)


class SharedScheduler(Scheduler):  # type: ignore[misc]  # scrapy-redis has no type information
    """scrapy-redis's scheduler, with the crawl's membership (who is crawling, who clears),
    a Redis that may stop answering, and no Redis round trip on the reactor thread.

    scrapy-redis 0.9.1 works with Scrapy 2.19 (the engine builds the scheduler with
    ``from_crawler`` and calls ``open(spider)``, ``close(reason)``, ``enqueue_request``,
    ``next_request``, ``has_pending_requests``); these are redone here around one thread per
    scheduler (:class:`_RedisThread`) that does every Redis call: ``enqueue_request`` puts a
    request in its outbox, which it sends to the dupefilter and the queue in batches (one
    Lua script per batch); ``next_request`` serves from the few requests it takes ahead
    (:data:`BUFFER_REQUESTS`, leased to this process); ``has_pending_requests`` and
    ``len()`` use the counts it brings back; lease finishing and renewal, the heartbeat, the
    idle check (are the crawl's other processes idle?) and the outage probe run there too.
    What the reactor must know comes back through :meth:`_post`, to run on the reactor
    thread (Scrapy's stats are not thread-safe).

    Redis lost (a connection refused or timed out): requests to schedule wait in this
    process, no more are taken, and Redis is asked again every :data:`PROBE_SECONDS`. Back
    within ``KC_REDIS_GRACE_SECONDS`` with the crawl's keys, the waiting requests go to it
    and the crawl goes on (``kc/frontier/redis_outages``); else the crawl stops (close reason
    ``redis_lost``, stat ``kc/frontier/redis_lost``, outcome ``failed``). What it had queued
    is in the crawl state: the next run takes it from there.
    """

    server: Any
    crawler: Crawler
    #: requests JSON cannot hold (request_json.UnserializableRequest): this process's own
    _local: deque[Request]
    #: KC_REDIS_GRACE_SECONDS, and the Redis as messages name it (no password)
    grace: float
    redis_url: str
    #: KC_REDIS_LEASE_SECONDS, and the requests handed to the engine and not finished,
    #: with their entries (leased to this process)
    lease: float
    _in_hand: dict[Request, bytes]
    #: the requests the engine is done with whose items the store has not committed yet,
    #: with the store's count of operations made when they were done (still leased)
    _uncommitted: deque[tuple[int, bytes]]
    _thread: _RedisThread | None = None
    #: what the Redis thread posted, for the reactor thread to run (_pump)
    _inbox: queue_module.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]]
    #: the reactor's loop (None outside a running one: then _post waits for a _pump)
    _loop: asyncio.AbstractEventLoop | None = None
    #: what the reactor knows from the thread
    _gave_up = False
    _down = False
    _queued = 0
    #: requests enqueued whose verdict has not come back
    _unsettled = 0
    #: counts what this process did (enqueued or handed out): an idle answer is only good
    #: for the epoch it was asked in
    _epoch = 0
    _idle_asked: int | None = None
    _idle_answer_of: tuple[int, bool] | None = None
    _idle_answered_at = 0.0
    #: a flush of the store this process asked for while idle (_flush_store)
    _flushing: asyncio.Future[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedScheduler:
        # scrapy-redis's from_settings, without its ping (on the reactor thread):
        # install_frontier has checked that Redis answers.
        settings = crawler.settings
        scheduler: SharedScheduler = cls(
            server=redis_connection.from_settings(settings),
            persist=True,
            flush_on_start=False,
            queue_key=settings["SCHEDULER_QUEUE_KEY"],
            queue_cls=settings["SCHEDULER_QUEUE_CLASS"],
            dupefilter_key=settings["SCHEDULER_DUPEFILTER_KEY"],
            dupefilter_cls=settings["DUPEFILTER_CLASS"],
            idle_before_close=0,
            serializer=request_json,
        )
        scheduler.stats = crawler.stats
        scheduler.crawler = crawler
        scheduler._local = deque()
        scheduler._inbox = queue_module.SimpleQueue()
        config = KcConfig.from_settings(settings)
        scheduler.grace = config.redis_grace_seconds
        scheduler.lease = config.redis_lease_seconds
        scheduler._in_hand = {}
        scheduler._uncommitted = deque()
        scheduler.redis_url = display_url(config.redis_url)
        crawler.signals.connect(scheduler._spider_idle, signal=signals.spider_idle)
        return scheduler

    def open(self, spider: Spider) -> Deferred[None] | None:
        self.spider = spider
        settings = spider.crawler.settings
        self.keys = CrawlKeys.of(KcConfig.from_settings(settings).redis_key_prefix, spider.name)
        self.member = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.queue = load_object(self.queue_cls)(
            server=self.server, spider=spider, key=self.keys.requests, serializer=request_json
        )
        self.df = load_object(self.dupefilter_cls).from_spider(spider)
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._opening: Deferred[None] | None = Deferred() if self._loop is not None else None
        self._closing: Deferred[None] | None = None
        self._thread = _RedisThread(self)
        self._thread.thread.start()
        if self._opening is None:  # no reactor running (tests): wait here
            self._sync(fill=False)
        return self._opening

    # -- what comes back from the thread, run on the reactor thread --------------------

    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback(*args)`` on the reactor thread (called from the Redis thread)."""
        self._inbox.put((callback, args))
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing waits any more
                loop.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        """Run what the Redis thread posted, then let the engine look at the queue again."""
        ran = False
        while True:
            try:
                callback, args = self._inbox.get_nowait()
            except queue_module.Empty:
                break
            try:
                callback(*args)
            except Exception:
                logger.exception(
                    "shared frontier: %s failed", getattr(callback, "__name__", callback)
                )
            ran = True
        if ran:
            self._wake()

    def _wake(self, delay: float = 0) -> None:
        nextcall = getattr(getattr(self._engine(), "_slot", None), "nextcall", None)
        if nextcall is not None:
            nextcall.schedule(delay)

    def _opened(self) -> None:
        if self._opening is not None and not self._opening.called:
            self._opening.callback(None)

    def _joined(self, others: int) -> None:
        logger.info(
            "shared frontier in Redis (%s): %s other process(es) in this crawl",
            self.keys.requests,
            others,
        )
        self.crawler.stats.set_value("kc/frontier/peers_at_start", others)

    def _settled(self, batch: list[_Outgoing], verdicts: str) -> None:
        """The verdicts of a batch the thread sent: counted, logged, kept or dropped."""
        stats = self.crawler.stats
        for item, verdict in zip(batch, verdicts, strict=True):
            self._unsettled -= 1
            start = bool(item.request.meta.get(meta.START))
            if verdict in "03":
                if start:
                    # In the shared queue a start URL is the crawl's: it counts for the
                    # process that takes it (next_request), which may be another one.
                    stats.inc_value("kc/start/requested", -1)
                stats.inc_value("scheduler/enqueued/redis")
                if verdict == "3":
                    stats.inc_value("kc/frontier/kept_local")
                    self._local.append(item.request)
                    self._epoch += 1
                continue
            self.df.log(item.request, self.spider)
            if not item.page:
                continue
            stats.inc_value(
                "kc/frontier/already_scheduled" if verdict == "1" else "kc/discovery/over_max_pages"
            )
            if start:
                stats.inc_value("kc/start/requested", -1)
                stats.inc_value("kc/start/elsewhere")

    def _took(self, queued: int, reclaimed: int, bad: list[str]) -> None:
        self._queued = queued
        if reclaimed:
            self.crawler.stats.inc_value("kc/frontier/reclaimed", reclaimed)
            logger.warning(
                "shared frontier: %s request(s) whose lease ended handed out again "
                "(a process died with them)",
                reclaimed,
            )
        for message in bad:
            self.crawler.stats.inc_value("kc/frontier/bad_entries")
            logger.warning(
                "shared frontier: dropped an entry of %s: %s", self.keys.requests, message
            )

    def _idle_answer(self, epoch: int, busy: bool, queued: int | None) -> None:
        self._idle_asked = None
        self._idle_answer_of = (epoch, busy)
        self._idle_answered_at = time.monotonic()
        if queued is not None:
            self._queued = queued
        if busy:
            if queued is not None:  # else it was this process's own work, not yet sent
                self.crawler.stats.inc_value("kc/frontier/waited_for_peers")
            # Look again soon, not on the engine's 5 s heartbeat.
            self._wake(POLL_SECONDS)

    def _outage(self, error: str) -> None:
        self._down = True
        self.crawler.stats.inc_value("kc/frontier/redis_outages")
        logger.error(
            "shared frontier: Redis %s does not answer (%s); waiting up to %g s "
            "(KC_REDIS_GRACE_SECONDS) for it",
            self.redis_url,
            error,
            self.grace,
        )

    def _back(self, waited: float) -> None:
        self._down = False
        logger.warning(
            "shared frontier: Redis %s answers again after %.1f s", self.redis_url, waited
        )

    def _give_up(self, message: str) -> None:
        """Stop the crawl as failed: its Redis is lost."""
        if self._gave_up:
            return
        self._gave_up = True
        self._unsettled = 0  # in the crawl state: the next run requests them
        logger.error("shared frontier: %s; stopping the crawl (the next run resumes it)", message)
        self.crawler.stats.set_value("kc/frontier/redis_lost", message)
        self._opened()
        engine = self._engine()
        if engine is not None and engine.spider is not None:
            asyncio.get_running_loop().create_task(engine.close_spider_async(reason=REDIS_LOST))

    def _left(self, others: int) -> None:
        if others:
            logger.info("shared frontier: %s other process(es) still crawling", others)
        else:
            logger.info("shared frontier: last process of the crawl, its Redis keys cleared")

    def _stopped(self) -> None:
        """The Redis thread has made its last call: once it has returned, close is done."""
        self._opened()
        thread = self._thread
        if thread is not None:
            thread.thread.join(5)  # it posted this last: nothing is left for it to do
        if self._closing is not None and not self._closing.called:
            self._closing.callback(None)

    # -- what the engine calls -------------------------------------------------------

    def _tell(self, **change: Any) -> None:
        """Hand the Redis thread work (attributes of it to set or extend) and wake it."""
        thread = self._thread
        if thread is None:
            return
        with thread.cond:
            for name, value in change.items():
                if name in ("outbox", "done"):
                    getattr(thread, name).extend(value)
                else:
                    setattr(thread, name, value)
            thread.cond.notify()

    def enqueue_request(self, request: Request) -> bool:
        if self._gave_up:
            return False  # in the crawl state: the next run requests it
        fingerprint, page, source, budget = "", False, "", 0
        if not request.dont_filter:
            fingerprint, page, source, budget = self.df.schedule_key(request)
        try:
            entry = self.queue._encode_request(request)
        except request_json.UnserializableRequest as exc:
            logger.debug("shared frontier: kept in this process: %s", exc)
            entry = b""
        item = _Outgoing(request, fingerprint, page, source, budget, -request.priority, entry)
        self._unsettled += 1
        self._epoch += 1
        self._tell(outbox=[item])
        return True

    def __len__(self) -> int:
        """Requests queued: the crawl's in Redis (as the Redis thread last counted them), and
        this process's own."""
        thread = self._thread
        buffered = len(thread.buffer) if thread is not None else 0
        return len(self._local) + self._unsettled + buffered + self._queued

    def has_pending_requests(self) -> bool:
        self._pump()
        if self._local:
            return True
        if self._gave_up:
            return False
        thread = self._thread
        buffered = thread is not None and bool(thread.buffer)
        # while Redis does not answer, it waits for Redis
        return buffered or self._unsettled > 0 or self._down or self._queued > 0

    def next_request(self) -> Request | None:
        self._pump()
        self._settle()
        request: Request | None = None
        if self._local:
            request = self._local.popleft()
        elif not self._gave_up and self._thread is not None:
            thread = self._thread
            with thread.cond:
                if thread.buffer:
                    request, entry = thread.buffer.popleft()
                    self._in_hand[request] = entry
                if len(thread.buffer) < BUFFER_REQUESTS and not thread.want_fill:
                    thread.want_fill = True
                    thread.cond.notify()
        if request is not None:
            self._epoch += 1
            if self.stats is not None:
                self.stats.inc_value("scheduler/dequeued/redis")
                if request.meta.get(meta.START):
                    self.stats.inc_value("kc/start/requested")
        return request

    def _settle(self, *, done_all: bool = False) -> None:
        """Hand the Redis thread the entries of the requests this process is done with (the
        engine no longer has them in progress; all of them when ``done_all``) and whose
        items the store has committed: their leases end. Until then a request stays leased
        to this process (renewed with the heartbeat), so that if the process dies before
        its batch commits, the lease runs out and another process fetches the page again:
        what a page taught the crawl (the page, its links) is in the database, or its
        request is in Redis."""
        runtime = open_runtime(self.crawler)  # None: no store counts operations
        if self._in_hand:
            slot = getattr(self._engine(), "_slot", None)
            busy: set[Request] = set() if done_all else getattr(slot, "inprogress", set())
            done = [request for request in self._in_hand if request not in busy]
            if done:
                # the items of a request are in the store pipeline once the engine is done
                # with it: they are among the operations made so far
                made = runtime.ops_made if runtime is not None else 0
                self._uncommitted.extend((made, self._in_hand.pop(request)) for request in done)
        if not self._uncommitted:
            return
        committed = runtime.ops_committed if runtime is not None else 0
        stored = []
        while self._uncommitted and self._uncommitted[0][0] <= committed:
            stored.append(self._uncommitted.popleft()[1])
        if stored:
            self._tell(done=stored)

    def _engine(self) -> ExecutionEngine | None:
        """The crawl's engine; None before the crawl starts."""
        try:
            return self.crawler.engine
        except RuntimeError:
            return None

    def _spider_idle(self, spider: Spider) -> None:
        """Stay while another process has work in hand (it may yet fill the queue), or
        while Redis does not answer: the Redis thread is asked, and its answer brings the
        engine back here."""
        if self._gave_up:
            return
        self._pump()
        self._settle(done_all=True)  # idle: nothing is in progress
        if self._uncommitted:  # this process's own pages are not in the database yet
            self._flush_store()
            self._wake(COMMIT_POLL_SECONDS)
            raise DontCloseSpider
        if self._down or self._unsettled or self._local:
            self._wake(POLL_SECONDS)
            raise DontCloseSpider
        if self._idle_answer_of == (self._epoch, False):
            return  # nothing queued, leased or in another process's hands since it was asked
        wait = self._idle_answered_at + POLL_SECONDS - time.monotonic()
        if self._idle_answer_of == (self._epoch, True) and wait > 0:
            self._wake(wait)  # the crawl was busy a moment ago: ask again in a while
            raise DontCloseSpider
        if self._idle_asked != self._epoch:
            self._idle_asked = self._epoch
            self._tell(idle_ask=self._epoch)
        raise DontCloseSpider

    def _flush_store(self) -> None:
        """Have the store commit what it holds now rather than when its batch is old
        enough (``KC_STORE_FLUSH_SECONDS``): an idle process waits for it to end leases."""
        runtime = open_runtime(self.crawler)
        if runtime is None or self._loop is None:
            return
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(runtime.flush_store(), loop=self._loop)

    def _sync(self, *, fill: bool = True, timeout: float = 30.0) -> None:
        """Wait until the Redis thread has done what it was handed so far (with ``fill``,
        taken requests ahead too), then run what it posted. For callers without a running
        reactor (tests); the crawl never waits."""
        thread = self._thread
        if thread is None:
            return
        with thread.cond:
            if fill:
                thread.want_fill = True
                thread.retry_take_at = 0.0
            thread.sync_asked += 1
            ticket = thread.sync_asked
            thread.cond.notify_all()
            thread.cond.wait_for(
                lambda: thread.sync_done >= ticket or not thread.thread.is_alive(), timeout
            )
        self._pump()

    def _vanish(self) -> None:
        """Stop the Redis thread without a word to Redis, as a process that dies (tests)."""
        thread = self._thread
        if thread is None:
            return
        with thread.cond:
            thread.vanish = thread.stop = True
            thread.cond.notify_all()
        thread.thread.join(30)
        self._thread = None

    def close(self, reason: str) -> Deferred[None] | None:
        """Hand back what this process holds and leave the crawl (on the Redis thread; the
        engine waits for it without blocking the reactor). SCHEDULER_PERSIST: the shared
        state stays for the other processes, and the last to leave clears it."""
        thread = self._thread
        if thread is None:
            return None
        self._pump()
        self._settle(done_all=True)
        if self._loop is not None and thread.thread.is_alive():
            self._closing = Deferred()
        closing = self._closing
        with thread.cond:
            thread.stop = True
            thread.cond.notify_all()
        if closing is None:
            thread.thread.join(60)
            self._pump()
        return closing


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

    def schedule_key(self, request: Request) -> tuple[str, bool, str, int]:
        """What scheduling ``request`` asks of Redis: its fingerprint ('' when it is not
        filtered), whether it is a page's, and the page's source and ``max_pages`` ('' and 0
        when it has no budget). Computed on the reactor thread; the shared scheduler's Redis
        thread does the rest, for a batch at once."""
        page = self._page(request)
        if page is None:
            return str(super().request_fingerprint(request)), False, "", 0
        if request.meta.get("redirect_urls") and page[1] == request.meta.get(meta.KEY):
            return "", True, "", 0  # a redirect to another spelling of the page: its own request
        source = getattr(self.spider, "sources", {}).get(page[0])
        budget = int(source.max_pages or 0) if source is not None else 0
        if not budget or self.budget_key is None:
            return page_fingerprint(*page), True, "", 0
        return page_fingerprint(*page), True, page[0], budget

    def request_seen(self, request: Request) -> bool:
        """One request, with a round trip each (scrapy-redis's own scheduler; the shared
        scheduler sends batches from its Redis thread)."""
        fingerprint, page, source, budget = self.schedule_key(request)
        if not fingerprint:
            return False
        if self.server.sadd(self.key, fingerprint) == 0:
            if page:
                self._dropped(request, "kc/frontier/already_scheduled")
            return True
        if not source:
            return False
        # a new page of the crawl: it takes one of the source's max_pages, if any is left
        if int(self.server.hincrby(self.budget_key, source, 1)) <= budget:
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
