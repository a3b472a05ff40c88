"""Named, recorded, transactional schema migrations.

Each migration is a name and a tuple of statements written in the SQL that
SQLite and PostgreSQL share. They are applied in order, each in its own
transaction, and recorded in ``schema_migrations``. A database that records a
migration this code does not know was written by a newer version: opening it
fails with :class:`~knowledge_crawler.errors.SchemaMismatchError` rather than
guessing.

The statements are SQLite's as they stand. PostgreSQL runs them with their column
types rendered by :func:`postgres_types` (SQLite's 64-bit ``INTEGER``, 8-byte ``REAL``,
``BLOB`` and byte-wise text become ``BIGINT``, ``DOUBLE PRECISION``, ``BYTEA`` and
``TEXT COLLATE "C"``; an ``AUTOINCREMENT`` key an identity column), so a migration in
plain SQL, ``ALTER TABLE t ADD COLUMN c TEXT NOT NULL DEFAULT '{}'`` say, needs nothing
more. Where SQLite's way does not suit PostgreSQL at all (a table rebuild, FTS5), a
migration carries PostgreSQL's own statements (``postgres``, ``postgres_only``).
"""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass

from knowledge_crawler.errors import SchemaMismatchError

__all__ = [
    "MIGRATIONS",
    "POSTGRES_SEARCH_CONFIG",
    "Migration",
    "check_schema",
    "pending_migrations",
    "postgres_types",
]


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    statements: tuple[str, ...]
    #: rebuilds a table that others reference: foreign keys are off while it runs (SQLite
    #: would otherwise cascade the old table's DROP), and checked before it commits
    rebuilds_table: bool = False
    #: statements only SQLite runs, after ``statements`` (its FTS5 index and the triggers
    #: that keep it in step); another backend brings its own equivalent
    sqlite_only: tuple[str, ...] = ()
    #: what PostgreSQL runs in place of ``statements`` when they do not suit it (None:
    #: ``statements``, their types rendered by :func:`postgres_types`)
    postgres: tuple[str, ...] | None = None
    #: statements only PostgreSQL runs, after its others (its full-text search)
    postgres_only: tuple[str, ...] = ()

    def sqlite_statements(self) -> tuple[str, ...]:
        """What SQLite runs, in order."""
        return (*self.statements, *self.sqlite_only)

    def postgres_statements(self) -> tuple[str, ...]:
        """What PostgreSQL runs, in order."""
        if self.postgres is not None:
            return (*self.postgres, *self.postgres_only)
        return (*(postgres_types(s) for s in self.statements), *self.postgres_only)


# Column types as PostgreSQL spells what SQLite stores (https://www.sqlite.org/datatype3.html):
# INTEGER is 64-bit, REAL an 8-byte float, and text compares byte by byte (BINARY), which
# the "C" collation does whatever the database's default is (ISO times and URLs sort and
# compare as on SQLite). A type is a type only where a column is declared: after a column
# name at the start of a line, after "(" or ",", or after ADD COLUMN name.
_COLUMN_TYPE = re.compile(
    r"(?P<lead>(?:^|[(,]|ADD COLUMN)\s*\w+\s+)"
    r"(?P<type>INTEGER PRIMARY KEY AUTOINCREMENT|INTEGER|REAL|BLOB|TEXT)\b",
    re.MULTILINE,
)
_POSTGRES_TYPES = {
    "INTEGER PRIMARY KEY AUTOINCREMENT": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "INTEGER": "BIGINT",
    "REAL": "DOUBLE PRECISION",
    "BLOB": "BYTEA",
    "TEXT": 'TEXT COLLATE "C"',
}


def postgres_types(statement: str) -> str:
    """``statement`` with the column types it declares as PostgreSQL's.

    >>> print(postgres_types("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, x REAL)"))
    CREATE TABLE t (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, x DOUBLE PRECISION)
    >>> print(postgres_types("ALTER TABLE t ADD COLUMN extra TEXT NOT NULL DEFAULT '{}'"))
    ALTER TABLE t ADD COLUMN extra TEXT COLLATE "C" NOT NULL DEFAULT '{}'
    >>> print(postgres_types("CREATE INDEX idx_t ON t (x)"))
    CREATE INDEX idx_t ON t (x)
    """
    return _COLUMN_TYPE.sub(lambda m: m.group("lead") + _POSTGRES_TYPES[m.group("type")], statement)


