"""Stages 1-4 in worker processes (KC_STAGE_WORKERS) store what they store in the crawl."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowledge_crawler.items import PageItem
from knowledge_crawler.testsite import TestSite
from knowledge_crawler.transform.fingerprint import content_hash
from tests.helpers import coroutine_test, last_run, query, run_crawl, site_key
from tests.stage_fault_pipelines import (
    CrashingExtract,
    RaisingExtract,
    SpinningExtract,
    pipelines,
)

pytestmark = pytest.mark.crawl

#: one request at a time: which of two copies represents the other is then the same
SERIAL = {"CONCURRENT_REQUESTS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}

STORED = (
    "SELECT p.canonical_url, p.title, p.content, p.headings, p.word_count, p.language, "
    "p.thin, p.content_hash, p.minhash, p.minhash_params, p.duplicate_kind, "
    "(SELECT group_concat(s.id || ':' || s.heading_path || ':' || s.content, '|') "
    " FROM passages s WHERE s.page_id = p.id) AS passages "
    "FROM pages p ORDER BY p.canonical_url"
)


@coroutine_test
async def test_a_crawl_with_workers_stores_what_one_without_them_does(
    site: TestSite, tmp_path: Any
) -> None:
    urls = {w: f"sqlite:///{tmp_path}/workers-{w}.db" for w in (0, 1)}
    for workers, url in urls.items():
        await run_crawl(url, {**SERIAL, "KC_STAGE_WORKERS": workers}, seeds=site.url)
    alone, pooled = (query(urls[w], STORED) for w in (0, 1))
    assert len(alone) > 40 and any(r["duplicate_kind"] for r in alone)
    assert pooled == alone
    counters = json.loads(last_run(urls[1])["counters"])
    assert counters["kc/stages/workers"] == 1
    assert counters["kc/stages/pages"] == counters["kc/extract/ok"] > 40
    assert "kc/stages/pages" not in json.loads(last_run(urls[0])["counters"])


class AddNote:
    """A site's own stage between clean and canonicalize that adds a sentence."""

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            item.content += "\n\nA note every page of this site gets from its own stage."
        return item


@coroutine_test
async def test_a_stage_of_its_own_between_the_stages_is_not_overtaken(
    site: TestSite, db_url: str
) -> None:
    pipelines = {
        "knowledge_crawler.pipelines.archive.ArchivePipeline": 50,
        "knowledge_crawler.pipelines.extract.ExtractPipeline": 100,
        "knowledge_crawler.pipelines.clean.CleanPipeline": 200,
        f"{__name__}.AddNote": 250,
        "knowledge_crawler.pipelines.canonicalize.CanonicalizePipeline": 300,
        "knowledge_crawler.pipelines.fingerprint.FingerprintPipeline": 400,
        "knowledge_crawler.pipelines.dedupe.DedupePipeline": 500,
        "knowledge_crawler.pipelines.store.StorePipeline": 600,
    }
    await run_crawl(db_url, {"ITEM_PIPELINES": pipelines, "KC_STAGE_WORKERS": 1}, seeds=site.url)
    rows = query(
        db_url,
        "SELECT p.content, p.content_hash, (SELECT group_concat(s.content, ' ') FROM passages s "
        "WHERE s.page_id = p.id) AS passages FROM pages p",
    )
    assert len(rows) > 40
    for row in rows:
        assert row["content"].endswith("from its own stage.")
        # fingerprinted after the note, not taken from the worker's stages of before
        assert row["content_hash"] == content_hash(row["content"])
        assert "from its own stage." in row["passages"]


def stored(db_url: str) -> set[str]:
    return {r["canonical_url"] for r in query(db_url, "SELECT canonical_url FROM pages")}


def attempts(db_url: str) -> list[dict[str, Any]]:
    return query(db_url, "SELECT * FROM fetch_attempts ORDER BY canonical_url")


@coroutine_test
async def test_a_page_whose_stages_raise_fails_alone_with_retry_state(
    site: TestSite, tmp_path: Any
) -> None:
    urls = {name: f"sqlite:///{tmp_path}/{name}.db" for name in ("sound", "faulty")}
    await run_crawl(urls["sound"], {"KC_STAGE_WORKERS": 1}, seeds=site.url)
    faulty = {"KC_STAGE_WORKERS": 1, "ITEM_PIPELINES": pipelines(RaisingExtract)}
    await run_crawl(urls["faulty"], faulty, seeds=site.url)
    about = site_key(site, "/about")
    # every other page stored, the pages found through their links included
    assert about in stored(urls["sound"]) and len(stored(urls["sound"])) > 40
    assert stored(urls["faulty"]) == stored(urls["sound"]) - {about}
    [failure] = attempts(urls["faulty"])
    assert failure["canonical_url"] == about and failure["attempts"] == 1
    assert failure["last_error"] == "StageFailed: ValueError: a stage fault made on purpose"
    assert failure["next_retry_at"] and failure["dead_lettered_at"] is None
    run = last_run(urls["faulty"])
    assert (run["outcome"], run["parse_failures"]) == ("finished", 1)
    assert json.loads(run["counters"])["kc/stages/failed"] == 1


@coroutine_test
async def test_a_page_that_kills_its_worker_is_retried_then_dead_lettered(
    site: TestSite, db_url: str
) -> None:
    settings = {
        "KC_STAGE_WORKERS": 1,
        "ITEM_PIPELINES": pipelines(CrashingExtract),
        "KC_RETRY_MAX_ATTEMPTS": 2,
        "KC_RETRY_BASE_SECONDS": 0.01,  # the retry is due by the next crawl
        "KC_RETRY_MAX_SECONDS": 0.01,
    }
    about = site_key(site, "/about")
    await run_crawl(db_url, settings, seeds=site.url)
    assert len(stored(db_url)) > 40 and about not in stored(db_url)
    [failure] = attempts(db_url)
    assert (failure["canonical_url"], failure["attempts"]) == (about, 1)
    assert failure["last_error"] == "WorkerCrashed" and failure["dead_lettered_at"] is None
    run = last_run(db_url)
    assert (run["outcome"], run["parse_failures"]) == ("finished", 1)
    assert json.loads(run["counters"])["kc/stages/restarts"] <= 2

    await run_crawl(db_url, settings, seeds=site.url)  # it kills its worker again: given up
    [failure] = attempts(db_url)
    assert (failure["canonical_url"], failure["attempts"]) == (about, 2)
    assert failure["dead_lettered_at"] is not None
    assert last_run(db_url)["parse_failures"] == 1


@coroutine_test
async def test_a_page_past_the_time_limit_fails_and_the_crawl_ends(
    site: TestSite, db_url: str
) -> None:
    settings = {
        "KC_STAGE_WORKERS": 1,
        "ITEM_PIPELINES": pipelines(SpinningExtract),
        "KC_STAGE_TIMEOUT_SECONDS": 5,
    }
    crawler = await run_crawl(db_url, settings, seeds=site.url)
    assert crawler.stats.get_value("finish_reason") == "finished"  # not CLOSESPIDER_TIMEOUT
    about = site_key(site, "/about")
    assert len(stored(db_url)) > 40 and about not in stored(db_url)
    [failure] = attempts(db_url)
    assert (failure["canonical_url"], failure["attempts"]) == (about, 1)
    assert failure["last_error"] == "StageTimeout: over 5 s"
    run = last_run(db_url)
    assert (run["outcome"], run["parse_failures"]) == ("finished", 1)
    assert json.loads(run["counters"])["kc/stages/timed_out"] == 1
