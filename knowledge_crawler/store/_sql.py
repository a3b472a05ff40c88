"""The SQL every backend runs as it is: written once, in the dialect SQLite and
PostgreSQL share, with SQLite's placeholders (a dialect turns them into its driver's).

A parameter whose type the statement does not tell (``:until IS NULL``) is cast, as
PostgreSQL needs; the casts are to text, which SQLite reads as they are. Statements
that differ per database live in the dialects.
"""

from __future__ import annotations

__all__ = [
    "ADVANCE",
    "CHANGES",
    "COUNT_RUN",
    "DROP_OUTLINKS",
    "EVENT",
    "EXPORT",
    "EXPORT_PASSAGES",
    "FAILURE",
    "FRONTIER_ADD",
    "PAGE_COLUMNS",
    "PUT_OUTLINK",
    "REDIRECT_PAGE",
    "SAVE_VERSIONS",
    "SET_DUPLICATE",
    "SET_PAGE",
    "STATUS",
    "TAKE_LEASE",
    "TOUCH",
    "UPDATE_PAGE",
    "URL_OUTCOME",
]

#: the columns a new page's row is written with, in order
PAGE_COLUMNS = (
    "source_id, canonical_url, url, final_url, fetched_at, title, headings, "
    "word_count, language, thin, content_hash, "
    "duplicate_of, duplicate_kind, duplicate_score, http_status, etag, last_modified, status, "
    "first_seen_at, last_seen_at, last_checked_at, last_changed_at, next_check_at, "
    "check_interval, depth, archive_file, archive_offset, extra"
)

#: a page's stored outlinks, before its new ones are written (``(source_id, from_url)``)
DROP_OUTLINKS = "DELETE FROM outlinks WHERE source_id = ? AND from_url = ?"
#: one outlink row (``core.outlink_rows``)
PUT_OUTLINK = "INSERT INTO outlinks (source_id, from_url, to_url, canonical) VALUES (?, ?, ?, ?)"

# What a record sets on its stored page's row (``m``; ``d``: its representative, NULL for
# none). Metadata is rewritten on every visit; ``last_changed_at`` moves only with the
# hash. ``{s}`` is where the record's values come from: a statement's parameters (``:``)
# or a staging table (``s.``).
SET_PAGE = """
    url             = {s}url,
    final_url       = {s}final_url,
    fetched_at      = {s}fetched_at,
    title           = {s}title,
    headings        = {s}headings,
    word_count      = {s}word_count,
    language        = {s}language,
    thin            = {s}thin,
    last_changed_at = CASE WHEN m.content_hash = {s}content_hash THEN m.last_changed_at
                           ELSE COALESCE({s}changed_at, {s}fetched_at) END,
    content_hash    = {s}content_hash,
    duplicate_of    = d.id,
    duplicate_kind  = CASE WHEN d.id IS NOT NULL THEN {s}duplicate_kind END,
    duplicate_score = CASE WHEN d.id IS NOT NULL THEN {s}duplicate_score END,
    http_status     = {s}http_status,
    etag            = {s}etag,
    last_modified   = {s}last_modified,
    status_changed_at = CASE WHEN m.status = 'active' OR {s}reextracted
                             THEN m.status_changed_at ELSE {s}fetched_at END,
    status          = CASE WHEN {s}reextracted THEN m.status ELSE 'active' END,
    status_reason   = CASE WHEN {s}reextracted THEN m.status_reason END,
    status_evidence = CASE WHEN {s}reextracted THEN m.status_evidence ELSE '[]' END,
    redirect_to     = CASE WHEN {s}reextracted THEN m.redirect_to END,
    last_seen_at    = CASE WHEN {s}reextracted THEN m.last_seen_at ELSE {s}fetched_at END,
    last_checked_at = CASE WHEN {s}reextracted THEN m.last_checked_at ELSE {s}fetched_at END,
    next_check_at   = {s}next_check_at,
    check_interval  = COALESCE({s}check_interval, m.check_interval),
    depth           = CASE WHEN {s}depth < m.depth THEN {s}depth ELSE m.depth END,
    -- the response the stored content came from: this fetch's, unless it has none and
    -- the content did not move (then the stored record still holds that content)
    archive_file    = CASE WHEN {s}archive_file IS NULL AND m.content_hash = {s}content_hash
                           THEN m.archive_file ELSE {s}archive_file END,
    archive_offset  = CASE WHEN {s}archive_file IS NULL AND m.content_hash = {s}content_hash
                           THEN m.archive_offset ELSE {s}archive_offset END,
    -- a spider's extra fields, from this fetch; a re-extraction has none of its own
    extra           = CASE WHEN {s}reextracted THEN m.extra ELSE {s}extra END
    -- first_seen_at is deliberately absent: set once, never updated
"""

