"""`changes` and `export --since` after a re-crawl of the loopback site: exactly what moved."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import utc_now
from knowledge_crawler.testsite import TestSite
from tests.helpers import coroutine_test, pages_by_url, query, run_crawl, site_key

pytestmark = pytest.mark.crawl


@coroutine_test
async def test_changes_since_a_recrawl_list_exactly_the_edited_page(
    site: TestSite, db_url: str
) -> None:
    await run_crawl(db_url, seeds=site.url)
    between = utc_now()
    article = site.manifest()["articles"][4]
    edited = site_key(site, article["path"])
    site.mutate(4, "text", copies=False)
    await run_crawl(db_url, seeds=site.url)

    result = CliRunner().invoke(cli, ["changes", "--since", between, "--json", "--db", db_url])
    assert result.exit_code == 0, result.output
    [entry] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (entry["kind"], entry["canonical_url"]) == ("changed", edited)
    assert entry["time"] >= between and entry["fetched_at"] >= between
    assert entry["previous_fetched_at"] < between
    # the diff takes out the old lead paragraph and puts in the new one
    [old] = query(
        db_url,
        "SELECT v.content FROM page_versions v JOIN pages p ON p.id = v.page_id "
        "WHERE p.canonical_url = ?",
        edited,
    )
    new = pages_by_url(db_url)[edited]["content"]
    diff = entry["diff"].splitlines()
    added = [line for line in new.splitlines() if line not in old["content"].splitlines()]
    removed = [line for line in old["content"].splitlines() if line not in new.splitlines()]
    assert added and removed
    assert all(f"+{line}" in diff for line in added)
    assert all(f"-{line}" in diff for line in removed)

    human = CliRunner().invoke(cli, ["changes", "--since", between, "--db", db_url])
    assert human.exit_code == 0
    headers = [line for line in human.stdout.splitlines() if not line.startswith("    ")]
    # shown at the URL it was fetched at (http), not its https key
    assert headers[0].split()[1:3] == ["changed", pages_by_url(db_url)[edited]["final_url"]]
    assert pages_by_url(db_url)[edited]["final_url"].startswith("http://")
    assert headers[-1].startswith("1 change since ")

    exported = CliRunner().invoke(cli, ["export", "--since", between, "--db", db_url])
    assert exported.exit_code == 0
    [page] = [json.loads(line) for line in exported.stdout.splitlines()]
    assert (page["canonical_url"], page["version"], page["content"]) == (edited, 2, new)
