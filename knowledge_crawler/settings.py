"""Scrapy settings of knowledge_crawler.

The single declaration of the pipeline order, the middlewares and every
``KC_*`` setting. Components are named by dotted string only, so loading
settings imports nothing from the package but the pure ``config`` module,
where the ``KC_*`` defaults live. Each setting is documented in README.md
(Configuration).
"""

import os

from knowledge_crawler.config import DEFAULTS as _DEFAULTS

BOT_NAME = "knowledge_crawler"
SPIDER_MODULES = ["knowledge_crawler.spiders"]
NEWSPIDER_MODULE = "knowledge_crawler.spiders"
COMMANDS_MODULE = "knowledge_crawler.commands"

# --- knowledge_crawler (KC_*) ------------------------------------------------
# Defaults come from knowledge_crawler.config (their one home, with a line of docs
# each); components read them through KcConfig.from_settings. Some may come from
# the environment.
KC_CONTACT = os.environ.get("KC_CONTACT", _DEFAULTS.contact)
KC_DATABASE_URL = os.environ.get("KC_DATABASE_URL", _DEFAULTS.database_url)
KC_STORE_BATCH_SIZE = _DEFAULTS.store_batch_size
KC_STORE_FLUSH_SECONDS = _DEFAULTS.store_flush_seconds
KC_STORE_BUSY_TIMEOUT = _DEFAULTS.store_busy_timeout
KC_STORE_RETRY_SECONDS = _DEFAULTS.store_retry_seconds
KC_RESCUE_DIR = os.environ.get("KC_RESCUE_DIR", _DEFAULTS.rescue_dir)
KC_LEASE_TTL_SECONDS = _DEFAULTS.lease_ttl_seconds
KC_LEASE_WAIT_SECONDS = _DEFAULTS.lease_wait_seconds
KC_PROGRESS_SECONDS = _DEFAULTS.progress_seconds
KC_ARCHIVE_ENABLED = _DEFAULTS.archive_enabled
KC_ARCHIVE_DIR = os.environ.get("KC_ARCHIVE_DIR", _DEFAULTS.archive_dir)
KC_ARCHIVE_MAX_BYTES = _DEFAULTS.archive_max_bytes
KC_RETRY_BASE_SECONDS = _DEFAULTS.retry_base_seconds
KC_RETRY_MAX_ATTEMPTS = _DEFAULTS.retry_max_attempts
KC_RETRY_MAX_SECONDS = _DEFAULTS.retry_max_seconds
KC_RETRY_WAIT_SECONDS = _DEFAULTS.retry_wait_seconds
KC_MINHASH_PERMUTATIONS = _DEFAULTS.minhash_permutations
KC_MINHASH_SEED = _DEFAULTS.minhash_seed
KC_SHINGLE_SIZE = _DEFAULTS.shingle_size
KC_PASSAGE_WORDS = _DEFAULTS.passage_words
KC_DEDUPE_MEMORY_PAGES = _DEFAULTS.dedupe_memory_pages
KC_QUEUE_MEMORY_REQUESTS = _DEFAULTS.queue_memory_requests
KC_KNOWN_MEMORY_PAGES = _DEFAULTS.known_memory_pages
KC_GC_YOUNG_THRESHOLD = _DEFAULTS.gc_young_threshold
KC_MALLOC_TRIM_SECONDS = _DEFAULTS.malloc_trim_seconds
KC_STAGE_WORKERS = _DEFAULTS.stage_workers
KC_STAGE_TIMEOUT_SECONDS = _DEFAULTS.stage_timeout_seconds
KC_ALLOW_PRIVATE_ADDRESSES = _DEFAULTS.allow_private_addresses
KC_REDIS_URL = os.environ.get("KC_REDIS_URL", _DEFAULTS.redis_url)
KC_REDIS_KEY_PREFIX = os.environ.get("KC_REDIS_KEY_PREFIX", _DEFAULTS.redis_key_prefix)
KC_REDIS_GRACE_SECONDS = _DEFAULTS.redis_grace_seconds
KC_REDIS_LEASE_SECONDS = _DEFAULTS.redis_lease_seconds
KC_CHROMIUM_PATH = os.environ.get("KC_CHROMIUM_PATH", _DEFAULTS.chromium_path)
KC_BROWSER_PAGES = _DEFAULTS.browser_pages
KC_BROWSER_TIMEOUT_SECONDS = _DEFAULTS.browser_timeout_seconds
KC_BROWSER_CONTEXT_PAGES = _DEFAULTS.browser_context_pages