#: one stored page's row, from one record's parameters
UPDATE_PAGE = (
    "UPDATE page_meta AS m SET "
    + SET_PAGE.format(s=":")
    + " FROM (SELECT (SELECT id FROM page_meta WHERE source_id = :dup_source "
    "AND canonical_url = :dup_url) AS id) AS d "
    "WHERE m.source_id = :source_id AND m.canonical_url = :canonical_url"
)

# The previous content of changed pages, before it is rewritten (``{ids}``: which).
SAVE_VERSIONS = """
INSERT INTO page_versions (page_id, content_hash, title, content, fetched_at, replaced_at,
                           archive_file, archive_offset)
SELECT id, content_hash, title, content, fetched_at, ?, archive_file, archive_offset
FROM pages WHERE id {ids} ORDER BY id
"""

# A 304: times, validators (a validator the response did not repeat stays) and the next
# check; never content, hash or last_changed_at. A page that was missing is back: the
# stored response (a 200) holds again, and that is its status.
TOUCH = """
UPDATE page_meta SET
    status_changed_at = CASE WHEN status = 'active' THEN status_changed_at
                             ELSE CAST(:checked_at AS TEXT) END,
    http_status     = CASE WHEN status = 'active' THEN http_status ELSE 200 END,
    status          = 'active',
    status_reason   = NULL,
    status_evidence = '[]',
    redirect_to     = NULL,
    last_seen_at    = :checked_at,
    last_checked_at = :checked_at,
    etag            = COALESCE(CAST(:etag AS TEXT), etag),
    last_modified   = COALESCE(CAST(:last_modified AS TEXT), last_modified),
    next_check_at   = COALESCE(CAST(:next_check_at AS TEXT), next_check_at),
    check_interval  = COALESCE(:check_interval, check_interval)
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

# A discovered page, unless it was checked since it was discovered (then it is stored);
# a link or a redirect's target, unless it is stored at all (the stored pages are all
# revalidated: a listing's newer lastmod is what may call one again). Found again at a
# smaller depth (a shorter link path): that depth.
FRONTIER_ADD = """
INSERT INTO frontier (source_id, canonical_url, url, depth, adapter, lastmod, discovered_at,
                      run_id, found_on)
SELECT CAST(:source_id AS TEXT), CAST(:canonical_url AS TEXT), :url, :depth, :adapter,
       :lastmod, CAST(:discovered_at AS TEXT), :run_id, :found_on
WHERE NOT EXISTS (SELECT 1 FROM page_meta
                  WHERE source_id = CAST(:source_id AS TEXT)
                    AND canonical_url = CAST(:canonical_url AS TEXT)
                    AND (last_checked_at >= CAST(:discovered_at AS TEXT)
                         OR CAST(:adapter AS TEXT) IN ('link', 'redirect')))
ON CONFLICT (source_id, canonical_url) DO UPDATE SET depth = excluded.depth
WHERE excluded.depth < frontier.depth
"""

# A URL not stored as a page that answered with a redirect or was refused: its frontier
# row says so, and when it is due again.
URL_OUTCOME = """
INSERT INTO frontier (source_id, canonical_url, url, depth, adapter, discovered_at, run_id,
                      state, reason, target, last_status, checked_at, next_due_at)
VALUES (:source_id, :canonical_url, :url, :depth, 'fetch', :checked_at, :run_id,
        :state, :reason, :target, :status, :checked_at, :next_due_at)