# A page is two rows: its metadata, rewritten on every visit, and its content
# with its MinHash signature, written only when the content hash moves, so a
# revisit of an unchanged page writes a few hundred bytes, not the whole text.
# The ``pages`` view joins them: that is what users and queries read.
_PAGE_META = """
CREATE TABLE page_meta (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id        TEXT NOT NULL,
    canonical_url    TEXT NOT NULL CHECK (canonical_url LIKE 'http%'),
    url              TEXT NOT NULL,
    final_url        TEXT NOT NULL,
    fetched_at       TEXT NOT NULL,
    title            TEXT,
    headings         TEXT NOT NULL DEFAULT '[]',
    word_count       INTEGER NOT NULL DEFAULT 0 CHECK (word_count >= 0),
    language         TEXT,
    thin             INTEGER NOT NULL DEFAULT 0 CHECK (thin IN (0, 1)),
    content_hash     TEXT NOT NULL CHECK (length(content_hash) = 64),
    duplicate_of     INTEGER REFERENCES page_meta(id) ON DELETE SET NULL,
    duplicate_kind   TEXT CHECK (duplicate_kind IN ('exact', 'near')),
    duplicate_score  REAL,
    http_status      INTEGER CHECK (http_status BETWEEN 100 AND 599),
    etag             TEXT,
    last_modified    TEXT,
    status           TEXT NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'suspected_missing', 'tombstoned')),
    first_seen_at    TEXT NOT NULL,
    last_seen_at     TEXT NOT NULL,
    last_checked_at  TEXT NOT NULL,
    last_changed_at  TEXT NOT NULL,
    next_check_at    TEXT,
    UNIQUE (source_id, canonical_url)
)
"""

_PAGE_CONTENT = """
CREATE TABLE page_content (
    page_id         INTEGER PRIMARY KEY REFERENCES page_meta(id) ON DELETE CASCADE,
    content         TEXT NOT NULL,
    minhash         BLOB,
    minhash_params  TEXT
)
"""

_PAGES_VIEW = """
CREATE VIEW pages AS
SELECT m.id, m.source_id, m.canonical_url, m.url, m.final_url, m.fetched_at, m.title,
       c.content, m.headings, m.word_count, m.language, m.thin, m.content_hash,
       c.minhash, c.minhash_params, m.duplicate_of, m.duplicate_kind, m.duplicate_score,
       m.http_status, m.etag, m.last_modified, m.status, m.first_seen_at, m.last_seen_at,
       m.last_checked_at, m.last_changed_at, m.next_check_at
FROM page_meta m LEFT JOIN page_content c ON c.page_id = m.id
"""

_VERSIONS = """
CREATE TABLE page_versions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    page_id       INTEGER NOT NULL REFERENCES page_meta(id) ON DELETE CASCADE,
    content_hash  TEXT NOT NULL,
    title         TEXT,
    content       TEXT NOT NULL,
    fetched_at    TEXT NOT NULL,
    replaced_at   TEXT NOT NULL
)
"""

_RUNS = """
CREATE TABLE crawl_runs (
    id                         INTEGER PRIMARY KEY AUTOINCREMENT,
    spider                     TEXT NOT NULL,
    mode                       TEXT NOT NULL,
    sources                    TEXT NOT NULL,
    started_at                 TEXT NOT NULL,
    finished_at                TEXT,
    finish_reason              TEXT,
    candidates_discovered      INTEGER NOT NULL DEFAULT 0,
    conditional_requests_sent  INTEGER NOT NULL DEFAULT 0,
    responses_304              INTEGER NOT NULL DEFAULT 0,
    responses_200_changed      INTEGER NOT NULL DEFAULT 0,
    responses_200_unchanged    INTEGER NOT NULL DEFAULT 0,
    responses_404              INTEGER NOT NULL DEFAULT 0,
    responses_429              INTEGER NOT NULL DEFAULT 0,
    retries_scheduled          INTEGER NOT NULL DEFAULT 0,
    parse_failures             INTEGER NOT NULL DEFAULT 0,
    upserts_completed          INTEGER NOT NULL DEFAULT 0,
    duplicates_found           INTEGER NOT NULL DEFAULT 0,
    tombstones_created         INTEGER NOT NULL DEFAULT 0,
    pages_new                  INTEGER NOT NULL DEFAULT 0,
    quarantined                INTEGER NOT NULL DEFAULT 0,
    counters                   TEXT NOT NULL DEFAULT '{}'
)
"""

