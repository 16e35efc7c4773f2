"""Two `freshline mcp` stdio servers racing on one session: is any path acknowledged twice?

The issue-27 scenario (tests/mcp_race.py drives it): each round writes 3 notes, asks both
servers `project_updates(session)` at the same moment, and acknowledges both tokens at
the same moment. Before the delivery engine's compare-and-set, 30 of 725 paths were
acknowledged twice in 2 of 5 runs of 30 rounds. Goal: 0 paths acknowledged twice and 0
lost, in 20 runs of 30 rounds. Printed beside it: the time per round against the baseline
of the same rounds through one server alone (same workspace kind, same run).

Usage: python bench/delivery_race.py [--quick] [--postgresql]
       (20 runs × 30 rounds; --quick: 3 × 10; --postgresql: on a server it starts itself)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import Workspace  # noqa: E402
from tests.mcp_race import Race, run_race, server  # noqa: E402
from tests.pgserver import PgServer, find_bindir  # noqa: E402

from freshline.config import init_workspace  # noqa: E402
from freshline.store.location import ENV_VAR as STORE_URL  # noqa: E402


def workspace(parent: Path) -> Path:
    root = parent / "ws"
    init_workspace(root)
    ws = Workspace(root)
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    return root


async def alone(root: Path, rounds: int) -> None:
    """The baseline: the same rounds, one server, one call at a time."""
    from mcp import Client

    async with Client(server(root), mode="legacy", cache=None) as client:
        opened = await client.call_tool("open_session", {"project": "p"})
        session = (opened.structured_content or {})["session"]
        for n in range(rounds + 1):
            for i in range(3):
                (root / "notes" / f"r{n}-{i}.md").write_text(f"# {n} {i}\n", encoding="utf-8")
            got = await client.call_tool("project_updates", {"session": session})
            token = (got.structured_content or {}).get("token")
            if token:
                await client.call_tool("acknowledge", {"session": session, "token": token})


def main() -> None:
    quick = "--quick" in sys.argv
    runs, rounds = (3, 10) if quick else (20, 30)
    pg = None
    if "--postgresql" in sys.argv:
        bindir = find_bindir()
        if bindir is None:
            raise SystemExit("PostgreSQL server binaries not found")
        pg = PgServer(bindir).start()
    try:
        races: list[Race] = []
        racing = single = 0.0
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                if pg is not None:
                    os.environ[STORE_URL] = pg.new_schema()
                root = workspace(Path(tmp))
                start = time.perf_counter()
                races.append(anyio.run(run_race, root, rounds))
                racing += time.perf_counter() - start
            with tempfile.TemporaryDirectory() as tmp:
                if pg is not None:
                    os.environ[STORE_URL] = pg.new_schema()
                root = workspace(Path(tmp))
                start = time.perf_counter()
                anyio.run(alone, root, rounds)
                single += time.perf_counter() - start
    finally:
        if pg is not None:
            pg.stop()
    written = sum(len(r.written) for r in races)
    twice = sum(len(r.twice) for r in races)
    lost = sum(len(r.lost) for r in races)
    refused = sum(r.refused for r in races)
    backend = "PostgreSQL" if pg is not None else "SQLite"
    print(f"two MCP servers racing on one session, {runs} runs × {rounds} rounds ({backend})")
    print(f"  paths acknowledged twice: {twice} of {written} (goal 0), in "
          f"{sum(1 for r in races if r.twice)} of {runs} runs")
    print(f"  paths lost: {lost} (goal 0); stale acknowledgements refused: {refused}")
    print(f"  time per run: racing {racing / runs:.2f} s, one server alone {single / runs:.2f} s"
          f" (ratio {racing / single:.2f})")
    if twice or lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
