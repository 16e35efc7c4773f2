"""The fast path for the two calls of a steady round: `project_updates` and `acknowledge`.

Every agent's turn makes both calls, so they are most of what a busy `serve` answers, and
the MCP SDK spends more CPU on each (its per-request dispatch context, connection, runner,
middleware chain, session object, SSE deferral streams) than freshline's tools do. This
ASGI app sits between the bearer authentication (`auth.BearerAuth`, which has signed the
request in and counted its failures already) and the SDK's app, and answers one exact
kind of request itself: a POST to `/mcp` at a 2026-07-28 protocol version (no handshake,
no MCP session: the SDK answers such a request on its own, `handle_modern_request`), whose
body is one JSON-RPC `tools/call` of a hot tool, with no progress token, and which the
SDK's own checks (transport security, Accept, routing headers, `Mcp-Param-*`) let through.
The tool runs as the SDK runs it (`MCPServer.call_tool`: the same argument validation,
tool body and result conversion), and its result is shaped and framed as the SDK's
single-exchange entry would (`_shaped`, `_respond`).

Anything else goes to the SDK unchanged, the body read here handed on as it came:
`initialize`, `tools/list`, notifications, GET and DELETE, batches, other tools, requests
carrying an `Mcp-Session-Id` (the server is stateless: it issues none), the handshake-era
protocols, and whatever the SDK's checks would refuse (it refuses it with its own answer).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import (
    INTERNAL_ERROR,
    SERVER_INFO_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    JSONRPCError,
    JSONRPCResponse,
    TextContent,
)
from mcp_types import methods as _methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from freshline.interfaces.mcp.surface import FreshlineMCP
from freshline.interfaces.server.auth import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

HOT_TOOLS = frozenset({"project_updates", "acknowledge"})
# The SDK's single-exchange entry (mcp.server._streamable_http_modern) answers JSON when the
# handler is done within this many seconds, else commits to an event stream and pings on it.
SSE_DEFER_S = 15.0
SSE_HEADERS = [(b"content-type", b"text/event-stream"),
               (b"cache-control", b"no-cache, no-transform"),
               (b"connection", b"keep-alive"), (b"x-accel-buffering", b"no")]
_PARAMS = frozenset({"name", "arguments", "_meta"})  # anything more: the SDK judges it
_REQUEST = frozenset({"jsonrpc", "id", "method", "params"})


class _Unreported(Context):
    """A tool's context for a request that asked for no progress: the SDK sends none."""

    async def report_progress(self, progress: float, total: float | None = None,
                              message: str | None = None) -> None:
        """Nothing to send: the request carries no progress token."""


