"""The dependency rules of the layout, checked mechanically by walking imports with ast.

pure core (transform/, discovery/, sync/, sources, items, meta, errors) -> stdlib and pure libraries
store/  -> no Scrapy, no transform/ (it saves values and never computes them)
cli/    -> never Scrapy or Twisted (fast start, testable without a reactor)
archive.py -> no Scrapy, no store (WARC files and bytes only: an IO module beside store/)
reextract.py -> no Scrapy, no click (the re-extraction the CLI runs: store + pure floors)
dedupe_log.py -> no Scrapy, no store (the shared dedupe log: Redis + the pure policy)
dedupe_scratch.py -> no Scrapy, no store (the policy's state in a temporary SQLite file)
settings.py -> only knowledge_crawler.config from the package (dotted strings otherwise)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "knowledge_crawler"

SCRAPY_WORLD = ("scrapy", "twisted", "itemadapter", "scrapy_playwright", "scrapy_redis")
DATABASES = ("sqlite3", "psycopg")
ADAPTERS = (
    "knowledge_crawler.spiders",
    "knowledge_crawler.pipelines",
    "knowledge_crawler.middlewares",
    "knowledge_crawler.extensions",
    "knowledge_crawler.runtime",
    "knowledge_crawler.commands",
    "knowledge_crawler.cli",
    "knowledge_crawler.demo",
)

RULES: dict[str, tuple[str, ...]] = {
    "transform": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
    "discovery": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
    "sync": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
    "sources.py": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
    "items.py": (*SCRAPY_WORLD, *DATABASES, "knowledge_crawler.store", *ADAPTERS),
    "meta.py": (*SCRAPY_WORLD, *DATABASES, "knowledge_crawler"),
    "errors.py": (*SCRAPY_WORLD, *DATABASES, "knowledge_crawler"),
    "store": (*SCRAPY_WORLD, "click", "knowledge_crawler.transform", *ADAPTERS),
    "cli": (*SCRAPY_WORLD,),
    "archive.py": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
    "reextract.py": (*SCRAPY_WORLD, *DATABASES, "click", *ADAPTERS),
    "dedupe_log.py": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
    "dedupe_scratch.py": (*SCRAPY_WORLD, "psycopg", "click", "knowledge_crawler.store", *ADAPTERS),
    "config.py": (*SCRAPY_WORLD, *DATABASES, "click", "knowledge_crawler.store", *ADAPTERS),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files_of(target: str) -> list[Path]:
    path = PACKAGE / target
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


@pytest.mark.parametrize("target", sorted(RULES))
def test_layer_imports(target: str) -> None:
    banned = RULES[target]
    offences = [
        f"{f.relative_to(PACKAGE.parent)} imports {name}"
        for f in files_of(target)
        for name in sorted(imported_modules(f))
        if any(name == b or name.startswith(b + ".") for b in banned)
    ]
    assert not offences, "\n".join(offences)


def test_settings_import_only_the_config() -> None:
    """settings.py names components by dotted string; from the package it reads defaults only."""
    own = {
        m for m in imported_modules(PACKAGE / "settings.py") if m.startswith("knowledge_crawler")
    }
    assert own <= {"knowledge_crawler.config"}, own


def test_cli_starts_without_scrapy() -> None:
    code = (
        "import sys; from knowledge_crawler.cli.main import cli;"
        "from knowledge_crawler.cli import stats, validate, extract, reextract;"
        "import knowledge_crawler.reextract;"
        "bad = [m for m in ('scrapy', 'twisted') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