_QUARANTINE = """
CREATE TABLE quarantine (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id          INTEGER REFERENCES crawl_runs(id) ON DELETE SET NULL,
    source_id       TEXT,
    canonical_url   TEXT,
    url             TEXT,
    error           TEXT NOT NULL,
    record          TEXT NOT NULL,
    quarantined_at  TEXT NOT NULL
)
"""

# Runs say who ran them and how they ended. ``outcome`` is ``running`` until the
# run finishes (``finished``, ``interrupted``, ``failed``) or a later run finds its
# process gone (``abandoned``). Runs recorded before this migration get the
# outcome their finish reason implies; unfinished ones stay ``running`` (no pid
# or host to check them by).
_RUN_OUTCOMES = "('running', 'finished', 'interrupted', 'failed', 'abandoned')"

_RUNS_OUTCOME: tuple[str, ...] = (
    "ALTER TABLE crawl_runs ADD COLUMN job_id TEXT",
    "ALTER TABLE crawl_runs ADD COLUMN pid INTEGER",
    "ALTER TABLE crawl_runs ADD COLUMN host TEXT",
    "ALTER TABLE crawl_runs ADD COLUMN outcome TEXT NOT NULL DEFAULT 'running' "
    f"CHECK (outcome IN {_RUN_OUTCOMES})",
    "UPDATE crawl_runs SET outcome = CASE "
    "WHEN finished_at IS NULL THEN 'running' "
    "WHEN finish_reason = 'shutdown' THEN 'interrupted' ELSE 'finished' END",
    "CREATE INDEX idx_runs_outcome ON crawl_runs (outcome)",
)

# ``duplicate_of`` is set exactly when ``duplicate_kind`` is, and a score only with
# them. SQLite cannot add a CHECK to a table, so ``page_meta`` is rebuilt (ids
# kept, so every reference stays valid). A row whose pointer and kind disagree
# (one set, the other NULL), or whose pointer leads nowhere, loses all three:
# it becomes a representative, the one state that needs no guess, and the next
# crawl's deduplication decides it again. Deleting a representative unlinks its
# duplicates (pointer, kind and score) instead of leaving a kind without a pointer.
_PAGE_META_CHECKED = _PAGE_META.replace("CREATE TABLE page_meta (", "CREATE TABLE page_meta_new (")
_PAGE_META_CHECKED = _PAGE_META_CHECKED.replace(
    "    UNIQUE (source_id, canonical_url)\n",
    "    UNIQUE (source_id, canonical_url),\n"
    "    CHECK ((duplicate_of IS NULL) = (duplicate_kind IS NULL)),\n"
    "    CHECK (duplicate_of IS NOT NULL OR duplicate_score IS NULL)\n",
)
_META_COLUMNS = (
    "id, source_id, canonical_url, url, final_url, fetched_at, title, headings, word_count, "
    "language, thin, content_hash, duplicate_of, duplicate_kind, duplicate_score, http_status, "
    "etag, last_modified, status, first_seen_at, last_seen_at, last_checked_at, "
    "last_changed_at, next_check_at"
)
_CONSISTENT = (
    "duplicate_of IS NOT NULL AND duplicate_kind IS NOT NULL "
    "AND duplicate_of IN (SELECT id FROM page_meta)"
)
_PAGE_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_pages_last_seen ON page_meta (last_seen_at)",
    "CREATE INDEX idx_pages_fetched ON page_meta (fetched_at)",
    "CREATE INDEX idx_pages_hash ON page_meta (content_hash)",
    "CREATE INDEX idx_pages_due ON page_meta (source_id, next_check_at)",
    "CREATE INDEX idx_pages_duplicate_of ON page_meta (duplicate_of)",
)

_DUPLICATE_CHECK: tuple[str, ...] = (
    "DROP VIEW pages",
    _PAGE_META_CHECKED,
    f"INSERT INTO page_meta_new ({_META_COLUMNS}) SELECT "
    + _META_COLUMNS.replace(
        "duplicate_of, duplicate_kind, duplicate_score",
        f"CASE WHEN {_CONSISTENT} THEN duplicate_of END, "
        f"CASE WHEN {_CONSISTENT} THEN duplicate_kind END, "
        f"CASE WHEN {_CONSISTENT} THEN duplicate_score END",
    )
    + " FROM page_meta ORDER BY id",
    "DROP TABLE page_meta",
    "ALTER TABLE page_meta_new RENAME TO page_meta",
    *_PAGE_INDEXES,
    _PAGES_VIEW,
    "CREATE TRIGGER page_meta_unlink_duplicates BEFORE DELETE ON page_meta BEGIN "
    "UPDATE page_meta SET duplicate_of = NULL, duplicate_kind = NULL, duplicate_score = NULL "
    "WHERE duplicate_of = old.id; END",
)