class FastCalls:
    """ASGI app: the hot `tools/call` requests answered here, the rest by `app` (the SDK's)."""

    def __init__(self, app: ASGIApp, server: FreshlineMCP, path: str,
                 security: TransportSecuritySettings | None) -> None:
        self.app = app
        self.server = server
        self.path = path
        self.security = TransportSecurityMiddleware(security)
        self.answered = 0  # requests this path answered (the tests watch it)
        # A cache hint would change the result's shape: the SDK alone applies them.
        self.enabled = "tools/call" not in server.kernel.cache_hints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._candidate(scope):
            await self.app(scope, receive, send)
            return
        received = await _received(receive)
        whole = received[-1]["type"] == "http.request"  # else the client went away meanwhile
        body = b"".join(m.get("body", b"") for m in received if m["type"] == "http.request")
        hot = await self._hot(Request(scope), body) if whole else None
        if hot is None:
            await self.app(scope, _replay(received, receive), send)
            return
        self.answered += 1
        ident, name, arguments, version = hot
        await _respond(scope, receive, send, lambda: self._result(ident, name, arguments, version))

    def _candidate(self, scope: Scope) -> bool:
        """Whether the request line and headers could be a hot call (no body read yet)."""
        if not (self.enabled and scope["type"] == "http" and scope.get("method") == "POST"
                and scope.get("path") == self.path):
            return False
        headers = dict(scope.get("headers", ()))
        length = headers.get(b"content-length", b"")
        return (headers.get(b"mcp-protocol-version", b"").decode("latin-1")
                in MODERN_PROTOCOL_VERSIONS
                and headers.get(b"mcp-method") == b"tools/call"
                and b"mcp-session-id" not in headers
                and length.isdigit() and int(length) <= DEFAULT_MAX_REQUEST_BODY_SIZE)

    async def _hot(self, request: Request,
                   body: bytes) -> tuple[int | str, str, dict[str, Any], str] | None:
        """The id, tool, arguments and protocol version of a hot call the SDK would run;
        None for anything the SDK should see (or refuse) itself."""
        if await self.security.validate_request(request, is_post=True) is not None:
            return None
        if check_accept_headers(request) != (True, True):
            return None
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not _hot_shape(decoded):
            return None
        if find_duplicated_routing_header(request.headers.items()) is not None:
            return None
        verdict = classify_inbound_request(decoded, headers=dict(request.headers))
        if not isinstance(verdict, InboundModernRoute):
            return None
        params = decoded["params"]
        try:  # the runner's validation of the envelope and params, which would refuse them
            _methods.validate_client_request("tools/call", verdict.protocol_version, params)
            CallToolRequestParams.model_validate(params, by_name=False)
        except ValidationError:
            return None
        name, arguments = params["name"], params.get("arguments") or {}
        schema = self.server.kernel.get_tool_input_schema
        if schema is None or validate_mcp_param_headers(
                schema(name), arguments, request.headers) is not None:
            return None
        return decoded["id"], name, arguments, verdict.protocol_version

    async def _result(self, ident: int | str, name: str, arguments: dict[str, Any],
                      version: str) -> JSONRPCResponse | JSONRPCError:
        """The JSON-RPC answer the SDK would give: its result, or its error."""
        try:
            result = await self._call(name, arguments)
            return JSONRPCResponse(jsonrpc="2.0", id=ident, result=self._shaped(result, version))
        except Exception as exc:
            return JSONRPCError(jsonrpc="2.0", id=ident, error=modern_error_data(exc))

    async def _call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Run the tool as `MCPServer._handle_call_tool` does: a tool's failure is a
        result flagged as an error, the protocol's own errors are raised."""
        # Context is a pydantic model whose __init__ mypy reads from its fields only.
        context = _Unreported(mcp_server=self.server)  # type: ignore[call-arg]
        try:
            result = await self.server.call_tool(name, arguments, context)
        except MCPError:
            raise
        except Exception as exc:
            if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
                logger.info("Tool %r failed: %r", name, str(exc))
            else:
                logger.exception("Tool %r raised an unexpected exception", name)
            return CallToolResult(content=[TextContent(type="text", text=str(exc))],
                                  is_error=True)
        assert isinstance(result, CallToolResult)  # the hot tools ask the client nothing
        return result

    def _shaped(self, result: CallToolResult, version: str) -> dict[str, Any]:
        """The result's wire form, as the SDK's runner shapes a 2026-07-28 result: sieved
        by the version's surface (which types it complete), stamped with the server's identity."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            dumped = _methods.serialize_server_result("tools/call", version, dumped)
        except ValidationError:
            logger.exception("handler for 'tools/call' returned an invalid result")
            raise MCPError(code=INTERNAL_ERROR,
                           message="Handler returned an invalid result") from None
        # The hot tools set no `_meta` of their own (nor a server identity in it).
        dumped["_meta"] = {**(dumped.get("_meta") or {}),
                           SERVER_INFO_META_KEY: self.server.kernel.server_info_stamp}
        return dumped


def _hot_shape(decoded: Any) -> bool:
    """Whether a body is one JSON-RPC `tools/call` request of a hot tool, with nothing
    the SDK would judge beyond its arguments (no progress token, no extra members)."""
    if not (isinstance(decoded, dict) and decoded.keys() == _REQUEST
            and decoded["jsonrpc"] == "2.0" and decoded["method"] == "tools/call"):
        return False
    ident, params = decoded["id"], decoded["params"]
    if isinstance(ident, bool) or not isinstance(ident, int | str) or not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return (params.keys() <= _PARAMS and params.get("name") in HOT_TOOLS
            and isinstance(params.get("arguments", {}), dict)
            and isinstance(meta, dict) and "progressToken" not in meta)


async def _received(receive: Receive) -> list[Message]:
    """The messages that bring the request's body, up to its last or the first that is not
    part of it (a disconnect)."""
    received = [await receive()]
    while received[-1]["type"] == "http.request" and received[-1].get("more_body", False):
        received.append(await receive())
    return received


def _replay(received: list[Message], receive: Receive) -> Receive:
    """`receive` as it was before the body was read here: those messages again, then on."""
    pending = list(received)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def _wire(message: JSONRPCResponse | JSONRPCError) -> str:
    return json.dumps(message.model_dump(mode="json", by_alias=True, exclude_none=True),
                      separators=(",", ":"))


async def _respond(scope: Scope, receive: Receive, send: Send,
                   answer: Callable[[], Awaitable[JSONRPCResponse | JSONRPCError]]) -> None:
    """Frame the answer as the SDK does: JSON (with the error's HTTP status) when it is
    ready within SSE_DEFER_S, else an event stream kept alive by pings; a client that
    goes away meanwhile cancels the call."""
    done: list[JSONRPCResponse | JSONRPCError] = []
    ready = anyio.Event()

    async def run() -> None:
        done.append(await answer())
        ready.set()

    async def watch_disconnect() -> None:
        while (await receive()).get("type") != "http.disconnect":
            pass
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        tg.start_soon(watch_disconnect)
        with anyio.move_on_after(SSE_DEFER_S):
            await ready.wait()
        if ready.is_set():
            message = done[0]
            status = (ERROR_CODE_HTTP_STATUS.get(message.error.code, 200)
                      if isinstance(message, JSONRPCError) else 200)
            await Response(_wire(message), status_code=status,
                           media_type="application/json")(scope, receive, send)
        else:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            while not ready.is_set():
                await send({"type": "http.response.body", "body": b": ping\r\n\r\n",
                            "more_body": True})
                with anyio.move_on_after(SSE_DEFER_S):
                    await ready.wait()
            event = f"event: message\r\ndata: {_wire(done[0])}\r\n\r\n".encode()
            await send({"type": "http.response.body", "body": event, "more_body": False})
        tg.cancel_scope.cancel()
