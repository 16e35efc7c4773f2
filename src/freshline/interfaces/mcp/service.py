"""The MCP server's logic: `FreshlineService`, what every tool does, over the session layer.

The MCP surface (tools, resources, the prompt, notifications) is `surface.py`, the watcher
that drives change notifications `events.py`, a document's text `documents.py`; `stdio.py`
serves it over stdio (`freshline mcp`), `interfaces/server/` over HTTP (`freshline serve`).

Tools: `list_projects`, `project_manifest`, `open_session`, `project_updates` (the pending
blocks, a delivery token in their opening tags), `acknowledge` (the token advances the
session's cursor), `project_changes` (pages the full list behind a rolled-up block) and
`read_document` (with a session, what it returns is recorded in that session's read
ledger). Blocks, pages and documents come back as text content, and as structured
content that carries the same (the text, and the path changes a block lists one by one,
each with its kind and old path) with the fields a client acts on: a client may pass
either to its model (Codex passes only the structured content). A prompt,
`catch_up(project)`, returns the pending blocks; each project's manifest is a resource,
`freshline://project/<name>/manifest`.

Delivery goes through the session layer's engine (`session/engine.py`) on the MCP
channel, whose acknowledgement rule is the client's explicit `acknowledge(token)`: a
client that starts a server per call, restarts, or talks to two servers on one workspace
acknowledges a token whichever server issued it, and each change is acknowledged once per
session, however two servers' calls interleave. Until then `project_updates` tells the
same changes again; a newer call supersedes the older token. A session opened by another
channel (a hook's, the ACP proxy's, a chat) is not served here.

freshline's errors become MCP tool errors (`isError` results with a one-line message) or,
for resources, MCP protocol errors; the server keeps serving after either.
"""

from __future__ import annotations

import gc
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from freshline.access import AccessDenied, open_reached
from freshline.beneath import Kind
from freshline.config import Config, unknown_project
from freshline.context import ChangesPage, Channel, Meter
from freshline.context.wire import show
from freshline.errors import NotFoundError, UsageError
from freshline.interfaces.mcp.documents import DocumentText, document_text, plain_text, withheld
from freshline.materialize import is_document
from freshline.materialize.runner import ProgressFn
from freshline.paths import shown, to_abs
from freshline.session import SessionManager
from freshline.session.delivery import changes_page, delivery_budget, files_page
from freshline.session.engine import TOKEN_BYTES, Deliveries
from freshline.session.ledger import snapshot_fingerprint
from freshline.session.manifest import build_manifest
from freshline.session.rules import live_rules
from freshline.session.users import OWNER, Viewer, give, may_use
from freshline.store import Acknowledgement, Change, ChangeKind, SessionRecord
from freshline.store.sessions import unknown_session
from freshline.tracker.rounds import Rounds

SERVER_NAME = "freshline"
MANIFEST_URI = "freshline://project/{name}/manifest"
ACK_NOTE = (
    "Delivery {token} of session {session}: call acknowledge(session, token) once you have "
    "read these blocks; until then project_updates tells them again."
)
NOTHING_NEW = "Nothing new for session {session}: it is up to date with epoch {covers}."
CAUGHT_UP = "freshline session {session} (project {project}): call project_updates with it " \
    "for what changes next."


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
class ToldChange:
    """A path change a block lists one by one, as structured content carries it: paths
    absolute and shown as the block shows them."""

    path: str
    kind: str  # created, modified, deleted, renamed, entered, left
    old_path: str | None  # a rename's old path


@dataclass
class Delivery:
    """What `project_updates` returns: the blocks to show the agent, and a token to
    acknowledge them with (both None when nothing changed), with the path changes the
    blocks list one by one."""

    session: str
    blocks: str | None
    token: str | None
    covers: int  # the epoch the blocks bring the agent up to
    changes: list[ToldChange] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text content the client passes on to its model."""
        if self.blocks is None or self.token is None:
            return NOTHING_NEW.format(session=self.session, covers=self.covers)
        return f"{self.blocks}\n\n{ACK_NOTE.format(token=self.token, session=self.session)}"


@dataclass
class Acknowledged:
    """The session's cursor after `acknowledge`."""

    session: str
    cursor: int | None


@dataclass
class CaughtUp:
    """What the `catch_up` prompt returns: the blocks, taken as delivered."""

    session: str
    project: str
    blocks: str | None

    @property
    def text(self) -> str:
        """The prompt's message."""
        after = CAUGHT_UP.format(session=self.session, project=self.project)
        if self.blocks is None:
            return f"Nothing changed in project {self.project} since you were last told.\n{after}"
        return f"{self.blocks}\n\n{after}"


def delivery_meter(session: str) -> Meter:
    """How `project_updates` counts the blocks: the acknowledgement note after them."""
    note = ACK_NOTE.format(token="0" * 2 * TOKEN_BYTES, session=session)
    return Meter(len(f"\n\n{note}"))


