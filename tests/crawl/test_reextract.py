"""``knowledge-crawler reextract``: a new extraction rule applied from the archive, offline."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from knowledge_crawler.cli.reextract import reextract
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, pages_by_url, query, run_crawl, site_key

pytestmark = pytest.mark.crawl

#: a sentence in about half of the test site's articles ("See also: <a title>.")
SEE_ALSO = r"See also: [^.]*\."

#: what re-extraction must leave as it is: nothing was fetched
FETCH_STATE = (
    "url",
    "final_url",
    "fetched_at",
    "http_status",
    "etag",
    "last_modified",
    "status",
    "first_seen_at",
    "last_seen_at",
    "last_checked_at",
    "next_check_at",
    "check_interval",
    "depth",
    "archive_file",
    "archive_offset",
)


def seeds_file(path: Path, site: TestSite, *boilerplate: str) -> Path:
    lines = ["[[source]]", 'id = "site"', f'start_urls = ["{site.url}"]']
    if boilerplate:
        lines.append("boilerplate = [" + ", ".join(f"'{p}'" for p in boilerplate) + "]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def no_network() -> Iterator[list[Any]]:
    """Every attempt to open a network connection fails, and is recorded."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("no network in this test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        yield attempts


def run_reextract(db_url: str, seeds: Path, *args: str) -> Result:
    return CliRunner().invoke(reextract, ["--db", db_url, "--seeds", str(seeds), *args])


def by_path(db_url: str) -> dict[str, dict[str, Any]]:
    """Stored pages by URL path (two test sites differ in their port only)."""
    return {u.split("/", 3)[3]: r for u, r in pages_by_url(db_url).items()}


def passages(db_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Each page's passages (place, headings, text), by URL path."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for r in query(
        db_url,
        "SELECT m.canonical_url, p.ord, p.heading_path, p.content FROM passages p "
        "JOIN page_meta m ON m.id = p.page_id ORDER BY m.canonical_url, p.ord",
    ):
        path = r["canonical_url"].split("/", 3)[3]
        out.setdefault(path, []).append((r["ord"], r["heading_path"], r["content"]))
    return out


@coroutine_test
async def test_a_new_boilerplate_rule_is_applied_from_the_archive_with_no_network(
    tmp_path: Path, db_url: str
) -> None:
    with TestSite(pages=24, seed=5) as site:
        await run_crawl(db_url, seeds=str(seeds_file(tmp_path / "a.toml", site)))
        seeds = seeds_file(tmp_path / "b.toml", site, SEE_ALSO)
    # The site is stopped: from here on no page can be fetched from it.
    before = pages_by_url(db_url)
    hit = {u for u, p in before.items() if "See also:" in p["content"]}
    assert 0 < len(hit) < len(before)

    with no_network() as attempts:
        result = run_reextract(db_url, seeds)
    assert result.exit_code == 0, result.output
    assert attempts == []
    n = len(before)
    assert result.stdout == (
        f"reextract: {n} pages: {n} read from the archive, {len(hit)} changed, "
        f"{n - len(hit)} unchanged, 0 without an archive record, 0 errors\n"
    )

    after = pages_by_url(db_url)
    assert set(after) == set(before)
    for url, page in after.items():
        if url in hit:
            assert "See also:" not in page["content"]
            assert page["content_hash"] != before[url]["content_hash"]
            assert page["last_changed_at"] > before[url]["last_changed_at"]
        else:
            assert page["content"] == before[url]["content"]
            assert page["last_changed_at"] == before[url]["last_changed_at"]
        for column in FETCH_STATE:
            assert page[column] == before[url][column], (url, column)
    versions = query(
        db_url,
        "SELECT m.canonical_url, v.content, v.archive_file, v.archive_offset "
        "FROM page_versions v JOIN page_meta m ON m.id = v.page_id",
    )
    assert {v["canonical_url"] for v in versions} == hit and len(versions) == len(hit)
    for v in versions:
        assert v["content"] == before[v["canonical_url"]]["content"]
        assert v["archive_file"] == before[v["canonical_url"]]["archive_file"]

    # What re-extraction stored is what a crawl with the new rule stores.
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    with TestSite(pages=24, seed=5) as same:
        await run_crawl(fresh, seeds=str(seeds_file(tmp_path / "c.toml", same, SEE_ALSO)))
    crawled, rebuilt = by_path(fresh), by_path(db_url)
    assert set(crawled) == set(rebuilt)
    for path, page in crawled.items():
        for column in ("content", "content_hash", "title", "word_count", "thin", "minhash"):
            assert rebuilt[path][column] == page[column], (path, column)
        assert rebuilt[path]["duplicate_kind"] == page["duplicate_kind"], path
    assert passages(fresh) == passages(db_url)

    # Nothing new to apply: every page re-extracts to what is stored.
    again = run_reextract(db_url, seeds)
    assert again.exit_code == 0 and f"0 changed, {n} unchanged" in again.stdout
    assert len(query(db_url, "SELECT id FROM page_versions")) == len(hit)


