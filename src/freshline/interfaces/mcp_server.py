"""`freshline mcp`: an MCP server over stdio for agents that speak the Model Context Protocol.

Tools: `list_projects`, `project_manifest`, `open_session`, `project_updates` (the pending
blocks plus a delivery token), `acknowledge` (the token advances the session's cursor),
`project_changes` (pages the full list behind a rolled-up block) and `read_document`. Each
project's manifest is also a resource, `freshline://project/<name>/manifest`.

Blocks and pages fit the `mcp` budget (`[delivery]`), counted on the text content the
client passes on: the result's JSON, as the SDK writes it.

Delivery is two-phase, like `prepare()`/`accept()`: a client that crashes between
`project_updates` and `acknowledge` gets the same blocks again on its next call. Each
session has at most one outstanding token; a newer `project_updates` call supersedes it.

freshline's errors become MCP tool errors (`isError` results with a one-line message) or,
for resources, MCP protocol errors; the server keeps serving after either.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypeVar

import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources import FunctionResource
from pydantic import Field

from freshline.access import Reached, reach
from freshline.config import Config, find_workspace, load_config
from freshline.context import ChangesPage, Channel, Encoding, Meter
from freshline.errors import FreshlineError, NotFoundError, UsageError
from freshline.materialize import DocStatus, is_document
from freshline.paths import shown
from freshline.session import PreparedTurn, SessionManager
from freshline.session.delivery import changes_page, delivery_budget
from freshline.session.manifest import build_manifest
from freshline.session.rules import live_rules

SERVER_NAME = "freshline"
MANIFEST_URI = "freshline://project/{name}/manifest"
READ_CAP = 200_000  # characters of a file or snapshot returned by one read_document call
_SNIFF = 8192  # bytes read to tell text from binary
_TOKEN_BYTES = 16
_BIG = 10**12  # a stand-in for numbers not known yet when a result is measured

_T = TypeVar("_T")


@dataclass
class ProjectInfo:
    """One project as `list_projects` reports it."""

    name: str
    include: list[str]
    exclude: list[str]
    mode: str
    manifest_uri: str


@dataclass
class SessionInfo:
    """A session opened by `open_session`."""

    session: str
    project: str


@dataclass
class Delivery:
    """What `project_updates` returns: the blocks to show the agent, and a token to
    acknowledge them with (both None when nothing changed)."""

    session: str
    blocks: str | None
    token: str | None
    covers: int  # the epoch the blocks bring the agent up to


@dataclass
class Acknowledged:
    """The session's cursor after `acknowledge`."""

    session: str
    cursor: int | None


@dataclass
class DocumentText:
    """A file's text, a document's snapshot text, or why there is none yet."""

    path: str
    status: str  # text | binary | ready | stale | pending | failed
    text: str | None
    note: str | None


