"""The ACP proxy's JSON-RPC layer (`interfaces/acp/rpc.py`), over a real socket pair: what
the SDK-driven proxy tests do not reach (bad lines, error objects, lines past the buffer,
a peer that hangs up mid-request)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from freshline.interfaces.acp.rpc import Connection, RpcError, _read_line


async def pair() -> tuple[tuple[asyncio.StreamReader, asyncio.StreamWriter], socket.socket]:
    ours, theirs = socket.socketpair()
    return await asyncio.open_unix_connection(sock=ours), theirs


async def answer(method: str, params: Any, notification: bool) -> Any:
    if method == "echo":
        return params
    if method == "refuse":
        raise RpcError(-32602, "no", {"why": "test"})
    raise ValueError("broken")


def lines(sock: socket.socket, count: int) -> list[dict[str, Any]]:
    data = b""
    while data.count(b"\n") < count:
        data += sock.recv(65536)
    return [json.loads(line) for line in data.splitlines()]


async def test_requests_are_answered_and_bad_lines_skipped() -> None:
    (reader, writer), peer = await pair()
    conn = Connection(answer, writer, reader)
    loop = asyncio.create_task(conn.main_loop())
    peer.sendall(b"not json\n[1]\n\n"
                 b'{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":[1]}}\n'
                 b'{"jsonrpc":"2.0","id":"x","method":"refuse"}\n'
                 b'{"jsonrpc":"2.0","id":9,"method":"boom"}\n')
    got = await asyncio.to_thread(lines, peer, 3)
    by_id = {m["id"]: m for m in got}
    assert by_id[7]["result"] == {"a": [1]}
    assert by_id["x"]["error"] == {"code": -32602, "message": "no", "data": {"why": "test"}}
    assert by_id[9]["error"]["code"] == -32603 and "broken" in by_id[9]["error"]["data"]["details"]
    peer.close()
    await loop
    await conn.close()


async def test_a_request_gets_its_result_or_error_and_fails_when_the_peer_hangs_up() -> None:
    (reader, writer), peer = await pair()
    conn = Connection(answer, writer, reader)
    loop = asyncio.create_task(conn.main_loop())
    ok = asyncio.create_task(conn.send_request("m", {"q": 1}))
    refused = asyncio.create_task(conn.send_request("m", {"q": 2}))
    hung = asyncio.create_task(conn.send_request("m", {"q": 3}))
    sent = await asyncio.to_thread(lines, peer, 3)
    assert [m["params"]["q"] for m in sent] == [1, 2, 3] and len({m["id"] for m in sent}) == 3
    peer.sendall(json.dumps({"jsonrpc": "2.0", "id": sent[0]["id"], "result": None}).encode()
                 + b"\n" + json.dumps({"jsonrpc": "2.0", "id": sent[1]["id"],
                                       "error": {"code": 5, "message": "m"}}).encode() + b"\n")
    assert await ok is None
    with pytest.raises(RpcError) as error:
        await refused
    assert error.value.code == 5
    peer.close()
    await loop
    with pytest.raises(ConnectionError):
        await hung
    with pytest.raises(ConnectionError):
        await conn.send_notification("late")
    await conn.close()


async def test_a_line_longer_than_the_buffer_is_read_whole() -> None:
    reader = asyncio.StreamReader(limit=16)
    long = b'{"text":"' + b"x" * 100 + b'"}\n'
    reader.feed_data(long + b"tail")
    reader.feed_eof()
    assert await _read_line(reader) == long
    assert await _read_line(reader) == b"tail"
    assert await _read_line(reader) == b""