ON CONFLICT (source_id, canonical_url) DO UPDATE SET
    state       = excluded.state,
    reason      = excluded.reason,
    target      = excluded.target,
    last_status = excluded.last_status,
    checked_at  = excluded.checked_at,
    next_due_at = excluded.next_due_at,
    run_id      = excluded.run_id
"""

# A stored page that now answers with a redirect: tombstoned (its content kept) with
# where it leads, checked again at ``next_due_at`` at its own URL, without validators
# (those it had were its content's).
REDIRECT_PAGE = """
UPDATE page_meta SET
    status_changed_at = CASE WHEN status = 'tombstoned' AND redirect_to IS NOT NULL
                             THEN status_changed_at ELSE CAST(:checked_at AS TEXT) END,
    status          = 'tombstoned',
    status_reason   = :reason,
    status_evidence = '[]',
    redirect_to     = :target,
    http_status     = :status,
    etag            = NULL,
    last_modified   = NULL,
    final_url       = url,
    last_checked_at = :checked_at,
    next_check_at   = COALESCE(CAST(:next_due_at AS TEXT), next_check_at)
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

FAILURE = """
INSERT INTO fetch_attempts (
    source_id, canonical_url, url, depth, attempts, first_failed_at, last_failed_at,
    last_error, last_status, next_retry_at, dead_lettered_at, needs_review, run_id, evidence
) VALUES (
    :source_id, :canonical_url, :url, :depth, :attempts, :first_failed_at, :failed_at,
    :last_error, :last_status, :next_retry_at, :dead_lettered_at, :needs_review, :run_id,
    :evidence
)
ON CONFLICT (source_id, canonical_url) DO UPDATE SET
    url = excluded.url, depth = excluded.depth, attempts = excluded.attempts,
    first_failed_at = excluded.first_failed_at, last_failed_at = excluded.last_failed_at,
    last_error = excluded.last_error, last_status = excluded.last_status,
    next_retry_at = excluded.next_retry_at, dead_lettered_at = excluded.dead_lettered_at,
    needs_review = excluded.needs_review, run_id = excluded.run_id,
    evidence = excluded.evidence
"""

# A stored page's status moves; its content stays. Checked now, not seen. Its URL's
# answer (none for a deletion signal) and the next check, when given, replace the stored.
STATUS = """
UPDATE page_meta SET
    status = :status, status_reason = :reason, status_evidence = :evidence,
    status_changed_at = CASE WHEN status = :status THEN status_changed_at
                             ELSE CAST(:checked_at AS TEXT) END,
    http_status = COALESCE(:http_status, http_status),
    next_check_at = COALESCE(CAST(:next_check_at AS TEXT), next_check_at),
    last_checked_at = :checked_at
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

# One move of a page's status (``page_events``), in the transaction that makes it.
EVENT = """
INSERT INTO page_events (page_id, at, event, reason, http_status, evidence, run_id)
VALUES (:page_id, :at, :event, :reason, :http_status, :evidence, :run_id)
"""

ADVANCE = """
INSERT INTO checkpoints (source_id, adapter, cursor, updated_at, run_id)
VALUES (:source_id, :adapter, :cursor, :updated_at, :run_id)
ON CONFLICT (source_id, adapter) DO UPDATE SET
    cursor = excluded.cursor, updated_at = excluded.updated_at, run_id = excluded.run_id
"""

# A process's writer lease on a source, taken or renewed (``acquired_at`` stays); the run
# once known stays named.
TAKE_LEASE = """
INSERT INTO leases (source_id, token, holder, host, pid, run_id, command, acquired_at,
                    heartbeat_at, expires_at)
VALUES (:source_id, :token, :holder, :host, :pid, :run_id, :command, :now, :now, :expires_at)
ON CONFLICT (source_id, token) DO UPDATE SET
    heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at,
    run_id = COALESCE(excluded.run_id, leases.run_id)
"""

SET_DUPLICATE = """
UPDATE page_meta SET
    duplicate_of = (SELECT id FROM page_meta
                    WHERE source_id = :dup_source AND canonical_url = :dup_url),
    duplicate_kind = CAST(:kind AS TEXT),
    duplicate_score = :score
