"""`freshline acp -- AGENT…`: an ACP agent to the client, an ACP client to the agent.

Two JSON-RPC connections (`rpc.py`): one on the proxy's stdin/stdout facing the client,
one on the pipes of the agent it starts. Each message from one side is sent on to the
other as it came, params and results as raw JSON, so methods and fields the proxy does not
know pass unchanged (a typed ACP layer would answer "method not found" for methods it does
not know and drop unknown fields). What the proxy changes:

- `session/new`, `session/fork`, `session/load`, `session/resume`: the agent is given
  freshline's MCP server with the session (`Desk.mcp_server`, last in `mcpServers`), whose
  `project_changes`/`project_files`/`read_document` a rolled-up block names; once the
  agent answered, the ACP session is bound to a freshline session (`Desk.open`);
  `session/close` closes it.
- `session/prompt`: the agent receives the prompt with freshline's block first. The
  delivery is accepted when the agent sends its first output `session/update` for that
  prompt, or answers it with a stop reason other than `refusal`/`cancelled`; an error or
  a cancellation before any output leaves it to be delivered again.
- `session/update`: a replayed user message loses freshline's block (the user's
  transcript stays the user's text); a completed read tool call feeds the read ledger.
- `fs/read_text_file`, `fs/write_text_file`: passed to the client and, once it answered,
  recorded in the read ledger (what the agent read; its own writes, not announced back).
  A read's text reaches the agent with its secrets withheld (the whole file is asked for
  and scanned, a `line`/`limit` range cut from it here); a file of the workspace with more
  than one hard link is not read. A write into a workspace's `.freshline/` is refused: it
  would corrupt freshline's store or forge a snapshot; so is a write that would put
  `[secret withheld: …]` over a secret. Secret files by name and ignored files are the
  client's to serve, and freshline only leaves them out of its ledger.

freshline's own work runs on one worker thread (`Desk`), in the order messages arrive, so
it never holds up the stream and a prompt always sees what earlier ones recorded.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from freshline.context import Channel
from freshline.interfaces.acp.desk import Delivery, Desk, in_data_dir
from freshline.interfaces.acp.messages import (
    OPENS_AGAIN,
    OPENS_NEW,
    Method,
    ToolReads,
    acknowledges,
    is_output,
    line_range,
    prompt_text,
    session_of,
    stop_reason,
    update_of,
    whole_file,
    with_context,
    with_mcp_server,
    without_context,
)
from freshline.interfaces.acp.rpc import Connection, RpcError, spawned
from freshline.session.owners import marked

_P = ParamSpec("_P")
_T = TypeVar("_T")

SHUTDOWN_S = 5.0  # how long answers still owed to the client may take once the agent is gone


@dataclass
class _Watch:
    """A prompt on its way: its delivery is accepted once, on the first sign it was taken."""

    delivery: Delivery
    taken: bool = False

    def take(self) -> Delivery | None:
        """The delivery, the first time only."""
        if self.taken:
            return None
        self.taken = True
        return self.delivery


@dataclass
class _InFlight:
    """Requests still being answered, so none is cut off when the proxy stops."""

    count: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __enter__(self) -> None:
        self.count += 1
        self.idle.clear()

    def __exit__(self, *_exc: object) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()

    async def settle(self, timeout: float) -> None:
        """Wait until every request was answered (at most `timeout` seconds)."""
        if self.count:
            try:
                await asyncio.wait_for(self.idle.wait(), timeout)
            except TimeoutError:
                pass


class Proxy:
    """One client, one agent, and the desk that binds their sessions to freshline's."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="freshline-acp")
        self._watches: dict[str, _Watch] = {}
        self._tools: dict[str, ToolReads] = {}
        self._held: dict[str, list[Any]] = {}  # cancels that wait for their prompt to go out
        self._prompting: set[str] = set()  # sessions with a prompt on its way
        self._owed = _InFlight()
        self._client: Connection | None = None
        self._agent: Connection | None = None

    async def serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, command: Sequence[str]
    ) -> int:
        """Proxy between the client on `reader`/`writer` and the agent `command` until
        either side hangs up; the agent's exit status when it ended first, else 0."""
        client = self._client = Connection(self._from_client, writer, reader)
        try:
            # Marked: a hook inside the agent (Claude Code's) stays silent; the proxy alone
            # delivers to its conversations (`session/owners.py`).
            async with spawned(command, marked(os.environ, Channel.ACP.value)) as (
                out, into, process
            ):
                agent = self._agent = Connection(self._from_agent, into, out)
                agent_ended = await _first_to_end(client.main_loop(), agent.main_loop())
                if agent_ended:
                    await self._owed.settle(SHUTDOWN_S)
                await agent.close()
            # The transport waited for the agent to exit (or stopped it) on the way out.
            return (process.returncode or 0) if agent_ended else 0
        finally:
            await client.close()
            await asyncio.get_running_loop().run_in_executor(self._worker, self.desk.close)
            self._worker.shutdown(wait=True)

    # -- freshline's work, on the worker thread ---------------------------------------

    async def _run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, lambda: fn(*args, **kwargs))

    def _submit(self, fn: Callable[_P, object], *args: _P.args, **kwargs: _P.kwargs) -> None:
        """Queue work without waiting for it: it still runs before anything queued later."""
        future: Future[object] = self._worker.submit(fn, *args, **kwargs)
        del future  # the desk logs its own failures

    # -- client → agent ----------------------------------------------------------------

    async def _from_client(self, method: str, params: Any, notification: bool) -> Any:
        agent = self._agent
        assert agent is not None
        if notification:
            held = self._held.get(session_of(params) or "")
            if method == Method.SESSION_CANCEL and held is not None:
                held.append(params)  # its prompt is still being prepared
            else:
                await agent.send_notification(method, params)
            return None
        with self._owed:
            if method == Method.SESSION_PROMPT:
                return await self._prompt(agent, params)
            if method in OPENS_NEW or method in OPENS_AGAIN:
                params = await self._with_server(params)
            result = await agent.send_request(method, params)
            await self._bind(method, params, result)
            return result

    async def _with_server(self, params: Any) -> Any:
        """A session's params with freshline's MCP server among its `mcpServers` (none
        added outside every workspace)."""
        cwd = params.get("cwd") if isinstance(params, dict) else None
        server = await self._run(self.desk.mcp_server, cwd) if isinstance(cwd, str) else None
        return params if server is None else with_mcp_server(params, server)

    async def _bind(self, method: str, params: Any, result: Any) -> None:
        """Bind (or close) the freshline session of the ACP session a request named."""
        cwd = params.get("cwd") if isinstance(params, dict) else None
        if method in OPENS_NEW or method in OPENS_AGAIN:
            acp_session = session_of(result if method in OPENS_NEW else params)
            if acp_session and isinstance(cwd, str):
                await self._run(self.desk.open, acp_session, cwd, method in OPENS_AGAIN)
        elif method == Method.SESSION_CLOSE and (acp_session := session_of(params)):
            await self._run(self.desk.end, acp_session)

    async def _prompt(self, agent: Connection, params: Any) -> Any:
        acp_session = session_of(params)
        if acp_session is None:
            return await agent.send_request(Method.SESSION_PROMPT, params)
        self._prompting.add(acp_session)
        try:
            asking, watch = await self._ask(agent, acp_session, params)
            try:
                result = await asking
            finally:
                if watch is not None and self._watches.get(acp_session) is watch:
                    del self._watches[acp_session]
            if watch is not None and acknowledges(stop_reason(result)) and (taken := watch.take()):
                self._submit(self.desk.accept, taken)
        finally:
            self._prompting.discard(acp_session)
            self._submit(self.desk.answered, acp_session)
            # What the turn queued (its reads, writes, acceptance) is in before the client
            # hears the turn ended: an edit the user makes next is always a change.
            await self._run(_nothing)
        return result

    async def _ask(
        self, agent: Connection, acp_session: str, params: Any
    ) -> tuple[asyncio.Future[Any], _Watch | None]:
        """Send the prompt on, freshline's block first, once it is prepared. A cancel the
        client sends meanwhile is held and follows the prompt, so it still stops it."""
        held = self._held[acp_session] = []
        try:
            delivery = await self._run(self.desk.prepare, acp_session, prompt_text(params))
            watch = None
            if delivery is not None:
                watch = self._watches[acp_session] = _Watch(delivery)
                params = with_context(params, delivery.text)
            asking = asyncio.ensure_future(agent.send_request(Method.SESSION_PROMPT, params))
            await asyncio.sleep(0)  # the request's first step queues the prompt
        finally:
            del self._held[acp_session]
        for cancel in held:
            await agent.send_notification(Method.SESSION_CANCEL, cancel)
        return asking, watch

    # -- agent → client ----------------------------------------------------------------

    async def _from_agent(self, method: str, params: Any, notification: bool) -> Any:
        client = self._client
        assert client is not None
        if notification:
            if method == Method.SESSION_UPDATE:
                params = self._update(params)
                if params is None:
                    return None
            await client.send_notification(method, params)
            return None
        with self._owed:
            if method == Method.READ_TEXT_FILE:
                return await self._read(client, params)
            if method == Method.WRITE_TEXT_FILE:
                return await self._write(client, params)
            return await client.send_request(method, params)

    def _update(self, params: Any) -> Any:
        """A `session/update` on its way to the client (synchronous, so updates keep
        their order): the first output accepts the prompt's delivery; read tool calls
        feed the ledger; None when nothing of it is left to pass on."""
        acp_session, update = session_of(params), update_of(params)
        if acp_session is None or update is None:
            return params
        watch = self._watches.get(acp_session)
        if watch is not None and is_output(update) and (taken := watch.take()):
            self._submit(self.desk.accept, taken)
        read = self._tools.setdefault(acp_session, ToolReads()).see(update)
        if read and acp_session in self._prompting:  # not a load replaying old calls
            self._submit(self.desk.tool_read, acp_session, read)
        return without_context(params)

    async def _read(self, client: Connection, params: Any) -> Any:
        acp_session, path = session_of(params), _path(params)
        seen = None
        if path:
            refused = await self._checked(self.desk.read_refusal, acp_session, path)
            if refused:
                raise RpcError(-32602, refused, {"path": path})
        if acp_session and path:
            seen = await self._run(self.desk.noted_read, acp_session, path)
        whole, line, limit = whole_file(params)
        result = await client.send_request(Method.READ_TEXT_FILE, whole)
        if seen is not None:
            self._submit(self.desk.read, seen)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            return result
        found = await self._checked(self.desk.withheld, acp_session, path or "", content)
        return {**result, "content": line_range(found.text, line, limit)}

    async def _checked(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`fn` on the desk's thread; a failure refuses the request rather than let
        through what could not be checked."""
        try:
            return await self._run(fn, *args, **kwargs)
        except Exception as exc:  # any failure: fail closed
            message = f"freshline acp: could not check for secrets ({type(exc).__name__}: {exc})"
            raise RpcError(-32603, " ".join(message.split())) from None

    async def _write(self, client: Connection, params: Any) -> Any:
        acp_session, path = session_of(params), _path(params)
        if path and in_data_dir(path):
            own = f"freshline acp: {path} is freshline's own data; not written"
            raise RpcError(-32602, own, {"path": path})
        content = params.get("content")
        if path and isinstance(content, str):
            refused = await self._checked(self.desk.write_refusal, acp_session, path, content)
            if refused:
                raise RpcError(-32602, refused, {"path": path})
        result = await client.send_request(Method.WRITE_TEXT_FILE, params)
        if acp_session and path and isinstance(content, str):
            self._submit(self.desk.wrote, acp_session, path, content)
        return result


def _nothing() -> None:
    """A job for the worker that only waits for the jobs queued before it."""


def _path(params: Any) -> str | None:
    path = params.get("path") if isinstance(params, dict) else None
    return path if isinstance(path, str) and path else None


async def _first_to_end(client_loop: Any, agent_loop: Any) -> bool:
    """Run both receive loops until one ends (its peer hung up); True when the agent's
    ended first. The other is cancelled."""
    client = asyncio.ensure_future(client_loop)
    agent = asyncio.ensure_future(agent_loop)
    done, pending = await asyncio.wait({client, agent}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    # A loop that broke (not a hang-up) ends the proxy all the same; its error was logged.
    await asyncio.gather(client, agent, return_exceptions=True)
    return agent in done
