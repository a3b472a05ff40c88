"""`scrapy genspider`: Scrapy's templates and the project's `knowledge` template.

Spiders are generated in a throw-away project (``myproj``, settings imported from
knowledge_crawler's, spiders in ``myproj.spiders``) so the repository's own
``spiders/`` folder is never written to.
"""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_crawler.testsite import TestSite
from tests.helpers import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCRAPY_TEMPLATES = ("basic", "crawl", "csvfeed", "xmlfeed")

SETTINGS = """\
from knowledge_crawler.settings import *  # noqa: F403

SPIDER_MODULES = ["myproj.spiders"]
NEWSPIDER_MODULE = "myproj.spiders"
"""


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    base["PYTHONPATH"] = os.pathsep.join([str(cwd), str(REPO)])
    return subprocess.run(
        args,
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A minimal Scrapy project whose settings are knowledge_crawler's, bar the spider modules."""
    root = tmp_path / "proj"
    (root / "myproj" / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = myproj.settings\n")
    (root / "myproj" / "__init__.py").write_text("")
    (root / "myproj" / "spiders" / "__init__.py").write_text("")
    (root / "myproj" / "settings.py").write_text(SETTINGS)
    return root


def repo_spiders() -> set[str]:
    return {p.name for p in (REPO / "knowledge_crawler" / "spiders").iterdir()}


def test_list_shows_the_project_template_and_scrapys() -> None:
    result = run([str(BIN / "scrapy"), "genspider", "--list"], REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    listed = {line.strip() for line in result.stdout.splitlines()[1:] if line.strip()}
    assert listed >= {"knowledge", *SCRAPY_TEMPLATES}, result.stdout


def test_dump_shows_the_knowledge_template() -> None:
    result = run([str(BIN / "scrapy"), "genspider", "--dump", "knowledge"], REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "class $classname(KnowledgeSpider):" in result.stdout
    assert "-a seeds=" in result.stdout


def test_unknown_template_fails(project: Path) -> None:
    result = run([str(BIN / "scrapy"), "genspider", "-t", "nope", "x", "x.example"], project)
    assert result.returncode == 1
    assert "Unable to find template: nope" in result.stdout
    assert not (project / "myproj" / "spiders" / "x.py").exists()


def test_scrapys_templates_generate_spiders(project: Path) -> None:
    before = repo_spiders()
    for template in SCRAPY_TEMPLATES:
        name = f"{template}one"
        result = run(
            [str(BIN / "scrapy"), "genspider", "-t", template, name, "example.com"], project
        )
        assert result.returncode == 0, result.stdout + result.stderr[-2000:]
        assert f"Created spider '{name}' using template '{template}'" in result.stdout
        spider = project / "myproj" / "spiders" / f"{name}.py"
        py_compile.compile(str(spider), doraise=True)
    # the default template is Scrapy's basic one
    result = run([str(BIN / "scrapy"), "genspider", "plain", "example.com"], project)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "class PlainSpider(scrapy.Spider):" in (project / "myproj/spiders/plain.py").read_text()
    listed = run([str(BIN / "scrapy"), "list"], project)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert set(listed.stdout.split()) == {"plain", *(f"{t}one" for t in SCRAPY_TEMPLATES)}
    assert repo_spiders() == before


def test_knowledge_template_writes_a_spider_that_crawls(project: Path, tmp_path: Path) -> None:
    before = repo_spiders()
    result = run(
        [str(BIN / "scrapy"), "genspider", "-t", "knowledge", "shop", "shop.example"], project
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    spider = project / "myproj" / "spiders" / "shop.py"
    py_compile.compile(str(spider), doraise=True)
    text = spider.read_text()
    assert "scrapy crawl shop -a seeds=" in text
    # The per-site hooks, shown with examples (commented out: the spider runs as-is).
    for hook in (
        "# follow = (",
        "# deny = (",
        "# link_selector = ",
        "# content_selector = ",
        "def extra_fields(self, response: TextResponse) -> dict[str, Any]:",
    ):
        assert hook in text, hook
    assert repo_spiders() == before

    check = run(
        [
            sys.executable,
            "-c",
            "from myproj.spiders.shop import ShopSpider as S;"
            "from knowledge_crawler.spiders.knowledge import KnowledgeSpider as K;"
            "print(S.name, issubclass(S, K))",
        ],
        project,
    )
    assert check.stdout.split() == ["shop", "True"], check.stderr[-2000:]

    # As written, it passes the project's linters (checked as if it sat in the package).
    config = str(REPO / "pyproject.toml")
    lint = run([str(BIN / "ruff"), "check", "--config", config, str(spider)], REPO)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run([str(BIN / "ruff"), "format", "--check", "--config", config, str(spider)], REPO)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    types = run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            config,
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            str(spider),
        ],
        project,
        timeout=300,
    )
    assert types.returncode == 0, types.stdout + types.stderr

    db = tmp_path / "shop.db"
    with TestSite(pages=5, seed=1) as site:
        crawl = run(
            [
                str(BIN / "scrapy"),
                "crawl",
                "shop",
                "-a",
                f"seeds={site.url}",
                "-s",
                "DOWNLOAD_DELAY=0",
                "-s",
                "AUTOTHROTTLE_ENABLED=False",
                "-s",
                "CLOSESPIDER_TIMEOUT=120",
            ],
            project,
            env={"KC_DATABASE_URL": f"sqlite:///{db}"},
            timeout=180,
        )
    assert "Spider closed (finished)" in crawl.stderr, crawl.stderr[-3000:]
    assert "Traceback" not in crawl.stderr, crawl.stderr[-3000:]  # e.g. xpath on a JSON reply
    [row] = query(f"sqlite:///{db}", "SELECT count(*) AS n FROM pages WHERE http_status = 200")
    assert row["n"] >= 5
    [run_row] = query(f"sqlite:///{db}", "SELECT spider FROM crawl_runs")
    assert run_row["spider"] == "shop"
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    extras = query(f"sqlite:///{db}", "SELECT DISTINCT extra FROM pages")
    assert extras == [{"extra": "{}"}]


def test_a_host_with_a_port_makes_a_docstring_and_an_example_that_work(project: Path) -> None:
    """``genspider NAME localhost:PORT`` (a host, as a first try types it) wrote "plus 's
    own rules" and a ``-a seeds=localhost:PORT`` example the crawl rejects."""
    with TestSite(pages=3, seed=1) as site:
        host = f"localhost:{site.port}"
        result = run([str(BIN / "scrapy"), "genspider", "-t", "knowledge", "mine", host], project)
        assert result.returncode == 0, result.stdout + result.stderr[-2000:]
        text = (project / "myproj" / "spiders" / "mine.py").read_text()
        assert f"the knowledge spider plus {host}'s own rules" in text
        [example] = [x.strip() for x in text.splitlines() if "scrapy crawl mine -a seeds=http" in x]
        assert example == f"scrapy crawl mine -a seeds=http://{host}/"
        # the example, as written, crawls the site
        fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
        fast += ["-s", "KC_DATABASE_URL=sqlite:///k.db"]
        crawl = run(
            [*example.replace("scrapy", str(BIN / "scrapy"), 1).split(), *fast],
            project,
            timeout=180,
        )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    [row] = query(f"sqlite:///{project / 'k.db'}", "SELECT count(*) AS n FROM pages")
    assert row["n"] >= 3


BAD_RULES = """\
from knowledge_crawler.spiders.knowledge import KnowledgeSpider


class BadSpider(KnowledgeSpider):
    name = "bad"
    deny = (r"/ok/", r"/broken(")
"""


def test_a_bad_link_rule_stops_the_crawl_with_one_line(project: Path, tmp_path: Path) -> None:
    (project / "myproj" / "spiders" / "bad.py").write_text(BAD_RULES)
    db = tmp_path / "bad.db"
    crawl = run(
        [str(BIN / "scrapy"), "crawl", "bad", "-a", "seeds=http://127.0.0.1:9/"],
        project,
        env={"KC_DATABASE_URL": f"sqlite:///{db}"},
    )
    assert crawl.returncode == 2, crawl.stderr[-3000:]
    assert crawl.stderr.strip().splitlines() == [
        "scrapy crawl bad: error: spider 'bad': deny[1]: bad regex '/broken(': "
        "missing ), unterminated subpattern at position 7"
    ]
    assert not db.exists()  # stopped before the database was opened
