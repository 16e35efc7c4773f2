"""An ACP agent written with the `agent-client-protocol` SDK, for the proxy's tests.

    python tests/acp_agent.py        (on stdio, as an ACP client starts it)

It logs every message it receives, raw, one JSON object a line, to
`$FRESHLINE_TEST_ACP_LOG`, and keeps each session's prompts under `$FRESHLINE_TEST_ACP_STATE`
so a later process can replay them on `session/load`. What it does with a prompt depends
on the prompt's last text (the user's words):

    fail              answer with an error, before any output
    talk then fail    stream a word, then answer with an error
    cancel            wait for session/cancel, then stop with `cancelled` (no output)
    refuse            stop with `refusal` (no output)
    silent            stop with `end_turn` (no output)
    read PATH [L N]   read PATH (lines L.. at most N) through the client, say how long it was
    write PATH TEXT   write TEXT to PATH through the client
    toolread PATH     report a completed read tool call on PATH (no fs request; a load
                      replays it)
    env NAME          say `NAME=value` of its environment variable NAME
    exit N            leave the process with status N, mid-prompt
    anything else     say "ok"
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import (
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_read_tool_call,
    update_agent_message_text,
    update_tool_call,
    update_user_message,
)
from acp.connection import StreamDirection, StreamEvent
from acp.interfaces import Client
from acp.schema import AgentCapabilities, TextContentBlock, ToolCallLocation

LOG = Path(os.environ["FRESHLINE_TEST_ACP_LOG"])
STATE = Path(os.environ["FRESHLINE_TEST_ACP_STATE"])


def record(event: StreamEvent) -> None:
    if event.direction is StreamDirection.INCOMING:
        with LOG.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(event.message) + "\n")


class TestAgent:
    def __init__(self) -> None:
        self.client: Client | None = None
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(load_session=True),
        )

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        self._history(session_id).write_text("[]", encoding="utf-8")
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        assert self.client is not None
        for blocks in json.loads(self._history(session_id).read_text(encoding="utf-8")):
            for block in blocks:
                replayed = update_user_message(TextContentBlock.model_validate(block))
                await self.client.session_update(session_id, replayed)
            words = blocks[-1]["text"].split(" ", 2)
            if words[0] == "toolread":  # its tool call is part of the history
                await self._tool_read(session_id, words[1])
            else:
                await self._say(session_id, "ok")
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"method": method, "params": params}

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        history = self._history(session_id)
        blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in prompt]
        kept = json.loads(history.read_text(encoding="utf-8"))
        history.write_text(json.dumps([*kept, blocks]), encoding="utf-8")
        texts = [b.text for b in prompt if getattr(b, "type", None) == "text"]
        words = (texts[-1] if texts else "").split(" ", 2)
        return await self._act(session_id, words)

    async def _act(self, session_id: str, words: list[str]) -> PromptResponse:
        client = self.client
        assert client is not None
        command, args = words[0], words[1:]
        if command == "fail":
            raise RequestError.internal_error({"details": "the test agent failed"})
        if command == "talk":
            await self._say(session_id, "thinking")
            raise RequestError.internal_error({"details": "failed after talking"})
        if command == "cancel":
            await self.cancelled.setdefault(session_id, asyncio.Event()).wait()
            return PromptResponse(stop_reason="cancelled")
        if command == "refuse":
            return PromptResponse(stop_reason="refusal")
        if command == "silent":
            return PromptResponse(stop_reason="end_turn")
        if command == "exit":
            os._exit(int(args[0]))
        if command == "read":
            try:
                line, limit = args[1].split() if len(args) > 1 else (None, None)
                ranged = {"line": int(line), "limit": int(limit)} if line and limit else {}
                read = await client.read_text_file(path=args[0], session_id=session_id,
                                                   **ranged)
                said = f"read {len(read.content)} characters"
            except RequestError as exc:
                said = f"error: {exc}"
            await self._say(session_id, said)
        elif command == "write":
            try:
                await client.write_text_file(content=args[1], path=args[0], session_id=session_id)
                said = "written"
            except RequestError as exc:
                said = f"error: {exc}"
            await self._say(session_id, said)
        elif command == "toolread":
            await self._tool_read(session_id, args[0])
        elif command == "env":
            await self._say(session_id, f"{args[0]}={os.environ.get(args[0], '')}")
        else:
            await self._say(session_id, "ok")
        return PromptResponse(stop_reason="end_turn")

    async def _tool_read(self, session_id: str, path: str) -> None:
        assert self.client is not None
        await self.client.session_update(session_id, start_read_tool_call("t1", "Read", path))
        done = update_tool_call("t1", status="completed", locations=[ToolCallLocation(path=path)])
        await self.client.session_update(session_id, done)

    async def _say(self, session_id: str, text: str) -> None:
        assert self.client is not None
        await self.client.session_update(session_id, update_agent_message_text(text))

    @staticmethod
    def _history(session_id: str) -> Path:
        return STATE / f"{session_id}.json"


if __name__ == "__main__":
    sys.exit(asyncio.run(run_agent(TestAgent(), observers=[record])))  # type: ignore[arg-type]
