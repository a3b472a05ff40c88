"""``knowledge-crawler browse``: the database in Datasette, read-only, with canned queries.

Datasette is an optional extra (``pip install 'knowledge-crawler[browse]'``). The
database is served in Datasette's mutable mode, whose connections are opened
read-only (``mode=ro``): unlike immutable mode (``-i``), that stays correct while
a crawl writes to the same file (SQLite WAL) and does not hash the whole file
first. A file in a folder that cannot be written (a read-only snapshot), which
``mode=ro`` cannot open, is served in immutable mode, as the store opened it.
Every query, canned or typed, reads; none can write.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import signal
import socket
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import click

from knowledge_crawler.cli._common import BadInput, database_option, open_existing_store

__all__ = ["CANNED_QUERIES", "browse", "datasette_metadata"]

#: what to install when Datasette is missing
EXTRA = "pip install 'knowledge-crawler[browse]'"

#: the sanity checks' "not seen for" threshold, as ``knowledge-crawler stats`` has it
STALE_DAYS = 7
_STALE_BEFORE = f"strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-{STALE_DAYS} days')"

_IDENTITIES = "(SELECT COUNT(*) FROM (SELECT DISTINCT source_id, canonical_url FROM page_meta))"
_ROWS = "(SELECT COUNT(*) FROM page_meta)"
_SHARED = (
    "(SELECT COUNT(*) FROM (SELECT 1 FROM page_meta GROUP BY content_hash HAVING COUNT(*) > 1))"
)
_STALE = (
    f"(SELECT COUNT(*) FROM page_meta WHERE last_seen_at < {_STALE_BEFORE} "
    "AND status != 'tombstoned')"
)
_CHAINED_FROM = (
    "FROM page_meta d JOIN page_meta r ON r.id = d.duplicate_of "
    "JOIN page_meta rr ON rr.id = r.duplicate_of"
)
_CHAINED = f"(SELECT COUNT(*) {_CHAINED_FROM})"

#: name -> Datasette canned query (title, description, sql); every one only reads
CANNED_QUERIES: dict[str, dict[str, Any]] = {
    "sanity_checks": {
        "title": "Sanity checks",
        "description": (
            "What `knowledge-crawler stats` checks: rows equal distinct (source, canonical "
            "URL) identities; content hashes shared by several URLs (duplicates, or a URL "
            f"normalisation bug); pages not seen for {STALE_DAYS} days; duplicates whose "
            "representative is itself a duplicate. shared_content, stale_pages and "
            "chained_duplicates list the pages behind each count."
        ),
        "hide_sql": True,
        "sql": f"""
SELECT 'rows = distinct identities' AS sanity_check,
       {_ROWS} || ' = ' || {_IDENTITIES} AS value,
       CASE WHEN {_ROWS} = {_IDENTITIES} THEN 'ok'
            ELSE 'MISMATCH: URL normalisation leaked' END AS verdict
UNION ALL
SELECT 'content hashes under several URLs', {_SHARED},
       CASE WHEN {_SHARED} = 0 THEN 'ok'
            ELSE 'see shared_content: exact duplicates, or a normalisation bug' END
UNION ALL
SELECT 'pages not seen in {STALE_DAYS} days', {_STALE},
       CASE WHEN {_STALE} = 0 THEN 'ok' ELSE 'see stale_pages' END
UNION ALL
SELECT 'duplicates of duplicates', {_CHAINED},
       CASE WHEN {_CHAINED} = 0 THEN 'ok'
            ELSE 'MISMATCH: a representative is itself a duplicate' END
""".strip(),
    },
    "shared_content": {
        "title": "One content under several URLs",
        "description": "Content hashes stored under more than one URL, most URLs first.",
        "sql": """
SELECT content_hash, COUNT(*) AS urls, GROUP_CONCAT(final_url, ' ') AS fetched_urls,
       GROUP_CONCAT(canonical_url, ' ') AS canonical_urls