class FreshlineService:
    """The tools' logic over one workspace. Calls are serialized: the SDK runs synchronous
    tools on worker threads, and one session's turns must not interleave."""

    def __init__(self, config: Config) -> None:
        self.manager = SessionManager(config)
        self._lock = threading.Lock()
        self._outstanding: dict[str, tuple[str, PreparedTurn]] = {}  # session -> token, turn

    @property
    def config(self) -> Config:
        """The workspace's config as it is now (the server outlives edits to it)."""
        return self.manager.reload_config()

    def close(self) -> None:
        """Stop the conversion workers."""
        self.manager.close()

    def _locked(self, fn: Callable[[], _T]) -> _T:
        with self._lock:
            return fn()

    def list_projects(self) -> list[ProjectInfo]:
        """The workspace's projects, in config order."""
        return [
            ProjectInfo(
                name=p.name,
                include=list(p.include),
                exclude=list(p.exclude),
                mode=p.mode.value,
                manifest_uri=MANIFEST_URI.format(name=p.name),
            )
            for p in self.config.projects.values()
        ]

    def project_manifest(self, project: str) -> str:
        """The project's manifest block, built now (no session is opened), fitted to the
        `mcp` budget (a plain text result)."""
        self.config.project(project)
        m = self.manager
        built = self._locked(
            lambda: build_manifest(self.config, m.tracker, m.materializer, project)
        )
        return built.render(delivery_budget(self.config, Channel.MCP))

    def open_session(self, project: str) -> SessionInfo:
        """A new session of `project`, for a client that has none."""

        def run() -> SessionInfo:
            # Live whatever the project's mode: the client works in the checkout itself.
            external = f"mcp:{secrets.token_hex(6)}"
            s = self.manager.new(project, mode="live", external_id=external)
            return SessionInfo(session=s.id, project=s.project)

        return self._locked(run)

    def project_updates(self, session: str) -> Delivery:
        """The blocks the session has not acknowledged yet, with a fresh delivery token."""

        def run() -> Delivery:
            s = self.manager.get(session)
            # A long-lived server can afford converting what changed, so documents
            # arrive readable instead of "being converted".
            self.manager.materialize(s.project)
            token = secrets.token_urlsafe(_TOKEN_BYTES)
            envelope = Delivery(session=session, blocks="", token=token, covers=_BIG)
            turn = self.manager.prepare(
                session, "", conversation=False, channel=Channel.MCP, meter=_meter(envelope)
            )
            self._outstanding.pop(session, None)
            blocks = turn.blocks
            if blocks is None:
                return Delivery(session=session, blocks=None, token=None, covers=turn.covers)
            self._outstanding[session] = (token, turn)
            return Delivery(session=session, blocks=blocks, token=token, covers=turn.covers)

        return self._locked(run)

    def project_changes(self, session: str, since: int | None, page: int) -> ChangesPage:
        """One page of every change to the session's project after epoch `since`."""
        project = self.manager.get(session).project
        envelope = ChangesPage(project, _BIG, _BIG, _BIG, _BIG, "")
        return self._locked(lambda: changes_page(
            self.manager, session, since, page, Channel.MCP, _meter(envelope)))

    def acknowledge(self, session: str, token: str) -> Acknowledged:
        """Mark the blocks of `token` as taken: advance the cursor and apply document sets."""

        def run() -> Acknowledged:
            self.manager.get(session)
            held = self._outstanding.get(session)
            if held is None or held[0] != token:
                raise UsageError(
                    f"unknown or superseded delivery token for session '{session}'; "
                    "call project_updates again"
                )
            held[1].accept()
            del self._outstanding[session]
            return Acknowledged(session=session, cursor=self.manager.get(session).cursor)

        return self._locked(run)

    def read_document(self, path: str, session: str | None = None) -> DocumentText:
        """A file's text, or a converted document's snapshot text or status.

        Only a file of the session's project (without a session: of some project), never
        a secret or an internal file, judged where the path leads (AccessDenied if not).
        """

        def confined() -> Reached:
            m = self.manager
            projects = [m.get(session).project] if session else list(self.config.projects)
            return reach(self.config.root, path, live_rules(m, projects))

        reached = self._locked(confined)
        rel, source = reached.rel, reached.path
        if not source.is_file():
            raise NotFoundError(shown(f"{path}: no such file in the workspace"))
        if not is_document(rel):
            return _plain_text(rel, source)
        probe = self._locked(
            lambda: self.manager.materializer.probe(rel, self.manager.store.index_get(rel))
        )
        return _document_text(rel, probe.status, probe.snapshot, probe.reason)


def text_content(result: object) -> str:
    """The text content the MCP SDK makes of a tool's structured result (what a client
    passes on to its model)."""
    return pydantic_core.to_json(result, fallback=str, indent=2).decode()


def _meter(envelope: object) -> Meter:
    """How a result like `envelope` (its text field empty) counts the text it carries."""
    return Meter.around(text_content(envelope), Encoding.JSON)


def _plain_text(rel: str, source: Path) -> DocumentText:
    with source.open("rb") as handle:
        head = handle.read(_SNIFF)
    if b"\0" in head:
        note = "a binary file with no text form"
        return DocumentText(path=rel, status="binary", text=None, note=note)
    return DocumentText(path=rel, status="text", text=_read_text(source), note=None)


