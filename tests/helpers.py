"""Helpers for tests: async tests under pytest-twisted, in-process crawls, SQL on a test DB."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any


def coroutine_test(
    coro_f: Callable[..., Coroutine[Any, Any, None]],
) -> Callable[..., Any]:
    """Run an ``async def`` test as an asyncio task behind a Deferred (pytest-twisted)."""
    from scrapy.utils.defer import deferred_from_coro

    @functools.wraps(coro_f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return deferred_from_coro(coro_f(*args, **kwargs))

    return wrapper


def crawl_settings(db_url: str, **overrides: Any) -> Any:
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("knowledge_crawler.settings", priority="project")
    settings.update(
        {
            "KC_DATABASE_URL": db_url,
            "DOWNLOAD_DELAY": 0,
            "AUTOTHROTTLE_ENABLED": False,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "CLOSESPIDER_TIMEOUT": 120,
            "KC_STORE_FLUSH_SECONDS": 0.5,
            "LOG_LEVEL": "INFO",
            **overrides,
        },
        priority="cmdline",
    )
    return settings


async def run_crawl(
    db_url: str, settings: dict[str, Any] | None = None, spider: Any = None, **spider_args: str
) -> Any:
    """Crawl in-process with the project's settings; returns the finished crawler."""
    from scrapy.crawler import AsyncCrawlerRunner

    from knowledge_crawler.spiders.knowledge import KnowledgeSpider

    runner = AsyncCrawlerRunner(crawl_settings(db_url, **(settings or {})))
    crawler = runner.create_crawler(spider or KnowledgeSpider)
    await crawler.crawl_async(**spider_args)
    return crawler


def query(db_url: str, sql: str, *params: Any) -> list[dict[str, Any]]:
    import sqlite3

    path = db_url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def site_key(site: Any, path: str) -> str:
    """The canonical URL (identity) of a path of the test site."""
    from knowledge_crawler.transform.canonical import canonical_url

    return canonical_url(site.url.rstrip("/") + path)


def pages_by_url(db_url: str) -> dict[str, dict[str, Any]]:
    """Every stored page (the ``pages`` view), by canonical URL."""
    return {r["canonical_url"]: r for r in query(db_url, "SELECT * FROM pages")}


def last_run(db_url: str) -> dict[str, Any]:
    """The newest ``crawl_runs`` row."""
    return query(db_url, "SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1")[0]
