"""Two real `freshline mcp` stdio servers on one workspace, racing on one session: the
issue-27 scenario, shared by tests/test_mcp_race.py and bench/delivery_race.py.

Each round writes new notes, then asks both servers `project_updates(session)` at the same
moment and acknowledges both tokens at the same moment. A path named by two acknowledged
blocks was acknowledged twice (the defect); a path no acknowledged block named was lost.
The MCP SDK's own client drives the servers (`StdioServerParameters`, as tests/test_mcp.py).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

NOTES_PER_ROUND = 3
_PATH = re.compile(r"^- (/\S+\.md)$", re.M)


@dataclass
class Race:
    """What the acknowledged blocks of one run named."""

    written: set[str] = field(default_factory=set)
    acknowledged: list[str] = field(default_factory=list)  # blocks, one per acknowledgement
    refused: int = 0  # acknowledgements refused (a stale token): told again later

    @property
    def twice(self) -> list[str]:
        """The paths more than one acknowledged block named."""
        counts = Counter(p for b in self.acknowledged for p in set(_PATH.findall(b)))
        return sorted(p for p, n in counts.items() if n > 1)

    @property
    def lost(self) -> list[str]:
        """The paths written that no acknowledged block named."""
        named = {p for b in self.acknowledged for p in _PATH.findall(b)}
        return sorted(self.written - named)


def server(root: Path) -> StdioServerParameters:
    """`freshline mcp --workspace root`, as an MCP client starts it."""
    # env: this test's user (a client clears all but HOME, PATH…: the service's folder)
    return StdioServerParameters(command=sys.executable, cwd=str(root), env=dict(os.environ),
                                 args=["-m", "freshline.interfaces.mcp", "--workspace", str(root)])


def _fields(result: Any) -> Any:
    data = result.structured_content
    return data.get("result", data)


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def run_race(root: Path, rounds: int, project: str = "p") -> Race:
    """`rounds` rounds on one session of `project` through two servers."""
    race = Race()
    async with Client(server(root), mode="legacy", cache=None) as a, \
            Client(server(root), mode="legacy", cache=None) as b:
        opened = await a.call_tool("open_session", {"project": project})
        session = _fields(opened)["session"]
        first = await a.call_tool("project_updates", {"session": session})
        await a.call_tool("acknowledge", {"session": session, "token": _fields(first)["token"]})
        for n in range(rounds):
            for i in range(NOTES_PER_ROUND):
                path = root / "notes" / f"r{n}-{i}.md"
                path.write_text(f"# round {n}, note {i}\n", encoding="utf-8")
                race.written.add(str(path))
            await _round(a, b, session, race)
        await _round(a, a, session, race)  # whatever is still owed, once
    return race


async def _round(a: Client, b: Client, session: str, race: Race) -> None:
    delivered: list[Any] = [None, None]

    async def ask(i: int, client: Client) -> None:
        delivered[i] = await client.call_tool("project_updates", {"session": session})

    async with anyio.create_task_group() as group:
        group.start_soon(ask, 0, a)
        if b is not a:
            group.start_soon(ask, 1, b)

    async def take(client: Client, result: Any) -> None:
        token = _fields(result)["token"] if result is not None else None
        if token is None:
            return
        answer = await client.call_tool("acknowledge", {"session": session, "token": token})
        if answer.is_error:
            race.refused += 1
        else:
            race.acknowledged.append(_text(result))

    async with anyio.create_task_group() as group:
        group.start_soon(take, a, delivered[0])
        group.start_soon(take, b, delivered[1])
