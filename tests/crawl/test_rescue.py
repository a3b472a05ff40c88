"""Rescue files: what a crawl could not store is kept beside the database, owner-only,
and loaded back, once, by `knowledge-crawler rescue FILE` or by the next crawl.

The failures are real: another writer's ``BEGIN EXCLUSIVE`` held past the retry
window (as in test_store_failures.py), or the database's folder made read-only
under a crawl whose writes fail.
"""

from __future__ import annotations

import contextlib
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.errors import TransientStoreError
from knowledge_crawler.testsite import TestSite
from tests.crawl.test_store_failures import crawl, stored, use_store
from tests.faults import FlakyStore, hold_lock, read_only_folder, stored_rows
from tests.helpers import coroutine_test, query

pytestmark = pytest.mark.crawl

Key = tuple[str, str]


def pages(db_url: str) -> dict[Key, tuple[Any, ...]]:
    """What a crawl stores of each page, but its times: content, title, status, passages."""
    rows = query(
        db_url,
        "SELECT m.source_id, m.canonical_url, m.content_hash, m.title, m.word_count, "
        "m.http_status, m.status, c.content, "
        "(SELECT group_concat(id, ',') FROM (SELECT id FROM passages p "
        " WHERE p.page_id = m.id ORDER BY ord)) AS passages "
        "FROM page_meta m JOIN page_content c ON c.page_id = m.id",
    )
    return {(r["source_id"], r["canonical_url"]): tuple(r.values())[2:] for r in rows}


def dump(db_url: str) -> list[str]:
    """Every row of every table, as SQL."""
    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


async def failed_crawl(db_url: str, site: TestSite, folder: Path) -> tuple[Path, list[Key]]:
    """A crawl stopped by a lock held past its retry window: its rescue file, and the
    pages it holds."""
    path = db_url.removeprefix("sqlite:///")
    rescued = lambda: list(folder.glob("knowledge.db.unsaved-*.jsonl"))  # noqa: E731
    holder, _ = hold_lock(path, when=lambda: stored_rows(path) >= 10, until=lambda: bool(rescued()))
    crawler, _ = await crawl(db_url, site, KC_STORE_RETRY_SECONDS=1.0, KC_STORE_BUSY_TIMEOUT=0.1)
    holder.join()
    assert crawler.stats.get_value("kc/outcome") == "failed"
    [rescue_file] = rescued()
    in_file = [
        (p["page"]["source_id"], p["page"]["canonical_url"])
        for p in map(__import__("json").loads, rescue_file.read_text().splitlines())
        if "page" in p
    ]
    assert in_file, "the crawl stored everything before the lock: nothing was rescued"
    return rescue_file, in_file


@coroutine_test
async def test_rescue_loads_a_failed_crawls_file_once(site: TestSite, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path}/knowledge.db"
    rescue_file, in_file = await failed_crawl(db_url, site, tmp_path)
    # Beside the database, readable by its owner only, and nowhere else.
    assert rescue_file.parent == tmp_path
    assert stat.S_IMODE(rescue_file.stat().st_mode) == 0o600
    assert not list(Path(tempfile.gettempdir()).glob(f"{rescue_file.name}*"))
    in_db = stored(db_url)
    assert not set(in_db) & set(in_file)

    calm_url = f"sqlite:///{tmp_path}/calm/knowledge.db"
    await crawl(calm_url, site)
    calm = pages(calm_url)

    result = CliRunner().invoke(cli, ["rescue", str(rescue_file), "--db", db_url])
    assert result.exit_code == 0, result.output
    loaded = rescue_file.with_name(rescue_file.name + ".loaded")
    assert not rescue_file.exists() and loaded.is_file()
    assert stat.S_IMODE(loaded.stat().st_mode) == 0o600
    assert f"{len(in_file)} pages ({len(in_file)} new" in result.stdout
    assert str(loaded) in result.stdout
    # Every page the crawl scraped is stored once, as an undisturbed crawl stored it.
    rows = pages(db_url)
    assert sorted(rows) == sorted(set(in_db) | set(in_file))
    assert {k: rows[k] for k in in_file} == {k: calm[k] for k in in_file}

    # Loading it again writes nothing.
    before = dump(db_url)
    again = CliRunner().invoke(cli, ["rescue", str(loaded), "--db", db_url])
    assert again.exit_code == 0, again.output
    assert f"{len(in_file)} pages (0 new, 0 changed, 0 unchanged, {len(in_file)} stored" in (
        again.stdout
    )
    assert dump(db_url) == before and loaded.is_file()

    # And the next crawl ends where an undisturbed one did.
    await crawl(db_url, site)
    assert pages(db_url) == calm