FROM page_meta GROUP BY content_hash HAVING COUNT(*) > 1
ORDER BY urls DESC, content_hash
""".strip(),
    },
    "stale_pages": {
        "title": f"Pages not seen in {STALE_DAYS} days",
        "description": (
            "Pages (not tombstoned) no crawl has seen lately, least recently seen first."
        ),
        "sql": f"""
SELECT source_id, final_url AS url, canonical_url, status, last_seen_at, last_checked_at,
       next_check_at
FROM page_meta WHERE last_seen_at < {_STALE_BEFORE} AND status != 'tombstoned'
ORDER BY last_seen_at
""".strip(),
    },
    "chained_duplicates": {
        "title": "Duplicates of duplicates",
        "description": "Pages whose representative is itself marked a duplicate (should be none).",
        "sql": f"""
SELECT d.source_id, d.final_url AS url, r.final_url AS duplicate_of_url,
       rr.final_url AS its_duplicate_of_url, d.canonical_url, r.canonical_url AS duplicate_of,
       rr.canonical_url AS its_duplicate_of
{_CHAINED_FROM} ORDER BY d.id
""".strip(),
    },
    "recent_changes": {
        "title": "Recent changes",
        "description": (
            "Every stored change of a page's content, newest first: the version replaced "
            "(page_versions) and the page as it is now. `knowledge-crawler changes` shows "
            "the diffs."
        ),
        "sql": """
SELECT v.replaced_at AS changed_at, m.source_id, m.final_url AS url, m.canonical_url, m.title,
       v.fetched_at AS previous_fetched_at, v.content_hash AS previous_content_hash,
       m.content_hash AS current_content_hash, m.last_changed_at, m.status
FROM page_versions v JOIN page_meta m ON m.id = v.page_id
ORDER BY v.replaced_at DESC, v.id DESC
LIMIT 1000
""".strip(),
    },
    "dead_letters": {
        "title": "Dead letters",
        "description": (
            "Pages whose retries ran out (dead_lettered_at) or that wait for review "
            "(401/403), oldest first, as `knowledge-crawler dead-letters` lists them."
        ),
        "sql": """
SELECT source_id, canonical_url, url, attempts, last_status, last_error,
       first_failed_at, last_failed_at, dead_lettered_at, needs_review
FROM fetch_attempts WHERE dead_lettered_at IS NOT NULL OR needs_review = 1
ORDER BY COALESCE(dead_lettered_at, last_failed_at), rowid
""".strip(),
    },
    "search": {
        "title": "Search passages",
        "description": (
            "Full-text search over passages, best first (BM25: a match in the title counts "
            "three times, in the headings twice), leaving out duplicate and tombstoned "
            'pages. q is SQLite FTS5 syntax: words, "phrases", OR, NOT, prefix*. '
            "An empty q finds nothing. `knowledge-crawler search` takes plain text."
        ),
        "sql": """
SELECT m.title, m.final_url AS url, p.heading_path,
       round(-bm25(passages_fts, 3.0, 2.0, 1.0), 2) AS score,
       snippet(passages_fts, 2, '**', '**', '…', 24) AS snippet,
       m.source_id, m.canonical_url, p.id AS passage_id
FROM passages_fts
JOIN passages p ON p.seq = passages_fts.rowid
JOIN page_meta m ON m.id = p.page_id
WHERE passages_fts MATCH coalesce(nullif(trim(:q), ''), '""')
  AND m.duplicate_of IS NULL
  AND m.status <> 'tombstoned'
