"""``knowledge-crawler search "QUERY"``: the passages that best answer a question."""

from __future__ import annotations

import json
import textwrap

import click

from knowledge_crawler.cli._common import BadInput, database_option, open_existing_store

__all__ = ["search"]


@click.command("search")
@database_option
@click.argument("query")
@click.option(
    "-k",
    "k",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="How many passages to return.",
)
@click.option("--source", "source_id", metavar="ID", help="Only passages of this source.")
@click.option("--all", "require_all", is_flag=True, help="Only passages with every word.")
@click.option(
    "--fts",
    "raw",
    is_flag=True,
    help="QUERY is the database's own syntax, as typed: SQLite FTS5 (AND, OR, NOT, NEAR, "
    '"phrases", prefix*) or PostgreSQL to_tsquery (&, |, !, <->, prefix:*).',
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON Lines, one passage each.")
def search(
    database: str,
    query: str,
    k: int,
    source_id: str | None,
    require_all: bool,
    raw: bool,
    as_json: bool,
) -> None:
    """The K passages that best answer QUERY, best first (BM25).

    QUERY is plain text: its words (and "phrases in double quotes") are
    searched, any of them by default (passages with more and rarer ones rank
    higher), every one with --all; punctuation and operators are just text,
    and common words (how, do, the, ...) are left out when there are others.
    Passages of pages marked duplicate and of tombstoned pages are left out.
    Each result shows the page's title and URL, the headings above the
    passage, its score (higher is better) and a snippet with the matches in
    **bold**. --json prints one object per line with passage_id, source_id,
    canonical_url, url, title, heading_path, score, snippet and the full
    passage content, for agents.
    """
    from knowledge_crawler.transform.query import query_terms

    terms = query_terms(query).items
    if not (query.strip() if raw else terms):
        raise BadInput(f"nothing to search for in {query!r}: it has no words")
    with open_existing_store(database) as store:
        try:
            results = store.search(
                terms,
                require_all=require_all,
                raw=query.strip() if raw else None,
                k=k,
                source_id=source_id,
            )
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        unindexed = store.pages_without_passages() if not results else 0
    if as_json:
        for r in results:
            click.echo(json.dumps(r, ensure_ascii=False))
    else:
        for n, r in enumerate(results, 1):
            path = " > ".join(r["heading_path"])
            click.echo(f"{n}. {r['title'] or r['canonical_url']}  (score {r['score']:.2f})")
            click.echo(f"   {r['url']}")
            if path:
                click.echo(f"   § {path}")
            snippet = " ".join(r["snippet"].split())
            click.echo(textwrap.indent(textwrap.fill(snippet, 96), "   "))
            click.echo("")
    if not results:
        click.echo(f"no passage matches {query!r}", err=True)
        if unindexed:
            click.echo(
                f"{unindexed} stored pages have no passages yet (stored before passages "
                "existed): a crawl that fetches them again splits them",
                err=True,
            )
