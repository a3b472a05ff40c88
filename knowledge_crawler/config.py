"""The ``KC_*`` settings: one typed, validated record, and the one home of their defaults.

Pure module (standard library only). ``settings.py`` takes its ``KC_*`` defaults
from :data:`DEFAULTS`; components build a :class:`KcConfig` from the crawler's
settings with :meth:`KcConfig.from_settings`, which coerces the text that
``-s NAME=VALUE`` gives and raises :class:`~knowledge_crawler.errors.ConfigError`
naming the setting when a value is unusable.

>>> KcConfig.from_settings({"KC_STORE_BATCH_SIZE": "50"}).store_batch_size
50
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from knowledge_crawler.errors import ConfigError

__all__ = ["DEFAULTS", "KcConfig", "database_url", "display_url", "setting_name"]


@dataclass(frozen=True, slots=True)
class KcConfig:
    """Every ``KC_*`` setting: field ``store_batch_size`` is setting ``KC_STORE_BATCH_SIZE``."""

    #: where the dataset lives: sqlite:///PATH (relative to the working directory; a bare
    #: PATH means the same), or a PostgreSQL database, postgresql://USER@HOST/DB (any libpq URL)
    database_url: str = "sqlite:///data/knowledge.db"
    #: contact shown in the User-Agent so site owners can reach the operator
    contact: str = "https://github.com/knowledge-crawler"
    #: rows per store transaction
    store_batch_size: int = 200
    #: the longest a row waits in memory before its batch is written (s)
    store_flush_seconds: float = 2.0
    #: how long one statement waits for another writer's lock (s): SQLite's busy timeout,
    #: PostgreSQL's lock_timeout
    store_busy_timeout: float = 10.0
    #: how long a batch is retried after transient database errors before the crawl stops (s)
    store_retry_seconds: float = 60.0
    #: the folder of the rescue files of a database that has none (PostgreSQL): what a crawl
    #: could not store; empty: the working folder. A SQLite database's stay beside it
    rescue_dir: str = ""
    #: a writer's lease on a source (one writer at a time per source, F-STATE) lasts this
    #: long without a heartbeat (renewed every quarter of it): how long a writer killed on
    #: another host keeps the others out (s)
    lease_ttl_seconds: float = 60.0
    #: how long a writer waits for another writer's lease on a source to be released or
    #: expire before it gives up (exit 2); 0: give up at once (s)
    lease_wait_seconds: float = 0.0
    #: seconds between progress lines; 0 turns them off
    progress_seconds: float = 10.0
    #: keep every fetched page response in gzip WARC files (the raw archive, F-ARCHIVE)
    archive_enabled: bool = True
    #: the archive's folder; empty: ``archive/`` beside the SQLite database (required for
    #: other databases)
    archive_dir: str = ""
    #: a WARC file is closed and the next one started before it would grow past this
    archive_max_bytes: int = 1024**3
    #: failed fetches: first backoff (s), fetches before a page is dead-lettered, longest
    #: backoff (s); exponential with full jitter (knowledge_crawler.sync.retry)
    retry_base_seconds: float = 5.0
    retry_max_attempts: int = 6
    retry_max_seconds: float = 900.0
    #: a retry due within this many seconds waits in the crawl; a later one is left to
    #: the next crawl (its time is stored in fetch_attempts)
    retry_wait_seconds: float = 60.0
    #: MinHash permutations, hash seed and word-shingle size of near-duplicate signatures
    minhash_permutations: int = 128
    minhash_seed: int = 1
    shingle_size: int = 3
    #: the longest passage (the unit of search) a page's content is split into, in words
    passage_words: int = 200
    #: pages whose dedupe state (content hash, signature, LSH entries, decision; about
    #: 1.2 KB a page) a crawl keeps in memory; past this it moves into a temporary SQLite
    #: file (in SQLITE_TMPDIR or TMPDIR) so that memory stops growing with the pages seen;
    #: 0: in that file from the start
    dedupe_memory_pages: int = 20_000
    #: page requests a crawl keeps in its memory queue; past it the crawl state holds them:
    #: the start waits for room, and links found meanwhile are only recorded (``frontier``)
    #: and requested from there when the queue has drained; 0: no bound
    queue_memory_requests: int = 10_000
    #: stored pages whose validators and schedule a crawl keeps in memory (about 600 bytes
    #: a page); past this they move into a temporary SQLite file (in SQLITE_TMPDIR or
    #: TMPDIR); 0: in that file from the start
    known_memory_pages: int = 50_000
    #: container allocations between the interpreter's young garbage collections during a
    #: crawl (Python's own is 700); 0 leaves the interpreter's thresholds alone
    gc_young_threshold: int = 50_000
    #: seconds between two calls of glibc's malloc_trim during a crawl, which hand the
    #: heap's free pages back to the system; 0: never
    malloc_trim_seconds: float = 5.0
    #: worker processes for the CPU-heavy work of pipeline stages 1-4 (extract, clean,
    #: canonicalize, fingerprint), so that it runs beside the crawl's event loop; -1: one
    #: fewer than the machine's CPUs (at least one); 0: none, the stages run in the crawl
    stage_workers: int = -1
    #: the longest one page's stages may take in a worker before the worker is killed and
    #: the page fails (recorded with retry state) (s)
    stage_timeout_seconds: float = 60.0
    #: fetch private, loopback and link-local addresses for every host, not only for the
    #: hosts a source names itself (F-SAFETY)
    allow_private_addresses: bool = False
    #: Redis of a crawl shared by several processes (F-SCALE), redis://HOST:PORT/DB: the
    #: request queue, the page dupefilter and the page budgets live there; empty: one process
    redis_url: str = ""
    #: first part of the Redis keys of a shared crawl (``PREFIX:SPIDER:requests``, ...), so that
    #: crawls that share a Redis keep apart
    redis_key_prefix: str = "kc"
    #: how long a shared crawl waits for its Redis to answer again once it stopped answering,
    #: before it stops as ``failed`` (the crawl state keeps what it had queued) (s)
    redis_grace_seconds: float = 10.0
    #: a request a process of a shared crawl takes is leased to it for this long, renewed
    #: while it is in hand: a process that dies holding it hands it back when the lease ends (s)
    redis_lease_seconds: float = 60.0
    #: the Chromium that renders ``render = "playwright"``/``"auto"`` pages; empty: the first
    #: of ``chromium``, ``chromium-browser``, ``google-chrome`` on PATH, else /usr/bin/chromium
    chromium_path: str = ""
    #: browser pages rendering at once (a page is opened per request and closed after it)
    browser_pages: int = 4
    #: how long a page may take to load and settle before the fetch fails (s)
    browser_timeout_seconds: float = 30.0
    #: pages rendered in one browser context before it is closed and a fresh one opened,
    #: so that the browser's memory does not grow with the crawl
    browser_context_pages: int = 100

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | Any) -> KcConfig:
        """Read ``KC_*`` values from Scrapy settings or a plain mapping; missing ones default."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = setting_name(f.name)
            raw = settings.get(name)
            if raw is None:
                continue
            values[f.name] = _coerce(name, raw, type(getattr(DEFAULTS, f.name)))
        if "database_url" in values:
            values["database_url"] = database_url(values["database_url"])
        config = cls(**values)
        config.check()
        return config

    def check(self) -> None:
        """Raise :class:`ConfigError` for values no crawl can use."""
        if not self.database_url.strip():
            raise ConfigError("KC_DATABASE_URL is empty")
        if self.redis_url and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(
                f"KC_REDIS_URL: expected redis://HOST:PORT/DB, rediss://... or unix://..., "
                f"got {display_url(self.redis_url)!r}"
            )
        if self.redis_url and not re.fullmatch(r"[A-Za-z0-9_.:-]+", self.redis_key_prefix):
            raise ConfigError(
                f"KC_REDIS_KEY_PREFIX: letters, digits and _.:- only, got {self.redis_key_prefix!r}"
            )
        for name in (
            "store_batch_size",
            "store_flush_seconds",
            "minhash_permutations",
            "archive_max_bytes",
            "passage_words",
            "browser_pages",
            "browser_timeout_seconds",
            "browser_context_pages",
            "lease_ttl_seconds",
            "stage_timeout_seconds",
            "redis_lease_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{setting_name(name)} must be > 0, got {getattr(self, name)}")
        if self.retry_max_attempts < 1 or self.retry_base_seconds <= 0:
            raise ConfigError("KC_RETRY_MAX_ATTEMPTS must be >= 1 and KC_RETRY_BASE_SECONDS > 0")
        if self.retry_max_seconds < self.retry_base_seconds:
            raise ConfigError("KC_RETRY_MAX_SECONDS must be >= KC_RETRY_BASE_SECONDS")
        if self.stage_workers < -1:
            raise ConfigError(
                f"KC_STAGE_WORKERS must be -1 (one fewer than the CPUs), 0 or more, "
                f"got {self.stage_workers}"
            )
        if self.dedupe_memory_pages < 0:
            raise ConfigError(
                f"KC_DEDUPE_MEMORY_PAGES must be 0 or more, got {self.dedupe_memory_pages}"
            )
        for name in ("queue_memory_requests", "known_memory_pages"):
            value = getattr(self, name)
            if value < 0:
                raise ConfigError(f"{setting_name(name)} must be 0 or more, got {value}")
        if self.gc_young_threshold < 0:
            raise ConfigError(
                f"KC_GC_YOUNG_THRESHOLD must be 0 or more, got {self.gc_young_threshold}"
            )
        for name in (
            "store_busy_timeout",
            "store_retry_seconds",
            "lease_wait_seconds",
            "progress_seconds",
            "redis_grace_seconds",
            "malloc_trim_seconds",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{setting_name(name)} must be >= 0, got {getattr(self, name)}")


def database_url(value: str) -> str:
    """A database as given (``--db``, ``KC_DATABASE_URL``) as a URL: one with a scheme is
    kept; a bare path is a SQLite file.

    >>> database_url("data/knowledge.db"), database_url("/srv/kc.db")
    ('sqlite:///data/knowledge.db', 'sqlite:////srv/kc.db')
    >>> database_url("postgresql://kc@db/kc")
    'postgresql://kc@db/kc'
    """
    text = value.strip()
    if not text or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", text):
        return text
    return "sqlite:///" + text


def display_url(url: str) -> str:
    """A database URL as messages and logs show it: without its password.

    >>> display_url("postgresql://kc:s3cret@db.example:5432/kc")
    'postgresql://kc:***@db.example:5432/kc'
    >>> display_url("postgresql://db.example/kc?sslmode=require&password=s3cret")
    'postgresql://db.example/kc?sslmode=require&password=***'
    >>> display_url("sqlite:///data/knowledge.db")
    'sqlite:///data/knowledge.db'
    """
    url = re.sub(r"^(\w+://[^:/@?#]*):[^@/?#]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)


def setting_name(field_name: str) -> str:
    """``store_batch_size`` -> ``KC_STORE_BATCH_SIZE``."""
    return f"KC_{field_name.upper()}"


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _coerce_bool(name: str, raw: Any) -> bool:
    """A bool or its text: ``-s NAME=false`` gives text, and ``bool("false")`` is True."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ConfigError(f"{name}: expected true or false, got {raw!r}")


def _coerce(name: str, raw: Any, kind: type) -> Any:
    if kind is str:
        return str(raw)
    if kind is bool:
        return _coerce_bool(name, raw)
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = kind(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        what = "an integer" if kind is int else "a number"
        raise ConfigError(f"{name}: expected {what}, got {raw!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}: expected a finite number, got {raw!r}")
    return value


#: The defaults, the one place they are written down.
DEFAULTS = KcConfig()
