"""Fixtures of the subprocess tests: a real scrapyd with the project deployed to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.scrapyd_server import ScrapydServer


@pytest.fixture(scope="session")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScrapydServer]:
    """scrapyd on a free loopback port in a temporary folder, with this checkout deployed by
    ``scrapyd-deploy``; stopped at the end of the session."""
    server = ScrapydServer(tmp_path_factory.mktemp("scrapyd"))
    server.start()
    try:
        result = server.deploy()
        assert result.returncode == 0, f"scrapyd-deploy failed:\n{server.deploy_output[-4000:]}"
        yield server
    finally:
        server.stop()
