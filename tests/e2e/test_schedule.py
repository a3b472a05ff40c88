"""``knowledge-crawler schedule``: recurring refresh crawls per source, as a real subprocess
running real crawls of the loopback test site (locally, and as jobs of a real scrapyd)."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.testsite import TestSite
from tests.e2e.scrapyd_server import ScrapydServer
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
# A refresh of the site's ~60 pages one at a time: about 2 s of requests, longer than --every 2
# with the crawl's start-up, so the next due run comes while one is going.
STEADY = ["-s", "DOWNLOAD_DELAY=0.03", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1"]
STEADY += ["-s", "AUTOTHROTTLE_ENABLED=False"]


def seeds_file(tmp_path: Path, site: TestSite, *extra: str) -> Path:
    """One source 'site' whose pages are due again within 2 s (plus ``extra`` tables)."""
    path = tmp_path / "seeds.toml"
    text = (
        f'[[source]]\nid = "site"\nstart_urls = ["{site.url}"]\n'
        'min_interval = "1s"\nmax_interval = "2s"\n'
    )
    path.write_text(text + "".join(extra), encoding="utf-8")
    return path


def command(*args: str) -> list[str]:
    return [str(BIN / "knowledge-crawler"), "schedule", *args]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "KC_DATABASE_URL"}


def schedule(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def runs(db_url: str) -> list[dict[str, Any]]:
    try:
        return query(db_url, "SELECT * FROM crawl_runs ORDER BY id")
    except Exception:  # no database or no schema yet
        return []


def wait_until(
    what: str, check: Callable[[], bool], process: subprocess.Popen[str], timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process.poll() is not None:
            _, stderr = process.communicate()
            raise AssertionError(f"schedule exited {process.returncode} before {what}:\n{stderr}")
        if time.monotonic() > deadline:
            process.kill()
            _, stderr = process.communicate()
            raise AssertionError(f"no {what} within {timeout} s:\n{stderr[-3000:]}")
        time.sleep(0.1)


def assert_never_overlapped(recorded: list[dict[str, Any]]) -> None:
    """Runs of one source, by start time: each ended before the next started."""
    ordered = sorted(recorded, key=lambda r: r["started_at"])
    for before, after in itertools.pairwise(ordered):
        assert before["finished_at"] is not None, before
        assert before["finished_at"] <= after["started_at"], (before, after)


def test_once_runs_each_source_once_and_exits_0(site: TestSite, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'k.db'}"
    other = f'\n[[source]]\nid = "few"\nstart_urls = ["{site.url}"]\nmax_pages = 3\n'
    seeds = seeds_file(tmp_path, site, other)
    result = schedule(
        str(seeds), "--once", "--mode", "crawl", "--max-parallel", "2", "--db", db_url, *FAST
    )
    assert result.returncode == 0, result.stderr
    recorded = runs(db_url)
    assert sorted(r["sources"] for r in recorded) == ['["few"]', '["site"]']
    assert {r["outcome"] for r in recorded} == {"finished"}
    assert {r["mode"] for r in recorded} == {"crawl"}
    lines = result.stderr.splitlines()
    for source in ("site", "few"):
        assert sum(f"source '{source}': run 1 started" in line for line in lines) == 1
        assert sum(f"source '{source}': run 1 finished (exit 0)" in line for line in lines) == 1
    [pages] = query(db_url, "SELECT COUNT(*) AS n FROM pages WHERE source_id = 'site'")
    assert pages["n"] >= len(site.manifest()["articles"])


def test_a_run_whose_source_another_writer_holds_is_refused_or_waits_with_wait(
    site: TestSite, tmp_path: Path
) -> None:
    import threading

    from knowledge_crawler.store import LeaseHolder, open_store

    db_url = f"sqlite:///{tmp_path / 'k.db'}"
    seeds = seeds_file(tmp_path, site)
    manual = LeaseHolder("elsewhere:5:x", "elsewhere:5:x", "elsewhere", 5, "crawl", run_id=3)
    with open_store(db_url) as store:
        assert store.acquire_leases(["site"], manual, ttl=120) == []
    refused = schedule(str(seeds), "--once", "--mode", "crawl", "--db", db_url, *FAST)
    assert refused.returncode == 1, refused.stderr
    assert (
        "source 'site': run 1 refused (exit 2: source 'site' is being written by crawl run 3 "
        "(pid 5 on elsewhere)" in refused.stderr
    ), refused.stderr
    assert runs(db_url) == []

    def release() -> None:
        with open_store(db_url) as store:
            store.release_leases(manual)

    threading.Timer(1.0, release).start()
    waited = schedule(
        str(seeds), "--once", "--mode", "crawl", "--wait", "60", "--db", db_url, *FAST
    )
    assert waited.returncode == 0, waited.stderr
    assert [r["outcome"] for r in runs(db_url)] == ["finished"]


def test_recurring_refreshes_never_overlap_and_sigterm_stops_cleanly(
    site: TestSite, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'k.db'}"
    seeds = seeds_file(tmp_path, site)
    first = schedule(str(seeds), "--once", "--mode", "crawl", "--db", db_url, *FAST)
    assert first.returncode == 0, first.stderr
    process = subprocess.Popen(
        command(str(seeds), "--every", "2", "--db", db_url, *STEADY),
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def refreshes() -> list[dict[str, Any]]:
        return [r for r in runs(db_url) if r["mode"] == "refresh"]

    wait_until(
        "two finished refreshes",
        lambda: sum(r["outcome"] == "finished" for r in refreshes()) >= 2,
        process,
    )
    wait_until(
        "a refresh running",
        lambda: any(r["outcome"] == "running" for r in refreshes()),
        process,
    )
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr

    recorded = refreshes()
    assert len(recorded) >= 3
    assert all(r["outcome"] in ("finished", "interrupted") for r in recorded), recorded
    assert recorded[-1]["outcome"] == "interrupted"  # it got SIGTERM and stopped cleanly
    assert sum(r["responses_304"] for r in recorded) > 0  # refreshes revalidate stored pages
    assert_never_overlapped(recorded)

    lines = stderr.splitlines()
    assert any("skipped: its previous run is still running" in line for line in lines), stderr
    assert any("SIGTERM: stopping" in line for line in lines), stderr
    started = [line for line in lines if re.search(r"run \d+ started", line)]
    ended = [line for line in lines if re.search(r"run \d+ (finished|interrupted) ", line)]
    assert len(started) == len(ended) == len(recorded), stderr
    assert re.search(r"run \d+ interrupted \(exit 130\) in [\d.]+ s$", ended[-1]), ended[-1]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '[[source]]\nid = "blog"\nstart_urls = ["https://blog.example.com/"]\ndepth_limt = 3\n',
            "source 'blog': key 'depth_limt': unknown key (did you mean 'depth_limit'?)",
        ),
        (None, "file not found"),
    ],
    ids=["unknown-key", "missing-file"],
)
def test_a_bad_seeds_file_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    seeds = tmp_path / "blog.toml"
    if content is not None:
        seeds.write_text(content, encoding="utf-8")
    result = schedule(str(seeds), "--once", timeout=30)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"knowledge-crawler: error: {seeds}: ")
    assert line.endswith(message)


def test_through_scrapyd_runs_are_jobs_and_sigterm_cancels_them(
    scrapyd: ScrapydServer, site: TestSite, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'k.db'}"
    seeds = seeds_file(tmp_path, site)
    through = ["--scrapyd", scrapyd.url, "--db", db_url]
    once = schedule(str(seeds), "--once", "--mode", "crawl", *through, *FAST)
    assert once.returncode == 0, once.stderr + scrapyd.tail()
    [run] = runs(db_url)
    assert run["outcome"] == "finished" and run["job_id"]
    assert f"run 1 started (scrapyd job {run['job_id']} at {scrapyd.url}" in once.stderr
    assert f"run 1 finished (job {run['job_id']})" in once.stderr

    process = subprocess.Popen(
        command(str(seeds), "--every", "2", *through, *STEADY),
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(
        "a refresh job running",
        lambda: any(r["outcome"] == "running" for r in runs(db_url)),
        process,
    )
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    refresh = runs(db_url)[-1]
    assert refresh["mode"] == "refresh" and refresh["outcome"] == "interrupted", refresh
    assert f"run 1 interrupted (job {refresh['job_id']})" in stderr, stderr
