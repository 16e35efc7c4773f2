"""The issue-27 race with two real `freshline mcp` stdio servers on one workspace (the
driver: tests/mcp_race.py), on SQLite and on PostgreSQL: however the two servers'
`project_updates` and `acknowledge` interleave, no path is acknowledged twice and none is
lost. The full 20 runs × 30 rounds are `bench/delivery_race.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import StoreBackend, Workspace
from tests.mcp_race import run_race

ROUNDS = 12


@pytest.fixture
def notes(ws: Workspace, backend: StoreBackend) -> Iterator[Workspace]:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    yield ws


async def test_two_servers_racing_acknowledge_each_path_once(notes: Workspace) -> None:
    race = await run_race(notes.root, ROUNDS)
    assert race.twice == []
    assert race.lost == []
