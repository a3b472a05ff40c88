"""The dataset served to agents over the Model Context Protocol: ``knowledge-crawler mcp``.

Three read-only tools over one open store: ``search`` (the passages that best
answer a question), ``get_page`` (a stored page by URL, with its versions) and
``changes`` (what was new, changed or tombstoned since a time). They mean what
``knowledge-crawler search``, ``history`` and ``changes --json`` mean.

This module imports the MCP SDK (``mcp`` 2.x); only the ``mcp`` command imports
it, once it has checked that the SDK is there. The tools' work is done by plain
methods of :class:`DatasetTools` over a store, callable without a protocol.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sqlite3
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from knowledge_crawler import __version__
from knowledge_crawler.cli._common import change_diff, url_identities

__all__ = ["INSTRUCTIONS", "DatasetTools", "build_server"]

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
A knowledge dataset crawled from websites: pages as markdown, split into passages,
with every earlier version of a page kept. Use `search` to find the passages that
answer a question (cite their `url`), `get_page` to read a whole page, and `changes`
to see what is new, changed or gone since a time. Everything is read-only."""

_READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

#: a page's row, with its representative's URL and how many earlier versions it has
_PAGE = """
SELECT m.id, m.source_id, m.canonical_url, m.url, m.final_url, m.title, c.content,
       m.content_hash, m.word_count, m.language, m.http_status, m.fetched_at,
       m.first_seen_at, m.last_seen_at, m.last_changed_at, m.status, m.status_reason,
       r.canonical_url AS duplicate_of, m.duplicate_kind,
       (SELECT COUNT(*) FROM page_versions v WHERE v.page_id = m.id) AS earlier_versions
FROM page_meta m
LEFT JOIN page_content c ON c.page_id = m.id
LEFT JOIN page_meta r ON r.id = m.duplicate_of
"""

_PREVIOUS_VERSIONS = """
SELECT content_hash, title, fetched_at, replaced_at, content FROM page_versions
WHERE page_id = ? ORDER BY replaced_at DESC, id DESC
"""


@contextlib.contextmanager
def _store_call(what: str) -> Iterator[None]:
    """Turn a store failure (locked past its timeout, I/O) into a tool error naming it."""
    from knowledge_crawler.errors import KcError

    try:
        yield
    except (KcError, sqlite3.Error) as exc:
        log.warning("%s failed: %s", what, exc)
        raise ToolError(f"{what} failed: {exc} (the database may be busy: try again)") from None


