"""Every command has --help, is listed by the group and is documented in the README."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import COMMANDS, cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_group_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help_and_docs(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and len(result.output.splitlines()) > 3
    assert f"knowledge-crawler {name}" in README, f"README does not show `knowledge-crawler {name}`"


def test_unknown_command_is_bad_input() -> None:
    result = CliRunner().invoke(cli, ["frobnicate"])
    assert result.exit_code == 2