# PostgreSQL adds the checks to the table in place (rows that disagree repaired first,
# as above) and unlinks a deleted representative's duplicates with a trigger function
# (its foreign key's ON DELETE SET NULL alone would clear the pointer, not the kind).
_DUPLICATE_CHECK_POSTGRES: tuple[str, ...] = (
    "UPDATE page_meta SET duplicate_of = NULL, duplicate_kind = NULL, duplicate_score = NULL "
    f"WHERE NOT ({_CONSISTENT}) AND (duplicate_of IS NOT NULL "
    "OR duplicate_kind IS NOT NULL OR duplicate_score IS NOT NULL)",
    "ALTER TABLE page_meta ADD CONSTRAINT page_meta_duplicate_kind "
    "CHECK ((duplicate_of IS NULL) = (duplicate_kind IS NULL))",
    "ALTER TABLE page_meta ADD CONSTRAINT page_meta_duplicate_score "
    "CHECK (duplicate_of IS NOT NULL OR duplicate_score IS NULL)",
    "CREATE FUNCTION page_meta_unlink_duplicates() RETURNS trigger LANGUAGE plpgsql "
    "SET search_path FROM CURRENT AS $$ BEGIN "
    "UPDATE page_meta SET duplicate_of = NULL, duplicate_kind = NULL, duplicate_score = NULL "
    "WHERE duplicate_of = OLD.id; RETURN OLD; END $$",
    "CREATE TRIGGER page_meta_unlink_duplicates BEFORE DELETE ON page_meta "
    "FOR EACH ROW EXECUTE FUNCTION page_meta_unlink_duplicates()",
)

# Incremental sync. A page remembers the link depth it was found at (a revisit
# follows its links with the same budget) and its revisit interval (seconds, adapted
# to how often it changes). ``checkpoints`` holds each source's discovery cursors
# (a sitemap lastmod high-water mark, an API's next page), written in the same
# transaction as the records they cover.
_SYNC: tuple[str, ...] = (
    "ALTER TABLE page_meta ADD COLUMN depth INTEGER NOT NULL DEFAULT 0 CHECK (depth >= 0)",
    "ALTER TABLE page_meta ADD COLUMN check_interval INTEGER CHECK (check_interval > 0)",
    "DROP VIEW pages",
    _PAGES_VIEW.replace("m.next_check_at\n", "m.next_check_at, m.depth, m.check_interval\n"),
    """CREATE TABLE checkpoints (
    source_id   TEXT NOT NULL,
    adapter     TEXT NOT NULL,
    cursor      TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    run_id      INTEGER REFERENCES crawl_runs(id) ON DELETE SET NULL,
    PRIMARY KEY (source_id, adapter)
)""",
)

# Discovered pages not yet stored: what a sitemap, feed or API page listed, written
# in the same transaction as the checkpoint that moves past it, and removed in the
# same transaction as the page's own record. A crawl killed in between finds them
# here and requests them again: a checkpoint never runs ahead of stored data.
_FRONTIER: tuple[str, ...] = (
    """CREATE TABLE frontier (
    source_id      TEXT NOT NULL,
    canonical_url  TEXT NOT NULL,
    url            TEXT NOT NULL,
    depth          INTEGER NOT NULL DEFAULT 0,
    adapter        TEXT NOT NULL,
    lastmod        TEXT,
    discovered_at  TEXT NOT NULL,
    run_id         INTEGER REFERENCES crawl_runs(id) ON DELETE SET NULL,
    PRIMARY KEY (source_id, canonical_url)
)""",
)

