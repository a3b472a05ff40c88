"""Chromium for a crawl that renders (SPEC F-RENDER): where it is, how it runs.

:func:`install_browser`, called by the knowledge spider before the crawl starts,
puts :class:`~knowledge_crawler.middlewares.browser.BrowserDownloadHandler` in place
for http and https when one of the crawl's sources has ``render = "playwright"``
or ``"auto"``, and gives scrapy-playwright its settings (:func:`browser_settings`).
A crawl without such sources never imports Playwright. Chromium is the machine's
own (:func:`find_chromium`), since browser downloads are not assumed possible.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from knowledge_crawler.config import KcConfig
from knowledge_crawler.errors import ConfigError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from knowledge_crawler.sources import Source

__all__ = [
    "BROWSER_HANDLER",
    "CHROMIUM_NAMES",
    "LAUNCH_ARGS",
    "LOAD_STATES",
    "browser_settings",
    "check_browser",
    "find_chromium",
    "install_browser",
]

#: the download handler that renders (and passes other requests to Scrapy's HTTP/1.1)
BROWSER_HANDLER = "knowledge_crawler.middlewares.browser.BrowserDownloadHandler"
#: executables tried, in order, when KC_CHROMIUM_PATH is empty
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CHROMIUM_FALLBACK = "/usr/bin/chromium"
#: headless Chromium as a crawler runs it: in containers, without a GPU, and without the
#: browser's own background traffic (updates, safe browsing, metrics)
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
)
#: ``wait_for`` values that name a load state; anything else is a CSS selector
LOAD_STATES = frozenset({"load", "domcontentloaded", "networkidle", "commit"})


def find_chromium(configured: str = "") -> str | None:
    """The Chromium executable to launch: ``configured`` when given (None if it is not an
    executable file), else the first of :data:`CHROMIUM_NAMES` on ``PATH``, else
    ``/usr/bin/chromium`` when it exists."""
    if configured:
        path = shutil.which(configured)
        return path if path and os.access(path, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return _CHROMIUM_FALLBACK if os.access(_CHROMIUM_FALLBACK, os.X_OK) else None


def browser_settings(config: KcConfig, chromium: str) -> dict[str, Any]:
    """The scrapy-playwright settings of a crawl that renders."""
    return {
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            "executable_path": chromium,
            "headless": True,
            "args": list(LAUNCH_ARGS),
        },
        # one context at a time, two while a used one is being replaced
        "PLAYWRIGHT_MAX_CONTEXTS": 2,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": config.browser_pages,
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": config.browser_timeout_seconds * 1000,
        "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER": True,
    }


def _check_selectors(sources: Iterable[Source]) -> None:
    from cssselect import GenericTranslator, SelectorError  # Scrapy's own dependency (parsel)

    for source in sources:
        if source.render == "http" or source.wait_for in LOAD_STATES:
            continue
        try:
            GenericTranslator().css_to_xpath(source.wait_for)
        except SelectorError as exc:
            raise ConfigError(
                f"source {source.id!r}: wait_for {source.wait_for!r} is neither a load state "
                f"({', '.join(sorted(LOAD_STATES))}) nor a CSS selector: {exc}"
            ) from None


def check_browser(sources: Iterable[Source], settings: Any) -> str | None:
    """The Chromium that ``sources`` need (None when none of them renders).

    Raises :class:`ConfigError` when no Chromium can be found or a ``wait_for`` is
    unusable: ``scrapy crawl`` checks this before it starts, for a one-line error.
    """
    rendering = [s for s in sources if s.render != "http"]
    if not rendering:
        return None
    _check_selectors(rendering)
    config = KcConfig.from_settings(settings)
    chromium = find_chromium(config.chromium_path)
    if chromium is None:
        where = (
            f"KC_CHROMIUM_PATH={config.chromium_path!r} is not an executable"
            if config.chromium_path
            else f"none of {', '.join(CHROMIUM_NAMES)} is on PATH"
        )
        raise ConfigError(
            f"source {rendering[0].id!r} has render = {rendering[0].render!r}, which needs "
            f"Chromium, but {where}: install it (Debian: apt-get install chromium) "
            "or set KC_CHROMIUM_PATH"
        )
    return chromium


def install_browser(crawler: Crawler, sources: Iterable[Source]) -> bool:
    """Put the browser download handler in place when one of ``sources`` renders.

    Returns whether it did; raises :class:`ConfigError` as :func:`check_browser` does.
    Settings the user gave (``-s PLAYWRIGHT_...``) win over :func:`browser_settings`.
    """
    chromium = check_browser(sources, crawler.settings)
    if chromium is None:
        return False
    settings = crawler.settings
    handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
    for scheme in ("http", "https"):
        handlers[scheme] = BROWSER_HANDLER
    settings.set("DOWNLOAD_HANDLERS", handlers, priority="spider")
    config = KcConfig.from_settings(settings)
    for name, value in browser_settings(config, chromium).items():
        settings.set(name, value, priority="project")  # below -s and per-spider settings
    return True
