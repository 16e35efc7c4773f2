"""JSON-RPC 2.0 as ACP frames it (one JSON object a line on stdio), raw JSON both ways.

The proxy passes params and results on as they came, so it needs the framing, request
ids and error objects and no schema. The `agent-client-protocol` SDK builds its whole
pydantic schema on import (1–2 s before the proxy could answer its client), so the proxy
speaks the wire itself; the tests drive it with the SDK on both sides.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

Handler = Callable[[str, Any, bool], Awaitable[Any]]  # (method, params, is_notification)

LINE_LIMIT = 50 * 1024 * 1024  # the longest message read (the SDK's default, so no less)
STOP_S = 2.0  # how long a stopped agent gets after its stdin closed, then after SIGTERM


class RpcError(Exception):
    """A JSON-RPC error: raised by a handler to answer with it, or by `send_request`
    when the peer answered with one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def to_json(self) -> dict[str, Any]:
        """The error object of a response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        return error if self.data is None else {**error, "data": self.data}


class Connection:
    """One JSON-RPC peer on a pair of streams: `handler` answers what it sends (each
    message in a task of its own, started in arrival order), `send_request` asks it."""

    def __init__(
        self, handler: Handler, writer: asyncio.StreamWriter, reader: asyncio.StreamReader
    ) -> None:
        self._handler, self._writer, self._reader = handler, writer, reader
        self._ids = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    async def send_request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result (RpcError when it answers with one)."""
        self._check_open()
        request_id, self._ids = self._ids, self._ids + 1
        future = self._pending[request_id] = asyncio.get_running_loop().create_future()
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": params})
            return await future
        finally:
            self._pending.pop(request_id, None)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self._check_open()
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def main_loop(self) -> None:
        """Read and dispatch messages until the peer hangs up."""
        while (message := await self._receive()) is not None:
            self._dispatch(message)
        self._closed = True  # nothing sent now could be answered
        self._fail_pending()

    async def close(self) -> None:
        """Stop answering: in-flight handlers are cancelled, pending requests fail."""
        self._closed = True
        self._fail_pending()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            self._writer.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionError("connection closed")

    def _fail_pending(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("connection closed"))

    async def _send(self, message: dict[str, Any]) -> None:
        # One write per message: the event loop never interleaves two lines.
        self._writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await self._writer.drain()

    async def _receive(self) -> dict[str, Any] | None:
        """The next message; None once the peer hung up. Lines that are not a JSON
        object are skipped, as the SDK does."""
        while line := await _read_line(self._reader):
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict):
                    return message
        return None

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            task = asyncio.create_task(self._answer(message, method))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        request_id = message.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is not None and not future.done():
            error = message.get("error")
            if isinstance(error, dict):
                future.set_exception(RpcError(error.get("code", -32603),
                                              error.get("message", "Error"), error.get("data")))
            else:
                future.set_result(message.get("result"))

    async def _answer(self, message: dict[str, Any], method: str) -> None:
        notification = "id" not in message
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
        try:
            reply["result"] = await self._handler(method, message.get("params"), notification)
        except RpcError as exc:
            reply["error"] = exc.to_json()
        except Exception as exc:  # any failure answers as one, the stream goes on
            print(f"freshline acp: {method} failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            reply["error"] = RpcError(-32603, "Internal error", {"details": str(exc)}).to_json()
        if not notification and not self._closed:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._send(reply)


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    """One line, however long (a line past the reader's buffer is read in parts); b""
    at the end of the stream."""
    parts: list[bytes] = []
    while True:
        try:
            parts.append(await reader.readuntil(b"\n"))
            return b"".join(parts)
        except asyncio.IncompleteReadError as exc:
            return b"".join([*parts, exc.partial])
        except asyncio.LimitOverrunError as exc:
            parts.append(await reader.readexactly(exc.consumed))


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """This process's stdin and stdout as asyncio streams."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                        sys.stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


@contextlib.asynccontextmanager
async def spawned(
    command: Sequence[str], env: Mapping[str, str]
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.subprocess.Process]]:
    """`command` started with pipes on its stdin and stdout (its stderr is ours). On the
    way out its stdin is closed and it gets `STOP_S` to exit, then SIGTERM, then SIGKILL."""
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env=dict(env), limit=LINE_LIMIT,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process.stdout, process.stdin, process
    finally:
        with contextlib.suppress(Exception):
            process.stdin.close()
            await process.stdin.wait_closed()
        await _stop(process)


async def _stop(process: asyncio.subprocess.Process) -> None:
    for ask in (None, process.terminate):
        if ask is not None:
            with contextlib.suppress(ProcessLookupError):
                ask()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_S)
            return
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()
