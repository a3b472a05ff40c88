"""Finding and configuring the machine's Chromium (SPEC F-RENDER), without starting it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from knowledge_crawler.config import KcConfig
from knowledge_crawler.crawl.chromium import (
    LAUNCH_ARGS,
    browser_settings,
    check_browser,
    find_chromium,
)
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.sources import Source

SOURCE = Source("docs", ("https://example.com/",), ("example.com",))


def fake_browser(folder: Path, name: str = "chromium") -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_configured_path_is_used_only_when_it_is_an_executable(tmp_path: Path) -> None:
    browser = fake_browser(tmp_path)
    assert find_chromium(str(browser)) == str(browser)
    assert find_chromium(str(tmp_path / "missing")) is None
    plain = tmp_path / "not-executable"
    plain.write_text("")
    assert find_chromium(str(plain)) is None


def test_chromium_is_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = fake_browser(tmp_path, "chromium-browser")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() == str(browser)  # "chromium" is not on this PATH: the next name


def test_http_sources_need_no_browser() -> None:
    assert check_browser([SOURCE], {"KC_CHROMIUM_PATH": "/nonexistent"}) is None


def test_a_rendering_source_without_chromium_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"source 'docs'.*KC_CHROMIUM_PATH='/nonexistent'"):
        check_browser([replace(SOURCE, render="auto")], {"KC_CHROMIUM_PATH": "/nonexistent"})


@pytest.mark.parametrize("wait_for", ["load", "networkidle", "domcontentloaded", "#app article"])
def test_load_states_and_css_selectors_are_accepted(wait_for: str, tmp_path: Path) -> None:
    browser = fake_browser(tmp_path)
    source = replace(SOURCE, render="playwright", wait_for=wait_for)
    assert check_browser([source], {"KC_CHROMIUM_PATH": str(browser)}) == str(browser)


def test_an_unusable_wait_for_is_named(tmp_path: Path) -> None:
    source = replace(SOURCE, render="playwright", wait_for="div[[")
    with pytest.raises(ConfigError, match=r"source 'docs': wait_for 'div\[\['"):
        check_browser([source], {"KC_CHROMIUM_PATH": str(fake_browser(tmp_path))})


def test_browser_settings_bound_the_browser() -> None:
    config = KcConfig(browser_pages=3, browser_timeout_seconds=12.5)
    settings = browser_settings(config, "/usr/bin/chromium")
    launch = settings["PLAYWRIGHT_LAUNCH_OPTIONS"]
    assert launch["executable_path"] == "/usr/bin/chromium" and launch["headless"] is True
    for flag in ("--no-sandbox", "--disable-gpu", "--disable-background-networking"):
        assert flag in launch["args"] and flag in LAUNCH_ARGS
    assert settings["PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"] == 3
    assert settings["PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT"] == 12_500
    assert settings["PLAYWRIGHT_MAX_CONTEXTS"] == 2


def test_browser_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="KC_BROWSER_PAGES"):
        KcConfig.from_settings({"KC_BROWSER_PAGES": "0"})