# Failures. Retry state lives apart from content: one row per page that failed
# and has not been fetched since (attempts, last error and status, next retry,
# dead-lettered or held for review). A page's own status moves through
# active -> suspected_missing -> tombstoned with its reason and evidence (the
# statuses and times that led there); the content is kept throughout.
_FAILURES: tuple[str, ...] = (
    """CREATE TABLE fetch_attempts (
    source_id         TEXT NOT NULL,
    canonical_url     TEXT NOT NULL,
    url               TEXT NOT NULL,
    depth             INTEGER NOT NULL DEFAULT 0,
    attempts          INTEGER NOT NULL CHECK (attempts >= 1),
    first_failed_at   TEXT NOT NULL,
    last_failed_at    TEXT NOT NULL,
    last_error        TEXT,
    last_status       INTEGER,
    next_retry_at     TEXT,
    dead_lettered_at  TEXT,
    needs_review      INTEGER NOT NULL DEFAULT 0 CHECK (needs_review IN (0, 1)),
    run_id            INTEGER REFERENCES crawl_runs(id) ON DELETE SET NULL,
    PRIMARY KEY (source_id, canonical_url)
)""",
    "CREATE INDEX idx_attempts_due ON fetch_attempts (next_retry_at)",
    "ALTER TABLE page_meta ADD COLUMN status_reason TEXT",
    "ALTER TABLE page_meta ADD COLUMN status_evidence TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE page_meta ADD COLUMN status_changed_at TEXT",
    "DROP VIEW pages",
    _PAGES_VIEW.replace(
        "m.next_check_at\n",
        "m.next_check_at, m.depth, m.check_interval, m.status_reason, m.status_evidence, "
        "m.status_changed_at\n",
    ),
)

# Passages: each page's content split by headings (transform.passages), rewritten with
# the content (or the page's title, kept here for the index) in the same transaction.
# ``seq`` is the full-text index's row id: an explicit INTEGER PRIMARY KEY, which VACUUM
# never renumbers.
_PASSAGES = (
    """CREATE TABLE passages (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    page_id       INTEGER NOT NULL REFERENCES page_meta(id) ON DELETE CASCADE,
    ord           INTEGER NOT NULL CHECK (ord >= 0),
    title         TEXT NOT NULL DEFAULT '',
    heading_path  TEXT NOT NULL DEFAULT '[]',
    content       TEXT NOT NULL,
    word_count    INTEGER NOT NULL DEFAULT 0 CHECK (word_count >= 0),
    UNIQUE (page_id, ord)
)""",
)

# SQLite's full-text index of the passages (FTS5, BM25 ranking): an external-content
# table over ``passages``, kept in step by triggers, so no text is stored twice.
_PASSAGES_FTS = (
    "CREATE VIRTUAL TABLE passages_fts USING fts5("
    "title, heading_path, content, content='passages', content_rowid='seq', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER passages_fts_insert AFTER INSERT ON passages BEGIN "
    "INSERT INTO passages_fts (rowid, title, heading_path, content) "
    "VALUES (new.seq, new.title, new.heading_path, new.content); END",
    "CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN "
    "INSERT INTO passages_fts (passages_fts, rowid, title, heading_path, content) "
    "VALUES ('delete', old.seq, old.title, old.heading_path, old.content); END",
    "CREATE TRIGGER passages_fts_update AFTER UPDATE ON passages BEGIN "
    "INSERT INTO passages_fts (passages_fts, rowid, title, heading_path, content) "
    "VALUES ('delete', old.seq, old.title, old.heading_path, old.content); "
    "INSERT INTO passages_fts (rowid, title, heading_path, content) "
    "VALUES (new.seq, new.title, new.heading_path, new.content); END",
)

#: PostgreSQL's text search configuration of the passages (stemming, stop words): the
#: index below is built with it, and queries must parse with the same one
POSTGRES_SEARCH_CONFIG = "english"

# PostgreSQL's full-text index of the passages: a stored, generated tsvector (title
# weighted A, the headings above the passage B, its text C, as SQLite's BM25 weighs
# them 3, 2, 1), computed by the database whenever a passage is written, and a GIN
# index over it. The column is the only one SQLite's ``passages`` lacks.
_PASSAGES_SEARCH_POSTGRES = (
    "ALTER TABLE passages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
    f"setweight(to_tsvector('{POSTGRES_SEARCH_CONFIG}'::regconfig, title), 'A') || "
    f"setweight(to_tsvector('{POSTGRES_SEARCH_CONFIG}'::regconfig, heading_path), 'B') || "
    f"setweight(to_tsvector('{POSTGRES_SEARCH_CONFIG}'::regconfig, content), 'C')) STORED",
    "CREATE INDEX idx_passages_search ON passages USING GIN (search_vector)",
)