class DatasetTools:
    """The three tools, as plain methods over an open store.

    ``search`` and ``changes`` go through the :class:`~knowledge_crawler.store.Store`
    contract; ``get_page`` reads the page tables with ``store.query`` (SQL that SQLite
    and PostgreSQL both read).
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def search(
        self,
        query: str,
        k: int = 10,
        source: str | None = None,
        all_words: bool = False,
    ) -> dict[str, Any]:
        from knowledge_crawler.transform.query import query_terms

        terms = query_terms(query).items
        if not terms:
            raise ToolError(f"nothing to search for in {query!r}: it has no words")
        with _store_call("search"):
            passages = self.store.search(terms, require_all=all_words, k=k, source_id=source)
            unindexed = self.store.pages_without_passages() if not passages else 0
        result: dict[str, Any] = {
            "query": query,
            "searched_for": [" ".join(term) for term in terms],
            "all_words": all_words,
            "passages": passages,
        }
        if not passages:
            note = "no passage matches"
            if all_words and len(terms) > 1:
                note += "; try all_words=false to match any of the words"
            if source is not None:
                note += f" in source {source!r}"
            if unindexed:
                note += f" ({unindexed} stored pages have no passages yet)"
            result["note"] = note
        return result

    def get_page(
        self, url: str, source: str | None = None, include_versions: bool = False
    ) -> dict[str, Any]:
        row = self._page_row(url, source)
        if row is None:
            where = f" in source {source!r}" if source else ""
            raise ToolError(
                f"no stored page for {url}{where}: use search to find the URLs the dataset has"
            )
        page = dict(row)
        page_id = page.pop("id")
        earlier = page.pop("earlier_versions")
        page["versions"] = earlier + 1
        with _store_call("get_page"):
            others = [
                r["source_id"]
                for r in self.store.query(
                    "SELECT source_id FROM page_meta WHERE canonical_url = ? AND source_id <> ? "
                    "ORDER BY source_id",
                    (page["canonical_url"], page["source_id"]),
                )
            ]
            if include_versions:
                page["previous_versions"] = [
                    dict(v) for v in self.store.query(_PREVIOUS_VERSIONS, (page_id,))
                ]
        if others and source is None:
            page["also_in_sources"] = others
        return page

    def _page_row(self, url: str, source: str | None) -> Any:
        by_source = " AND m.source_id = ?" if source is not None else ""
        extra: tuple[str, ...] = (source,) if source is not None else ()
        with _store_call("get_page"):
            for identity in url_identities(url):
                rows = self.store.query(
                    f"{_PAGE} WHERE m.canonical_url = ?{by_source} ORDER BY m.source_id LIMIT 1",
                    (identity, *extra),
                )
                if rows:
                    return rows[0]
            # the URL as it was requested or answered (a redirect), not its identity
            rows = self.store.query(
                f"{_PAGE} WHERE (m.url = ? OR m.final_url = ?){by_source} "
                "ORDER BY m.source_id, m.id LIMIT 1",
                (url.strip(), url.strip(), *extra),
            )
        return rows[0] if rows else None

    def changes(
        self,
        since: str,
        until: str | None = None,
        source: str | None = None,
        diff: bool = True,
        limit: int = 100,
        offset: int = 0,
    ) -> dict[str, Any]:
        from knowledge_crawler.cli._time import format_time, parse_time

        try:
            start = format_time(parse_time(since))
            end = format_time(parse_time(until)) if until is not None else None
        except (ValueError, OverflowError) as exc:
            raise ToolError(str(exc)) from None
        if end is not None and end <= start:
            raise ToolError(f"until {end} is not after since {start}")
        entries: list[dict[str, Any]] = []
        truncated = False
        with (
            _store_call("changes"),
            contextlib.closing(
                self.store.changes(start, end, source_id=source, contents=diff)
            ) as stream,
        ):
            for entry in itertools.islice(stream, offset, None):
                if len(entries) == limit:
                    truncated = True
                    break
                entries.append(_with_diff(entry) if diff else {**entry, "diff": None})
        more = 0
        if truncated:
            # count the rest without reading their texts
            with (
                _store_call("changes"),
                contextlib.closing(
                    self.store.changes(start, end, source_id=source, contents=False)
                ) as everything,
            ):
                more = max(sum(1 for _ in everything) - offset - limit, 1)
        result: dict[str, Any] = {
            "since": start,
            "until": end,
            "offset": offset,
            "returned": len(entries),
            "more": more,
            "changes": entries,
        }
        if more:
            # Entries come oldest first and new ones are newer, so an offset into the same
            # window (since as an absolute time) carries on where this call stopped.
            result["next"] = {"since": start, "until": end, "offset": offset + len(entries)}
            result["note"] = (
                f"{more} more change{'s' if more != 1 else ''} in the window: call again "
                "with the arguments in next (or a larger limit)"
            )
        return result


def _with_diff(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with a unified diff in place of its two texts (``diff`` None unless changed)."""
    diff = None
    if entry["kind"] == "changed" and entry.get("previous_content") is not None:
        diff = change_diff(entry)
    entry.pop("previous_content", None)
    entry.pop("content", None)
    return {**entry, "diff": diff}


