"""Subprocess runs of the real commands: `scrapy crawl knowledge`, then `stats`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(args: list[str], db: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KC_DATABASE_URL": f"sqlite:///{db}"}
    return subprocess.run(
        args, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_scrapy_crawl_then_stats(site: TestSite, tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    crawl = run(
        [
            str(BIN / "scrapy"),
            "crawl",
            "knowledge",
            "-a",
            f"seeds={site.url}",
            "-s",
            "DOWNLOAD_DELAY=0",
            "-s",
            "AUTOTHROTTLE_ENABLED=False",
        ],
        db,
    )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert "Spider closed (finished)" in crawl.stderr

    stats = run([str(BIN / "knowledge-crawler"), "stats", "--json"], db)
    assert stats.returncode == 0, stats.stderr
    report = json.loads(stats.stdout)
    sanity = report["sanity"]
    assert sanity["total_rows"] > 0
    assert sanity["total_rows"] == sanity["distinct_identities"]
    [run_row] = report["runs"]
    assert run_row["finish_reason"] == "finished"
    assert run_row["pages_new"] == sanity["total_rows"]

    human = run([str(BIN / "knowledge-crawler"), "stats"], db)
    assert human.returncode == 0 and "rows = distinct identities" in human.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-a", "seeds=seeds/does-not-exist.toml"], "does-not-exist.toml"),
        (["-a", "seeds=BAD_TOML"], "invalid TOML"),
        (["-a", "seeds=BAD_KEY"], "depth_limt"),
        (["-a", "seeds=http://127.0.0.1:9/", "-a", "mode=sideways"], "mode"),
        (["-a", "seeds=http://127.0.0.1:9/", "-a", "colour=red"], "colour"),
        ([], "seeds"),
    ],
)
def test_bad_input_stops_before_any_request(args: list[str], needle: str, tmp_path: Path) -> None:
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('[[source]]\nid = "x"\nstart_urls = ["http://a/"\n')
    bad_key = tmp_path / "badkey.toml"
    bad_key.write_text('[[source]]\nid = "x"\nstart_urls = ["http://a/"]\ndepth_limt = 2\n')
    args = [a.replace("BAD_TOML", str(bad_toml)).replace("BAD_KEY", str(bad_key)) for a in args]
    db = tmp_path / "never.db"
    result = run([str(BIN / "scrapy"), "crawl", "knowledge", *args], db, timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert not db.exists()


def test_per_site_spiders_get_the_same_argument_check(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    result = run([str(BIN / "scrapy"), "crawl", "example_site", "-a", "mode=x"], db, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "scrapy crawl example_site: error: missing -a seeds=FILE.toml or -a seeds=URL[,URL...]"
    )
    assert not db.exists()


def test_stats_without_database_is_bad_input(tmp_path: Path) -> None:
    result = run([str(BIN / "knowledge-crawler"), "stats"], tmp_path / "missing.db")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("knowledge-crawler: error: no database")


def test_database_signed_with_other_minhash_parameters_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    from knowledge_crawler.store import open_store

    with open_store(f"sqlite:///{db}") as store:
        store.set_meta("minhash_signature", "mh1:p64:s7:k5")
    result = run(
        [str(BIN / "scrapy"), "crawl", "knowledge", "-a", "seeds=http://127.0.0.1:9/"], db, 60
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "made with mh1:p64:s7:k5" in line