# The raw archive (F-ARCHIVE): where the response behind a page's content is kept, a
# WARC file (relative to the archive folder) and the byte offset of its record. A page
# version keeps the location of the response its content came from.
_ARCHIVE: tuple[str, ...] = (
    "ALTER TABLE page_meta ADD COLUMN archive_file TEXT",
    "ALTER TABLE page_meta ADD COLUMN archive_offset INTEGER",
    "ALTER TABLE page_versions ADD COLUMN archive_file TEXT",
    "ALTER TABLE page_versions ADD COLUMN archive_offset INTEGER",
    "DROP VIEW pages",
    _PAGES_VIEW.replace(
        "m.next_check_at\n",
        "m.next_check_at, m.depth, m.check_interval, m.status_reason, m.status_evidence, "
        "m.status_changed_at, m.archive_file, m.archive_offset\n",
    ),
)

# What the change feed (``changes``) and incremental exports look up by time.
_CHANGE_FEED_INDEXES = (
    "CREATE INDEX idx_versions_replaced ON page_versions (replaced_at)",
    "CREATE INDEX idx_pages_first_seen ON page_meta (first_seen_at)",
    "CREATE INDEX idx_pages_status_changed ON page_meta (status_changed_at)",
    "CREATE INDEX idx_pages_last_changed ON page_meta (last_changed_at)",
)

# A per-site spider's extra fields (its ``extra_fields`` hook): one JSON object per page,
# rewritten with the metadata on every fetch, ``{}`` for a page without any.
_PAGE_EXTRA: tuple[str, ...] = (
    "ALTER TABLE page_meta ADD COLUMN extra TEXT NOT NULL DEFAULT '{}'",
    "DROP VIEW pages",
    _PAGES_VIEW.replace(
        "m.next_check_at\n",
        "m.next_check_at, m.depth, m.check_interval, m.status_reason, m.status_evidence, "
        "m.status_changed_at, m.archive_file, m.archive_offset, m.extra\n",
    ),
)

# The crawl state (SPEC F-STATE): every URL a source knows has a row, whatever
# happened to it. ``frontier`` holds the URLs not stored as pages: listed by a
# discovery adapter, found as a link on a stored page (``found_on``, in the page's
# own transaction), answered with a redirect to another page (``target``) or
# refused with a reason (not HTML, robots.txt, out of scope, ...), each due again
# at ``next_due_at`` (None: at once). A stored page that now redirects keeps its
# row and content, tombstoned, with ``redirect_to``. The ``urls`` view reads the
# three tables as one (stored pages, the frontier, failures of neither).
_URL_STATE: tuple[str, ...] = (
    "ALTER TABLE frontier ADD COLUMN state TEXT NOT NULL DEFAULT 'discovered' "
    "CHECK (state IN ('discovered', 'refused', 'redirected'))",
    "ALTER TABLE frontier ADD COLUMN reason TEXT",
    "ALTER TABLE frontier ADD COLUMN target TEXT",
    "ALTER TABLE frontier ADD COLUMN last_status INTEGER",
    "ALTER TABLE frontier ADD COLUMN found_on TEXT",
    "ALTER TABLE frontier ADD COLUMN checked_at TEXT",
    "ALTER TABLE frontier ADD COLUMN next_due_at TEXT",
    "CREATE INDEX idx_frontier_due ON frontier (source_id, next_due_at)",
    "ALTER TABLE page_meta ADD COLUMN redirect_to TEXT",
    "DROP VIEW pages",
    _PAGES_VIEW.replace(
        "m.next_check_at\n",
        "m.next_check_at, m.depth, m.check_interval, m.status_reason, m.status_evidence, "
        "m.status_changed_at, m.archive_file, m.archive_offset, m.extra, m.redirect_to\n",
    ),
    """CREATE VIEW urls AS
SELECT m.source_id, m.canonical_url, m.url,
       CASE WHEN m.redirect_to IS NOT NULL THEN 'redirected'
            WHEN m.status <> 'active' THEN m.status
            WHEN a.canonical_url IS NOT NULL THEN 'failed'
            WHEN m.last_checked_at > m.fetched_at THEN 'not_modified'
            ELSE 'fetched' END AS state,
       COALESCE(m.status_reason, a.last_error) AS reason, m.redirect_to AS target,
       COALESCE(a.last_status, m.http_status) AS last_status, m.depth, NULL AS found_on,
       m.first_seen_at AS discovered_at, m.last_checked_at AS checked_at,
       COALESCE(a.next_retry_at, m.next_check_at) AS next_due_at,
       a.attempts, a.dead_lettered_at
FROM page_meta m
LEFT JOIN fetch_attempts a ON a.source_id = m.source_id AND a.canonical_url = m.canonical_url
UNION ALL
SELECT f.source_id, f.canonical_url, f.url,
       CASE WHEN a.canonical_url IS NOT NULL THEN 'failed' ELSE f.state END,
       COALESCE(a.last_error, f.reason), f.target, COALESCE(a.last_status, f.last_status),
       f.depth, f.found_on, f.discovered_at, f.checked_at,
       COALESCE(a.next_retry_at, f.next_due_at), a.attempts, a.dead_lettered_at
FROM frontier f
LEFT JOIN fetch_attempts a ON a.source_id = f.source_id AND a.canonical_url = f.canonical_url
WHERE NOT EXISTS (SELECT 1 FROM page_meta p
                  WHERE p.source_id = f.source_id AND p.canonical_url = f.canonical_url)
UNION ALL
SELECT a.source_id, a.canonical_url, a.url, 'failed', a.last_error, NULL, a.last_status,
       a.depth, NULL, a.first_failed_at, a.last_failed_at, a.next_retry_at, a.attempts,
       a.dead_lettered_at
FROM fetch_attempts a
WHERE NOT EXISTS (SELECT 1 FROM page_meta p
                  WHERE p.source_id = a.source_id AND p.canonical_url = a.canonical_url)
  AND NOT EXISTS (SELECT 1 FROM frontier f
                  WHERE f.source_id = a.source_id AND f.canonical_url = a.canonical_url)""",
)

