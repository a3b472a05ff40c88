"""One contract suite for every store backend: each test that takes ``store`` runs on
SQLite (a fresh file) and on PostgreSQL (a schema of the session, migrated once and
emptied before each test; skipped without a server, except under ``CI=true``).

A test about one backend only says so: ``@SQLITE_ONLY`` / ``@POSTGRES_ONLY``
(``tests.store.backends``), or it opens that backend itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge_crawler.store import Store, open_store


@pytest.fixture(scope="session")
def postgres_contract_url(postgres_database: str) -> str:
    """The schema the contract suite runs in on PostgreSQL, migrated once."""
    from tests.postgres import create_schema

    url = create_schema(postgres_database, "contract")
    open_store(url).close()
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/store.db"
    else:
        from tests.postgres import empty_tables

        url = request.getfixturevalue("postgres_contract_url")
        empty_tables(url)
    with open_store(url) as s:
        yield s
