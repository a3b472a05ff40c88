"""`knowledge-crawler mcp`, driven by the MCP SDK's own client over stdio, as an agent would.

The client runs with ``asyncio.run`` in a thread of its own: the test session's event
loop belongs to the Twisted reactor (``--reactor=asyncio``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from knowledge_crawler.store import open_store
from tests.e2e.retrieval_data import SITE, Dataset, build_dataset, record

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def run_client(main: Callable[[], Awaitable[T]], timeout: float = 120) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(main(), timeout)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, bounded()).result()


def server(db_url: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "knowledge_crawler", "mcp", "--db", db_url],
        cwd=str(REPO),
    )


def payload(result: CallToolResult) -> dict[str, Any]:
    """The tool's structured result, checked against its text form (what a model reads)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    [text] = result.content
    assert json.loads(text.text) == result.structured_content  # type: ignore[union-attr]
    structured: dict[str, Any] = result.structured_content
    return structured


@pytest.fixture
def data(db_url: str) -> Dataset:
    return build_dataset(db_url)


def test_tools_over_stdio(data: Dataset, tmp_path: Path) -> None:
    errlog = tmp_path / "server.stderr"

    async def session() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        with errlog.open("w") as err:
            async with (
                stdio_client(server(data.db_url), errlog=err) as (read, write),
                ClientSession(read, write) as client,
            ):
                init = await client.initialize()
                seen["server"] = init.server_info.name
                seen["instructions"] = init.instructions
                seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
                seen["search"] = await client.call_tool(
                    "search", {"query": "why does the impeller overheat the seal?", "k": 3}
                )
                seen["search_dup"] = await client.call_tool(
                    "search", {"query": "backflow check valve", "k": 10, "all_words": True}
                )
                seen["search_gone"] = await client.call_tool("search", {"query": "limescale"})
                seen["page"] = await client.call_tool(
                    "get_page",
                    # any form of the URL: http, www., a tracking parameter, a trailing slash
                    {
                        "url": "http://www.docs.example.com/pumps/?utm_source=feed",
                        "include_versions": True,
                    },
                )
                seen["unknown"] = await client.call_tool(
                    "get_page", {"url": "https://docs.example.com/no-such-page"}
                )
                seen["after_error"] = await client.call_tool(
                    "get_page", {"url": SITE + "/print/valves"}
                )
                seen["changes"] = await client.call_tool("changes", {"since": "1d"})
                seen["changes_limited"] = await client.call_tool(
                    "changes", {"since": "1d", "limit": 2, "diff": False}
                )
                following = payload(seen["changes_limited"])["next"]
                seen["changes_next"] = await client.call_tool(
                    "changes", {**following, "limit": 100, "diff": False}
                )
                seen["bad_time"] = await client.call_tool("changes", {"since": "last tuesday"})
                seen["bad_k"] = await client.call_tool("search", {"query": "pump", "k": 0})
                # A crawl writes while the server runs: the next call sees the new page.
                with open_store(data.db_url) as writer:
                    writer.write(
                        [
                            record(
                                "/turbines",
                                "Turbines",
                                "# Turbines\n\nA Pelton wheel turns water jets into torque.\n",
                                "2026-01-01T00:00:00.000000Z",
                            )
                        ]
                    )
                seen["search_new"] = await client.call_tool("search", {"query": "pelton wheel"})
        return seen

    seen = run_client(session)
    assert seen["server"] == "knowledge-crawler" and "search" in seen["instructions"]

    tools = seen["tools"]
    assert set(tools) == {"search", "get_page", "changes"}
    assert set(tools["search"].input_schema["properties"]) == {"query", "k", "source", "all_words"}
    assert tools["search"].input_schema["required"] == ["query"]
    assert set(tools["get_page"].input_schema["properties"]) == {
        "url",
        "source",
        "include_versions",
    }
    assert set(tools["changes"].input_schema["properties"]) == {
        "since",
        "until",
        "source",
        "diff",
        "limit",
        "offset",
    }
    for tool in tools.values():
        assert tool.description and len(tool.description) > 200  # written for an agent
        assert tool.annotations is not None and tool.annotations.read_only_hint is True

    search = payload(seen["search"])
    best = search["passages"][0]
    assert best["canonical_url"] == data.pump and best["url"] == data.pump
    assert best["title"] == "Centrifugal pumps"
    assert best["heading_path"] == ["Centrifugal pumps", "How the impeller works"]
    assert "**impeller**" in best["snippet"] and best["score"] > 0
    assert "impeller spins" in best["content"]
    assert set(best) >= {"passage_id", "url", "canonical_url", "title", "heading_path"}
    assert search["searched_for"] == ["impeller", "overheat", "seal"]
    # the print copy is a duplicate, the kettle page is tombstoned: neither is found
    assert [p["canonical_url"] for p in payload(seen["search_dup"])["passages"]] == [data.valve]
    gone = payload(seen["search_gone"])
    assert gone["passages"] == [] and gone["note"].startswith("no passage matches")

    page = payload(seen["page"])
    with open_store(data.db_url) as store:
        [stored] = store.query(  # type: ignore[attr-defined]
            "SELECT content, fetched_at, last_changed_at FROM pages WHERE canonical_url = ?",
            (data.pump,),
        )
    assert page["canonical_url"] == data.pump and page["title"] == "Centrifugal pumps"
    assert page["content"] == stored["content"] and "$55" in page["content"]
    assert page["fetched_at"] == stored["fetched_at"]
    assert page["last_changed_at"] == stored["last_changed_at"]
    assert page["status"] == "active" and page["duplicate_of"] is None
    assert page["versions"] == 2
    [previous] = page["previous_versions"]
    assert "$40" in previous["content"] and previous["replaced_at"]

    unknown = seen["unknown"]
    assert unknown.is_error
    assert "no stored page for https://docs.example.com/no-such-page" in unknown.content[0].text
    duplicate = payload(seen["after_error"])  # the server kept serving
    assert duplicate["duplicate_of"] == data.valve and duplicate["duplicate_kind"] == "exact"

    changes = payload(seen["changes"])
    entries = changes["changes"]
    kinds = {(e["kind"], e["canonical_url"]) for e in entries}
    assert ("changed", data.pump) in kinds and ("tombstoned", data.kettle) in kinds
    assert ("new", data.valve_print) in kinds
    assert (  # the lamp page was first seen 30 days ago
        "new",
        data.lamp,
    ) not in kinds
    [changed] = [e for e in entries if e["kind"] == "changed"]
    assert "-Check the seal for drips every month. Price of a seal kit: $40." in changed["diff"]
    assert "+Check the seal for drips every month. Price of a seal kit: $55." in changed["diff"]
    assert "content" not in changed and "previous_content" not in changed
    [tombstone] = [e for e in entries if e["kind"] == "tombstoned"]
    assert tombstone["reason"] == "gone (410)"
    assert changes["returned"] == len(entries) and changes["more"] == 0

    limited = payload(seen["changes_limited"])
    assert limited["returned"] == 2 and limited["more"] == len(entries) - 2
    assert limited["changes"] == [{**e, "diff": None} for e in entries[:2]]
    # "1d" as an absolute time, so the window stays put
    assert limited["next"] == {"since": limited["since"], "until": None, "offset": 2}
    rest = payload(seen["changes_next"])  # the next call carries on where it stopped
    assert rest["offset"] == 2 and rest["more"] == 0 and "next" not in rest
    assert limited["changes"] + rest["changes"] == [{**e, "diff": None} for e in entries]

    assert seen["bad_time"].is_error and "last tuesday" in seen["bad_time"].content[0].text
    assert seen["bad_k"].is_error and "greater than or equal to 1" in seen["bad_k"].content[0].text

    [turbine] = payload(seen["search_new"])["passages"]
    assert turbine["canonical_url"] == SITE + "/turbines"

    log = errlog.read_text()
    assert "serving sqlite:///" in log  # logs on stderr; stdout carried only the protocol


def test_modern_client_negotiates(data: Dataset) -> None:
    """The SDK's high-level client (protocol discovery, then the newest version) works too."""

    async def session() -> tuple[str, dict[str, Any]]:
        async with Client(server(data.db_url)) as client:
            result = await client.call_tool("search", {"query": "bourdon tube", "k": 1})
            return client.protocol_version, payload(result)

    version, found = run_client(session)
    assert version
    [passage] = found["passages"]
    assert passage["canonical_url"] == SITE + "/gauges"