def _read_text(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        text = handle.read(READ_CAP + 1)
    if len(text) > READ_CAP:
        return text[:READ_CAP] + f"\n[capped at {READ_CAP} characters]"
    return text


def _document_text(
    rel: str, status: DocStatus, snapshot: Path | None, reason: str | None
) -> DocumentText:
    note: str | None
    if status is DocStatus.FAILED:
        note = f"converting this document to text failed: {reason or 'unknown reason'}"
        return DocumentText(path=rel, status=status.value, text=None, note=note)
    if snapshot is None or not snapshot.is_file():
        note = "being converted to text; not readable yet (try again later)"
        return DocumentText(path=rel, status=DocStatus.PENDING.value, text=None, note=note)
    note = "an older snapshot: the document changed since" if status is DocStatus.STALE else None
    return DocumentText(path=rel, status=status.value, text=_read_text(snapshot), note=note)


# --- the MCP surface ------------------------------------------------------------------------

ProjectArg = Annotated[str, Field(description="A project name, as list_projects reports it.")]
SessionArg = Annotated[str, Field(description="A session id, as open_session returned it.")]


def _tool_errors(fn: Callable[[], _T]) -> _T:
    """Run a tool body, turning freshline's errors into MCP tool errors."""
    try:
        return fn()
    except (FreshlineError, OSError) as exc:
        raise ToolError(str(exc)) from None


def build_server(service: FreshlineService) -> MCPServer:
    """The MCP server: freshline's tools and one manifest resource per project."""
    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions=(
            "freshline tells you what changed in a project's files since you last looked. "
            "Call open_session once, then project_updates before each task and acknowledge "
            "its token once you have read the blocks."
        ),
        log_level="WARNING",
    )

    @server.tool()
    def list_projects() -> list[ProjectInfo]:
        """List the workspace's projects (named scopes of files)."""
        return _tool_errors(service.list_projects)

    @server.tool()
    def project_manifest(project: ProjectArg) -> str:
        """The project's manifest: its files and documents, as of now."""
        return _tool_errors(lambda: service.project_manifest(project))

    @server.tool()
    def open_session(project: ProjectArg) -> SessionInfo:
        """Open a session of a project; its first project_updates delivers the manifest."""
        return _tool_errors(lambda: service.open_session(project))

    @server.tool()
    def project_updates(session: SessionArg) -> Delivery:
        """What changed since the session last acknowledged, with a delivery token."""
        return _tool_errors(lambda: service.project_updates(session))

    @server.tool()
    def acknowledge(
        session: SessionArg,
        token: Annotated[str, Field(description="The token project_updates returned.")],
    ) -> Acknowledged:
        """Confirm that the blocks of a token were taken; they are not delivered again."""
        return _tool_errors(lambda: service.acknowledge(session, token))

    @server.tool()
    def project_changes(
        session: SessionArg,
        since: Annotated[int | None, Field(
            description="The epoch to list changes after (default: the session's cursor); "
                        "a rolled-up block names the one to use.", ge=0)] = None,
        page: Annotated[int, Field(description="The page, from 1.", ge=1)] = 1,
    ) -> ChangesPage:
        """Page every change to the session's project after an epoch: the full list behind
        a block that grouped some of them. Moves no cursor."""
        return _tool_errors(lambda: service.project_changes(session, since, page))

    @server.tool()
    def read_document(
        path: Annotated[str, Field(description="A path relative to the workspace root.")],
        session: Annotated[
            str | None, Field(description="Your session: only its project's files are read.")
        ] = None,
    ) -> DocumentText:
        """Read a project's file; a converted document (pdf, docx, ...) reads as its text
        snapshot. Secrets and files outside the project are refused."""
        return _tool_errors(lambda: service.read_document(path, session))

    for name in service.config.projects:
        server.add_resource(
            FunctionResource.from_function(
                _manifest_reader(service, name),
                uri=MANIFEST_URI.format(name=name),
                name=f"{name} manifest",
                description=f"The manifest of project {name}: its files and documents.",
                mime_type="text/markdown",
            )
        )
    return server


def _manifest_reader(service: FreshlineService, project: str) -> Callable[[], str]:
    def read() -> str:
        try:
            return service.project_manifest(project)
        except FreshlineError as exc:
            raise ResourceError(str(exc)) from None

    return read


def mcp_command(workspace: Path | None) -> None:
    """Serve the workspace (`workspace`, else found from the cwd) over stdio until EOF."""
    config = load_config(find_workspace(Path.cwd(), workspace))
    service = FreshlineService(config)
    try:
        build_server(service).run("stdio")
    finally:
        service.close()


def main(argv: list[str] | None = None) -> None:
    """`python -m freshline.interfaces.mcp_server [--workspace DIR]`."""
    parser = argparse.ArgumentParser(prog="freshline mcp", description=__doc__)
    parser.add_argument("--workspace", "-w", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        mcp_command(args.workspace)
    except FreshlineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