WHERE source_id = :source_id AND canonical_url = :canonical_url
"""

# Each committed batch adds what it did to its run, in the same transaction.
COUNT_RUN = """
UPDATE crawl_runs SET
    upserts_completed       = upserts_completed + :loaded,
    pages_new               = pages_new + :inserted,
    responses_200_changed   = responses_200_changed + :changed,
    responses_200_unchanged = responses_200_unchanged + :unchanged,
    responses_304           = responses_304 + :touched,
    tombstones_created      = tombstones_created + :tombstones,
    quarantined             = quarantined + :quarantined
WHERE id = :run_id
"""

# What happened in a window, oldest first: small rows (no text), sorted by the database;
# the texts of a change are read entry by entry. Ties: new before changed before a status.
# Status moves come from ``page_events`` (every one, in order), but for suspected_missing,
# which is no change of the page yet (it is listed when tombstoned, or restored).
CHANGES = """
SELECT e.kind, e.time, e.page_id, e.version_id, m.source_id, m.canonical_url,
       m.final_url AS url, m.title, m.content_hash, e.reason
FROM (
    SELECT 0 AS rank, 'new' AS kind, first_seen_at AS time, id AS page_id,
           CAST(NULL AS BIGINT) AS version_id, CAST(NULL AS TEXT) AS reason
    FROM page_meta
    WHERE first_seen_at >= CAST(:since AS TEXT)
      AND (CAST(:until AS TEXT) IS NULL OR first_seen_at < CAST(:until AS TEXT))
    UNION ALL
    SELECT 1, 'changed', replaced_at, page_id, id, NULL
    FROM page_versions
    WHERE replaced_at >= CAST(:since AS TEXT)
      AND (CAST(:until AS TEXT) IS NULL OR replaced_at < CAST(:until AS TEXT))
    UNION ALL
    SELECT 2, event, at, page_id, id, reason
    FROM page_events
    WHERE event <> 'suspected_missing'
      AND at >= CAST(:since AS TEXT)
      AND (CAST(:until AS TEXT) IS NULL OR at < CAST(:until AS TEXT))
) e JOIN page_meta m ON m.id = e.page_id
WHERE CAST(:source AS TEXT) IS NULL OR m.source_id = CAST(:source AS TEXT)
ORDER BY e.time, e.rank, e.page_id, e.version_id
"""

_EXPORT_FILTER = """
WHERE (CAST(:since AS TEXT) IS NULL OR p.last_changed_at >= CAST(:since AS TEXT)
       OR p.status_changed_at >= CAST(:since AS TEXT))
  AND (CAST(:source AS TEXT) IS NULL OR p.source_id = CAST(:source AS TEXT))
  AND (:duplicates = 1 OR p.duplicate_of IS NULL)
  AND (:tombstoned = 1 OR p.status <> 'tombstoned')
"""

# One page per row with its provenance, in storage order.
EXPORT = f"""
SELECT p.source_id, p.canonical_url, p.url, p.final_url, p.title, p.content, p.content_hash,
       p.language, p.word_count, p.headings, p.fetched_at, p.last_changed_at,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) + 1 AS version,
       p.status, r.canonical_url AS duplicate_of, p.extra
FROM pages p LEFT JOIN page_meta r ON r.id = p.duplicate_of
{_EXPORT_FILTER}
ORDER BY p.id
"""

# One row per passage, with its page's provenance; the same filters as EXPORT.
EXPORT_PASSAGES = f"""
SELECT s.id AS passage_id, s.ord, s.heading_path, s.content, s.word_count,
       p.source_id, p.canonical_url, p.final_url AS url, p.title,
       p.content_hash AS page_content_hash, p.fetched_at, p.last_changed_at,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = p.id) + 1 AS version,
       p.status, r.canonical_url AS duplicate_of
FROM pages p JOIN passages s ON s.page_id = p.id
LEFT JOIN page_meta r ON r.id = p.duplicate_of
{_EXPORT_FILTER}
ORDER BY p.id, s.ord
"""
