"""``knowledge-crawler mcp``: serve the dataset to agents over the Model Context Protocol."""

from __future__ import annotations

import importlib

import click

from knowledge_crawler.cli._common import BadInput, database_option, open_existing_store

__all__ = ["mcp_command"]

#: what to install when the SDK is missing or too old
SDK_REQUIREMENT = "mcp>=2.3,<3"


@click.command("mcp")
@database_option
@click.option("-v", "--verbose", is_flag=True, help="Log every request to stderr.")
def mcp_command(database: str, verbose: bool) -> None:
    """Serve the dataset to AI agents over the Model Context Protocol (stdio).

    An agent client starts this command and speaks MCP on its stdin and
    stdout (logs go to stderr). Three read-only tools:

    \b
    search(query, k=10, source=None, all_words=False)
        the passages that best answer a plain-text query, as `search --json`
    get_page(url, source=None, include_versions=False)
        a stored page (URL in any form) with its content, status and versions
    changes(since, until=None, source=None, diff=True, limit=100, offset=0)
        new, changed and tombstoned pages in a window, as `changes --json`

    The database is opened once; a crawl may write to it meanwhile (SQLite
    WAL), and each call sees what was committed when it ran. Register it
    with a client as {"command": ".venv/bin/knowledge-crawler", "args":
    ["mcp", "--db", "sqlite:///data/knowledge.db"]}.
    """
    try:
        importlib.import_module("mcp.server.mcpserver")  # the 2.x SDK (1.x had FastMCP)
    except ImportError:
        raise BadInput(
            f"`mcp` needs the MCP Python SDK 2.x: pip install '{SDK_REQUIREMENT}'"
        ) from None
    from knowledge_crawler.cli.mcp_server import build_server

    store = open_existing_store(database)
    try:
        server = build_server(store, log_level="INFO" if verbose else "WARNING")
        click.echo(f"knowledge-crawler mcp: serving {store.url} on stdio", err=True)
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
