"""The proxy in this process (`Proxy.serve` on a socket pair), for what needs a hand on
its timing: a desk whose `prepare` waits for the test, as a slow flush would."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection

from freshline.interfaces.acp import Desk, Proxy
from freshline.interfaces.acp.desk import Delivery
from tests.acp_harness import TEST_AGENT, Recorder
from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)


class GatedDesk(Desk):
    """Prepares only once the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.preparing = threading.Event()
        self.go = threading.Event()

    def prepare(self, acp_session: str, said: str = "") -> Delivery | None:
        self.preparing.set()
        self.go.wait(60)
        return super().prepare(acp_session, said)


def methods(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line).get("method", "") for line in log.read_text().splitlines()]


async def test_a_cancel_sent_while_the_prompt_is_prepared_still_stops_it(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    log = tmp_path / "agent.log"
    monkeypatch.setenv("FRESHLINE_TEST_ACP_LOG", str(log))
    monkeypatch.setenv("FRESHLINE_TEST_ACP_STATE", str(tmp_path))
    desk = GatedDesk()
    proxy = Proxy(desk)
    proxy_end, client_end = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=proxy_end)
    serving = asyncio.ensure_future(
        proxy.serve(reader, writer, [sys.executable, str(TEST_AGENT)])
    )
    client_reader, client_writer = await asyncio.open_connection(sock=client_end)
    conn = ClientSideConnection(Recorder(), client_writer, client_reader)
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    session = (await conn.new_session(cwd=str(ws.root), mcp_servers=[])).session_id
    asking = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("cancel")]))
    await asyncio.to_thread(desk.preparing.wait, 60)
    await conn.cancel(session_id=session)
    # Until the cancel is either held by the proxy or (wrongly) at the agent already.
    while not proxy._held.get(session) and "session/cancel" not in methods(log):
        await asyncio.sleep(0.01)
    desk.go.set()
    assert (await asyncio.wait_for(asking, 60)).stop_reason == "cancelled"
    asked = [m for m in methods(log) if m in ("session/prompt", "session/cancel")]
    assert asked == ["session/prompt", "session/cancel"]
    await conn.close()
    client_writer.close()  # the client hangs up: the proxy stops its agent and returns
    assert await asyncio.wait_for(serving, 60) == 0