@coroutine_test
async def test_the_next_crawl_loads_a_left_over_rescue_file_first(
    site: TestSite, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path}/knowledge.db"
    rescue_file, in_file = await failed_crawl(db_url, site, tmp_path)
    in_db = stored(db_url)
    calm_url = f"sqlite:///{tmp_path}/calm/knowledge.db"
    await crawl(calm_url, site)
    calm = pages(calm_url)

    crawler, _ = await crawl(db_url, site)
    assert not rescue_file.exists()
    assert rescue_file.with_name(rescue_file.name + ".loaded").is_file()
    stats = crawler.stats
    assert stats.get_value("kc/rescue/files") == 1
    assert stats.get_value("kc/rescue/pages") == len(in_file)
    assert pages(db_url) == calm
    # Loaded before the crawl read its stored pages: the rescued ones were known to it,
    # revalidated rather than stored as new.
    [run] = query(db_url, "SELECT pages_new FROM crawl_runs ORDER BY id DESC LIMIT 1")
    assert run["pages_new"] == len(calm) - len(in_db) - len(in_file)


@coroutine_test
async def test_a_rescue_file_that_cannot_sit_beside_the_database_goes_nowhere_else(
    site: TestSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    db_url = f"sqlite:///{folder}/knowledge.db"
    frozen = contextlib.ExitStack()

    class Frozen(FlakyStore):
        """Every batch fails; at the first, the database's folder turns read-only (the
        open database stays writable through its open files)."""

        def write(self, operations: Any, **kw: Any) -> Any:
            if not frozen._exit_callbacks:  # type: ignore[attr-defined]
                frozen.enter_context(read_only_folder(folder))
            raise TransientStoreError(f"cannot write to {folder}/knowledge.db: disk I/O error")

    use_store(monkeypatch, Frozen)
    temp = set(Path(tempfile.gettempdir()).iterdir())
    try:
        crawler, scraped = await crawl(
            db_url, site, KC_STORE_RETRY_SECONDS=0.5, KC_ARCHIVE_ENABLED=False
        )
    finally:
        frozen.close()
    stats = crawler.stats
    assert stats.get_value("kc/outcome") == "failed"
    assert not list(folder.glob("*.unsaved-*"))
    assert not [p for p in set(Path(tempfile.gettempdir()).iterdir()) - temp if "unsaved" in p.name]
    assert str(folder) in stats.get_value("kc/store/rescue_failed")
    assert stats.get_value("kc/store/lost") == len(set(scraped)) > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no rescue file at {file}"),
        ('{"page": {"source_id": "s"}}\n', "{file}: line 1: not a rescued operation"),
        ('{"teleport": {}}\n', "{file}: line 1: not a rescued operation: unknown operation"),
    ],
)
def test_rescue_of_a_file_that_is_not_one_is_one_line(
    tmp_path: Path, text: str | None, message: str
) -> None:
    db_url = f"sqlite:///{tmp_path}/knowledge.db"
    file = tmp_path / "knowledge.db.unsaved-3.jsonl"
    if text is not None:
        file.write_text(text)
    result = CliRunner().invoke(cli, ["rescue", str(file), "--db", db_url])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("knowledge-crawler: error: " + message.format(file=file)), line
    assert not (tmp_path / "knowledge.db").exists()


def test_a_rescue_folder_is_made_private_and_one_that_cannot_be_made_raises(
    tmp_path: Path,
) -> None:
    """``KC_RESCUE_DIR`` need not exist: the first rescue makes it (0700) and the file
    (0600). Where it cannot be made (a file stands there), writing raises OSError, which
    the crawl reports as ``kc/store/rescue_failed``, and nothing is written anywhere."""
    from knowledge_crawler.store.base import Touch
    from knowledge_crawler.store.rescue import read_rescue, write_rescue

    ops = [Touch("blog", "https://example.com/a", "2026-12-05T00:00:00Z")]
    made = tmp_path / "rescue" / "kc" / "knowledge-0123456789ab.unsaved-7.jsonl"
    write_rescue(made, ops)
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert read_rescue(made) == ops

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(OSError):
        write_rescue(blocked / "knowledge-0123456789ab.unsaved-8.jsonl", ops)
    assert sorted(tmp_path.rglob("*")) == before
