"""Delivery budgets and paging: how big a channel's blocks may be, and the full lists
behind a rolled-up block.

Each delivery names its channel (`freshline.context.Channel`); `delivery_budget` reads its
budget from `[delivery]` in freshline.toml. A block that did not fit is rolled up and
names its way back: `changes_page` (the chat's `changes` tool, MCP's `project_changes`,
`freshline changes --page`) and `files_page` (MCP's `project_files`, `freshline project
files --page`); the ACP proxy's agent calls the same MCP tools, on the freshline MCP
server the proxy gives it with each session. The hook's agent has no freshline tool: its
blocks name a command that works from any directory (`program.workspace_command`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from freshline.config import Config, Mode
from freshline.context import (
    Budget,
    ChangesPage,
    Channel,
    Meter,
    UpdatesInput,
    page_changes,
    page_files,
)
from freshline.errors import UsageError
from freshline.materialize import is_document
from freshline.names import read_back
from freshline.program import workspace_command
from freshline.session.documents import DocumentDesk, info
from freshline.session.manifest import build_manifest
from freshline.store.records import Change, ChangeKind

if TYPE_CHECKING:  # the manager uses this module: it takes the base
    from freshline.session.base import SessionBase

_DOCUMENT_KINDS = (ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.RENAMED,
                   ChangeKind.ENTERED)
_COMMANDED = (Channel.HOOK,)  # its agent reaches freshline by a command only


def delivery_budget(
    config: Config,
    channel: Channel,
    meter: Meter | None = None,
    session: str | None = None,
    limit: int | None = None,
    token: str | None = None,
    command: tuple[str, ...] | None = None,
) -> Budget:
    """A delivery's budget on `channel`: `[delivery]` in freshline.toml, at most `limit`;
    `token` is the delivery's token, written into each block's opening tag. `command`
    runs freshline on the workspace from anywhere (default: this process's executable
    with `--workspace`, for the channels whose agent has no freshline tool)."""
    chars = config.delivery.budget(channel.value)
    if limit is not None:
        chars = min(chars, limit)
    if command is None:
        command = workspace_command(config.root) if channel in _COMMANDED else ()
    return Budget(chars, channel, meter or Meter(), session, token, command)


def changes_page(
    manager: SessionBase,
    session_id: str,
    since: int | None = None,
    page: int = 1,
    channel: Channel = Channel.SEND,
    meter: Meter | None = None,
    limit: int | None = None,
    folder: str = "",
) -> ChangesPage:
    """One page of every change to the session's project after epoch `since` (default:
    the session's cursor), or of those under `folder`, each page within `channel`'s
    budget and `limit` characters: the full list behind a rolled-up block. Confined to
    the session's project; moves no cursor. UsageError for an epoch the project never
    had, a folder outside the workspace, or a page past the last."""
    s = manager.get(session_id)
    manager.tracker.flush()
    start = since if since is not None else s.cursor if s.cursor is not None else 0
    isolated = s.mode == Mode.ISOLATED.value
    root = manager.conversations.worktree(s.id) if isolated else manager.config.root
    budget = delivery_budget(manager.config, channel, meter, s.id, limit)
    return project_changes_page(manager, s.project, start, page, budget, str(root), folder)


def project_changes_page(
    manager: SessionBase, project: str, since: int, page: int, budget: Budget,
    root: str | None = None, folder: str = "",
) -> ChangesPage:
    """One page of every change to `project` after epoch `since` as the index has them
    (the caller flushed), or of those under `folder` (workspace-relative, or absolute
    inside the workspace), paths shown under `root` (default: the workspace's)."""
    epoch = manager.tracker.epoch(project)
    if not 0 <= since <= epoch:
        raise UsageError(f"since={since}: project {project} has epochs 0 to {epoch}")
    answer = manager.tracker.changes_since(project, since)
    desk = DocumentDesk(manager.materializer, manager.store.index_get)
    documents = [info(desk.probe(c.path)) for c in answer.changes
                 if c.kind in _DOCUMENT_KINDS and is_document(c.path)]
    forgotten = [Change(ChangeKind.COMPACTED, "")] if answer.forgotten else []
    updates = UpdatesInput.from_changes(
        project, root or str(manager.config.root), since, answer.epoch,
        forgotten or answer.changes, documents=documents, folded=answer.folded,
    )
    page_of = page_changes(updates, page, budget, _relative(root or manager.config.root, folder))
    return _screened(manager, page_of)


def files_page(
    manager: SessionBase, project: str, page: int, budget: Budget, folder: str = ""
) -> ChangesPage:
    """One page of the project's files and documents (each document with its state and
    snapshot), or of those under `folder` (workspace-relative, or absolute inside the
    workspace), within `budget`: the full list behind a rolled-up manifest. Converts
    nothing. UsageError for a folder outside the workspace or a page past the last."""
    built = build_manifest(manager.config, manager.tracker, manager.materializer, project,
                           listing=manager.in_scope.entries, convert=False)
    return _screened(manager, page_files(built.input, page, budget,
                                         _relative(manager.config.root, folder)))


def _screened(manager: SessionBase, page: ChangesPage) -> ChangesPage:
    """`page` with what a name holds of a secret withheld, as the blocks withhold it."""
    return replace(page, text=manager.withholder.text(page.text).text)


def _relative(root: object, folder: str) -> str:
    """`folder` relative to the workspace `root` ("" for the root itself), as named on
    disk: a block shows names escaped (`names.read_back`)."""
    back = read_back(folder)  # the name it stands for wins, when it is there or both are gone
    if os.path.lexists(os.path.join(str(root), back)) or \
            not os.path.lexists(os.path.join(str(root), folder)):
        folder = back
    path = PurePosixPath(folder)
    try:
        if path.is_absolute():
            path = path.relative_to(str(root))
        if ".." in path.parts:
            raise ValueError(folder)
    except ValueError:
        raise UsageError(f"folder {folder} is outside the workspace {root}") from None
    rel = path.as_posix()
    return "" if rel == "." else rel