# --- crawling ----------------------------------------------------------------
# USER_AGENT is built from KC_CONTACT when the spider starts (after `-s` options
# are read): knowledge_crawler/VERSION (+CONTACT). Set USER_AGENT to override it.
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
#: what one response's output (a page item and its links) is processed with at once; Scrapy
#: starts this many tasks for every response (default 100: most of a 304 re-crawl's CPU)
CONCURRENT_ITEMS = 8
DOWNLOAD_DELAY = 0.25
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.25
AUTOTHROTTLE_TARGET_CONCURRENCY = 2.0
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
REDIRECT_MAX_TIMES = 10
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
#: Scrapy's remote-control HTTP server: off unless turned on.
REMOTE_CONTROL_ENABLED = False
HTTPCACHE_ENABLED = False
LOG_LEVEL = "INFO"
DEFAULT_DROPITEM_LOG_LEVEL = "DEBUG"
FEED_EXPORT_ENCODING = "utf-8"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

# --- item pipelines, in SPEC F-PIPELINE order ------------------------------------
ITEM_PIPELINES = {
    # The raw archive first: each page response to a WARC file, its location on the item
    "knowledge_crawler.pipelines.archive.ArchivePipeline": 50,
    "knowledge_crawler.pipelines.extract.ExtractPipeline": 100,
    "knowledge_crawler.pipelines.clean.CleanPipeline": 200,
    "knowledge_crawler.pipelines.canonicalize.CanonicalizePipeline": 300,
    "knowledge_crawler.pipelines.fingerprint.FingerprintPipeline": 400,
    "knowledge_crawler.pipelines.dedupe.DedupePipeline": 500,
    "knowledge_crawler.pipelines.store.StorePipeline": 600,
}

# --- extensions ----------------------------------------------------------------------
EXTENSIONS = {
    "knowledge_crawler.extensions.progress.Progress": 500,
    "knowledge_crawler.extensions.gc.GarbageCollection": 0,
    "knowledge_crawler.extensions.trim.MallocTrim": 0,
    # AutoThrottle that never takes a source's slot below its own download_delay
    "scrapy.extensions.throttle.AutoThrottle": None,
    "knowledge_crawler.extensions.throttle.SourceAutoThrottle": 0,  # Scrapy's own order
}

# Scrapy's caching resolver, refusing private answers for names no source owns (F-SAFETY)
TWISTED_DNS_RESOLVER = "knowledge_crawler.middlewares.resolver.PrivateAddressResolver"

# --- spider middlewares --------------------------------------------------------------
SPIDER_MIDDLEWARES = {
    # An HTML page to a stage worker as soon as the spider yields it: one parse there for
    # its links and its content; then the requests for its links. Closest to the spider,
    # so those requests pass Scrapy's depth, URL length, referer and offsite middlewares.
    "knowledge_crawler.middlewares.stages.StageMiddleware": 950,
}

# --- downloader middlewares ----------------------------------------------------------
DOWNLOADER_MIDDLEWARES = {
    # Per-source scope, redirects included. Below RobotsTxtMiddleware (100), which would
    # otherwise fetch a new host's robots.txt before refusing; above Scrapy's
    # OffsiteMiddleware (50), which keeps refusing hosts of no source under its own stats.
    "knowledge_crawler.middlewares.scope.ScopeMiddleware": 60,
    # Private, loopback and link-local hosts by their spelling, unless a source names
    # them itself (F-SAFETY); below RobotsTxtMiddleware for the same reason as scope.
    "knowledge_crawler.middlewares.safety.PrivateAddressMiddleware": 70,
    # robots.txt obeyed by every request, those that wait for the file together included
    # (knowledge_crawler.middlewares.robots): in place of Scrapy's, at its place.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "knowledge_crawler.middlewares.robots.RobotsMiddleware": 100,
    # A name the resolver refused (it resolves to a private address) fails as
    # PrivateAddressRefused, unretried: above RetryMiddleware (550).
    "knowledge_crawler.middlewares.safety.RefusedResolutionMiddleware": 560,
    # HTTP or browser for each page request of a source that renders (F-RENDER): below
    # HttpCompressionMiddleware (590), whose decompressed body it reads. The browser
    # download handler is put in place by the spider only when a source renders.
    "knowledge_crawler.middlewares.render.RenderMiddleware": 575,
    # The stored ETag / Last-Modified of a known page as If-None-Match / If-Modified-Since
    "knowledge_crawler.middlewares.conditional.ConditionalMiddleware": 590,
    # Retries with exponential backoff and full jitter, Retry-After honoured and a
    # 429'd host slowed down, state kept across runs; in place of Scrapy's, which
    # retries at once and ignores Retry-After.
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "knowledge_crawler.middlewares.retry.RetryMiddleware": 550,
}