# Status events: every move of a page's status (suspected_missing, tombstoned, restored),
# with when, why, what its URL answered (NULL for a deletion signal such as a feed's
# deletion marker) and the evidence, written by the store in the transaction that moves
# the status. ``page_meta`` keeps the current status only; the changes feed and history
# read these, so a tombstone stays known once the page is back. A database written
# before this keeps the one move it knows of each page: its current status since
# ``status_changed_at`` (an active page with one was restored then).
_PAGE_EVENTS: tuple[str, ...] = (
    """CREATE TABLE page_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    page_id      INTEGER NOT NULL REFERENCES page_meta(id) ON DELETE CASCADE,
    at           TEXT NOT NULL,
    event        TEXT NOT NULL
                 CHECK (event IN ('suspected_missing', 'tombstoned', 'restored')),
    reason       TEXT,
    http_status  INTEGER,
    evidence     TEXT NOT NULL DEFAULT '[]',
    run_id       INTEGER REFERENCES crawl_runs(id) ON DELETE SET NULL
)""",
    "CREATE INDEX idx_events_page ON page_events (page_id, at)",
    "CREATE INDEX idx_events_at ON page_events (at)",
    "INSERT INTO page_events (page_id, at, event, reason, evidence) "
    "SELECT id, status_changed_at, "
    "CASE status WHEN 'active' THEN 'restored' ELSE status END, "
    "CASE status WHEN 'active' THEN NULL ELSE status_reason END, "
    "CASE status WHEN 'active' THEN '[]' ELSE status_evidence END "
    "FROM page_meta WHERE status_changed_at IS NOT NULL ORDER BY status_changed_at, id",
)

# Writer leases (F-STATE): one writer at a time per source. A row per (source, process)
# holding it: the holder (the process, or the shared crawl it is one process of), the
# process (token, host, pid), its run, and when it was taken, renewed and expires.
_LEASES: tuple[str, ...] = (
    """
CREATE TABLE leases (
    source_id    TEXT NOT NULL,
    token        TEXT NOT NULL,
    holder       TEXT NOT NULL,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    run_id       INTEGER,
    command      TEXT NOT NULL,
    acquired_at  TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    PRIMARY KEY (source_id, token)
)
""",
)

# Stored outlinks (F-STATE): the in-scope link targets of each stored page, by canonical
# URL, replaced when its content is written (new or changed, not on a 304), in the
# page's transaction. ``canonical``: the target is (also) what the page's
# ``rel=canonical`` names. They give representatives their inlink counts (the index)
# and a 304 page its links.
_OUTLINKS: tuple[str, ...] = (
    """
CREATE TABLE outlinks (
    source_id  TEXT NOT NULL,
    from_url   TEXT NOT NULL,
    to_url     TEXT NOT NULL,
    canonical  INTEGER NOT NULL DEFAULT 0 CHECK (canonical IN (0, 1)),
    PRIMARY KEY (source_id, from_url, to_url)
)
""",
    "CREATE INDEX idx_outlinks_to ON outlinks (source_id, to_url)",
)