class FreshlineService:
    """The tools' logic over one workspace. The server runs calls on worker threads,
    concurrently: each thread has its own store connection, and flushes are shared. A
    session's deliveries and acknowledgements take turns within a process (`_turns`): the
    engine would refuse a delivery prepared from a cursor that another's acknowledgement
    moved meanwhile and prepare it again; taking turns spares that work.

    `viewer` says who asks (the HTTP server: the request's user): a project not granted
    to them, and a session another user opened, are refused exactly as if they did not
    exist. By default the workspace's own user asks, who sees everything."""

    def __init__(self, config: Config, viewer: Callable[[], Viewer] = lambda: OWNER) -> None:
        self.manager = SessionManager(config)
        self.deliveries = Deliveries(self.manager)
        self.viewer = viewer
        self._prompted: dict[tuple[str | None, str], str] = {}  # (user, project) -> session
        self._catching_up = Rounds(self._catch_up)  # one flush serves every call waiting
        self._converted: dict[str, int] = {}  # project -> the epoch all its documents cover
        self._turns: dict[str, threading.Lock] = {}  # session -> its deliveries' turn

    @property
    def config(self) -> Config:
        """The workspace's config as it is now (the server outlives edits to it)."""
        return self.manager.reload_config()

    def close(self) -> None:
        """Stop the conversion workers."""
        self.manager.close()

    def visible_projects(self) -> list[str]:
        """The projects of the config as it is now that the viewer may see."""
        viewer = self.viewer()
        return [name for name in self.config.projects if viewer.sees(name)]

    def _project(self, project: str) -> None:
        """NotFoundError for a project unknown to the viewer (not granted: the same)."""
        visible = self.visible_projects()
        if project not in visible:
            raise unknown_project(project, visible)

    def _session(self, session: str) -> SessionRecord:
        """The session, or the unknown-session error when the viewer does not own it (or
        may no longer see its project)."""
        record, owner = self.manager.get_owned(session)
        if not may_use(self.viewer(), record, owner):
            raise unknown_session(session)
        return record

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
            if self.viewer().sees(p.name)
        ]

    def project_manifest(self, project: str) -> str:
        """The project's manifest block, built now (no session is opened), fitted to the
        `mcp` budget."""
        self._project(project)
        m = self.manager
        built = build_manifest(self.config, m.tracker, m.materializer, project)
        # Blocks hold paths only, but a file may be named after a token.
        return m.withholder.text(built.render(delivery_budget(self.config, Channel.MCP))).text

    def open_session(self, project: str) -> SessionInfo:
        """A new session of `project`, for a client that has none (owned by the viewer)."""
        self._project(project)
        return self._open(project)

    def _open(self, project: str) -> SessionInfo:
        # Live whatever the project's mode (the client works in the checkout itself), and
        # no conversation: freshline runs no turn of this agent's to record.
        external = f"mcp:{secrets.token_hex(6)}"
        s = self.manager.new(project, mode="live", external_id=external, channel=Channel.MCP)
        give(self.manager.store, s.id, self.viewer())
        return SessionInfo(session=s.id, project=s.project)

    def project_updates(self, session: str, progress: ProgressFn | None = None) -> Delivery:
        """The blocks the session has not acknowledged yet, under a fresh delivery token.
        The project's documents are converted first (a long-lived server can afford it, so
        they arrive readable); `progress` hears each conversion."""
        record = self._session(session)
        project = record.project
        self._flush()
        self._convert(project, progress)
        # Flushed a moment ago: the delivery covers the index as that flush left it.
        with self._turn(session):
            issued = self.deliveries.issue(session, Channel.MCP, delivery_meter(session),
                                           flush=False, known=record)
        if issued is None:
            covers = self.manager.tracker.epoch(project)
            return Delivery(session=session, blocks=None, token=None, covers=covers)
        told = issued.turn.told()
        root = issued.turn.staged.told.root if issued.turn.staged.told else ""
        changes = [self._told(root, c) for c in told]
        return Delivery(session, issued.blocks, issued.token, issued.covers, changes)

    def _told(self, root: str, change: Change) -> ToldChange:
        """A listed change as structured content: shown as the block shows it, with what
        a name holds of a secret withheld as the block withholds it."""
        def shown_path(path: str) -> str:
            return self.manager.withholder.text(show(root, path)).text

        old = shown_path(change.old_path) if change.old_path else None
        return ToldChange(shown_path(change.path), change.kind.value, old)

    def _turn(self, session: str) -> threading.Lock:
        """The lock a session's deliveries and acknowledgements take in this process."""
        return self._turns.setdefault(session, threading.Lock())

    def _flush(self) -> None:
        """Bring the index up to what the workspace held when this call came: the call
        joins the next shared round (`tracker/rounds.py`), so under load the calls
        waiting share one watcher cookie and one flush instead of running theirs in turn."""
        self._catching_up.join()

    def _catch_up(self) -> None:
        # The watcher's cookie first (when one is alive), then its hints alone are flushed.
        self.manager.tracker.flush()  # cheap with the watcher's hints

    def _convert(self, project: str, progress: ProgressFn | None) -> None:
        """Convert the project's documents, unless no document (and no scope) changed
        since this server last converted them all: listing the project costs what the
        project holds, and most deliveries follow edits to plain files."""
        tracker = self.manager.tracker
        done = self._converted.get(project)
        if done is None:
            epoch = tracker.epoch(project)
        else:
            epoch, logged = tracker.logged_since(project, done)
            if logged is not None and not any(_touches_documents(c) for c in logged):
                self._converted[project] = epoch  # still all converted, this far
                return
        if self.manager.materialize(project, progress=progress, flush=False).complete:
            self._converted[project] = epoch

    def acknowledge(self, session: str, token: str) -> Acknowledged:
        """Mark the blocks of `token` as taken: advance the cursor and apply document sets.
        Any server of the workspace may have issued the token."""
        self._session(session)
        with self._turn(session):
            s = self.deliveries.acknowledge(session, token)
        return Acknowledged(session=session, cursor=s.cursor)

    def project_changes(
        self, session: str, since: int | None, page: int, folder: str = ""
    ) -> ChangesPage:
        """One page of every change to the session's project after epoch `since` (those
        under `folder`)."""
        self._session(session)
        return changes_page(self.manager, session, since, page, Channel.MCP, folder=folder)

    def project_files(self, project: str, folder: str, page: int) -> ChangesPage:
        """One page of the project's files and documents (those under `folder`)."""
        self._project(project)
        budget = delivery_budget(self.config, Channel.MCP)
        return files_page(self.manager, project, page, budget, folder)

    def catch_up(
        self, project: str, session: str | None = None, progress: ProgressFn | None = None
    ) -> CaughtUp:
        """The pending blocks of `session` (default: the session this server opened for
        the prompt, or a new one), taken as delivered: a prompt's messages go into the
        conversation as they are."""
        self._project(project)
        key = (self.viewer().user, project)
        if session is None:
            session = self._prompted.get(key) or self._open(project).session
            self._prompted[key] = session
        elif self._session(session).project != project:
            raise UsageError(f"session '{session}' is not a session of project '{project}'")
        delivery = self.project_updates(session, progress)
        if delivery.token is not None:
            note = "returned by the catch_up prompt"
            with self._turn(session):
                self.deliveries.acknowledge(session, str(delivery.token),
                                            Acknowledgement.PRINTED, note)
        return CaughtUp(session, project, delivery.blocks)

    def read_document(
        self, path: str, session: str | None = None, progress: ProgressFn | None = None
    ) -> DocumentText:
        """A file's text, or a converted document's snapshot text or status.

        `path` may be any path a block names: a file, a document (its snapshot's text), or
        a snapshot (the same). The workspace is flushed first, so a document replaced a
        moment ago is converted again (`progress` hears it) rather than read stale. Only
        a file of the session's project (without a session: of some project), never a
        secret or an internal file, judged where the path leads (AccessDenied if not).
        """
        m = self.manager
        projects = [self._session(session).project] if session else self.visible_projects()

        self._flush()
        try:
            opened = open_reached(self.config.root, path, live_rules(m, projects))
        except AccessDenied:
            if self.viewer().user is None:
                raise
            # A user of a shared server learns nothing of files outside their grants.
            raise NotFoundError(shown(f"{path}: no such file in the workspace")) from None
        with opened:  # read what was checked, never the name again
            rel = self._source_of_snapshot(opened.rel) or opened.rel
            if rel == opened.rel and opened.kind is not Kind.FILE:
                raise NotFoundError(shown(f"{path}: no such file in the workspace"))
            if not is_document(rel):
                read, blob = plain_text(rel, opened)
                return self._noted(session, rel, blob, read)
        return self._document(session, rel, progress)

    def _source_of_snapshot(self, rel: str) -> str | None:
        snapshots = self.manager.materializer.store
        path = to_abs(self.config.root, rel)
        if path.parent != snapshots.directory:
            return None
        return snapshots.source_of(path)

    def _document(
        self, session: str | None, rel: str, progress: ProgressFn | None
    ) -> DocumentText:
        m = self.manager
        # Converted now when it is not (or an older converter made its snapshot): this one
        # document, on its own single-flight key.
        probe = m.materializer.for_reading(rel, m.entry(rel), progress)
        document = document_text(rel, probe.status, probe.snapshot, probe.reason,
                                 self.config.root)
        return self._noted(session, rel, snapshot_fingerprint(probe), document)

    def _noted(
        self, session: str | None, rel: str, blob: str | None, read: DocumentText
    ) -> DocumentText:
        """`read` with its secrets withheld, recorded in the session's read ledger when it
        showed any text."""
        read = withheld(read, self.manager.withholder, blob)
        if session and blob and read.text is not None:
            self.manager.record_read(session, rel, blob)
        self.manager.note_withheld()
        return read


def long_lived() -> None:
    """Call once a server process has loaded what it serves with: the objects made so far
    (the MCP SDK's models and their schemas) live as long as the process. Frozen, the
    cyclic collector's passes skip them while serving, and the process exits at once
    instead of spending over a second tearing them down."""
    gc.freeze()


def _touches_documents(change: Change) -> bool:
    """Whether a change may need a conversion: a document's path, or a scope change."""
    if change.kind is ChangeKind.CONFIG:
        return True
    return any(is_document(p) for p in (change.path, change.old_path) if p)
