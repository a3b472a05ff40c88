"""`mcp` and `browse` without their servers: one-line errors, and the canned queries' SQL.

The servers themselves run in tests/e2e/test_mcp_server.py and tests/e2e/test_browse.py.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from knowledge_crawler.cli.browse import CANNED_QUERIES, datasette_metadata
from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import open_store


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("knowledge-crawler: error: ")
    return line


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/knowledge.db"
    open_store(url).close()
    return url


def test_mcp_without_the_sdk(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    line = one_error_line(run("mcp", "--db", db))
    assert "pip install 'mcp>=2.3,<3'" in line


def test_mcp_without_a_database(tmp_path: Path) -> None:
    line = one_error_line(run("mcp", "--db", f"sqlite:///{tmp_path}/missing.db"))
    assert "no database at" in line


def test_browse_without_datasette(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasette", None)
    line = one_error_line(run("browse", "--db", db, "--no-open"))
    assert "pip install 'knowledge-crawler[browse]'" in line


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://localhost/kc", "browse needs a SQLite database"),
        ("sqlite:///:memory:", "not sqlite:///:memory:"),
        ("sqlite:///{tmp}/missing.db", "no database at"),
    ],
)
def test_browse_bad_database(tmp_path: Path, url: str, message: str) -> None:
    line = one_error_line(run("browse", "--db", url.format(tmp=tmp_path), "--no-open"))
    assert message in line


def test_browse_port_taken(db: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(run("browse", "--db", db, "--port", str(port), "--no-open"))
    assert f"cannot listen on 127.0.0.1:{port}" in line


def test_canned_queries_run_on_a_fresh_database(db: str) -> None:
    """Every canned query is valid SQL over the current schema (the server runs them as is)."""
    with open_store(db) as store:
        for name, query in CANNED_QUERIES.items():
            rows = store.query(query["sql"], {"q": "pump"})
            if name == "sanity_checks":
                assert [tuple(r) for r in rows] == [
                    ("rows = distinct identities", "0 = 0", "ok"),
                    ("content hashes under several URLs", 0, "ok"),
                    ("pages not seen in 7 days", 0, "ok"),
                    ("duplicates of duplicates", 0, "ok"),
                ]
            else:
                assert rows == [], name
        assert store.query(CANNED_QUERIES["search"]["sql"], {"q": ""}) == []  # type: ignore[attr-defined]


def test_metadata_names_the_database() -> None:
    metadata = datasette_metadata("knowledge", "data/knowledge.db")
    assert metadata["databases"]["knowledge"]["queries"] is CANNED_QUERIES
    assert {"sanity_checks", "recent_changes", "dead_letters", "search"} <= set(CANNED_QUERIES)
    for query in CANNED_QUERIES.values():
        assert query["title"] and query["description"] and query["sql"].startswith("SELECT")


def test_get_page_by_any_url_and_in_several_sources(db: str) -> None:
    """The MCP tool's lookup: canonical form first, then the URL as requested or redirected."""
    from knowledge_crawler.cli.mcp_server import DatasetTools
    from tests.e2e.retrieval_data import record

    at = "2026-01-01T00:00:00.000000Z"
    with open_store(db) as store:
        moved = record("/new-home", "Moved", "# Moved\n\nThe page lives here now.\n", at)
        store.write(
            [
                replace(moved, url="https://docs.example.com/old-home?ref=nav"),
                record("/faq", "FAQ", "# FAQ\n\nAnswers.\n", at),
                record("/faq", "FAQ", "# FAQ\n\nAnswers.\n", at, source_id="mirror"),
            ]
        )
        tools = DatasetTools(store)
        by_request = tools.get_page("https://docs.example.com/old-home?ref=nav")
        assert by_request["canonical_url"] == "https://docs.example.com/new-home"
        faq = tools.get_page("HTTPS://WWW.docs.example.com/faq#top")
        assert (faq["source_id"], faq["also_in_sources"]) == ("docs", ["mirror"])
        mirrored = tools.get_page("https://docs.example.com/faq", source="mirror")
        assert mirrored["source_id"] == "mirror" and "also_in_sources" not in mirrored
        assert mirrored["versions"] == 1 and "previous_versions" not in mirrored