# Parse failures (a junk 200 of a stored page: empty, binary, an error page) are kept with
# the page's retry state; their evidence is JSON text (``sync.junk``): each observation's
# time, status, reason, the answer's digest and where its response is archived.
_FAILURE_EVIDENCE: tuple[str, ...] = (
    "ALTER TABLE fetch_attempts ADD COLUMN evidence TEXT NOT NULL DEFAULT '[]'",
)

# The batches a store has committed, by id, written in each batch's own transaction where
# a commit can be uncertain (PostgreSQL: the connection may be lost while COMMIT's answer
# is on its way): a retry of the batch reads it before applying it again. Rows older than
# a day are pruned (``core.APPLIED_BATCHES_KEPT``).
_APPLIED_BATCHES: tuple[str, ...] = (
    """
CREATE TABLE applied_batches (
    batch_id    TEXT PRIMARY KEY,
    run_id      INTEGER,
    applied_at  TEXT NOT NULL
)
""",
    "CREATE INDEX idx_applied_batches_at ON applied_batches (applied_at)",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_pages_runs_quarantine",
        (
            _PAGE_META,
            *_PAGE_INDEXES,
            _PAGE_CONTENT,
            _PAGES_VIEW,
            _VERSIONS,
            "CREATE INDEX idx_versions_page ON page_versions (page_id, replaced_at)",
            _RUNS,
            _QUARANTINE,
            "CREATE TABLE dataset_meta ("
            " key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL)",
        ),
    ),
    Migration("0002_runs_outcome_job_pid_host", _RUNS_OUTCOME),
    Migration(
        "0003_page_meta_duplicate_check",
        _DUPLICATE_CHECK,
        rebuilds_table=True,
        postgres=_DUPLICATE_CHECK_POSTGRES,
    ),
    Migration("0004_sync_depth_interval_checkpoints", _SYNC),
    Migration("0005_frontier", _FRONTIER),
    Migration("0006_fetch_attempts_page_status", _FAILURES),
    Migration(
        "0007_passages",
        _PASSAGES,
        sqlite_only=_PASSAGES_FTS,
        postgres_only=_PASSAGES_SEARCH_POSTGRES,
    ),
    Migration("0008_archive", _ARCHIVE),
    Migration("0009_change_feed_indexes", _CHANGE_FEED_INDEXES),
    Migration("0010_page_extra", _PAGE_EXTRA),
    Migration("0011_url_state", _URL_STATE),
    Migration("0012_page_events", _PAGE_EVENTS),
    Migration("0013_leases", _LEASES),
    # the crawl state read a page at a time, shallowest first (frontier_due)
    Migration(
        "0014_frontier_scan",
        ("CREATE INDEX idx_frontier_scan ON frontier (source_id, depth, canonical_url)",),
    ),
    Migration("0015_outlinks", _OUTLINKS),
    Migration("0016_fetch_attempts_evidence", _FAILURE_EVIDENCE),
    Migration("0017_applied_batches", _APPLIED_BATCHES),
)


def pending_migrations(applied: Set[str], url: str) -> list[Migration]:
    """The migrations a database that records ``applied`` still needs, in order.

    Raises :class:`SchemaMismatchError` when it records one this code does not know:
    a newer version wrote it.
    """
    unknown = sorted(applied - {m.name for m in MIGRATIONS})
    if unknown:
        raise SchemaMismatchError(
            f"{url} was written by a newer knowledge_crawler "
            f"(unknown migrations: {', '.join(unknown)})"
        )
    return [m for m in MIGRATIONS if m.name not in applied]


def check_schema(applied: Set[str] | None, name: str) -> None:
    """For a reader, which never migrates: :class:`SchemaMismatchError` unless the
    database (``name``: its path, or URL without password) records exactly this
    code's migrations. ``applied`` None: it has no ``schema_migrations`` at all."""
    if applied is None:
        raise SchemaMismatchError(
            f"{name} holds no knowledge_crawler dataset (no schema_migrations table; crawl first)"
        )
    pending = pending_migrations(applied, name)  # raises for a newer schema
    if pending:
        names = ", ".join(m.name for m in pending)
        raise SchemaMismatchError(
            f"{name} has an older schema than this knowledge_crawler (missing migrations: "
            f"{names}); readers never migrate: run a crawl with this version on it to "
            "upgrade it"
        )
