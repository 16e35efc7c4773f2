"""`freshline mcp`'s first answers before the MCP SDK has loaded.

Importing the MCP SDK (its pydantic models for every protocol version) takes seconds;
a client asks `initialize` and then `tools/list` first, and neither answer depends on
the workspace. So the process answers both from a table the server's own answers
filled on an earlier start (`.freshline/mcp-answers.json`, kept while freshline, its
MCP surface and the SDK are the files they were), while the server loads in a thread:

- the server reads a pipe in place of stdin: everything the client sends goes there in
  order, with a copy of the `initialize` the table answered (under an id of its own,
  whose answer is dropped) and the `initialized` notification, so the server's session
  is in the state the client believes;
- the server writes a pipe in place of stdout, copied to the client line by line; the
  answers to a forwarded `initialize` and `tools/list` fill the table for next time;
- a client that leaves having asked only what the table answered (a health check that
  lists the tools) before the server has loaded ends the process at once (`Launch`): the
  server owes it nothing. One that leaves later lets the server stop as it would.

With no table (the first start, another version), every message goes to the server and
the client waits for it as before. Standard library only (`wire.py` for JSON).
"""

from __future__ import annotations

import os
import sys
import threading

from freshline.interfaces import wire

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

TABLE_NAME = "mcp-answers.json"
# The table of a server started inside an agent another channel runs (the ACP proxy's
# mark): it only pages and reads, so its tools/list is not the delivering server's.
PAGING_TABLE_NAME = "mcp-answers-paging.json"
REPLAYED = "freshline-front-initialize"  # the id of the copy of `initialize` the server gets
# The last line on the server's output pipe, written once the server is done: the SDK keeps
# a copy of the pipe's end open, so the relay would never see it close.
DONE = b'{"id": "freshline-front-done"}\n'
SURFACE = ("surface.py", "service.py")  # what the answers are made of, beside the SDK


class Front:
    """The client's side of one stdio connection, while the server runs in a thread."""

    def __init__(self, table_path: str | None, out_fd: int, to_server: int) -> None:
        self.table_path = table_path  # None: no workspace (the server says so)
        self.table = _read_table(table_path) if table_path else None
        self.out_fd = out_fd  # the client's stdout
        self.to_server = to_server  # the server's stdin
        self.version: str | None = None  # the protocol version agreed with the client
        self.asked: dict[object, str] = {}  # forwarded requests whose answers fill the table
        self.forwarded = False  # some request went to the server (its answer is owed)
        self._write = threading.Lock()

    def take(self, line: bytes) -> None:
        """One line from the client: answered here, or handed to the server."""
        try:
            message = wire.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            message = {}
        answer = self._answer(message)
        if answer is not None:
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": answer})
            return
        if "id" in message or not message:
            self.forwarded = True
        if message.get("method") in ("initialize", "tools/list") and "id" in message:
            self.asked[message["id"]] = str(message["method"])
        os.write(self.to_server, line if line.endswith(b"\n") else line + b"\n")

    def _answer(self, message: dict[str, Any]) -> Any:
        method, table = message.get("method"), self.table
        if table is None or "id" not in message:
            return None
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize" and self.version is None:
            asked = params.get("protocolVersion")
            version = asked if asked in table["handshake"] else table["latest"]
            if version not in table["initialize"] or version not in table["tools"]:
                return None
            self.version = version
            replay = dict(message, id=REPLAYED)
            os.write(self.to_server, wire.dumps(replay).encode() + b"\n")
            return table["initialize"][version]
        if method == "tools/list" and self.version in table["tools"] and not params.get("cursor"):
            return table["tools"][self.version]
        return None

    def send(self, message: dict[str, Any]) -> None:
        """One message to the client."""
        self.sent(wire.dumps(message).encode() + b"\n")

    def sent(self, line: bytes) -> None:
        with self._write:
            os.write(self.out_fd, line)

    def relay(self, from_server: int) -> None:
        """Copy the server's lines to the client until the last (a thread)."""
        with os.fdopen(from_server, "rb") as lines:
            for line in lines:
                if line == DONE:
                    return
                message = _parsed(line)
                if message.get("id") == REPLAYED:
                    continue
                self._learn(message)
                self.sent(line)

    def _learn(self, message: dict[str, Any]) -> None:
        method = self.asked.pop(message.get("id"), None)
        result = message.get("result")
        if method == "initialize" and isinstance(result, dict):
            self.version = str(result.get("protocolVersion"))
        if (method is None or not isinstance(result, dict) or self.version is None
                or self.table_path is None):
            return
        table = self.table or _new_table()
        table["initialize" if method == "initialize" else "tools"][self.version] = result
        self.table = table
        _write_table(self.table_path, table)


