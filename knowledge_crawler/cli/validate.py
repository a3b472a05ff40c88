"""``knowledge-crawler validate SEEDS_FILE``: check a source file before any crawl.

Imports only click and the pure :mod:`knowledge_crawler.sources` (no Scrapy).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import click

from knowledge_crawler.cli._common import BadInput
from knowledge_crawler.errors import SeedsError
from knowledge_crawler.sources import (
    DEFAULT_TRACKING_PARAMS,
    Source,
    load_sources,
)

__all__ = ["source_as_dict", "summary_line", "validate", "validate_command"]


def _seconds(td: timedelta) -> float | int:
    seconds = td.total_seconds()
    return int(seconds) if seconds.is_integer() else seconds


def source_as_dict(source: Source) -> dict[str, Any]:
    """A JSON-ready view of a :class:`Source` (patterns as text, durations in seconds)."""
    api = None
    if source.api is not None:
        api = {
            "url": source.api.url,
            "items_path": source.api.items_path,
            "url_field": source.api.url_field,
            "next": source.api.next,
            "cursor_field": source.api.cursor_field,
            "cursor_param": source.api.cursor_param,
        }
    return {
        "id": source.id,
        "start_urls": list(source.start_urls),
        "allowed_domains": list(source.allowed_domains),
        "sitemaps": list(source.sitemaps),
        "feeds": list(source.feeds),
        "api": api,
        "follow_links": source.follow_links,
        "depth_limit": source.depth_limit,
        "max_pages": source.max_pages,
        "include": [p.pattern for p in source.include],
        "exclude": [p.pattern for p in source.exclude],
        "keep_params": sorted(source.keep_params),
        "tracking_params": sorted(source.tracking_params),
        "extra_tracking_params": sorted(source.tracking_params - DEFAULT_TRACKING_PARAMS),
        "boilerplate": [p.pattern for p in source.boilerplate],
        "render": source.render,
        "wait_for": source.wait_for,
        "download_delay": source.download_delay,
        "concurrency_per_host": source.concurrency_per_host,
        "min_interval_seconds": _seconds(source.min_interval),
        "max_interval_seconds": _seconds(source.max_interval),
        "missing_after": source.missing_after,
        "missing_window_seconds": _seconds(source.missing_window),
        "near_duplicate_threshold": source.near_duplicate_threshold,
        "thin_words": source.thin_words,
    }


def summary_line(source: Source) -> str:
    """One human line: id, start URL count, domains, discovery, render, depth and page cap."""
    n = len(source.start_urls)
    parts = [
        f"{n} start URL{'s' if n != 1 else ''}",
        "domains " + ",".join(source.allowed_domains),
    ]
    extras = []
    if source.sitemaps:
        extras.append(f"{len(source.sitemaps)} sitemap{'s' if len(source.sitemaps) != 1 else ''}")
    if source.feeds:
        extras.append(f"{len(source.feeds)} feed{'s' if len(source.feeds) != 1 else ''}")
    if source.api is not None:
        extras.append(f"api ({source.api.next})")
    if extras:
        parts.append(" + ".join(extras))
    parts.append(f"render {source.render}")
    links = f"depth {source.depth_limit}" if source.follow_links else "no link following"
    parts.append(links)
    parts.append(f"max_pages {source.max_pages or 'unlimited'}")
    return f"{source.id}: " + ", ".join(parts)


@click.command("validate")
@click.argument("seeds_file", metavar="SEEDS_FILE")
@click.option("--source", "only", metavar="ID", help="Check the whole file, show only this source.")
@click.option("--json", "as_json", is_flag=True, help="Print the validated sources as JSON.")
def validate(seeds_file: str, only: str | None, as_json: bool) -> None:
    """Check a source file (seeds/*.toml) without crawling anything.

    A source file holds one or more [[source]] tables; `id` and `start_urls`
    are required, every other key has a default (see seeds/example.toml). An
    optional top-level [defaults] table applies its keys to every source.

    \b
        [[source]]
        id = "docs"
        start_urls = ["https://docs.example.com/"]
        include = ['^https://docs\\.example\\.com/guide/']
        min_interval = "6h"

    Prints one line per source and exits 0 when the file is valid. Otherwise
    prints one line naming the file, the source and the key, and exits 2.
    """
    try:
        sources = load_sources(seeds_file, only=only)
    except SeedsError as exc:
        raise BadInput(exc) from exc
    if as_json:
        click.echo(json.dumps([source_as_dict(s) for s in sources], indent=2))
        return
    for source in sources:
        click.echo(summary_line(source))


validate_command = validate
