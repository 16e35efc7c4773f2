"""Drive `freshline acp -- AGENT` from the `agent-client-protocol` SDK's client side.

`proxied(...)` starts `python -m freshline acp [options] -- AGENT…` the way an ACP client
starts its agent (`acp.spawn_agent_process`), initializes it with file-system
capabilities, and yields a `Proxied`: the SDK connection, the test's `Recorder` client
(what the user's client saw and did), and the agent's log of raw messages when the agent
is `tests/acp_agent.py`. Leaving the block closes the proxy's stdin; the proxy stops its
agent and exits.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
    spawn_agent_process,
    text_block,
)
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    PermissionOption,
)

from tests.conftest import Workspace

TEST_AGENT = Path(__file__).with_name("acp_agent.py")
MANIFEST = "<project_context "
UPDATES = "<project_context_updates "


@dataclass
class Recorder:
    """The user's side: an ACP client that serves files from disk and keeps what the
    agent showed (`updates`) and asked (`reads`, `writes`)."""

    updates: list[dict[str, Any]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def read_text_file(self, path: str, session_id: str, **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(
        self, content: str, path: str, session_id: str, **_: Any
    ) -> WriteTextFileResponse:
        self.writes.append(path)
        Path(path).write_text(content, encoding="utf-8")
        return WriteTextFileResponse()

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: Any, **_: Any
    ) -> RequestPermissionResponse:
        allow = next(o for o in options if o.kind.startswith("allow"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )

    def user_texts(self) -> list[str]:
        """The user messages the client was shown (a loaded session's replay)."""
        return [u["content"]["text"] for u in self.updates
                if u["sessionUpdate"] == "user_message_chunk"]

    def said(self) -> str:
        """Everything the agent said, joined."""
        return "".join(u["content"].get("text", "") for u in self.updates
                       if u["sessionUpdate"] == "agent_message_chunk")


@dataclass
class Proxied:
    """A running `freshline acp` and the client talking to it."""

    conn: ClientSideConnection
    client: Recorder
    log: Path  # the test agent's raw incoming messages
    stderr: Path
    process: Any

    async def new(self, cwd: Path) -> str:
        """A new session in `cwd`; its id."""
        return (await self.conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id

    async def prompt(self, session: str, text: str) -> str | None:
        """Send the user's `text`; the stop reason."""
        answer = await self.conn.prompt(session_id=session, prompt=[text_block(text)])
        return answer.stop_reason

    def received(self, method: str) -> list[dict[str, Any]]:
        """The params of every `method` message the test agent received, in order."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        messages = [json.loads(line) for line in lines]
        return [m.get("params") or {} for m in messages if m.get("method") == method]

    def prompts(self) -> list[list[dict[str, Any]]]:
        """The prompts the agent received, each a list of content blocks."""
        return [p["prompt"] for p in self.received("session/prompt")]


def with_notes(ws: Workspace) -> Workspace:
    """`ws` with project `p` over `notes/` (a.md, b.md) and a file outside it (other/x.md)."""
    for rel in ("notes/a.md", "notes/b.md", "other/x.md"):
        ws.write(rel, f"# {Path(rel).stem.upper()}\n")
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def freshline_block(prompt: Sequence[dict[str, Any]]) -> str | None:
    """The text of freshline's block at the head of a prompt as the agent received it."""
    head = prompt[0] if prompt else {}
    if head.get("annotations", {}).get("audience") == ["assistant"]:
        text: str = head["text"]
        return text
    return None


def named(block: str, root: Path) -> list[str]:
    """The workspace paths a block names, in order, once each."""
    found = re.findall(re.escape(f"{root}/") + r"([^\s,;()]+)", block)
    return list(dict.fromkeys(found))


def stale_read(block: str, path: Path) -> bool:
    """Whether a block says the agent read `path` and it changed since."""
    return f"- you read {path} at turn " in block


@asynccontextmanager
async def proxied(
    tmp_path: Path,
    cwd: Path,
    options: Sequence[str] = (),
    agent: Sequence[str] = (sys.executable, str(TEST_AGENT)),
    env: dict[str, str] | None = None,
    name: str = "run",
    status: int | None = 0,
) -> AsyncIterator[Proxied]:
    """`freshline acp OPTIONS -- AGENT` started in `cwd` and initialized by a client; once
    the client hung up, the proxy must have exited with `status` (None: not checked)."""
    command = [sys.executable, "-m", "freshline", "acp", *options, "--", *agent]
    async with started(tmp_path, cwd, command, env, name, status) as run:
        yield run


@asynccontextmanager
async def started(
    tmp_path: Path,
    cwd: Path,
    command: Sequence[str],
    env: dict[str, str] | None = None,
    name: str = "run",
    status: int | None = 0,
    shutdown: float = 30.0,
) -> AsyncIterator[Proxied]:
    """The ACP agent `command` (the proxy, or an agent on its own) started in `cwd` and
    initialized by a client; once the client hung up, it must have exited with `status`
    (None: not checked) within `shutdown` seconds, or it is stopped."""
    log, state = tmp_path / "agent.log", tmp_path / "agent-state"
    state.mkdir(exist_ok=True)
    stderr = tmp_path / f"{name}.stderr"
    env = {**os.environ, "FRESHLINE_TEST_ACP_LOG": str(log),
           "FRESHLINE_TEST_ACP_STATE": str(state), **(env or {})}
    client = Recorder()
    with stderr.open("w", encoding="utf-8") as errors:
        async with spawn_agent_process(
            client, command[0], *command[1:], env=env, cwd=cwd,
            transport_kwargs={"stderr": errors, "shutdown_timeout": shutdown},
        ) as (conn, process):
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
            )
            await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                  client_capabilities=capabilities)
            yield Proxied(conn, client, log, stderr, process)
    if status is not None:
        assert process.returncode == status, stderr.read_text(encoding="utf-8")
