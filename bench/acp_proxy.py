"""What `freshline acp` adds to a prompt's round trip.

An agent written with the `agent-client-protocol` SDK (this file, run as `agent`) answers
each prompt by streaming CHUNKS message chunks. An SDK client sends ROUNDS prompts to it,
straight and through `freshline acp` (the session's project: every note of the
workspace), alternating, in one run:
  small    10 notes, nothing changed: what passing the messages on costs
  quiet    FILES notes, nothing changed: plus a flush that walks them (no watcher runs)
  changed  FILES notes, CHANGED edited before each prompt: plus an updates block each time
  watched  as changed, with the service the proxy starts (autowatch; the bench's own
           user's): each flush waits for its cookie instead of walking
Prints the median seconds per prompt and each through ÷ straight (goal: small ≤ 1.5).
Process start, `initialize` and `session/new` are left out.
Usage: python bench/acp_proxy.py [--quick]        (--quick: fewer rounds and files)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    spawn_agent_process,
    text_block,
    update_agent_message_text,
)
from acp.interfaces import Client
from measure import end_private_user, private_user

from freshline.interfaces.autostart import ENV as AUTOWATCH

QUICK = "--quick" in sys.argv
ROUNDS = 10 if QUICK else 30
FILES = 1000 if QUICK else 5000
CHUNKS = 200
CHANGED = 10


class StreamingAgent:
    """Answers every prompt with CHUNKS chunks of text."""

    def __init__(self) -> None:
        self.client: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="bench")

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        assert self.client is not None
        for i in range(CHUNKS):
            await self.client.session_update(session_id, update_agent_message_text(f"w{i} "))
        return PromptResponse(stop_reason="end_turn")


class Counting:
    """The client: counts the chunks it was shown."""

    def __init__(self) -> None:
        self.chunks = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.chunks += 1


def build(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "notes" / f"d{i % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i}.md").write_text(f"# note {i}\n")
    (root / "freshline.toml").write_text('[projects.notes]\ninclude = ["notes"]\n')
    (root / ".freshline").mkdir()


async def timed(
    command: list[str], root: Path, edit: bool, rounds: int, watch: bool
) -> list[float]:
    """Seconds per prompt of `rounds` prompts to `command`, editing notes before each."""
    client = Counting()
    env = {"PYTHONPATH": str(Path.cwd() / "src"), AUTOWATCH: "1" if watch else "0"}
    async with spawn_agent_process(client, command[0], *command[1:], cwd=root,
                                   env=env) as (conn, _p):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = (await conn.new_session(cwd=str(root), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block("warm up")])  # the manifest
        times = []
        for r in range(rounds):
            if edit:
                for i in range(CHANGED):
                    (root / "notes" / f"d{i}" / f"n{i}.md").write_text(f"# note {i}, {r}\n")
            start = time.perf_counter()
            await conn.prompt(session_id=session, prompt=[text_block(f"prompt {r}")])
            times.append(time.perf_counter() - start)
    assert client.chunks == CHUNKS * (rounds + 1)
    return times


async def main() -> None:
    agent = [sys.executable, str(Path(__file__).resolve()), "agent"]
    through = [sys.executable, "-m", "freshline", "acp", "--", *agent]
    for case, files, edit, watch in (("small", 10, False, False), ("quiet", FILES, False, False),
                                     ("changed", FILES, True, False),
                                     ("watched", FILES, True, True)):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "ws"
            root.mkdir()
            private_user(Path(tmp))
            build(root, files)
            straight: list[float] = []
            proxied: list[float] = []
            try:
                for _ in range(2):  # alternate, so the machine's load falls on both alike
                    straight += await timed(agent, root, edit, ROUNDS // 2, watch)
                    proxied += await timed(through, root, edit, ROUNDS // 2, watch)
            finally:
                end_private_user()
        a, b = statistics.median(straight), statistics.median(proxied)
        print(f"{case:8} straight {a * 1000:7.1f} ms  through freshline acp "
              f"{b * 1000:7.1f} ms  ratio {b / a:.2f}  ({files} notes, {CHUNKS} chunks)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["agent"]:
        asyncio.run(run_agent(StreamingAgent()))  # type: ignore[arg-type]
    else:
        asyncio.run(main())