def _parsed(line: bytes) -> dict[str, Any]:
    try:
        message = wire.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _key() -> dict[str, Any]:
    """What the table's answers were made of: freshline's version and the modification
    times of its MCP surface and of the SDK (an upgrade rewrites them)."""
    from freshline import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    files = [os.path.join(here, name) for name in SURFACE]
    return {"freshline": __version__, "files": {f: os.stat(f).st_mtime_ns for f in files}}


def _read_table(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            table = wire.loads(f.read())
        key = table["key"]
        sdk = {f: os.stat(f).st_mtime_ns for f in table["sdk"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return table if key == _key() and sdk == table["sdk"] else None


def _new_table() -> dict[str, Any]:
    """An empty table, made once the server (and so the SDK) is loaded."""
    import mcp
    import mcp_types
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    sdk = [str(m.__file__) for m in (mcp, mcp_types)]
    return {"key": _key(), "sdk": {f: os.stat(f).st_mtime_ns for f in sdk},
            "handshake": list(HANDSHAKE_PROTOCOL_VERSIONS), "latest": LATEST_HANDSHAKE_VERSION,
            "initialize": {}, "tools": {}}


def _write_table(path: str, table: dict[str, Any]) -> None:
    """Replace the table in one rename (best effort: a read-only data folder keeps none)."""
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(wire.dumps(table))
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def table_name(env: Mapping[str, str]) -> str:
    """The table of a server started with `env`: the paging server's under another
    channel's mark (`mcp_command` serves only paging and reading there)."""
    from freshline.session.owners import owned_by

    return TABLE_NAME if owned_by(env) is None else PAGING_TABLE_NAME


def serve(workspace: str | None) -> int:
    """`freshline mcp`: serve over stdio, the first answers from the table when it holds
    them; the exit code."""
    from freshline.interfaces import serviceclient

    root = serviceclient.workspace_root(workspace, os.getcwd())
    name = table_name(os.environ)
    table = os.path.join(root, serviceclient.DATA_DIR, name) if root else None
    client_in, client_out = os.dup(0), os.dup(1)
    server_in, to_server = os.pipe()
    from_server, server_out = os.pipe()
    os.dup2(server_in, 0)
    os.dup2(server_out, 1)
    os.close(server_in)
    os.close(server_out)
    front = Front(table, client_out, to_server)
    relay = threading.Thread(target=front.relay, args=(from_server,), daemon=True)
    relay.start()
    outcome: list[int] = []
    launch = Launch()
    server = threading.Thread(target=_run_server, args=(workspace, outcome, launch),
                              daemon=True)
    server.start()
    with os.fdopen(client_in, "rb") as lines:
        for line in lines:
            front.take(line)
    if not front.forwarded and front.version is not None and launch.call_off():
        os._exit(0)  # nothing runs yet that could be left half done
    os.close(to_server)  # the server reads the end of input, and stops
    server.join()
    sys.stdout.flush()
    os.write(1, DONE)
    relay.join()
    os.dup2(client_out, 1)
    return outcome[0] if outcome else 0


class Launch:
    """Whether the server, once loaded, begins to serve, or the client left first having
    asked only what the table answered (a health check that lists the tools): then the
    server owes nothing, and the process ends without waiting for the SDK to load. Decided
    once, under a lock, whichever comes first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: str | None = None  # "server" or "client", once one has come

    def begin(self) -> bool:
        """The server is loaded: whether it may serve (the client is still there)."""
        return self._came("server")

    def call_off(self) -> bool:
        """The client left: whether the server is called off (it had not begun)."""
        return self._came("client")

    def _came(self, who: str) -> bool:
        with self._lock:
            self._first = self._first or who
            return self._first == who


def _run_server(workspace: str | None, outcome: list[int], launch: Launch) -> None:
    """Load and run the server (a thread); a failure ends the process, as it would have
    without the front: the client would otherwise wait on answers that never come."""
    from pathlib import Path

    from freshline.errors import FreshlineError

    try:
        from freshline.interfaces.mcp.stdio import mcp_command

        if not launch.begin():
            return
        mcp_command(Path(workspace) if workspace else None)
    except FreshlineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        code = exc.exit_code
    except Exception:
        import traceback

        traceback.print_exc()
        code = 1
    else:
        outcome.append(0)
        return
    sys.stderr.flush()
    os._exit(code)
