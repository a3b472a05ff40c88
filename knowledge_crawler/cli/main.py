"""``knowledge-crawler`` (also ``python -m knowledge_crawler``): the command-line interface.

Sub-commands are imported only when run, so ``knowledge-crawler extract`` and
``stats`` start fast; none of them imports Scrapy or Twisted. Exit status: 0 on
success, 2 on bad input (one line naming what was wrong), 1 on internal failure.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from knowledge_crawler import __version__
from knowledge_crawler.cli._common import PROG
from knowledge_crawler.errors import ConfigError, KcError

__all__ = ["COMMANDS", "cli", "main"]

#: name -> "module:attribute" of the click command, and its one-line help.
COMMANDS: dict[str, tuple[str, str]] = {
    "stats": (
        "knowledge_crawler.cli.stats:stats",
        "Sanity checks, per-source counts and the last runs' counters.",
    ),
    "duplicates": (
        "knowledge_crawler.cli.duplicates:duplicates",
        "Clusters of exact and near-duplicate pages.",
    ),
    "validate": (
        "knowledge_crawler.cli.validate:validate",
        "Check a seeds file without crawling.",
    ),
    "extract": (
        "knowledge_crawler.cli.extract:extract",
        "Main content of HTML file(s), as markdown or text.",
    ),
    "history": (
        "knowledge_crawler.cli.history:history",
        "Every stored version of a page, newest first.",
    ),
    "dead-letters": (
        "knowledge_crawler.cli.dead_letters:dead_letters",
        "Pages whose retries ran out, or that wait for review.",
    ),
    "reextract": (
        "knowledge_crawler.cli.reextract:reextract",
        "Rebuild stored pages from the raw archive (WARC), with no network.",
    ),
    "search": (
        "knowledge_crawler.cli.search:search",
        "The passages that best answer a question (full-text, BM25).",
    ),
    "discover": (
        "knowledge_crawler.cli.discover:discover",
        "What a sitemap, feed or robots.txt yields (URLs, lastmod), no page fetched.",
    ),
    "changes": (
        "knowledge_crawler.cli.changes:changes",
        "New, changed, tombstoned and restored pages since a time, with diffs.",
    ),
    "export": (
        "knowledge_crawler.cli.export:export",
        "Every page with its provenance as JSON Lines, streamed.",
    ),
    "mcp": (
        "knowledge_crawler.cli.mcp_command:mcp_command",
        "Serve search, pages and changes to AI agents over MCP (stdio).",
    ),
    "browse": (
        "knowledge_crawler.cli.browse:browse",
        "Open the database in Datasette (read-only), with canned queries.",
    ),
    "rescue": (
        "knowledge_crawler.cli.rescue:rescue",
        "Load what a crawl could not store (a .unsaved-RUN.jsonl file) into the database.",
    ),
    "schedule": (
        "knowledge_crawler.cli.schedule:schedule",
        "Recurring refresh crawls per source (subprocess or scrapyd), until stopped.",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, _, attr = COMMANDS[cmd_name][0].partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # One-line help from the table, so `--help` imports no sub-command.
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in sorted(COMMANDS)])


@click.group(PROG, cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name=PROG)
def cli() -> None:
    """Turn websites into a fresh, queryable knowledge dataset for AI agents.

    Crawl with `scrapy crawl knowledge -a seeds=seeds/NAME.toml`; inspect the
    result with these commands. The database is KC_DATABASE_URL (default
    sqlite:///data/knowledge.db) or --db.
    """


def main(argv: list[str] | None = None) -> Any:
    try:
        return cli.main(args=argv, prog_name=PROG, standalone_mode=True)
    except ConfigError as exc:  # raised past a command: still bad input
        click.echo(f"{PROG}: error: {exc}", err=True)
        sys.exit(2)
    except KcError as exc:
        click.echo(f"{PROG}: error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
