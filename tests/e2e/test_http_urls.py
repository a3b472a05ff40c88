"""A site served over plain http: every command shows the URL its pages were fetched at.

Pages are keyed by canonical URL, whose scheme is always https (SPEC: canonicalize), so a
command that printed only the key sent a person or an agent to an https URL the site
never answered. The loopback test site is http only: after a real crawl of it, each
command's text shows http:// URLs and never the https key, and its JSON keeps the key in
``canonical_url`` beside ``url``, the fetched one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.cli._common import open_existing_store
from knowledge_crawler.cli.mcp_server import DatasetTools
from tests.e2e.conftest import CrawledSite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def kc(crawled: CrawledSite, *args: str) -> str:
    """``knowledge-crawler ARGS`` on the crawled database: its stdout (exit 0)."""
    done = subprocess.run(
        [str(BIN / "knowledge-crawler"), *args, "--db", crawled.db_url],
        cwd=REPO,
        env={**os.environ, "KC_DATABASE_URL": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def site_root(crawled: CrawledSite) -> str:
    return crawled.site.url.rstrip("/")  # http://localhost:PORT


def assert_text_shows_http(crawled: CrawledSite, text: str) -> None:
    assert site_root(crawled) + "/" in text, text
    assert "https://" not in text, text


def pages_in(value: Any) -> list[dict[str, Any]]:
    """Every object in ``value`` (nested) that names a page by its key."""
    if isinstance(value, list):
        return [page for item in value for page in pages_in(item)]
    if not isinstance(value, dict):
        return []
    found = [value] if "canonical_url" in value else []
    return found + [page for item in value.values() for page in pages_in(item)]


def assert_json_shows_http(crawled: CrawledSite, value: Any) -> list[dict[str, Any]]:
    """Every page named in ``value`` keeps its https key and has its fetched http URL."""
    pages = pages_in(value)
    assert pages, value
    for page in pages:
        assert page["canonical_url"].startswith("https://localhost:"), page
        assert page["url"].startswith(site_root(crawled) + "/"), page
    return pages


def test_stats(crawled_site: CrawledSite) -> None:
    text = kc(crawled_site, "stats")
    assert "one content under several URLs:  1 content hash" in text  # a print copy
    assert_text_shows_http(crawled_site, text)
    [shared] = json.loads(kc(crawled_site, "stats", "--json"))["sanity"]["shared_content_examples"]
    assert all(u.startswith("https://") for u in shared["urls"])  # the keys, as before
    assert len(shared["fetched_urls"]) == len(shared["urls"])
    assert all(u.startswith(site_root(crawled_site) + "/") for u in shared["fetched_urls"])


def test_duplicates(crawled_site: CrawledSite) -> None:
    assert_text_shows_http(crawled_site, kc(crawled_site, "duplicates"))
    clusters = json.loads(kc(crawled_site, "duplicates", "--json"))
    pages = assert_json_shows_http(crawled_site, clusters)
    assert len(pages) > len(clusters)  # representatives and their duplicates


def test_changes(crawled_site: CrawledSite) -> None:
    text = kc(crawled_site, "changes", "--since", "7d")
    assert crawled_site.changed_url in text
    assert_text_shows_http(crawled_site, text)
    out = kc(crawled_site, "changes", "--since", "7d", "--json")
    entries = [json.loads(line) for line in out.splitlines()]
    [changed] = [e for e in entries if e["kind"] == "changed"]
    assert changed["url"] == crawled_site.changed_url
    assert changed["canonical_url"] == crawled_site.changed_key
    assert_json_shows_http(crawled_site, entries)


def test_history(crawled_site: CrawledSite) -> None:
    text = kc(crawled_site, "history", crawled_site.changed_url)
    assert text.startswith(crawled_site.changed_url + "  [")
    assert "2 versions" in text
    assert_text_shows_http(crawled_site, text)
    versions = json.loads(kc(crawled_site, "history", crawled_site.changed_url, "--json"))
    assert len(versions) == 2
    assert {v["url"] for v in versions} == {crawled_site.changed_url}
    assert_json_shows_http(crawled_site, versions)


def changed_title(crawled: CrawledSite) -> str:
    from tests.helpers import query

    [page] = query(
        crawled.db_url, "SELECT title FROM pages WHERE canonical_url = ?", crawled.changed_key
    )
    return str(page["title"])


def test_search(crawled_site: CrawledSite) -> None:
    title = changed_title(crawled_site)
    text = kc(crawled_site, "search", title, "-k", "3")
    assert crawled_site.changed_url in text
    assert_text_shows_http(crawled_site, text)
    out = kc(crawled_site, "search", title, "--json")
    found = [json.loads(line) for line in out.splitlines()]
    assert found[0]["url"] == crawled_site.changed_url
    assert_json_shows_http(crawled_site, found)


def test_export(crawled_site: CrawledSite) -> None:
    pages = [json.loads(line) for line in kc(crawled_site, "export").splitlines()]
    assert crawled_site.changed_url in {p["final_url"] for p in pages}
    assert all(p["final_url"].startswith(site_root(crawled_site) + "/") for p in pages)
    assert_json_shows_http(crawled_site, pages)
    passages = [json.loads(line) for line in kc(crawled_site, "export", "--passages").splitlines()]
    assert crawled_site.changed_url in {p["url"] for p in passages}
    assert_json_shows_http(crawled_site, passages)


def test_mcp_tools(crawled_site: CrawledSite) -> None:
    with open_existing_store(crawled_site.db_url) as store:
        tools = DatasetTools(store)
        found = tools.search(changed_title(crawled_site), k=3)["passages"]
        page = tools.get_page(crawled_site.changed_url)
        feed = tools.changes("7d", diff=False)
    assert found[0]["url"] == crawled_site.changed_url
    assert_json_shows_http(crawled_site, found)
    assert page["final_url"] == crawled_site.changed_url
    assert page["canonical_url"] == crawled_site.changed_key
    assert_json_shows_http(crawled_site, page)
    [changed] = [e for e in feed["changes"] if e["kind"] == "changed"]
    assert changed["url"] == crawled_site.changed_url
    assert_json_shows_http(crawled_site, feed["changes"])
