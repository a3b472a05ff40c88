"""What a newcomer types, following the README: each command as a real subprocess, with
the loopback test site, in the words a first try uses (a bare path for ``--db``, a
misspelled spider, a command run from another folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]


def run(
    args: list[str], *, cwd: Path = REPO, timeout: float = 180, **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "KC_DATABASE_URL"}
    return subprocess.run(
        args,
        cwd=cwd,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_bare_path_is_a_sqlite_database_everywhere(site: TestSite, tmp_path: Path) -> None:
    db = tmp_path / "data" / "knowledge.db"
    db.parent.mkdir()
    crawl = run(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={site.url}", *FAST],
        KC_DATABASE_URL=str(db),
    )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert db.is_file()

    stats = run([str(BIN / "knowledge-crawler"), "stats", "--json", "--db", str(db)])
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["sanity"]["total_rows"] > 20
    # relative to the folder the command runs in, as sqlite:///data/knowledge.db is
    relative = run(
        [str(BIN / "knowledge-crawler"), "stats", "--json", "--db", "data/knowledge.db"],
        cwd=tmp_path,
    )
    assert relative.returncode == 0, relative.stderr
    assert json.loads(relative.stdout)["sanity"] == json.loads(stats.stdout)["sanity"]


def test_schedule_writes_the_database_the_other_commands_read_from_the_same_folder(
    site: TestSite, tmp_path: Path
) -> None:
    """Run from a folder without the project's scrapy.cfg, ``schedule`` crawls in the
    checkout; without ``--db`` it wrote the checkout's data/knowledge.db, while ``stats``
    run from the same folder read that folder's."""
    seeds = tmp_path / "seeds.toml"
    seeds.write_text(f'[[source]]\nid = "site"\nstart_urls = ["{site.url}"]\n')
    checkout_db = REPO / "data" / "knowledge.db"
    before = checkout_db.stat().st_mtime_ns if checkout_db.exists() else None
    scheduled = run(
        [str(BIN / "knowledge-crawler"), "schedule", "seeds.toml", "--once", "--mode=crawl", *FAST],
        cwd=tmp_path,
    )
    assert scheduled.returncode == 0, scheduled.stderr[-3000:]
    assert (tmp_path / "data" / "knowledge.db").is_file()
    after = checkout_db.stat().st_mtime_ns if checkout_db.exists() else None
    assert after == before, "the checkout's database was written"
    stats = run([str(BIN / "knowledge-crawler"), "stats", "--json"], cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["sanity"]["total_rows"] > 20


def test_a_misspelled_spider_is_one_line_naming_the_spiders(tmp_path: Path) -> None:
    crawl = run([str(BIN / "scrapy"), "crawl", "knowldge", "-a", "seeds=https://example.com/"])
    assert crawl.returncode == 2
    assert crawl.stdout == ""
    [line] = crawl.stderr.splitlines()
    assert "no spider named 'knowldge'" in line
    assert "did you mean 'knowledge'?" in line
    assert "example_site" in line  # the project's per-site spiders are named too


def test_a_refresh_with_nothing_due_says_so_and_when_the_next_page_is(
    site: TestSite, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    seeds = tmp_path / "seeds.toml"
    seeds.write_text(f'[[source]]\nid = "site"\nstart_urls = ["{site.url}"]\nmin_interval = "2h"\n')
    crawl = [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={seeds}", *FAST]

    empty = run([*crawl, "-a", "mode=refresh"], KC_DATABASE_URL=db)
    assert empty.returncode == 0, empty.stderr[-3000:]
    assert "nothing to refresh: no page of these sources is stored yet" in empty.stderr

    assert run(crawl, KC_DATABASE_URL=db).returncode == 0
    refresh = run([*crawl, "-a", "mode=refresh"], KC_DATABASE_URL=db)
    assert refresh.returncode == 0, refresh.stderr[-3000:]
    [line] = [x for x in refresh.stderr.splitlines() if "nothing was due" in x]
    # a new page is first checked again after the geometric mean of 2 hours and 7 days
    assert "the next of" in line and "(in 18 hours)" in line, line


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_start_url_ends_at_once_with_one_line_and_keeps_its_retry(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    url = f"http://127.0.0.1:{_closed_port()}/"
    crawl = run(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", f"seeds={url}", *FAST],
        KC_DATABASE_URL=db,
        timeout=120,
    )
    assert crawl.returncode == 1
    assert "Traceback" not in crawl.stderr
    last = crawl.stderr.strip().splitlines()[-1]
    assert last.startswith("scrapy crawl knowledge: error: none of the 1 start URLs"), last
    assert "ConnectionRefusedError=1" in last
    # the host refused its robots.txt too: the page is not retried in this crawl (which
    # took 15 to 40 s of backoff) but left, with its retry state, to the next one
    [run_row] = query(db, "SELECT counters FROM crawl_runs")
    counters = json.loads(run_row["counters"])
    assert counters.get("kc/retry/host_unreachable") == 1
    assert not counters.get("kc/retry/scheduled")
    [attempt] = query(db, "SELECT url, attempts, next_retry_at FROM fetch_attempts")
    assert attempt["url"] == url and attempt["attempts"] == 1 and attempt["next_retry_at"]
    progress = [x for x in crawl.stderr.splitlines() if "progress:" in x]
    assert progress and progress[-1].endswith("1 fetch error, 1 retry")


def test_make_demo_prints_the_commands_it_runs_and_its_seeds_keep_their_comments(
    tmp_path: Path,
) -> None:
    """The demo ran its crawls with -s DOWNLOAD_DELAY=0 -s AUTOTHROTTLE_ENABLED=False but
    printed them without; its seeds copy had the port put into a comment too."""
    work = tmp_path / "checkout"
    (work / "seeds").mkdir(parents=True)
    template = (REPO / "seeds" / "demo.toml").read_text(encoding="utf-8")
    (work / "seeds" / "demo.toml").write_text(template, encoding="utf-8")
    (work / "scrapy.cfg").write_text((REPO / "scrapy.cfg").read_text())
    demo = run([sys.executable, "-m", "knowledge_crawler.cli.demo"], cwd=work, timeout=300)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-3000:]
    shown = [x.split("$ ", 1)[1] for x in demo.stdout.splitlines() if "] $ scrapy" in x]
    assert len(shown) == 2
    seeds = work / "data" / "demo" / "seeds.toml"
    assert shown[0] == f"scrapy crawl knowledge -a seeds={seeds} -s LOG_LEVEL=WARNING"
    # only the start URL's port changes; the comments say where the copy goes
    copy = seeds.read_text(encoding="utf-8")
    changed = [
        (a, b) for a, b in zip(template.splitlines(), copy.splitlines(), strict=True) if a != b
    ]
    assert [a for a, _ in changed] == ['start_urls = ["http://localhost:8089/"]']
    assert "data/demo/seeds.toml" in template
    # the crawls were fast because the source asks for no delay, not because of -s options
    [line] = [x for x in demo.stdout.splitlines() if "rows = distinct identities" in x]
    assert "ok" in line
