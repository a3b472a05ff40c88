"""Every crawl run is recorded truthfully: who ran it, how it ended, what it stored."""

from __future__ import annotations

import logging
import os
import socket
import subprocess

import pytest

from knowledge_crawler.store import open_store
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, query, run_crawl

pytestmark = pytest.mark.crawl


def runs(db_url: str) -> list[dict[str, object]]:
    return query(db_url, "SELECT * FROM crawl_runs ORDER BY id")


@coroutine_test
async def test_a_run_records_its_job_pid_host_and_outcome(site: TestSite, db_url: str) -> None:
    crawler = await run_crawl(db_url, seeds=site.url, _job="6487ec2c")
    [run] = runs(db_url)
    assert (run["job_id"], run["pid"], run["host"]) == (
        "6487ec2c",
        os.getpid(),
        socket.gethostname(),
    )
    assert run["outcome"] == "finished" and crawler.stats.get_value("kc/outcome") == "finished"
    [stored] = query(db_url, "SELECT COUNT(*) AS n FROM page_meta")
    assert run["upserts_completed"] == run["pages_new"] == stored["n"]


@coroutine_test
async def test_a_new_run_abandons_the_dead_runs_of_this_host_only(
    site: TestSite, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    here = socket.gethostname()
    with open_store(db_url) as store:
        dead = store.start_run(
            spider="knowledge", sources=[], mode="crawl", pid=gone.pid, host=here
        )
        # our pid, but a previous process's run (pids are reused, e.g. 1 in containers)
        ours = store.start_run(
            spider="knowledge", sources=[], mode="crawl", pid=os.getpid(), host=here, job_id="old"
        )
        elsewhere = store.start_run(
            spider="knowledge", sources=[], mode="crawl", pid=gone.pid, host="elsewhere"
        )
        parent = store.start_run(
            spider="knowledge", sources=[], mode="crawl", pid=os.getppid(), host=here
        )
    with caplog.at_level(logging.WARNING, logger="knowledge_crawler.crawl.runtime"):
        await run_crawl(db_url, seeds=site.url)
    outcomes = {r["id"]: r["outcome"] for r in runs(db_url)}
    assert outcomes[dead] == outcomes[ours] == "abandoned"
    assert outcomes[elsewhere] == outcomes[parent] == "running"
    assert list(outcomes.values())[-1] == "finished"
    warned = [r.getMessage() for r in caplog.records if "abandoned" in r.getMessage()]
    assert len(warned) == 2
    assert f"run {dead} (pid {gone.pid} on {here}" in warned[0]
    assert "job old" in warned[1]
