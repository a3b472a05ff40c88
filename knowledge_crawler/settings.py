"""Scrapy settings of knowledge_crawler.

The single declaration of the pipeline order, the middlewares and every
``KC_*`` default. Components are named by dotted string only, so loading
settings imports nothing from the package. Each ``KC_*`` setting is
documented in README.md (Configuration).
"""

import os

BOT_NAME = "knowledge_crawler"
SPIDER_MODULES = ["knowledge_crawler.spiders"]
NEWSPIDER_MODULE = "knowledge_crawler.spiders"
COMMANDS_MODULE = "knowledge_crawler.commands"
TEMPLATES_DIR = os.path.join(os.path.dirname(__file__), "templates")

# --- knowledge_crawler (KC_*) ------------------------------------------------
#: Contact shown in the User-Agent so site owners can reach the operator.
KC_CONTACT = os.environ.get("KC_CONTACT", "https://github.com/knowledge-crawler")
#: Where the dataset lives: sqlite:///PATH (relative to the working directory).
KC_DATABASE_URL = os.environ.get("KC_DATABASE_URL", "sqlite:///data/knowledge.db")
#: Store flush: rows per transaction, and the longest a row waits in memory (s).
KC_STORE_BATCH_SIZE = 200
KC_STORE_FLUSH_SECONDS = 2.0
#: Seconds between progress lines (pages stored, rate, queue); 0 turns them off.
KC_PROGRESS_SECONDS = 10.0
#: Near duplicates: MinHash permutations, hash seed and word-shingle size. Stored
#: signatures record these; a database signed with others is refused.
KC_MINHASH_PERMUTATIONS = 128
KC_MINHASH_SEED = 1
KC_SHINGLE_SIZE = 3

# --- crawling ----------------------------------------------------------------
# USER_AGENT is built from KC_CONTACT when the spider starts (after `-s` options
# are read): knowledge_crawler/VERSION (+CONTACT). Set USER_AGENT to override it.
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
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
}
