"""KC_* settings -> one typed record; text from `-s NAME=VALUE` is coerced, nonsense refused."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from knowledge_crawler import settings as project_settings
from knowledge_crawler.config import DEFAULTS, KcConfig, setting_name
from knowledge_crawler.errors import ConfigError


def test_project_settings_take_every_default_from_the_config() -> None:
    from dataclasses import fields

    for f in fields(KcConfig):
        name = setting_name(f.name)
        if name in ("KC_CONTACT", "KC_DATABASE_URL"):
            continue  # may come from the environment
        assert getattr(project_settings, name) == getattr(DEFAULTS, f.name), name


def test_command_line_text_is_coerced() -> None:
    settings = Settings()
    settings.setmodule(project_settings, priority="project")
    settings.set("KC_STORE_BATCH_SIZE", "50", priority="cmdline")
    settings.set("KC_STORE_FLUSH_SECONDS", " 0.5 ", priority="cmdline")
    config = KcConfig.from_settings(settings)
    assert config.store_batch_size == 50 and config.store_flush_seconds == 0.5
    assert config.minhash_permutations == DEFAULTS.minhash_permutations


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("KC_STORE_BATCH_SIZE", "many", "KC_STORE_BATCH_SIZE: expected an integer, got 'many'"),
        ("KC_STORE_BATCH_SIZE", "0", "KC_STORE_BATCH_SIZE must be > 0"),
        ("KC_STORE_FLUSH_SECONDS", "nan", "expected a finite number"),
        ("KC_STORE_RETRY_SECONDS", "-1", "KC_STORE_RETRY_SECONDS must be >= 0"),
        ("KC_DATABASE_URL", " ", "KC_DATABASE_URL is empty"),
        ("KC_PROGRESS_SECONDS", True, "expected a number"),
        ("KC_LEASE_TTL_SECONDS", "0", "KC_LEASE_TTL_SECONDS must be > 0"),
        ("KC_LEASE_WAIT_SECONDS", "-1", "KC_LEASE_WAIT_SECONDS must be >= 0"),
    ],
)
def test_unusable_values_name_the_setting(name: str, value: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        KcConfig.from_settings({name: value})


def test_doctests() -> None:
    import doctest

    import knowledge_crawler.config as config_module

    assert doctest.testmod(config_module).failed == 0
