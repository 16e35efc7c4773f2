"""A scripted ACP agent for the proxy's tests: ACP's JSON-RPC on stdio, standard library only.

    python tests/acp_agent.py        (on stdio, as an ACP client starts it)

It writes the messages the SDK's helpers build (`start_read_tool_call`,
`update_agent_message_text`…, as JSON) without importing the SDK, whose schema costs seconds
at every start: the tests start one agent per proxy. Their client side is the SDK's, and the
real claude-code-acp runs in tests/integration/.

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

Methods starting with `_` (ACP's extensions) are echoed as `{"method", "params"}`, the
leading `_` dropped, as the SDK's `ext_method` hands them on; other unknown methods get
"Method not found".
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

LOG = Path(os.environ["FRESHLINE_TEST_ACP_LOG"])
STATE = Path(os.environ["FRESHLINE_TEST_ACP_STATE"])


class Failed(Exception):
    """An error to answer a request with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error = {"code": code, "message": message,
                      **({"data": data} if data is not None else {})}


def internal(details: str) -> Failed:
    return Failed(-32603, "Internal error", {"details": details})


class TestAgent:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.ids = itertools.count()
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def serve(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            message = json.loads(line)
            with LOG.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")
            if "method" in message:
                task = asyncio.create_task(self.answer(message))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            elif (future := self.pending.pop(message.get("id"), None)) is not None:
                if "error" in message:
                    future.set_exception(Failed(**message["error"]))
                else:
                    future.set_result(message.get("result"))

    async def send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await self.writer.drain()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        request_id = next(self.ids)
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        await self.send({"id": request_id, "method": method, "params": params})
        return await future

    async def answer(self, message: dict[str, Any]) -> None:
        try:
            reply = {"result": await self.dispatch(message["method"], message.get("params"))}
        except Failed as exc:
            reply = {"error": exc.error}
        if "id" in message:
            await self.send({"id": message["id"], **reply})

    async def dispatch(self, method: str, params: Any) -> Any:
        if method.startswith("_"):
            return {"method": method[1:], "params": params}
        if method == "initialize":
            return {"protocolVersion": params["protocolVersion"],
                    "agentCapabilities": {"loadSession": True}, "authMethods": []}
        if method == "session/new":
            session_id = uuid.uuid4().hex
            self.history(session_id).write_text("[]", encoding="utf-8")
            return {"sessionId": session_id}
        if method == "session/load":
            await self.load(params["sessionId"])
            return {}
        if method == "session/cancel":
            self.cancelled.setdefault(params["sessionId"], asyncio.Event()).set()
            return None
        if method == "session/prompt":
            return await self.prompt(params["sessionId"], params["prompt"])
        raise Failed(-32601, "Method not found", {"method": method})

    async def load(self, session_id: str) -> None:
        for blocks in json.loads(self.history(session_id).read_text(encoding="utf-8")):
            for block in blocks:
                await self.update(session_id, {"sessionUpdate": "user_message_chunk",
                                               "content": block})
            words = blocks[-1]["text"].split(" ", 2)
            if words[0] == "toolread":  # its tool call is part of the history
                await self.tool_read(session_id, words[1])
            else:
                await self.say(session_id, "ok")

    async def prompt(self, session_id: str, prompt: list[dict[str, Any]]) -> dict[str, str]:
        history = self.history(session_id)
        kept = json.loads(history.read_text(encoding="utf-8"))
        history.write_text(json.dumps([*kept, prompt]), encoding="utf-8")
        texts = [b["text"] for b in prompt if b.get("type") == "text"]
        words = (texts[-1] if texts else "").split(" ", 2)
        return {"stopReason": await self.act(session_id, words[0], words[1:])}

    async def act(self, session_id: str, command: str, args: list[str]) -> str:
        if command == "fail":
            raise internal("the test agent failed")
        if command == "talk":
            await self.say(session_id, "thinking")
            raise internal("failed after talking")
        if command == "cancel":
            await self.cancelled.setdefault(session_id, asyncio.Event()).wait()
            return "cancelled"
        if command in ("refuse", "silent"):
            return "refusal" if command == "refuse" else "end_turn"
        if command == "exit":
            os._exit(int(args[0]))
        if command == "read":
            line, limit = args[1].split() if len(args) > 1 else (None, None)
            ranged = {"line": int(line), "limit": int(limit)} if line and limit else {}
            said = await self.asked("fs/read_text_file",
                                    {"path": args[0], "sessionId": session_id, **ranged},
                                    lambda read: f"read {len(read['content'])} characters")
        elif command == "write":
            said = await self.asked("fs/write_text_file",
                                    {"content": args[1], "path": args[0], "sessionId": session_id},
                                    lambda _: "written")
        elif command == "toolread":
            await self.tool_read(session_id, args[0])
            return "end_turn"
        elif command == "env":
            said = f"{args[0]}={os.environ.get(args[0], '')}"
        else:
            said = "ok"
        await self.say(session_id, said)
        return "end_turn"

    async def asked(self, method: str, params: dict[str, Any], said: Any) -> str:
        """What to say after asking the client: `said(result)`, or the client's error."""
        try:
            return str(said(await self.request(method, params)))
        except Failed as exc:
            return f"error: {exc}"

    async def tool_read(self, session_id: str, path: str) -> None:
        where = [{"path": path}]
        await self.update(session_id, {"sessionUpdate": "tool_call", "toolCallId": "t1",
                                       "title": "Read", "kind": "read", "status": "pending",
                                       "locations": where, "rawInput": {"path": path}})
        await self.update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                                       "status": "completed", "locations": where})

    async def say(self, session_id: str, text: str) -> None:
        await self.update(session_id, {"sessionUpdate": "agent_message_chunk",
                                       "content": {"type": "text", "text": text}})

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.send({"method": "session/update",
                         "params": {"sessionId": session_id, "update": update}})

    @staticmethod
    def history(session_id: str) -> Path:
        return STATE / f"{session_id}.json"


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                        sys.stdout)
    agent = TestAgent(asyncio.StreamWriter(transport, protocol, None, loop))
    await agent.serve(reader)


if __name__ == "__main__":
    asyncio.run(main())
