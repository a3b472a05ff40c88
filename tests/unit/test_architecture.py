"""The dependency rules of the layout, checked mechanically by walking imports with ast
(relative imports included).

Floors, bottom first: a module imports from its own unit (a package, or a module) and
from lower floors only, so every arrow points down (:data:`FLOORS`). Beside that, what
a floor may not use from outside the package (:data:`RULES`):

pure floors (transform/, discovery/, sync/, sources/, items, meta, errors) -> no Scrapy,
    no database, no click
store/  -> no Scrapy, no click, no transform/ (it saves values and never computes them)
archive/warc.py -> no Scrapy, no database (WARC files and bytes only)
archive/reextract.py -> no Scrapy, no click (the re-extraction the CLI runs)
crawl/dedupe_log.py, crawl/dedupe_scratch.py -> no Scrapy (the policy's state: Redis, a file)
schedule/ -> no Scrapy, no database, no click (the crawls it runs are other processes)
cli/    -> never Scrapy or Twisted (fast start, testable without a reactor)
settings.py -> only knowledge_crawler.config from the package (dotted strings otherwise)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "knowledge_crawler"

#: The floors of the package, bottom first. A unit is a top-level module or package of
#: ``knowledge_crawler`` (``archive`` counts module by module: its WARC files stand below
#: the store, the re-extraction above it).
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"__init__", "errors", "meta"}),
    frozenset({"config", "items", "transform", "testsite"}),
    frozenset({"sources", "discovery", "sync"}),
    frozenset({"store", "archive", "archive.warc"}),
    frozenset({"archive.reextract", "crawl", "schedule"}),
    frozenset({"spiders", "middlewares", "pipelines", "extensions"}),
    frozenset({"commands", "cli", "settings"}),
    frozenset({"__main__"}),  # python -m knowledge_crawler: the CLI
)

SCRAPY_WORLD = ("scrapy", "twisted", "itemadapter", "scrapy_playwright", "scrapy_redis")
DATABASES = ("sqlite3", "psycopg")
PURE = (*SCRAPY_WORLD, *DATABASES, "click")

RULES: dict[str, tuple[str, ...]] = {
    "transform": PURE,
    "discovery": PURE,
    "sync": PURE,
    "sources": PURE,
    "items.py": (*SCRAPY_WORLD, *DATABASES),
    "meta.py": (*SCRAPY_WORLD, *DATABASES, "knowledge_crawler"),
    "errors.py": (*SCRAPY_WORLD, *DATABASES, "knowledge_crawler"),
    "config.py": PURE,
    "store": (*SCRAPY_WORLD, "click", "knowledge_crawler.transform"),
    "archive/warc.py": PURE,
    "archive/reextract.py": (*SCRAPY_WORLD, *DATABASES, "click"),
    "crawl/dedupe_log.py": (*SCRAPY_WORLD, *DATABASES, "click"),
    "crawl/dedupe_scratch.py": (*SCRAPY_WORLD, "psycopg", "click"),
    "schedule": PURE,
    "cli": (*SCRAPY_WORLD,),
}


def imported_modules(path: Path) -> set[str]:
    """The modules ``path`` imports, by absolute name (a relative import resolved; for
    ``from X import Y``, both ``X`` and ``X.Y``: ``Y`` may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # the package a relative import starts from: the module's own, or the package itself
    here = list(path.relative_to(PACKAGE.parent).parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]  # one dot: ``here`` itself
                module = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                module = node.module
            else:  # pragma: no cover - "from . import" needs a level
                continue
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def unit_of(name: str) -> str | None:
    """The unit of ``FLOORS`` a module of the package belongs to (None: not the package's).

    A name that is no module (``knowledge_crawler.__version__``) is its package's."""
    parts = name.split(".")
    if parts[0] != "knowledge_crawler":
        return None
    if len(parts) == 1 or not _is_module(PACKAGE / parts[1]):
        return "__init__"
    if parts[1] == "archive" and len(parts) > 2 and _is_module(PACKAGE / "archive" / parts[2]):
        return f"archive.{parts[2]}"
    return parts[1]


def _is_module(path: Path) -> bool:
    return path.is_dir() or path.with_suffix(".py").is_file()


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
        ".__init__"
    )


def floor_of(unit: str) -> int:
    for number, units in enumerate(FLOORS):
        if unit in units:
            return number
    raise AssertionError(f"{unit} stands on no floor: add it to FLOORS")


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


def test_every_arrow_points_down() -> None:
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = module_name(path)
        unit = unit_of(own)
        assert unit is not None
        for name in sorted(imported_modules(path)):
            other = unit_of(name)
            if other is None or other == unit:
                continue
            if floor_of(other) >= floor_of(unit):
                offences.append(f"{own} ({unit}) imports {name} ({other}): not a lower floor")
    assert not offences, "\n".join(offences)


def test_every_unit_stands_on_a_floor() -> None:
    for path in PACKAGE.rglob("*.py"):
        floor_of(str(unit_of(module_name(path))))


def test_the_floors_test_sees_relative_imports() -> None:
    """A relative import resolves to the module it names (what DESIGN promises)."""
    names = imported_modules(PACKAGE / "testsite" / "_pages.py")
    assert "knowledge_crawler.testsite._content" in names


def test_settings_import_only_the_config() -> None:
    """settings.py names components by dotted string; from the package it reads defaults only."""
    own = {unit_of(m) for m in imported_modules(PACKAGE / "settings.py")} - {None}
    assert own <= {"config"}, own


def test_cli_starts_without_scrapy() -> None:
    code = (
        "import sys; from knowledge_crawler.cli.main import cli;"
        "from knowledge_crawler.cli import stats, validate, extract, reextract;"
        "import knowledge_crawler.archive.reextract;"
        "bad = [m for m in ('scrapy', 'twisted') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
