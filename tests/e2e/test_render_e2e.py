"""A rendering crawl as a process: no browser outlives it, however it ends (SPEC F-RENDER)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.usefixtures("chromium")]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def seeds_file(tmp_path: Path, site: TestSite) -> Path:
    path = tmp_path / "js.toml"
    path.write_text(
        "[[source]]\n"
        'id = "js"\n'
        f'start_urls = ["{site.url}js/"]\n'
        'allowed_domains = ["localhost"]\n'
        'render = "playwright"\n'
        'wait_for = "networkidle"\n'
        "depth_limit = 1\n",
        encoding="utf-8",
    )
    return path


def descendants(root: int) -> dict[int, str]:
    """The processes below ``root`` (pid -> command line)."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (
                (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            )
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found[child] = commands.get(child, "")
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_crawl(tmp_path: Path, site: TestSite) -> tuple[subprocess.Popen[str], dict[int, str]]:
    """A crawl of slow JavaScript pages, and its browser processes once it renders."""
    site.slow("/js/data/", 2.0)
    db = tmp_path / "k.db"
    process = subprocess.Popen(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={seeds_file(tmp_path, site)}"],
        cwd=REPO,
        env={**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    browser: dict[int, str] = {}
    while time.monotonic() < deadline:
        time.sleep(0.2)
        below = descendants(process.pid)
        if sum("--type=renderer" in cmd for cmd in below.values()) >= 2:
            browser = below
            break
    assert browser, "the crawl never started rendering"
    return process, browser


def test_a_killed_crawl_takes_its_browser_with_it(site: TestSite, tmp_path: Path) -> None:
    process, browser = start_crawl(tmp_path, site)
    process.kill()
    process.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(pid) for pid in browser):
        time.sleep(0.2)
    left = {pid: cmd[:80] for pid, cmd in browser.items() if alive(pid)}
    assert left == {}


def test_an_interrupted_crawl_closes_its_browser_and_says_so(
    site: TestSite, tmp_path: Path
) -> None:
    process, browser = start_crawl(tmp_path, site)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr[-2000:]
    # Nothing is left: the browser and its renderers, the Playwright driver, the stage
    # workers' server. But multiprocessing's resource tracker, which must outlive the
    # crawl's own exit handlers (they hand it back their semaphores) and ends as it sees
    # the crawl go.
    left = [
        (pid, cmd[:150])
        for pid, cmd in browser.items()
        if alive(pid) and "multiprocessing.resource_tracker" not in cmd
    ]
    assert not left
    [run] = query(f"sqlite:///{tmp_path / 'k.db'}", "SELECT outcome FROM crawl_runs")
    assert run["outcome"] == "interrupted"


def test_a_missing_chromium_is_one_clear_line_and_exit_2(site: TestSite, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            str(BIN / "scrapy"),
            "crawl",
            "knowledge",
            "-a",
            f"seeds={seeds_file(tmp_path, site)}",
            "-s",
            "KC_CHROMIUM_PATH=/nonexistent/chromium",
        ],
        cwd=REPO,
        env={**os.environ, "KC_DATABASE_URL": f"sqlite:///{tmp_path / 'k.db'}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "KC_CHROMIUM_PATH" in lines[0] and "'js'" in lines[0]
    assert "Traceback" not in result.stderr
