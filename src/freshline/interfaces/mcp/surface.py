"""The MCP surface of `freshline mcp`: tools, resources, the prompt, notifications.

Tool results put what the model reads (blocks, pages, a document's text) in text content,
and in structured content the same text with the fields a client acts on (session, token,
epochs, status) and, for a delivery, the path changes its blocks list one by one (path,
kind, old path): as the MCP specification asks, both carry the whole result, so a client
that passes only the structured content to its model (Codex) passes the news too. Each
project's manifest is a resource template, `freshline://project/{name}/manifest`, and
`resources/list` names the projects of the config as it is now. `catch_up(project)` is a
prompt (a slash command in clients) that returns the pending blocks. Tools that convert
documents report progress.

Notifications are sent, not only advertised: an `Announcer` (`events.py`) watches the
workspace, and the `Notifier` hands what it saw to both protocol eras: `subscriptions/listen`
streams (2026-07-28) through the SDK's bus, and handshake-era connections that subscribed
with `resources/subscribe` (stdio serves one connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import ListenHandler
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp_types import (
    CallToolResult,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TextContent,
    UnsubscribeRequestParams,
)
from mcp_types import Resource as MCPResource
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from freshline import __version__
from freshline.context import ChangesPage
from freshline.errors import FreshlineError
from freshline.interfaces.mcp.events import Announcer, Changed
from freshline.interfaces.mcp.service import (
    MANIFEST_URI,
    SERVER_NAME,
    Acknowledged,
    FreshlineService,
    ProjectInfo,
    SessionInfo,
    ToldChange,
)
from freshline.materialize.runner import Progress, ProgressFn

_T = TypeVar("_T")

INSTRUCTIONS = (
    "freshline tells you what changed in a project's files since you last looked. Call "
    "open_session once, then project_updates at the start of every turn and acknowledge its token "
    "once you have read the blocks. read_document reads any path a block names."
)
PAGING = (  # the instructions of a server that only pages and reads
    "freshline puts what changed in a project's files at the head of your prompts. When a "
    "block groups changes or files, page the full list with the call it names; "
    "read_document reads any path a block names."
)


@dataclass
class DeliveryFields:
    """The structured content of `project_updates`: its text, the changes the blocks list
    one by one, and what acknowledges them."""

    session: str
    token: str | None  # None: nothing new
    covers: int
    text: str
    changes: list[ToldChange]


@dataclass
class PageFields:
    """The structured content of a page of `project_changes` or `project_files`."""

    project: str
    since: int
    epoch: int
    page: int
    pages: int
    text: str


@dataclass
class DocumentFields:
    """The structured content of `read_document`: the text, as the text content has it."""

    path: str
    status: str
    note: str | None
    text: str | None


# --- notifications ----------------------------------------------------------------------------


@dataclass
class Notifier:
    """Hands change events to `subscriptions/listen` streams (the bus) and to the
    handshake-era connection's subscriptions. Runs on the server's event loop."""

    publish_modern: Callable[[ServerEvent], Any] | None = None
    legacy: ServerSession | None = None  # the handshake-era connection, once seen
    subscribed: set[str] = field(default_factory=set)

    def events(self, changed: Changed) -> list[ServerEvent]:
        """The events that tell clients about `changed`."""
        out: list[ServerEvent] = [ResourcesListChanged()] if changed.projects_listed else []
        out += [ResourceUpdated(uri=MANIFEST_URI.format(name=n)) for n in changed.updated]
        return out

    async def publish(self, changed: Changed) -> None:
        """Send what `changed` says to every listener that asked for it."""
        for event in self.events(changed):
            if self.publish_modern is not None:
                await self.publish_modern(event)
            await self._legacy(event)

    async def _legacy(self, event: ServerEvent) -> None:
        session = self.legacy
        if session is None:
            return
        try:
            if isinstance(event, ResourcesListChanged):
                await session.send_resource_list_changed()
            elif isinstance(event, ResourceUpdated) and event.uri in self.subscribed:
                await session.send_resource_updated(event.uri)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.legacy = None  # the client went away


# --- the server -----------------------------------------------------------------------------


class FreshlineMCP(MCPServer[Any]):
    """MCPServer with live resource listing, legacy subscriptions and the announcer.

    `shared` (the HTTP server, many users): a `subscriptions/listen` stream hears only of
    the manifests its user may see, and handshake-era subscriptions are not served (over
    stateless HTTP there is no standing connection to send them on)."""

    def __init__(
        self, service: FreshlineService, watch: bool, shared: bool = False,
        instructions: str = INSTRUCTIONS,
    ) -> None:
        self.service = service
        self.notifier = Notifier()
        self.watch = watch
        self.shared = shared
        super().__init__(SERVER_NAME, instructions=instructions, version=__version__,
                         log_level="WARNING", lifespan=_lifespan)
        self.notifier.publish_modern = self._subscriptions.publish
        low = self._lowlevel_server
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams,
                                self._unsubscribe)
        if shared:
            self._listen = ListenHandler(self._subscriptions)
            low.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams,
                                    self._listen_granted)
        else:
            self.middleware.append(self._see_connection)

    @property
    def kernel(self) -> Server[Any]:
        """The low-level server the SDK dispatches to (its tool schemas, cache hints and
        identity, which `serve`'s fast path answers with)."""
        return self._lowlevel_server

    async def list_resources(self) -> list[MCPResource]:
        """One manifest resource per project of the config as it is now."""
        projects = await anyio.to_thread.run_sync(self.service.visible_projects)
        return [
            MCPResource(uri=MANIFEST_URI.format(name=name), name=f"{name} manifest",
                        description=f"The manifest of project {name}: its files and documents.",
                        mime_type="text/markdown")
            for name in projects
        ]

    async def run_stdio_async(self) -> None:
        """Serve stdio, advertising the list changes the announcer sends (handshake era)."""
        low = self._lowlevel_server
        options = low.create_initialization_options(NotificationOptions(resources_changed=True))
        async with stdio_server() as (read_stream, write_stream):
            await low.run(read_stream, write_stream, options)

    async def _see_connection(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.notifier.legacy = ctx.session
        return await call_next(ctx)

    async def _listen_granted(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        """Listen, asking only for the manifests the request's user may see."""
        uris = params.notifications.resource_subscriptions
        if uris:
            visible = await anyio.to_thread.run_sync(self.service.visible_projects)
            allowed = {MANIFEST_URI.format(name=name) for name in visible}
            params.notifications.resource_subscriptions = [u for u in uris if u in allowed]
        return await self._listen(ctx, params)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        self.notifier.subscribed.add(str(params.uri))
        return EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        self.notifier.subscribed.discard(str(params.uri))
        return EmptyResult()


@asynccontextmanager
async def _lifespan(server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
    """Run the announcer while the server serves (its events cross into this loop)."""
    assert isinstance(server, FreshlineMCP)
    if not server.watch:
        yield {}
        return
    token = anyio.lowlevel.current_token()
    notifier = server.notifier

    def announce(changed: Changed) -> None:
        try:
            anyio.from_thread.run(notifier.publish, changed, token=token)
        except RuntimeError:
            pass  # the loop is shutting down: nobody is listening any more

    announcer = Announcer(server.service.config, announce)
    announcer.start()
    try:
        yield {}
    finally:
        await anyio.to_thread.run_sync(announcer.stop)


def _tool_errors(fn: Callable[[], _T]) -> _T:
    """Run a tool body, turning freshline's errors into MCP tool errors."""
    try:
        return fn()
    except (FreshlineError, OSError) as exc:
        raise ToolError(str(exc)) from None


async def _in_thread(ctx: Context | None, fn: Callable[[ProgressFn | None], _T]) -> _T:
    """Run a service call on a worker thread; conversions it runs are reported to the
    client as progress (when it asked, with a progress token)."""
    token = anyio.lowlevel.current_token()

    def report(p: Progress) -> None:
        if ctx is not None and p.finished:
            message = p.path if p.reason is None else f"{p.path}: {p.reason}"
            try:
                anyio.from_thread.run(ctx.report_progress, p.done, p.total, message, token=token)
            except RuntimeError:
                pass  # the request is over: nobody to tell

    return await anyio.to_thread.run_sync(lambda: _tool_errors(lambda: fn(report)))


def _text(text: str, fields: DeliveryFields | PageFields | DocumentFields) -> CallToolResult:
    """A tool result: the text the model reads, and the same with the fields beside it."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=asdict(fields))


def _page(p: ChangesPage) -> CallToolResult:
    return _text(p.text, PageFields(p.project, p.since, p.epoch, p.page, p.pages, p.text))


ProjectArg = Annotated[str, Field(description="A project name, as list_projects reports it.")]
SessionArg = Annotated[str, Field(description="A session id, as open_session returned it.")]


def build_server(
    service: FreshlineService, watch: bool = True, shared: bool = False, delivers: bool = True
) -> FreshlineMCP:
    """The MCP server of one workspace; `watch=False` runs no watcher (and so sends no
    notifications: for tests of the tools alone); `shared` for many users over HTTP;
    `delivers=False` (inside the ACP proxy's agent: the proxy delivers) only pages and reads."""
    server = FreshlineMCP(service, watch, shared, INSTRUCTIONS if delivers else PAGING)
    _tools(server, service)
    _content_tools(server, service)
    _resources(server, service)
    if delivers:
        _delivery_tools(server, service)
        _prompt(server, service)
    return server


def _tools(server: FreshlineMCP, service: FreshlineService) -> None:
    @server.tool()
    def list_projects() -> list[ProjectInfo]:
        """List the workspace's projects (named scopes of files)."""
        return _tool_errors(service.list_projects)

    @server.tool(structured_output=False)
    async def project_manifest(project: ProjectArg) -> str:
        """The project's manifest: its files and documents, as of now."""
        return await _in_thread(None, lambda _p: service.project_manifest(project))


def _delivery_tools(server: FreshlineMCP, service: FreshlineService) -> None:
    @server.tool()
    async def open_session(project: ProjectArg) -> SessionInfo:
        """Open a session of a project; its first project_updates delivers the manifest."""
        return await _in_thread(None, lambda _p: service.open_session(project))

    @server.tool()
    async def acknowledge(
        session: SessionArg,
        token: Annotated[str, Field(description="The token project_updates returned.")],
    ) -> Acknowledged:
        """Confirm that the blocks of a token were taken; they are not delivered again.
        Any freshline server of the workspace may have issued the token."""
        return await _in_thread(None, lambda _p: service.acknowledge(session, token))

    @server.tool()
    async def project_updates(
        session: SessionArg, ctx: Context
    ) -> Annotated[CallToolResult, DeliveryFields]:
        """Call at the start of every turn, before the task: what changed in the
        project's files since the session last acknowledged, the blocks as text and a
        delivery token beside them (also in the blocks' opening tags)."""
        d = await _in_thread(ctx, lambda p: service.project_updates(session, p))
        return _text(d.text, DeliveryFields(d.session, d.token, d.covers, d.text, d.changes))


def _content_tools(server: FreshlineMCP, service: FreshlineService) -> None:
    @server.tool()
    async def project_changes(
        session: SessionArg,
        since: Annotated[int | None, Field(
            description="The epoch to list changes after (default: the session's cursor); "
                        "a rolled-up block names the one to use.", ge=0)] = None,
        page: Annotated[int, Field(description="The page, from 1.", ge=1)] = 1,
        folder: Annotated[str, Field(
            description="Only the changes under this folder (absolute, as a block shows "
                        "it, or relative to the workspace); default: all.")] = "",
    ) -> Annotated[CallToolResult, PageFields]:
        """Page every change to the session's project after an epoch (or one folder's):
        the full list behind a block that grouped some of them. Moves no cursor."""
        p = await _in_thread(None, lambda _p: service.project_changes(session, since, page,
                                                                     folder))
        return _page(p)

    @server.tool()
    async def project_files(
        project: ProjectArg,
        folder: Annotated[str, Field(
            description="Only this folder's (absolute, as a block shows it, or relative to "
                        "the workspace); default: the whole project.")] = "",
        page: Annotated[int, Field(description="The page, from 1.", ge=1)] = 1,
    ) -> Annotated[CallToolResult, PageFields]:
        """Page the project's files and documents (each document with its snapshot): the
        full list behind a manifest that counted some of them per folder."""
        p = await _in_thread(None, lambda _p: service.project_files(project, folder, page))
        return _page(p)

    @server.tool()
    async def read_document(
        path: Annotated[str, Field(
            description="Any path a block names (absolute or relative to the workspace): "
                        "a file, a document or its snapshot.")],
        ctx: Context,
        session: Annotated[
            str | None, Field(description="Your session: only its project's files are read.")
        ] = None,
    ) -> Annotated[CallToolResult, DocumentFields]:
        """Read a project's file; a converted document (pdf, docx, ...) reads as its text
        snapshot, converted now if it changed. Secrets and files outside the project are
        refused."""
        doc = await _in_thread(ctx, lambda p: service.read_document(path, session, p))
        parts = [t for t in (doc.note, doc.text) if t is not None]
        fields = DocumentFields(doc.path, doc.status, doc.note, doc.text)
        result = _text(parts[-1] if parts else "", fields)
        if doc.note is not None and doc.text is not None:
            result.content.insert(0, TextContent(type="text", text=f"[{doc.note}]"))
        return result


def _resources(server: FreshlineMCP, service: FreshlineService) -> None:
    @server.resource(MANIFEST_URI, name="manifest", mime_type="text/markdown",
                     description="A project's manifest: its files and documents, as of now.")
    async def manifest(name: str) -> str:
        try:
            return await anyio.to_thread.run_sync(lambda: service.project_manifest(name))
        except FreshlineError as exc:
            raise ResourceError(str(exc)) from None


def _prompt(server: FreshlineMCP, service: FreshlineService) -> None:
    @server.prompt(name="catch_up", title="Catch up on a project",
                   description="What changed in a project's files since you were last told "
                               "(the first time: its manifest).")
    async def catch_up(project: str, ctx: Context, session: str | None = None) -> str:
        try:
            caught = await _in_thread(ctx, lambda p: service.catch_up(project, session, p))
        except ToolError as exc:
            raise ValueError(str(exc)) from None
        return caught.text
