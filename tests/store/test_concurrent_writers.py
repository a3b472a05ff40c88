"""Two processes upserting the same pages at once, on PostgreSQL (F-SCALE).

Each of two OS processes writes the same 300 pages, in an order of its own and with
content of its own, several rounds over, in batches, at the same time as the other (and,
in the mixed case, touches and status changes of other pages around each run of records,
as a crawl's batches have them).
Afterwards: one row per identity, every text either process wrote is in the page's
history exactly once (each version saved once, no update lost), the versions are as many
as the changes the writers were told they made, each run's counters say what its batches
did, and no batch failed (no deadlock).
"""

from __future__ import annotations

import multiprocessing
import os
import random
from collections import Counter
from typing import Any

import pytest

from knowledge_crawler.store import (
    Operation,
    PageRecord,
    PassageRecord,
    StatusChange,
    Store,
    Touch,
    open_store,
)
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.passages import split_passages

PAGES = 300
ROUNDS = 4
BATCH = 50
WORKERS = 2


def text(worker: int, round_: int, n: int) -> str:
    return (
        f"# Page {n}\n\nWritten by worker {worker} in round {round_}.\n\n"
        f"## Details\n\nPage {n} says something of its own, version {worker}.{round_}."
    )


def record(worker: int, round_: int, n: int) -> PageRecord:
    url = f"https://example.com/p{n}"
    content = text(worker, round_, n)
    return PageRecord(
        source_id="s",
        canonical_url=url,
        url=url,
        final_url=url,
        fetched_at=f"2026-01-0{round_ + 1}T00:00:00.{worker:06d}Z",
        http_status=200,
        content_hash=content_hash(content),
        content=content,
        title=f"Page {n} ({worker}.{round_})",
        word_count=len(content.split()),
        passages=PassageRecord.of(
            split_passages(content, source_id="s", canonical_url=url, max_words=20)
        ),
    )


def batch(worker: int, round_: int, records: list[PageRecord], mixed: bool) -> list[Operation]:
    """The records, and in the mixed case a touch and a status change of other pages."""
    if not mixed:
        return list(records)
    rng = random.Random(f"{worker} {round_} {records[0].canonical_url}")
    url = "https://example.com/p{}".format
    at = f"2026-01-0{round_ + 1}T00:00:01.000000Z"
    touches = [Touch("s", url(n), checked_at=at) for n in rng.sample(range(PAGES), 10)]
    missing = [
        StatusChange("s", url(n), "suspected_missing", at, "404 once")
        for n in rng.sample(range(PAGES), 5)
    ]
    return [*touches, *records[: BATCH // 2], *missing, *records[BATCH // 2 :]]


def writer(url: str, worker: int, start: Any, results: Any, mixed: bool) -> None:
    """One process: its own store, its own run, every page every round, in its own order."""
    store = open_store(url)
    run = store.start_run(spider="w", sources=["s"], mode="crawl", pid=os.getpid(), host="t")
    done: Counter[str] = Counter()
    errors: list[str] = []
    start.wait(60)
    for round_ in range(ROUNDS):
        order = list(range(PAGES))
        random.Random(worker * 1000 + round_).shuffle(order)
        records = [record(worker, round_, n) for n in order]
        for i in range(0, PAGES, BATCH):
            try:
                result = store.write(
                    batch(worker, round_, records[i : i + BATCH], mixed), run_id=run
                )
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            done["inserted"] += len(result.inserted)
            done["changed"] += len(result.changed)
            done["unchanged"] += len(result.unchanged)
            done["quarantined"] += len(result.quarantined)
    store.close()
    results.put({"worker": worker, "run": run, "done": dict(done), "errors": errors})


def rows(store: Store, sql: str) -> list[Any]:
    return list(store.query(sql))  # type: ignore[attr-defined]


@pytest.mark.parametrize("mixed", [False, True], ids=["records", "mixed"])
def test_two_processes_upserting_the_same_pages_lose_nothing(
    postgres_url: str, mixed: bool
) -> None:
    open_store(postgres_url).close()  # migrated before the race
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    processes = [
        context.Process(target=writer, args=(postgres_url, worker, start, results, mixed))
        for worker in range(WORKERS)
    ]
    for process in processes:
        process.start()
    start.set()
    reports = [results.get(timeout=180) for _ in processes]
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    assert [r["errors"] for r in reports] == [[]] * WORKERS

    done: Counter[str] = Counter()
    for report in reports:
        done.update(report["done"])
    writes = WORKERS * ROUNDS * PAGES
    assert done["inserted"] == PAGES and done["quarantined"] == 0
    assert done["inserted"] + done["changed"] + done["unchanged"] == writes

    with open_store(postgres_url) as store:
        [[n, identities]] = rows(
            store,
            "SELECT COUNT(*), COUNT(DISTINCT (source_id, canonical_url)) FROM page_meta",
        )
        assert n == identities == PAGES
        [[versions]] = rows(store, "SELECT COUNT(*) FROM page_versions")
        assert versions == done["changed"]
        # Every text written is in its page's history exactly once, each stored with the
        # hash of its own text (a version is the page as it was, never a mix of two).
        texts: dict[str, list[str]] = {}
        for url, content, digest in rows(
            store,
            "SELECT m.canonical_url, v.content, v.content_hash FROM page_versions v "
            "JOIN page_meta m ON m.id = v.page_id "
            "UNION ALL SELECT canonical_url, content, content_hash FROM pages",
        ):
            assert digest == content_hash(content)
            texts.setdefault(url, []).append(content)
        for n in range(PAGES):
            written = sorted(text(w, r, n) for w in range(WORKERS) for r in range(ROUNDS))
            assert sorted(texts[f"https://example.com/p{n}"]) == written, n
        # Each page's passages are those of its current text, once.
        [[passages, pages_with]] = rows(
            store, "SELECT COUNT(*), COUNT(DISTINCT page_id) FROM passages"
        )
        assert pages_with == PAGES and passages == 2 * PAGES
        # No counter lost: each run holds what its own batches did.
        for report in reports:
            [run] = rows(
                store,
                "SELECT pages_new, responses_200_changed, responses_200_unchanged, "
                f"upserts_completed FROM crawl_runs WHERE id = {report['run']}",
            )
            mine = report["done"]
            assert tuple(run) == (
                mine.get("inserted", 0),
                mine.get("changed", 0),
                mine.get("unchanged", 0),
                ROUNDS * PAGES,
            )
