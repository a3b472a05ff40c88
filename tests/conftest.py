"""Shared fixtures: the loopback test site, in-process crawls, a fast engine heartbeat."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite


@pytest.fixture(autouse=True)
def _fast_engine_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """An idle engine re-checks for work every 5 s; short test crawls need not wait that long."""
    from scrapy.core.engine import ExecutionEngine

    if hasattr(ExecutionEngine, "_SLOT_HEARTBEAT_INTERVAL"):
        monkeypatch.setattr(ExecutionEngine, "_SLOT_HEARTBEAT_INTERVAL", 0.1)


@pytest.fixture(scope="session")
def site_server() -> Iterator[TestSite]:
    with TestSite(pages=50, seed=1) as site:
        yield site


@pytest.fixture
def site(site_server: TestSite) -> Iterator[TestSite]:
    """The session's test site, reset to its generated state before and after each test."""
    site_server.reset()
    yield site_server
    site_server.reset()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/knowledge.db"


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A PostgreSQL database of this session's own (random name, dropped at the end) on the
    server of ``KC_TEST_POSTGRES_URL`` (default the local one); skipped when the server does
    not answer, except under ``CI=true``, where the tests that need it fail instead."""
    from knowledge_crawler.config import display_url
    from tests.postgres import SERVER_URL, reachable, session_database

    why = reachable()
    if why is not None:
        message = f"no PostgreSQL at {display_url(SERVER_URL)} (KC_TEST_POSTGRES_URL): {why}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    with session_database() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_database: str) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL schema (``search_path``), dropped after the test."""
    from tests.postgres import create_schema, drop_schema

    url = create_schema(postgres_database)
    yield url
    drop_schema(url)


@pytest.fixture(scope="session")
def chromium() -> str:
    """The machine's Chromium (``make install`` puts Debian's in place); under ``CI=true``
    a missing one fails the test instead of skipping it."""
    from knowledge_crawler.crawl.chromium import find_chromium

    path = find_chromium(os.environ.get("KC_CHROMIUM_PATH", ""))
    if path is None:
        message = "no Chromium on this machine (make install puts Debian's chromium in place)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


#: the Redis the tests use, with keys of their own (``redis_prefix``)
REDIS_URL = os.environ.get("KC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_server() -> Iterator[Any]:
    """A client of ``KC_TEST_REDIS_URL`` (default the local Redis); skipped when it does not
    answer, except under ``CI=true``, where the test fails instead."""
    import redis

    server = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        server.ping()
    except redis.RedisError as exc:
        message = f"no Redis at {REDIS_URL} (KC_TEST_REDIS_URL): {exc}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def redis_prefix(redis_server: Any) -> Iterator[str]:
    """A Redis key prefix of this test's own; every key under it is deleted afterwards."""
    prefix = f"kc_test_{secrets.token_hex(6)}"
    try:
        yield prefix
    finally:
        left = list(redis_server.scan_iter(match=f"{prefix}:*"))
        if left:
            redis_server.delete(*left)