@coroutine_test
async def test_a_lost_warc_file_is_named_once_and_the_rest_is_re_extracted(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    await run_crawl(
        db_url, {"KC_ARCHIVE_MAX_BYTES": 60_000}, seeds=str(seeds_file(tmp_path / "a.toml", site))
    )
    before = pages_by_url(db_url)
    files = sorted({p["archive_file"] for p in before.values()})
    assert len(files) >= 3
    lost = files[1]
    (tmp_path / "archive" / lost).unlink()
    in_lost = {u for u, p in before.items() if p["archive_file"] == lost}
    # Two pages stored before there was an archive: skipped, not an error.
    unarchived = sorted(set(before) - in_lost)[:2]
    import sqlite3

    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    with conn:
        conn.executemany(
            "UPDATE page_meta SET archive_file = NULL, archive_offset = NULL "
            "WHERE canonical_url = ?",
            [(u,) for u in unarchived],
        )
    conn.close()

    result = run_reextract(db_url, seeds_file(tmp_path / "b.toml", site, SEE_ALSO))
    assert result.exit_code == 1, result.output
    assert result.stderr.count(lost) == 1 and "no such file" in result.stderr
    n, read = len(before), len(before) - len(in_lost) - len(unarchived)
    assert f"reextract: {n} pages: {read} read from the archive, " in result.stdout
    assert result.stdout.endswith(f"2 without an archive record, {len(in_lost)} errors\n")

    after = pages_by_url(db_url)
    assert set(after) == set(before)  # nothing lost
    for url, page in after.items():
        if url in in_lost or url in unarchived:
            assert page["content"] == before[url]["content"]  # left as stored
        elif "See also:" in before[url]["content"]:
            assert "See also:" not in page["content"]  # re-extracted with the new rule
    assert any("See also:" in before[u]["content"] for u in set(after) - in_lost)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, db_url: str) -> None:
    missing = run_reextract(db_url, tmp_path / "none.toml")
    assert missing.exit_code == 2 and missing.stderr.startswith("knowledge-crawler: error: ")
    seeds = tmp_path / "s.toml"
    seeds.write_text('[[source]]\nid = "a"\nstart_urls = ["https://a.example/"]\n')
    no_db = run_reextract(db_url, seeds)
    assert no_db.exit_code == 2 and "no database at" in no_db.stderr
    other = run_reextract(db_url, seeds, "--source", "b")
    assert other.exit_code == 2 and len(other.stderr.splitlines()) == 1


@coroutine_test
async def test_pages_a_crawl_stored_after_reextract_read_them_are_skipped_not_reverted(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    from knowledge_crawler.archive.reextract import Reextractor
    from knowledge_crawler.sources import resolve_seeds
    from knowledge_crawler.store import open_store

    seeds = seeds_file(tmp_path / "a.toml", site)
    await run_crawl(db_url, seeds=str(seeds))
    with open_store(db_url) as store:
        worker = Reextractor(
            store,
            {s.id: s for s in resolve_seeds(str(seeds_file(tmp_path / "b.toml", site, SEE_ALSO)))},
            tmp_path / "archive",
            passage_words=200,
        )
        pages = worker.pages()  # read: what the re-extraction works from
        # meanwhile a crawl stores new versions of three articles
        changed = {site_key(site, site.article_path(i)) for i in range(3)}
        for i in range(3):
            site.mutate(i, "text")
        await run_crawl(db_url, seeds=str(seeds))
        crawled = pages_by_url(db_url)
        assert all(crawled[url]["fetched_at"] > p.fetched_at for p in pages
                   for url in [p.canonical_url] if url in changed)  # fmt: skip
        summary = worker.run(pages)
    assert summary.stale == 3
    assert summary.line().endswith(", 3 skipped: stored anew since they were read")
    after = pages_by_url(db_url)
    for url in changed:  # the crawl's version stands
        assert after[url]["content"] == crawled[url]["content"]
        assert after[url]["content_hash"] == crawled[url]["content_hash"]
    others = {u for u, p in crawled.items() if u not in changed and "See also:" in p["content"]}
    assert others and all("See also:" not in after[u]["content"] for u in others)


@coroutine_test
async def test_reextract_is_refused_while_a_crawl_holds_the_source_or_waits_with_wait(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    import threading

    from knowledge_crawler.store import LeaseHolder, open_store

    seeds = seeds_file(tmp_path / "a.toml", site, SEE_ALSO)
    await run_crawl(db_url, seeds=str(seeds_file(tmp_path / "b.toml", site)))
    crawl = LeaseHolder("elsewhere:7:x", "elsewhere:7:x", "elsewhere", 7, "crawl", run_id=9)
    with open_store(db_url) as store:
        assert store.acquire_leases(["site"], crawl, ttl=60) == []
    before = pages_by_url(db_url)
    refused = run_reextract(db_url, seeds)
    assert refused.exit_code == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(
        "knowledge-crawler: error: source 'site' is being written by crawl run 9 (pid 7 on "
        "elsewhere), last heartbeat "
    )
    assert line.endswith("; or wait for it with --wait SECONDS")
    assert pages_by_url(db_url) == before  # nothing written

    def release() -> None:
        with open_store(db_url) as store:
            store.release_leases(crawl)

    threading.Timer(1.0, release).start()
    waited = run_reextract(db_url, seeds, "--wait", "30")
    assert waited.exit_code == 0, waited.output
    assert "waiting up to 30 s for the writer lease: source 'site'" in waited.stderr
    assert " 0 errors\n" in waited.stdout and "skipped" not in waited.stdout
    assert query(db_url, "SELECT * FROM leases") == []
