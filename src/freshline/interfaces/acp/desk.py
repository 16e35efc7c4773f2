"""The freshline side of the ACP proxy: ACP sessions bound to freshline sessions.

`Desk` is synchronous and keeps its own state; the proxy calls it on one worker thread,
so its calls never interleave and never hold up the messages passing through.

- `open` binds an ACP session to a freshline session of the project that holds the
  session's `cwd` (or `--project`). The binding is stored as the freshline session's
  external id, `acp:<project>:<ACP session id>`, so `session/load` in a later process
  finds the same freshline session and its cursor.
- `prepare` and `accept` are the two halves of a delivery through the session layer's
  engine (`session/engine.py`) on the `acp` channel: its budget, and the "backend
  accepted" rule: the proxy decides when the agent took it.
- `noted_read`/`read`, `tool_read` and `wrote` feed the read ledger with what the agent
  read through the client (`fs/read_text_file`, read tool calls) and wrote through it
  (`fs/write_text_file`), judged by the same confinement as every reader: internal,
  ignored and secret files are never recorded.
- `mcp_server` is freshline's MCP server for the agent of a session: the proxy adds it
  to the session's `mcpServers`, so a rolled-up block can name its paging tools.
- `read_refusal`, `withheld` and `write_refusal` guard what passes: a file of the
  workspace with more than one hard link is not read, every text read has its secrets
  withheld, and a write that would put `[secret withheld: …]` over a secret is refused.

A failure here never reaches the ACP conversation: it is logged in one line and the
session goes on without freshline (that prompt carries no block, that read is not
recorded).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from freshline.access import AccessDenied, Rules, hard_links, hardlink_reason, reach
from freshline.beneath import Kind, open_beneath, read_regular
from freshline.config import CONFIG_NAME, DATA_DIR, find_workspace, load_config
from freshline.context import Channel
from freshline.errors import WorkspaceError
from freshline.interfaces.acp.messages import JsonObject, stdio_server
from freshline.interfaces.autostart import ensure as ensure_watched
from freshline.materialize.snapshots import SnapshotStore
from freshline.paths import shown
from freshline.program import workspace_command
from freshline.secretscan import WITHHELD_PREFIX, Withheld
from freshline.session import SessionManager
from freshline.session.checkpoints import checkpoint, end_turn
from freshline.session.engine import Deliveries, Issued
from freshline.session.owners import OWNER_ENV
from freshline.session.pinning import project_for
from freshline.session.rules import workspace_rules
from freshline.store import SessionState
from freshline.store.sessions import session_title
from freshline.tracker.hashing import blob_id_bytes, blob_id_fd
from freshline.withholding import Withholder

AGENT = "acp"  # the agent name in external ids (and so in attributions)
SERVER_NAME = "freshline"  # the name of freshline's MCP server in a session's mcpServers

_P = ParamSpec("_P")
_T = TypeVar("_T")

Log = Callable[[str], None]


def stderr_log(message: str) -> None:
    """One line on standard error (an ACP client keeps its agent's stderr as its log)."""
    print(f"freshline acp: {' '.join(message.split())}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Bound:
    """An ACP session bound to a freshline session."""

    root: Path  # the workspace
    session: str  # the freshline session id
    project: str


@dataclass
class Delivery:
    """The block for one prompt, and the delivery `accept` claims."""

    text: str  # the manifest and/or updates, put first in the prompt
    issued: Issued
    root: Path


@dataclass(frozen=True)
class Seen:
    """A read noted before the client answers it: the file's content then."""

    acp_session: str
    rel: str
    blob: str


def in_data_dir(path: str) -> bool:
    """Whether `path` (as given, or where it leads) lies in a workspace's `.freshline/`:
    freshline's store, snapshots and worktrees, which a text write would corrupt."""
    given = Path(os.path.abspath(path))
    for side in dict.fromkeys((given, given.resolve())):
        for parent in side.parents:
            if parent.name == DATA_DIR and (parent.parent / CONFIG_NAME).is_file():
                return True
    return False


def _guarded(method: Callable[_P, _T]) -> Callable[_P, _T | None]:
    """Log a failure of a `Desk` method instead of raising it: freshline never breaks
    the ACP conversation it rides along."""

    @functools.wraps(method)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T | None:
        try:
            return method(*args, **kwargs)
        except Exception as exc:  # any failure: the conversation goes on without freshline
            desk = args[0]
            assert isinstance(desk, Desk)
            desk.log(f"{method.__name__}: {type(exc).__name__}: {exc}")
            return None

    return run


class Desk:
    """Every ACP session of one proxy and the freshline sessions they are bound to.

    `workspace`: the workspace of every session (default: found from each session's
    `cwd`). `project`: the project of every session (default: the one holding `cwd`).
    """

    def __init__(
        self, workspace: Path | None = None, project: str | None = None, log: Log = stderr_log
    ) -> None:
        self.workspace = workspace
        self.project = project
        self.log = log
        self._managers: dict[Path, SessionManager] = {}
        self._bound: dict[str, Bound] = {}

    def bound(self, acp_session: str) -> Bound | None:
        """The freshline session an ACP session is bound to, if any."""
        return self._bound.get(acp_session)

    def close(self) -> None:
        """Wait for background conversions and stop every workspace's workers."""
        for manager in self._managers.values():
            manager.close()
        self._managers.clear()

    # -- sessions ----------------------------------------------------------------------

    @_guarded
    def open(self, acp_session: str, cwd: str, again: bool) -> Bound:
        """Bind an ACP session: `again` (`session/load`, `session/resume`) finds the
        freshline session it was bound to before, else a new one is opened (its first
        prompt carries the manifest)."""
        manager, project = self._locate(cwd)
        external = f"{AGENT}:{project}:{acp_session}"
        s = manager.by_external(external)
        if s is not None and not again:
            # The agent calls a new session by an old name: the old binding retires.
            manager.retire(s.id)
            s = None
        if s is None:
            # Live whatever the project's mode: the agent works in the checkout itself.
            s = manager.new(
                project, mode="live", external_id=external, convert=False, channel=Channel.ACP
            )
        elif s.state is SessionState.CLOSED:
            s = manager.resume(s.id, convert=False)
        bound = Bound(manager.config.root, s.id, project)
        self._bound[acp_session] = bound
        return bound

    @_guarded
    def end(self, acp_session: str) -> None:
        """`session/close`: the freshline session is closed (a later load resumes it)."""
        bound = self._bound.pop(acp_session, None)
        if bound is not None:
            self._managers[bound.root].close_session(bound.session)

    @_guarded
    def mcp_server(self, cwd: str) -> JsonObject | None:
        """freshline's MCP server for the agent of a session in `cwd` (None outside every
        workspace): its paging and reading tools on the session's workspace, run under the
        proxy's mark so that it opens no session and delivers nothing (the proxy does)."""
        try:
            root = find_workspace(Path(cwd), self.workspace)
        except WorkspaceError:
            return None  # `open` says so, once
        words = (*workspace_command(root), "mcp")
        return stdio_server(SERVER_NAME, words, {OWNER_ENV: Channel.ACP.value})

    def _locate(self, cwd: str) -> tuple[SessionManager, str]:
        """The workspace's session manager and the project for a session in `cwd`."""
        root = find_workspace(Path(cwd), self.workspace)
        manager = self._managers.get(root)
        if manager is None:
            manager = self._managers[root] = SessionManager(load_config(root))
        config = manager.reload_config()
        if self.project is not None:
            config.project(self.project)  # NotFoundError for a project not (or no longer) there
            return manager, self.project
        here = reach(root, cwd, Rules(ignore=config.workspace.ignore))
        return manager, project_for(config, here.rel)

    # -- deliveries --------------------------------------------------------------------

    @_guarded
    def prepare(self, acp_session: str, said: str = "") -> Delivery | None:
        """Record the session's next prompt, the user's words `said`, as a checkpoint (the
        project's files as it finds them), and the block for it; None when it has nothing
        to tell (the cursor then moves past epochs that held only the agent's own writes).
        `said` also titles a session that has no title yet (`session list` shows it)."""
        bound = self._bound.get(acp_session)
        if bound is None:
            return None
        manager = self._managers[bound.root]
        title = session_title(said)
        if title is not None:
            manager.store.session_touch(bound.session, time.time(), title)
        # The service's watcher makes the flush cost what changed, not the tree
        # (autowatch: one question on its socket while it runs).
        ensure_watched(manager.config)
        taken = checkpoint(manager, bound.session, said)
        issued = Deliveries(manager).issue(bound.session, Channel.ACP, flush=False,
                                           rewinds=taken.rewinds)
        taken.done()  # its files, written before the block goes out
        if issued is None:
            return None
        if issued.converting:
            # Documents announced as converting: convert them while the agent works.
            manager.materialize_async(bound.project)
        return Delivery(issued.blocks, issued, bound.root)

    @_guarded
    def answered(self, acp_session: str) -> None:
        """The agent's answer to a prompt ended: its turn is over (a rewind may run)."""
        bound = self._bound.get(acp_session)
        if bound is not None:
            end_turn(self._managers[bound.root].store, bound.session)

    @_guarded
    def accept(self, delivery: Delivery) -> None:
        """The agent took the prompt: the cursor moves to what the block covered."""
        Deliveries.accept(delivery.issued)

    # -- the read ledger ---------------------------------------------------------------

    @_guarded
    def noted_read(self, acp_session: str, path: str) -> Seen | None:
        """What a file read through the client holds now, before the client reads it (an
        edit in between then reads as a change, never as seen); None when it is nothing
        the ledger records."""
        target = self._target(acp_session, path)
        if target is None:
            return None
        return Seen(acp_session, *target)

    @_guarded
    def read(self, seen: Seen) -> None:
        """Record a read the client answered."""
        bound = self._bound.get(seen.acp_session)
        if bound is not None:
            self._managers[bound.root].record_read(bound.session, seen.rel, seen.blob)

    @_guarded
    def tool_read(self, acp_session: str, paths: Sequence[str]) -> None:
        """Record the files of a completed read tool call, as they are now."""
        bound = self._bound.get(acp_session)
        for path in paths:
            target = self._target(acp_session, path)
            if bound is not None and target is not None:
                self._managers[bound.root].record_read(bound.session, *target)

    @_guarded
    def wrote(self, acp_session: str, path: str, content: str) -> None:
        """Record a write the client carried out: `content` is now the agent's own, so it
        is not announced back."""
        bound = self._bound.get(acp_session)
        if bound is None:
            return
        manager = self._managers[bound.root]
        try:
            reached = reach(bound.root, path, workspace_rules(manager.config, bound.project))
        except AccessDenied:
            return
        manager.record_write(bound.session, reached.rel, blob_id_bytes(content.encode("utf-8")))

    # -- what passes -------------------------------------------------------------------

    def _screen(self, acp_session: str | None, path: str) -> tuple[Withholder, str | None]:
        """The withholder for a read of `path` and its workspace-relative path (None when
        it lies outside the session's workspace, or the session is not bound)."""
        bound = self._bound.get(acp_session or "")
        if bound is None:
            return Withholder(), None
        manager = self._managers[bound.root]
        real, root = Path(os.path.realpath(path)), bound.root.resolve()
        rel = real.relative_to(root).as_posix() if real.is_relative_to(root) else None
        return manager.withholder, rel

    def read_refusal(self, acp_session: str | None, path: str) -> str | None:
        """Why a read of `path` is refused (a file of the session's workspace with more
        than one hard link), or None."""
        withholder, rel = self._screen(acp_session, path)
        links = hard_links(Path(path))
        if rel is None or withholder.allow_hardlinks or links < 2:
            return None
        return shown(f"freshline acp: {path}: {hardlink_reason(links)}; not read")

    def withheld(self, acp_session: str | None, path: str, text: str) -> Withheld:
        """`text`, read from `path`, with its secrets withheld (noted for `status`)."""
        withholder, rel = self._screen(acp_session, path)
        found = withholder.text(text, rel)
        if found.count:
            self.log(f"withheld {found.count} secret(s) from {shown(path)}")
            bound = self._bound.get(acp_session or "")
            if bound is not None:
                self._managers[bound.root].note_withheld()
        return found

    def write_refusal(self, acp_session: str | None, path: str, content: str) -> str | None:
        """Why a write of `content` over `path` is refused (it puts more `[secret
        withheld: …]` markers than the file has over secrets the agent never saw)."""
        if WITHHELD_PREFIX not in content:
            return None
        withholder, rel = self._screen(acp_session, path)
        bound = self._bound.get(acp_session or "")
        data = read_regular(path) if rel is None or bound is None else _read_in(bound.root, rel)
        if data is None:
            return None
        old = data.decode("utf-8", "replace")
        if content.count(WITHHELD_PREFIX) <= old.count(WITHHELD_PREFIX):
            return None
        if not withholder.text(old, rel).count:
            return None
        return shown(f"freshline acp: {path} holds secrets withheld from the agent; writing "
                     "the markers over them would destroy them; not written")

    def _target(self, acp_session: str, path: str) -> tuple[str, str] | None:
        """The workspace path and content (git blob id) a read of `path` shows: a
        document's snapshot stands for its source, with the content it was made from."""
        bound = self._bound.get(acp_session)
        if bound is None:
            return None
        manager = self._managers[bound.root]
        rules = workspace_rules(manager.config, bound.project)
        snapshots = manager.materializer.store
        source = snapshots.source_of(Path(os.path.realpath(path)))
        try:
            reached = reach(bound.root, source or path, rules)
        except AccessDenied:
            return None
        if source is not None:
            header = SnapshotStore.header_at(Path(os.path.realpath(path)))
            blob = header.fingerprint if header is not None else None
        else:
            blob = _blob_in(bound.root, reached.rel)
        return (reached.rel, blob) if blob else None


def _read_in(root: Path, rel: str) -> bytes | None:
    """What file `rel` of the workspace holds now, read beneath it (None: no such file)."""
    try:
        with open_beneath(root, rel) as opened:
            return opened.read() if opened.kind is Kind.FILE else None
    except (OSError, WorkspaceError):
        return None


def _blob_in(root: Path, rel: str) -> str | None:
    """The blob file `rel` of the workspace holds now, hashed from what was opened."""
    try:
        with open_beneath(root, rel) as opened:
            return blob_id_fd(opened.fd) if opened.kind is Kind.FILE else None
    except (OSError, WorkspaceError):
        return None
