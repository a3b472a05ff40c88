"""The stage workers of a crawl process end with it, however it ends; a crawl whose
workers cannot start ends failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests import stage_fault_pipelines
from tests.e2e.crawl_process import command, count, env
from tests.e2e.test_render_e2e import alive, descendants
from tests.helpers import query
from tests.stage_fault_pipelines import UnstartableExtract

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def start_crawl(tmp_path: Path, site: TestSite) -> tuple[subprocess.Popen[str], dict[int, str]]:
    """A crawl of slow pages, and the processes below it once its stage workers work."""
    site.slow("/articles/", 0.3)
    db = tmp_path / "k.db"
    process = subprocess.Popen(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}"],
        cwd=REPO,
        env={**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}", "KC_STAGE_WORKERS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    below: dict[int, str] = {}
    while time.monotonic() < deadline:
        time.sleep(0.2)
        below = descendants(process.pid)
        servers = {str(pid) for pid, cmd in below.items() if "multiprocessing.forkserver" in cmd}
        if any(_parent(pid) in servers for pid in below):  # a worker, forked by the server
            break
    else:
        pytest.fail(f"no stage worker started: {below}")
    return process, below


def _parent(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    except OSError:
        return ""


def test_a_killed_crawl_takes_its_stage_workers_with_it(site: TestSite, tmp_path: Path) -> None:
    process, below = start_crawl(tmp_path, site)
    process.kill()
    process.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(pid) for pid in below):
        time.sleep(0.2)
    assert {pid: cmd[:100] for pid, cmd in below.items() if alive(pid)} == {}


def test_an_interrupted_crawl_stops_its_stage_workers(site: TestSite, tmp_path: Path) -> None:
    process, below = start_crawl(tmp_path, site)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr[-2000:]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(pid) for pid in below):
        time.sleep(0.2)
    assert [pid for pid in below if alive(pid)] == []
    [run] = query(f"sqlite:///{tmp_path / 'k.db'}", "SELECT outcome FROM crawl_runs")
    assert run["outcome"] == "interrupted"


def test_a_crawl_whose_stage_workers_cannot_start_fails_with_one_line(
    site: TestSite, tmp_path: Path
) -> None:
    db = tmp_path / "k.db"
    pipelines = json.dumps(stage_fault_pipelines.pipelines(UnstartableExtract))
    done = subprocess.run(
        command(site.url, "KC_STAGE_WORKERS=1", f"ITEM_PIPELINES={pipelines}"),
        cwd=REPO,
        env=env(db),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    why = "the stage worker pool could not start: OSError: [Errno 38] Function not implemented"
    assert done.stderr.strip().splitlines()[-1].startswith(f"scrapy crawl knowledge: error: {why}")
    [run] = query(f"sqlite:///{db}", "SELECT outcome, finish_reason FROM crawl_runs")
    assert run == {"outcome": "failed", "finish_reason": "stage_pool_failed"}
    # the pages it could not do are retries due at once, for the next crawl
    assert query(f"sqlite:///{db}", "SELECT COUNT(*) AS n FROM fetch_attempts")[0]["n"] >= 1


def test_ctrl_c_in_a_terminal_stops_the_crawl_not_its_workers_first(
    site: TestSite, tmp_path: Path
) -> None:
    # A terminal's Ctrl-C signals the whole foreground process group: crawl and workers.
    site.slow("/articles/", 0.3)
    db = tmp_path / "k.db"
    process = subprocess.Popen(
        command(site.url, "KC_STAGE_WORKERS=1"),
        cwd=REPO,
        env=env(db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's job
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and count(db, "SELECT COUNT(*) FROM page_meta") < 3:
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr[-3000:]
    assert "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert "worker process died" not in stderr, stderr[-3000:]
