"""scrapyd deployment, for real: ``scrapyd-deploy`` builds the egg from the checkout and uploads
it to a scrapyd started for the test; a job scheduled with a ``seeds`` argument crawls the
loopback test site into the database its ``setting=`` names, recorded with scrapyd's job id."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.e2e.scrapyd_server import PROJECT, ScrapydServer
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FAST = {"DOWNLOAD_DELAY": "0", "AUTOTHROTTLE_ENABLED": "False"}


def test_scrapyd_deploy_uploads_an_egg_with_the_package_data_and_settings(
    scrapyd: ScrapydServer,
) -> None:
    assert '"status": "ok"' in scrapyd.deploy_output, scrapyd.deploy_output
    assert scrapyd.get("listversions.json", project=PROJECT)["versions"] == ["test"]
    assert "knowledge" in scrapyd.get("listspiders.json", project=PROJECT)["spiders"]
    with zipfile.ZipFile(scrapyd.egg()) as egg:
        names = set(egg.namelist())
        entry_points = egg.read("EGG-INFO/entry_points.txt").decode()
    assert "knowledge_crawler/templates/spiders/knowledge.tmpl" in names
    assert "knowledge_crawler/py.typed" in names
    assert "knowledge_crawler/settings.py" in names
    assert not any(name.startswith("tests/") for name in names)
    assert "[scrapy]\nsettings = knowledge_crawler.settings" in entry_points


def test_a_scheduled_job_crawls_its_seeds_into_the_database_its_setting_names(
    scrapyd: ScrapydServer, site: TestSite, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'k.db'}"
    job = scrapyd.schedule({"KC_DATABASE_URL": db_url, **FAST}, seeds=site.url)
    entry = scrapyd.wait_for(job)
    log = scrapyd.job_log(entry)
    assert "'kc/outcome': 'finished'" in log, log[-3000:]
    [run] = query(db_url, "SELECT * FROM crawl_runs")
    assert run["job_id"] == job
    assert run["outcome"] == "finished"
    [pages] = query(db_url, "SELECT COUNT(*) AS n FROM pages")
    assert pages["n"] >= len(site.manifest()["articles"])
    assert run["upserts_completed"] == pages["n"]
