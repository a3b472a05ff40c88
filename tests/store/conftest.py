"""One contract suite for every store backend (SQLite now; PostgreSQL joins with F-SCALE)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge_crawler.store import Store, open_store


@pytest.fixture(params=["sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path}/store.db"
    with open_store(url) as s:
        yield s