ORDER BY bm25(passages_fts, 3.0, 2.0, 1.0), p.id
LIMIT 50
""".strip(),
    },
}


def datasette_metadata(name: str, path: str) -> dict[str, Any]:
    """Datasette metadata for the database ``name`` (file ``path``): title and canned queries."""
    return {
        "title": f"knowledge_crawler: {path}",
        "description": (
            "The crawled pages (the pages view), their versions, passages and runs, read-only. "
            "The canned queries run the sanity checks, list recent changes and dead letters, "
            "and search the passages."
        ),
        "databases": {name: {"queries": CANNED_QUERIES}},
    }


def _sqlite_path(url: str) -> str:
    if not url.startswith("sqlite:///"):
        from knowledge_crawler.store.base import display_url

        shown = display_url(url)
        raise BadInput(f"browse needs a SQLite database (sqlite:///PATH), not {shown!r}")
    path = url[len("sqlite:///") :]
    if path == ":memory:":
        raise BadInput("browse needs a database file, not sqlite:///:memory:")
    return path


def _free_port(host: str, port: int) -> int:
    """``port`` once checked free on ``host`` (0: a free one); BadInput when it is taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise BadInput(f"--host {host}: {exc.strerror}") from None
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise BadInput(
                f"cannot listen on {host}:{port}: {exc.strerror} (try --port N)"
            ) from None
        return int(sock.getsockname()[1])


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@click.command("browse")
@database_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8001,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option("--no-open", is_flag=True, help="Do not open a web browser.")
def browse(database: str, host: str, port: int, no_open: bool) -> None:
    """Open the database in Datasette, read-only, until Ctrl-C.

    Every table and the pages view can be browsed, filtered, faceted and
    queried with SQL (Datasette opens the file read-only, so a crawl may
    keep writing to it). Canned queries, on the database's page:

    \b
    sanity_checks       what `stats` checks, each with ok or a verdict
    shared_content      content hashes stored under several URLs
    stale_pages         pages not seen in 7 days
    chained_duplicates  duplicates whose representative is a duplicate
    recent_changes      content changes (page_versions), newest first
    dead_letters        pages whose retries ran out or wait for review
    search              full-text search of passages (?q=, FTS5 syntax)

    Each also answers as JSON at /DB/QUERY.json. Needs the browse extra:
    pip install 'knowledge-crawler[browse]'.
    """
    if importlib.util.find_spec("datasette") is None:
        raise BadInput(f"browse needs Datasette, which is not installed: {EXTRA}")
    path = _sqlite_path(database)
    # Fails as every command does on a missing or unreadable file, or on a schema older
    # than the canned queries'; learns whether the file can only be read immutable.
    store = open_existing_store(database)
    immutable = bool(getattr(store.db, "immutable", False))
    store.close()
    port = _free_port(host, port)

    from datasette.cli import serve
    from datasette.plugins import pm
    from datasette.utils import tilde_encode

    from knowledge_crawler.cli import _datasette_views

    if not pm.is_registered(_datasette_views):
        pm.register(_datasette_views, name="knowledge_crawler_views")

    name = Path(path).stem
    url = f"http://{host}:{port}/{tilde_encode(name)}"
    click.echo(f"Datasette on {url}  (sanity checks: {url}/sanity_checks; Ctrl-C stops it)")
    # uvicorn handles SIGINT and SIGTERM itself, shuts down, then raises the signal again:
    # let a SIGTERM end here too, like Ctrl-C, so that the metadata folder is removed.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with tempfile.TemporaryDirectory(prefix="kc-browse-") as tmp:
            metadata = Path(tmp, "metadata.json")
            metadata.write_text(json.dumps(datasette_metadata(name, path)), encoding="utf-8")
            # On a read-only filesystem, where mode=ro cannot open a WAL file, Datasette's
            # immutable mode (-i) reads it as the store did.
            args = ["-i", path] if immutable else [path]
            args += ["--metadata", str(metadata), "--host", host, "--port", str(port)]
            args += ["--setting", "sql_time_limit_ms", "5000"]
            if not no_open:
                args.append("--open")
            serve.main(args=args, prog_name="datasette", standalone_mode=False)
    except KeyboardInterrupt:
        pass
    except click.ClickException as exc:
        raise BadInput(f"datasette: {exc.format_message()}") from None
    finally:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)
