"""`freshline mcp` answers `initialize` and `tools/list` from the table its server's own
answers filled on an earlier start, before the MCP SDK has loaded (`mcp/front.py`), and
the server, loaded behind it, carries on the same connection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from freshline.interfaces.mcp.front import PAGING_TABLE_NAME, TABLE_NAME, Launch, table_name

from .conftest import Workspace


def server(root: Path) -> StdioServerParameters:
    """The server as `mcp install` writes its entry: `freshline --workspace ROOT mcp`."""
    # env: this test's user (a client clears all but HOME, PATH…: the service's folder)
    return StdioServerParameters(command=sys.executable, cwd=str(root), env=dict(os.environ),
                                 args=["-m", "freshline", "--workspace", str(root), "mcp"])


async def test_the_first_answers_come_from_the_table_and_the_server_carries_on(
    two_projects: Workspace
) -> None:
    root = two_projects.root
    table_path = root / ".freshline" / TABLE_NAME
    async with Client(server(root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        listed = await client.list_tools()
    table = json.loads(table_path.read_text(encoding="utf-8"))
    [(version, tools)] = table["tools"].items()
    assert [t["name"] for t in tools["tools"]] == [t.name for t in listed.tools]
    assert version in table["initialize"]

    # The table's answer, marked, proves who answered.
    tools["tools"][0]["description"] = "from the table"
    table_path.write_text(json.dumps(table), encoding="utf-8")
    async with Client(server(root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        again = await client.list_tools()
        projects = await client.call_tool("list_projects", {})
    assert again.tools[0].description == "from the table"
    assert not projects.is_error and '"name": "p"' in projects.content[0].text  # type: ignore[union-attr]


def test_a_server_inside_the_acp_proxys_agent_keeps_a_table_of_its_own() -> None:
    """Under the proxy's mark `freshline mcp` lists only its paging tools: the delivering
    server's tools/list must never answer for it, nor the reverse."""
    assert table_name({}) == TABLE_NAME
    assert table_name({"FRESHLINE_OWNER": ""}) == TABLE_NAME
    assert table_name({"FRESHLINE_OWNER": "acp"}) == PAGING_TABLE_NAME


async def test_a_client_that_only_lists_the_tools_is_not_kept_waiting_for_the_sdk(
    two_projects: Workspace
) -> None:
    """With both answers from the table, the client's end of input ends the process at
    once: the server, still loading the SDK, is not waited for (its import never ends)."""
    root = two_projects.root
    async with Client(server(root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        await client.list_tools()  # the table, filled by the server's answers
    table = json.loads((root / ".freshline" / TABLE_NAME).read_text(encoding="utf-8"))
    [version] = table["tools"]
    asked = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": version, "capabilities": {},
                 "clientInfo": {"name": "health-check", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "freshline", "--workspace", str(root), "mcp"],
        input="".join(json.dumps(m) + "\n" for m in asked), capture_output=True, text=True,
        cwd=root, timeout=60)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr[-2000:]
    assert [a["id"] for a in answers] == [1, 2] and answers[1]["result"]["tools"]
    assert "freshline.interfaces.mcp.stdio" not in done.stderr  # the server never loaded


def test_whichever_comes_first_of_the_server_loaded_and_the_client_gone_decides() -> None:
    """A server that began serving stops as it would; one not yet loaded is called off."""
    loaded_first = Launch()
    assert loaded_first.begin() and not loaded_first.call_off()
    gone_first = Launch()
    assert gone_first.call_off() and not gone_first.begin()
