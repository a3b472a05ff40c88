"""Gone and back, on the loopback site: a page that answers 410 and later 200 again is
restored, with both events kept; a first 404 brings the next check forward; a tombstoned
page is checked at the long interval; ``http_status`` tells the last answer."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import utc_now
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


def seeds_file(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "gone.toml"
    path.write_text("\n".join(["[[source]]", 'id = "g"', *lines]) + "\n", encoding="utf-8")
    return str(path)


def row(db_url: str, key: str) -> dict[str, Any]:
    [found] = query(db_url, "SELECT * FROM pages WHERE canonical_url = ?", key)
    return found


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@coroutine_test
async def test_a_page_gone_410_then_back_is_active_again_with_both_events(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """The home page that links the article answers 304 throughout: nothing but the known
    inventory can bring the article back."""
    seeds = seeds_file(
        tmp_path,
        f'start_urls = ["{site.url}"]',
        "depth_limit = 1",
        'min_interval = "1s"',
        'max_interval = "10s"',
    )
    await run_crawl(db_url, seeds=seeds)
    article = site_key(site, site.article_path(0))
    assert row(db_url, article)["status"] == "active"
    home_checked = row(db_url, site_key(site, "/"))["last_checked_at"]

    before_gone = utc_now()
    site.delete(0, gone=True)
    await run_crawl(db_url, seeds=seeds)
    gone = row(db_url, article)
    assert (gone["status"], gone["http_status"]) == ("tombstoned", 410)
    assert gone["content"]  # kept
    # checked again at the source's long interval, not dropped
    due = when(gone["next_check_at"])
    assert due - when(gone["last_checked_at"]) == timedelta(seconds=10)
    home = row(db_url, site_key(site, "/"))
    assert home["last_checked_at"] > home_checked and home["last_changed_at"] < before_gone

    # Not due yet: a crawl leaves the tombstoned page alone.
    started = datetime.now(UTC)
    await run_crawl(db_url, seeds=seeds)
    if started < due:
        assert row(db_url, article)["last_checked_at"] == gone["last_checked_at"]

    site.restore(0)  # back, with the same content (and the same ETag: it answers 304)
    await asyncio.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.1)
    await run_crawl(db_url, seeds=seeds)
    back = row(db_url, article)
    assert (back["status"], back["http_status"]) == ("active", 200)
    assert back["status_reason"] is None and back["status_evidence"] == "[]"

    history = json.loads(cli_json("history", "--db", db_url, article, "--json"))
    events = [(e["event"], e["http_status"]) for e in history[0]["events"]]
    assert events == [("tombstoned", 410), ("restored", 304)]
    assert history[0]["events"][0]["reason"] == "gone (410)"

    out = cli_json("changes", "--since", before_gone, "--json", "--db", db_url)
    entries = [json.loads(line) for line in out.splitlines()]
    assert [(e["kind"], e["canonical_url"]) for e in entries] == [
        ("tombstoned", article),
        ("restored", article),
    ]
    assert entries[0]["reason"] == "gone (410)" and entries[0]["time"] < entries[1]["time"]


@coroutine_test
async def test_a_first_404_brings_the_next_check_forward_and_is_its_status(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    path = "/faults/doc/alpha"
    url = site.url.rstrip("/") + path
    seeds = seeds_file(
        tmp_path,
        f'start_urls = ["{url}"]',
        "follow_links = false",
        'min_interval = "10m"',
        'max_interval = "7d"',
        "missing_after = 2",
        'missing_window = "0s"',
    )
    await run_crawl(db_url, seeds=seeds)
    key = site_key(site, path)
    stored = row(db_url, key)
    assert when(stored["next_check_at"]) - when(stored["last_checked_at"]) > timedelta(hours=1)

    site.fault(path, 404)
    await run_crawl(db_url, seeds=seeds)
    missing = row(db_url, key)
    assert (missing["status"], missing["http_status"]) == ("suspected_missing", 404)
    early = when(missing["next_check_at"]) - when(missing["last_checked_at"])
    assert timedelta(0) < early <= timedelta(minutes=10)  # within min_interval

    # a crawl checks every page not tombstoned: missing twice, now tombstoned
    await run_crawl(db_url, seeds=seeds)
    tomb = row(db_url, key)
    assert (tomb["status"], tomb["http_status"]) == ("tombstoned", 404)
    assert when(tomb["next_check_at"]) - when(tomb["last_checked_at"]) == timedelta(days=7)
    history = json.loads(cli_json("history", "--db", db_url, key, "--json"))
    assert [(e["event"], e["http_status"]) for e in history[0]["events"]] == [
        ("suspected_missing", 404),
        ("tombstoned", 404),
    ]


def article_index(site: TestSite, path: str) -> int:
    return next(a["i"] for a in site.manifest()["articles"] if a["path"] == path)


def tombstone_events(db_url: str, key: str) -> list[dict[str, Any]]:
    history = json.loads(cli_json("history", "--db", db_url, key, "--json"))
    return [e for e in history[0]["events"] if e["event"] == "tombstoned"]


@coroutine_test
async def test_an_atom_deleted_entry_tombstones_the_stored_page_at_once(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    """RFC 6721: the feed says the entry was deleted. The page's own 404 alone would only
    make it suspected (missing twice over a day, by default)."""
    [atom] = [f for f in site.manifest()["discovery"]["feeds"] if f["format"] == "atom"]
    seeds = seeds_file(
        tmp_path,
        f'start_urls = ["{site.url}"]',
        "follow_links = false",
        f'feeds = ["{atom["url"]}"]',
    )
    await run_crawl(db_url, seeds=seeds)
    path, other = atom["pages"][0], atom["pages"][1]
    key = site_key(site, path)
    assert row(db_url, key)["status"] == "active"

    site.delete(article_index(site, path))  # 404, and a deleted entry in the feed
    [atom] = [f for f in site.manifest()["discovery"]["feeds"] if f["format"] == "atom"]
    assert atom["deleted"] == [path]
    crawler = await run_crawl(db_url, seeds=seeds)
    tomb = row(db_url, key)
    assert tomb["status"] == "tombstoned" and tomb["content"]
    assert tomb["status_reason"].startswith(f"deleted (atom:deleted-entry in {atom['url']}")
    signals = [e for e in json.loads(tomb["status_evidence"]) if e.get("signal")]
    assert len(signals) == 1 and signals[0]["status"] is None
    # the page's own last answer: its 404, when the crawl asked it before the feed said
    # it was deleted (once tombstoned it waits for max_interval), else the 200 before
    assert tomb["http_status"] in (404, 200)
    [event] = tombstone_events(db_url, key)
    assert event["http_status"] is None and event["reason"] == tomb["status_reason"]
    assert crawler.stats.get_value("kc/discovery/feed/deleted") == 1
    assert query(db_url, "SELECT tombstones_created FROM crawl_runs ORDER BY id DESC")[0] == {
        "tombstones_created": 1
    }
    assert row(db_url, site_key(site, other))["status"] == "active"


@coroutine_test
async def test_an_api_item_flagged_deleted_tombstones_the_stored_page_at_once(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    api = site.url + "api/articles?per_page=100&include_deleted=1"
    seeds = seeds_file(
        tmp_path,
        f'start_urls = ["{site.url}"]',
        "follow_links = false",
        f'api = {{ url = "{api}", deleted_field = "deleted" }}',
    )
    await run_crawl(db_url, seeds=seeds)
    path = site.article_path(3)
    key = site_key(site, path)
    assert row(db_url, key)["status"] == "active"

    site.delete(3)
    crawler = await run_crawl(db_url, seeds=seeds)
    tomb = row(db_url, key)
    assert tomb["status"] == "tombstoned"
    assert tomb["status_reason"] == f"deleted (api item flagged 'deleted' in {api})"
    [signal] = [e for e in json.loads(tomb["status_evidence"]) if e.get("signal")]
    assert signal["status"] is None
    [event] = tombstone_events(db_url, key)
    assert event["http_status"] is None
    assert crawler.stats.get_value("kc/discovery/api/deleted") == 1
    # the other listed pages are as they were
    others = query(db_url, "SELECT status FROM pages WHERE canonical_url <> ?", key)
    assert {r["status"] for r in others} == {"active"}


def test_deletions_go_in_the_discovery_items_batch_before_its_checkpoint() -> None:
    from knowledge_crawler.items import Deleted, Discovered, DiscoveryItem
    from knowledge_crawler.pipelines.store import discovery_operations
    from knowledge_crawler.store import CheckpointAdvance, FrontierAdd, StatusChange

    item = DiscoveryItem("g", "feed", "2026-01-01T00:00:00.000000Z", checkpoint="2026-01-01")
    item.pages.append(Discovered("https://e.com/a", "https://e.com/a"))
    item.deleted.append(Deleted("https://e.com/b", "https://e.com/b", "atom:deleted-entry"))
    tomb = StatusChange("g", "https://e.com/b", "tombstoned", item.discovered_at, "deleted")
    ops = discovery_operations(item, [tomb])
    assert [type(op) for op in ops] == [FrontierAdd, StatusChange, CheckpointAdvance]