def build_server(
    store: Any,
    *,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer[Any]:
    """An MCP server whose tools read ``store``; ``.run("stdio")`` serves it."""
    tools = DatasetTools(store)
    server: MCPServer[Any] = MCPServer(
        "knowledge-crawler",
        title="knowledge_crawler dataset",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level=log_level,
    )

    @server.tool(annotations=_READ_ONLY)
    def search(
        query: Annotated[str, Field(description="A question or keywords, in plain text.")],
        k: Annotated[int, Field(ge=1, le=100, description="How many passages to return.")] = 10,
        source: Annotated[str | None, Field(description="Only passages of this source id.")] = None,
        all_words: Annotated[
            bool, Field(description="Only passages that hold every word of the query.")
        ] = False,
    ) -> dict[str, Any]:
        """Find the passages of crawled pages that best answer a query, best first (BM25).

        The query is plain text, not a query language: its words (and "phrases in
        double quotes") are searched, any of them by default (passages with more and
        rarer ones rank higher), every one with all_words; punctuation is just text and
        common words (how, do, the, ...) are left out. Pages marked as duplicates and
        pages gone from their site (tombstoned) are left out.

        Returns {query, searched_for, all_words, passages, note?}; each passage has
        passage_id, source_id, canonical_url, url (cite this), title, heading_path (the
        headings above the passage), score (higher is better), snippet (matches in
        **bold**) and content (the passage's full text, markdown). Read the whole page
        with get_page(url).
        """
        return tools.search(query, k=k, source=source, all_words=all_words)

    @server.tool(annotations=_READ_ONLY)
    def get_page(
        url: Annotated[
            str,
            Field(description="The page's URL, in any form (tracking parameters, www., ...)."),
        ],
        source: Annotated[str | None, Field(description="Only the page of this source id.")] = None,
        include_versions: Annotated[
            bool, Field(description="Also return the earlier versions' texts.")
        ] = False,
    ) -> dict[str, Any]:
        """Read one stored page: its whole content (markdown) and where it stands.

        The URL may be given in any form the site uses: it is looked up by its
        canonical form (https, no www., no tracking parameters, no fragment), then as
        requested or redirected to. Returns source_id, canonical_url, url (as
        requested), final_url (after redirects), title, content, content_hash,
        word_count, language, http_status, fetched_at (last fetched), first_seen_at,
        last_seen_at, last_changed_at (when the content last changed), status (active,
        suspected_missing or tombstoned) and status_reason, duplicate_of (the canonical
        URL of the page it duplicates, or null) and duplicate_kind, versions (how many
        versions are stored, the current one included), also_in_sources (other sources
        storing the same URL, if any) and, with include_versions, previous_versions:
        each earlier text with its content_hash, title, fetched_at and replaced_at,
        newest first. An unknown URL is an error.
        """
        return tools.get_page(url, source=source, include_versions=include_versions)

    @server.tool(annotations=_READ_ONLY)
    def changes(
        since: Annotated[
            str,
            Field(
                description=(
                    "From this time on (included): ISO-8601 (2026-12-01, "
                    "2026-12-01T08:00:00Z; UTC unless an offset is given), a duration "
                    "back from now (30m, 24h, 7d) or now, today, yesterday."
                )
            ),
        ],
        until: Annotated[
            str | None, Field(description="Up to this time (excluded), same forms; none: now.")
        ] = None,
        source: Annotated[
            str | None, Field(description="Only the pages of this source id.")
        ] = None,
        diff: Annotated[
            bool, Field(description="Include a unified diff with each changed page.")
        ] = True,
        limit: Annotated[
            int, Field(ge=1, le=1000, description="The most entries to return.")
        ] = 100,
        offset: Annotated[
            int, Field(ge=0, description="Entries of the window to skip (to page through it).")
        ] = 0,
    ) -> dict[str, Any]:
        """What happened to the crawled pages in a time window, oldest first.

        Each entry has kind: new (first seen), changed (its content changed; one entry
        per change, with a unified diff of the text before and after, labelled with
        the two fetch times), tombstoned (gone from its site, with the reason) or
        restored (answering again after being missing); and time, source_id,
        canonical_url (the page's identity), url (where it was fetched: cite and open
        this), title, content_hash, reason, previous_content_hash,
        previous_fetched_at, fetched_at and diff (null unless changed and diff is
        true). Returns {since, until (the window, as absolute times), offset, returned,
        more, changes, next?, note?}: at most limit entries; more says how many more the
        window holds, and next the since, until and offset that fetch them.
        """
        return tools.changes(
            since, until=until, source=source, diff=diff, limit=limit, offset=offset
        )

    return server
