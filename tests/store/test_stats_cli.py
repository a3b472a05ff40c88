"""`knowledge-crawler stats` shows how each run ended, its fetch errors, and chained duplicates."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import open_store
from tests.store.backends import upsert_pages
from tests.store.test_contract import rec


def database(tmp_path: Path) -> str:
    db = tmp_path / "k.db"
    with open_store(f"sqlite:///{db}") as store:
        upsert_pages(store, [rec(1, "x"), rec(2, "x"), rec(3, "x")])
        done = store.start_run(
            spider="k", sources=["s"], mode="crawl", pid=1, host="h", job_id="J7"
        )
        errors = {"kc/fetch/error/ConnectionRefusedError": 3, "kc/fetch/error/http_404": 2}
        store.finish_run(done, reason="finished", outcome="failed", counters=errors)
        store.start_run(spider="k", sources=["s"], mode="crawl", pid=2, host="h")
    conn = sqlite3.connect(db)  # a duplicate of a duplicate, written behind the store's back
    conn.execute("UPDATE page_meta SET duplicate_of = 1, duplicate_kind = 'exact' WHERE id = 2")
    conn.execute("UPDATE page_meta SET duplicate_of = 2, duplicate_kind = 'exact' WHERE id = 3")
    conn.commit()
    conn.close()
    return f"sqlite:///{db}"


def test_stats_human(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["stats", "--db", database(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    [header] = [line for line in lines if line.strip().startswith("run  started")]
    assert header.split()[:4] == ["run", "started", "outcome", "reason"]
    [running] = [line for line in lines if line.strip().startswith("2 ")]
    assert running.split()[2:4] == ["running", "-"]
    [failed] = [line for line in lines if line.strip().startswith("1 ")]
    assert failed.split()[2:4] == ["failed", "finished"]
    assert "  run 1  job J7  errors: ConnectionRefusedError=3, http_404=2" in lines
    assert "  run 2  errors: none" in lines
    [chained] = [line for line in lines if "duplicates of duplicates" in line]
    assert chained.split()[3:5] == ["1", "MISMATCH:"]
    assert "http://example.com/p3 -> http://example.com/p2 -> http://example.com/p1" in (
        result.output
    )


def test_stats_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["stats", "--json", "--db", database(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    latest, first = report["runs"]
    assert (first["outcome"], first["job_id"]) == ("failed", "J7")
    assert first["fetch_errors"] == {"ConnectionRefusedError": 3, "http_404": 2}
    assert (latest["outcome"], latest["fetch_errors"]) == ("running", {})
    assert report["sanity"]["chained_duplicates"] == 1
    [example] = report["sanity"]["chained_duplicate_examples"]
    assert example["canonical_url"] == "https://example.com/p3"


def test_stats_human_shows_every_run_counter(tmp_path: Path) -> None:
    # the text view left out conditional requests, retries and tombstones
    url = database(tmp_path)
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    conn.execute(
        "UPDATE crawl_runs SET conditional_requests_sent = 7, retries_scheduled = 5, "
        "tombstones_created = 3 WHERE id = 1"
    )
    conn.commit()
    conn.close()
    result = CliRunner().invoke(cli, ["stats", "--db", url])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    [header] = [line for line in lines if line.strip().startswith("run  started")]
    [first] = [line for line in lines if line.strip().startswith("1 ")]
    shown = dict(zip(header.split(), first.split(), strict=True))
    assert (shown["conditional"], shown["retries"], shown["tombstoned"]) == ("7", "5", "3")
