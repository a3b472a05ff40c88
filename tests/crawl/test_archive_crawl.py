"""The raw archive on the loopback site: every stored page can be read back from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from knowledge_crawler.archive.warc import ArchivedResponse, ArchiveReader
from knowledge_crawler.testsite import TestSite
from knowledge_crawler.transform.decode import decode_html
from knowledge_crawler.transform.extract import extract, stored_form
from tests.helpers import coroutine_test, last_run, pages_by_url, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


def stored_content(response: ArchivedResponse, final_url: str) -> str:
    """The content a crawl stores for this response (default cleaning, no source rules)."""
    result = extract(decode_html(response.body, response.header("Content-Type")), url=final_url)
    return stored_form(result.markdown, result.headings)[0]


def archived_urls(directory: Path) -> list[str]:
    urls = []
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as f:
            urls += [
                r.rec_headers.get_header("WARC-Target-URI")
                for r in ArchiveIterator(f)
                if r.rec_type == "response"
            ]
    return urls


@coroutine_test
async def test_every_stored_page_reads_back_from_its_archived_response(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    crawler = await run_crawl(db_url, seeds=site.url)
    stored = pages_by_url(db_url)
    directory = tmp_path / "archive"  # beside tmp_path/knowledge.db
    assert stored and all(p["archive_file"] and p["archive_offset"] for p in stored.values())
    with ArchiveReader(directory) as reader:
        for page in stored.values():
            response = reader.read(page["archive_file"], page["archive_offset"])
            assert response.url == page["final_url"] and response.status == page["http_status"]
            assert stored_content(response, page["final_url"]) == page["content"]
    # Every page response is archived, the ones that are not HTML too (then dropped).
    urls = archived_urls(directory)
    assert len(urls) == len(set(urls)) == crawler.stats.get_value("kc/archive/records")
    assert site.url + "api/data.json" in urls  # JSON: archived, then not stored
    assert crawler.stats.get_value("kc/archive/files") == 1
    assert not crawler.stats.get_value("kc/archive/failed")


@coroutine_test
async def test_a_changed_pages_old_version_keeps_its_old_archived_response(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    await run_crawl(db_url, seeds=site.url)
    before = pages_by_url(db_url)
    changed = site_key(site, site.manifest()["articles"][4]["path"])
    site.mutate(4, "text", copies=False)
    await run_crawl(db_url, seeds=site.url)
    after = pages_by_url(db_url)

    [version] = query(
        db_url,
        "SELECT v.* FROM page_versions v JOIN page_meta m ON m.id = v.page_id "
        "WHERE m.canonical_url = ?",
        changed,
    )
    old = (before[changed]["archive_file"], before[changed]["archive_offset"])
    new = (after[changed]["archive_file"], after[changed]["archive_offset"])
    assert (version["archive_file"], version["archive_offset"]) == old and new != old
    assert new[0] != old[0]  # the second crawl wrote its own file
    with ArchiveReader(tmp_path / "archive") as reader:
        old_url = before[changed]["final_url"]
        assert stored_content(reader.read(*old), old_url) == version["content"]
        assert (
            stored_content(reader.read(*new), after[changed]["final_url"])
            == (after[changed]["content"])
        )
    # A page that answered 304 has no new response: it keeps its location. One that
    # answered 200 again points at its new response, in the second crawl's file.
    kept = {u for u, p in after.items() if p["archive_file"] == before[u]["archive_file"]}
    assert all(after[u]["archive_offset"] == before[u]["archive_offset"] for u in kept)
    assert all(after[u]["archive_file"] == new[0] for u in set(after) - kept)
    assert len(kept) == last_run(db_url)["responses_304"] > 0


@coroutine_test
async def test_archiving_turned_off_writes_no_file_and_no_location(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    crawler = await run_crawl(db_url, {"KC_ARCHIVE_ENABLED": "false"}, seeds=site.url)
    stored = pages_by_url(db_url)
    assert stored and not any(p["archive_file"] for p in stored.values())
    assert not (tmp_path / "archive").exists()
    assert crawler.stats.get_value("kc/archive/records") is None


@coroutine_test
async def test_the_archive_rotates_into_files_of_bounded_size(
    site: TestSite, db_url: str, tmp_path: Path
) -> None:
    crawler = await run_crawl(db_url, {"KC_ARCHIVE_MAX_BYTES": 60_000}, seeds=site.url)
    files = sorted((tmp_path / "archive").glob("*.warc.gz"))
    assert len(files) >= 3 and crawler.stats.get_value("kc/archive/files") == len(files)
    assert all(f.stat().st_size <= 60_000 for f in files)
    run_id = crawler.stats.get_value("kc/run_id")
    assert all(f.name.startswith("kc-") and f"-run{run_id}-" in f.name for f in files)
    stored = pages_by_url(db_url)
    assert {p["archive_file"] for p in stored.values()} == {f.name for f in files}


@coroutine_test
async def test_a_record_that_cannot_be_written_leaves_its_page_stored_without_one(
    site: TestSite, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowledge_crawler.archive.warc import WarcWriter

    real = WarcWriter.write_response
    calls = {"n": 0, "failed": set()}

    def every_fifth_fails(self: WarcWriter, url: str, *args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] % 5 == 0:  # the disk filled up for a moment
            calls["failed"].add(url)
            raise OSError(28, "No space left on device")
        return real(self, url, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(WarcWriter, "write_response", every_fifth_fails)
    crawler = await run_crawl(db_url, seeds=site.url)
    stored = pages_by_url(db_url)
    failed = {u for u, p in stored.items() if p["archive_file"] is None}
    assert len(stored) > 40 and failed  # every page stored, archived or not
    assert {stored[u]["final_url"] for u in failed} <= calls["failed"]
    assert crawler.stats.get_value("kc/archive/failed") == len(calls["failed"])
    with ArchiveReader(tmp_path / "archive") as reader:
        for page in stored.values():
            if page["archive_file"] is not None:
                response = reader.read(page["archive_file"], page["archive_offset"])
                assert response.url == page["final_url"]
